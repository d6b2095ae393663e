package graph_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/graph"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
	"github.com/rogpeppe/go-internal/txtar"
)

// tolerance is how far from exact a rounded coordinate may be.
const tolerance = 0.5

// corpus compiles every workflow the repository holds: the examples, the
// archives of this package's tests, the compiler's check corpus, the
// server's test workflows and the command's scripts. Sources that do not
// compile are left out.
func corpus(t testing.TB) map[string][]*vm.Workflow {
	t.Helper()
	out := map[string][]*vm.Workflow{}
	reg := stdlib.Registry()
	compile := func(name string, srcs []compiler.Source) {
		if len(srcs) == 0 {
			return
		}
		if prog, _ := compiler.Compile(reg, srcs...); prog != nil && len(prog.Workflows) > 0 {
			out[name] = prog.Workflows
		}
	}
	for _, dir := range []string{"../workflows", "../server/testdata"} {
		paths, err := filepath.Glob(filepath.Join(dir, "*.wf"))
		if err != nil {
			t.Fatal(err)
		}
		var srcs []compiler.Source
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, compiler.Source{Name: filepath.Base(path), Text: data})
		}
		compile(dir, srcs)
	}
	for _, pattern := range []string{"testdata/*.txtar", "../compiler/testdata/check/*.txtar", "../cmd/aguic/testdata/script/*.txtar"} {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var srcs []compiler.Source
			for _, f := range ar.Files {
				if strings.HasSuffix(f.Name, ".wf") {
					srcs = append(srcs, compiler.Source{Name: f.Name, Text: f.Data})
				}
			}
			compile(path, srcs)
		}
	}
	if len(out) < 20 {
		t.Fatalf("the corpus has only %d programs", len(out))
	}
	return out
}

// TestCorpus checks every drawing of every workflow of the corpus.
func TestCorpus(t *testing.T) {
	programs := corpus(t)
	names := make([]string, 0, len(programs))
	for name := range programs {
		names = append(names, name)
	}
	slices.Sort(names)
	count := 0
	for _, name := range names {
		wfs := programs[name]
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			for _, w := range wfs {
				checkLayout(t, w)
				count++
			}
			checkDocuments(t, wfs)
		})
	}
	t.Logf("%d workflows of %d programs", count, len(programs))
}

// TestRandomGraphs checks the layouts of workflows built at random:
// nested groups without spans, cycles, self-loops, missing targets, edges
// between any nodes.
func TestRandomGraphs(t *testing.T) {
	for seed := range uint64(200) {
		w := randomWorkflow(seed)
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			checkLayout(t, w)
			if seed%10 == 0 {
				checkDocuments(t, []*vm.Workflow{w})
			}
		})
	}
}

// FuzzLayout lays out workflows built from the fuzzer's seeds.
func FuzzLayout(f *testing.F) {
	for _, seed := range []uint64{0, 1, 7, 42, 1234} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		checkLayout(t, randomWorkflow(seed))
	})
}

// randomWorkflow builds a workflow from seed: up to 24 nodes of control
// kinds, each inside an earlier step, loop, try or parallel node or not,
// with ids derived like the compiler's, up to three edges each to any
// node, to the end or to no node.
func randomWorkflow(seed uint64) *vm.Workflow {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	n := 1 + r.IntN(24)
	kinds := []string{vm.KindSet, vm.KindIf, vm.KindWhile, vm.KindStep, vm.KindTry, vm.KindParallel, vm.KindSwitch, "say"}
	w := &vm.Workflow{ID: "random" + strconv.FormatUint(seed, 10)}
	for i := range n {
		kind := kinds[r.IntN(len(kinds))]
		id := strconv.Itoa(i + 1)
		if i > 0 && r.IntN(3) > 0 {
			p := w.Nodes[r.IntN(i)]
			switch p.Kind {
			case vm.KindParallel:
				branch := "b" + strconv.Itoa(r.IntN(3))
				id = p.ID + "." + branch + "." + id
				p.Edges = append(p.Edges, vm.Edge{Label: "branch " + branch, To: id})
			case vm.KindTry:
				if r.IntN(2) == 0 {
					id = p.ID + ".catch." + id
				} else {
					id = p.ID + "." + id
				}
			case vm.KindStep, vm.KindWhile:
				id = p.ID + "." + id
			}
		}
		if r.IntN(8) == 0 {
			id = "label" + strconv.Itoa(i)
		}
		w.Nodes = append(w.Nodes, &vm.Node{ID: id, Kind: kind, Suspends: r.IntN(6) == 0})
	}
	labels := []string{vm.EdgeNext, vm.EdgeTrue, vm.EdgeFalse, vm.EdgeError, vm.EdgeBody, "case 1", vm.EdgeDefault}
	for _, nd := range w.Nodes {
		for range r.IntN(4) {
			to := ""
			switch x := r.IntN(10); {
			case x < 8:
				to = w.Nodes[r.IntN(n)].ID
			case x == 8:
				to = "missing" + strconv.Itoa(r.IntN(3))
			}
			nd.Edges = append(nd.Edges, vm.Edge{Label: labels[r.IntN(len(labels))], To: to})
		}
	}
	w.Entry = w.Nodes[0].ID
	return w
}

// checkLayout lays w out twice and checks that the layouts are equal and
// that the drawing holds together.
func checkLayout(t *testing.T, w *vm.Workflow) {
	t.Helper()
	l := graph.LayOut(w)
	if again := graph.LayOut(w); !reflect.DeepEqual(l, again) {
		t.Errorf("%s: two layouts of one workflow differ", w.ID)
	}
	for _, err := range layoutErrors(l) {
		t.Errorf("%s: %v", w.ID, err)
	}
}

// layoutErrors lists what is wrong with a layout: boxes that overlap,
// anything outside the drawing, edges that do not start and end on their
// vertices' borders, groups that do not hold their vertices or overlap
// what they do not hold.
func layoutErrors(l *graph.Layout) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	inside := func(what string, x, y float64) {
		if x < -tolerance || y < -tolerance || x > l.Width+tolerance || y > l.Height+tolerance {
			fail("%s at (%g, %g) is outside the %g × %g drawing", what, x, y, l.Width, l.Height)
		}
	}
	nodes := map[string]graph.Vertex{}
	for _, n := range l.Nodes {
		nodes[n.ID] = n
		inside("node "+n.ID, n.X, n.Y)
		inside("node "+n.ID, n.X+n.Width, n.Y+n.Height)
	}
	for i, a := range l.Nodes {
		for _, b := range l.Nodes[i+1:] {
			if overlap(box(a.X, a.Y, a.Width, a.Height), box(b.X, b.Y, b.Width, b.Height)) {
				fail("nodes %s and %s overlap", a.ID, b.ID)
			}
		}
	}
	for _, e := range l.Edges {
		if len(e.Points) < 2 {
			fail("edge %s → %s has %d points", e.From, e.To, len(e.Points))
			continue
		}
		for _, p := range e.Points {
			inside("a point of edge "+e.From+" → "+e.To, p[0], p[1])
		}
		if first := e.Points[0]; !onBorder(nodes[e.From], first) {
			fail("edge %s → %s starts at (%g, %g), off the border of %s", e.From, e.To, first[0], first[1], e.From)
		}
		if last := e.Points[len(e.Points)-1]; !onBorder(nodes[e.To], last) {
			fail("edge %s → %s ends at (%g, %g), off the border of %s", e.From, e.To, last[0], last[1], e.To)
		}
		if e.Label != vm.EdgeNext {
			inside("the label of edge "+e.From+" → "+e.To, e.LabelX, e.LabelY)
		}
	}
	groups := map[string]graph.Group{}
	for _, g := range l.Groups {
		groups[g.ID] = g
		inside("group "+g.ID, g.X, g.Y)
		inside("group "+g.ID, g.X+g.Width, g.Y+g.Height)
	}
	// within reports whether group id is g or inside g.
	within := func(id, g string) bool {
		for ; id != ""; id = groups[id].Parent {
			if id == g {
				return true
			}
		}
		return false
	}
	for _, g := range l.Groups {
		gb := box(g.X, g.Y, g.Width, g.Height)
		if p, ok := groups[g.Parent]; g.Parent != "" && (!ok || !contains(box(p.X, p.Y, p.Width, p.Height), gb)) {
			fail("group %s is not inside its parent %s", g.ID, g.Parent)
		}
		for _, n := range l.Nodes {
			nb := box(n.X, n.Y, n.Width, n.Height)
			switch {
			case n.Group != "" && within(n.Group, g.ID):
				if !contains(gb, nb) {
					fail("node %s is not inside its group %s", n.ID, g.ID)
				}
			case overlap(gb, nb):
				fail("node %s overlaps group %s", n.ID, g.ID)
			}
		}
		for _, h := range l.Groups {
			if g.ID < h.ID && !within(g.ID, h.ID) && !within(h.ID, g.ID) && overlap(gb, box(h.X, h.Y, h.Width, h.Height)) {
				fail("groups %s and %s overlap", g.ID, h.ID)
			}
		}
	}
	return errs
}

type rect struct{ x0, y0, x1, y1 float64 }

func box(x, y, w, h float64) rect { return rect{x, y, x + w, y + h} }

// overlap reports whether two rectangles share more than a border.
func overlap(a, b rect) bool {
	return min(a.x1, b.x1)-max(a.x0, b.x0) > tolerance && min(a.y1, b.y1)-max(a.y0, b.y0) > tolerance
}

func contains(outer, inner rect) bool {
	return inner.x0 >= outer.x0-tolerance && inner.y0 >= outer.y0-tolerance && inner.x1 <= outer.x1+tolerance && inner.y1 <= outer.y1+tolerance
}

// onBorder reports whether p lies on the outline of n's shape.
func onBorder(n graph.Vertex, p [2]float64) bool {
	cx, cy := n.X+n.Width/2, n.Y+n.Height/2
	switch n.Shape {
	case graph.ShapeCircle:
		return math.Abs(math.Hypot(p[0]-cx, p[1]-cy)-n.Width/2) <= tolerance
	case graph.ShapeDecision:
		x0, x1, y0, y1 := n.X, n.X+n.Width, n.Y, n.Y+n.Height
		pts := [][2]float64{{x0, cy}, {x0 + graph.DecisionInset, y0}, {x1 - graph.DecisionInset, y0}, {x1, cy}, {x1 - graph.DecisionInset, y1}, {x0 + graph.DecisionInset, y1}}
		for i := range pts {
			if segmentDistance(p, pts[i], pts[(i+1)%len(pts)]) <= tolerance {
				return true
			}
		}
		return false
	}
	x0, x1, y0, y1 := n.X, n.X+n.Width, n.Y, n.Y+n.Height
	inX := p[0] >= x0-tolerance && p[0] <= x1+tolerance
	inY := p[1] >= y0-tolerance && p[1] <= y1+tolerance
	return inX && inY && (math.Abs(p[0]-x0) <= tolerance || math.Abs(p[0]-x1) <= tolerance || math.Abs(p[1]-y0) <= tolerance || math.Abs(p[1]-y1) <= tolerance)
}

// segmentDistance is the distance from p to the segment from a to b.
func segmentDistance(p, a, b [2]float64) float64 {
	dx, dy := b[0]-a[0], b[1]-a[1]
	t := ((p[0]-a[0])*dx + (p[1]-a[1])*dy) / (dx*dx + dy*dy)
	t = min(max(t, 0), 1)
	return math.Hypot(p[0]-(a[0]+t*dx), p[1]-(a[1]+t*dy))
}

// checkDocuments checks that each writer makes one valid document of the
// workflows: one Mermaid flowchart with balanced subgraphs, one DOT
// digraph with balanced braces, an SVG 1.1 document that parses, a JSON
// array with a layout per workflow.
func checkDocuments(t *testing.T, wfs []*vm.Workflow) {
	t.Helper()
	draw := func(write func(io.Writer, ...*vm.Workflow) error) string {
		var b bytes.Buffer
		if err := write(&b, wfs...); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if err := mermaidErr(draw(graph.WriteMermaid)); err != nil {
		t.Errorf("mermaid: %v", err)
	}
	if err := dotErr(draw(graph.WriteDOT)); err != nil {
		t.Errorf("dot: %v", err)
	}
	if err := svgErr(draw(graph.WriteSVG)); err != nil {
		t.Errorf("svg: %v", err)
	}
	if got := strings.Count(draw(graph.WriteJSON), `"workflow": `); got != len(wfs) {
		t.Errorf("json: %d layouts of %d workflows", got, len(wfs))
	}
}

// mermaidErr checks that doc is one flowchart whose subgraphs all end.
func mermaidErr(doc string) error {
	lines := strings.Split(strings.TrimSuffix(doc, "\n"), "\n")
	if lines[0] != "flowchart TD" {
		return fmt.Errorf("the first line is %q", lines[0])
	}
	depth := 0
	for i, line := range lines[1:] {
		switch s := strings.TrimSpace(line); {
		case strings.HasPrefix(s, "flowchart"):
			return fmt.Errorf("line %d starts another flowchart", i+2)
		case strings.HasPrefix(s, "subgraph "):
			depth++
		case s == "end":
			if depth--; depth < 0 {
				return fmt.Errorf("line %d ends no subgraph", i+2)
			}
		}
	}
	if depth != 0 {
		return fmt.Errorf("%d subgraphs do not end", depth)
	}
	return nil
}

// dotErr checks that doc is one digraph whose braces balance outside
// quoted strings.
func dotErr(doc string) error {
	if !strings.HasPrefix(doc, "digraph ") {
		return errors.New("it does not start with digraph")
	}
	depth, quoted, escaped := 0, false, false
	for i, c := range doc {
		switch {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '{':
			depth++
		case c == '}':
			if depth--; depth == 0 && strings.TrimSpace(doc[i+1:]) != "" {
				return fmt.Errorf("text after the digraph: %.40q", doc[i+1:])
			}
		}
	}
	if depth != 0 || quoted {
		return fmt.Errorf("unbalanced: depth %d, in a string %v", depth, quoted)
	}
	return nil
}

// svgErr checks that doc parses as XML and its root is an svg element of
// the SVG namespace with a size and a view box.
func svgErr(doc string) error {
	d := xml.NewDecoder(strings.NewReader(doc))
	root := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if se, ok := tok.(xml.StartElement); ok && !root {
			root = true
			if se.Name.Local != "svg" || se.Name.Space != "http://www.w3.org/2000/svg" {
				return fmt.Errorf("the root is {%s}%s", se.Name.Space, se.Name.Local)
			}
			attrs := map[string]bool{}
			for _, a := range se.Attr {
				attrs[a.Name.Local] = true
			}
			for _, a := range []string{"width", "height", "viewBox", "version"} {
				if !attrs[a] {
					return fmt.Errorf("the root has no %s", a)
				}
			}
		}
	}
	if !root {
		return errors.New("no element")
	}
	return nil
}

// TestDOTRenders runs Graphviz on the DOT drawing of every program of the
// corpus when dot is installed.
func TestDOTRenders(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("Graphviz's dot is not installed")
	}
	for name, wfs := range corpus(t) {
		var b bytes.Buffer
		if err := graph.WriteDOT(&b, wfs...); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(dot, "-Tsvg")
		cmd.Stdin = &b
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: dot: %v\n%s", name, err, out)
		}
	}
}

// TestMisdrawn checks that the checks above catch what they look for.
func TestMisdrawn(t *testing.T) {
	good := func() *graph.Layout {
		return graph.LayOut(&vm.Workflow{ID: "w", Entry: "1", Nodes: []*vm.Node{
			{ID: "1", Kind: vm.KindStep, Name: "s", Edges: []vm.Edge{{Label: vm.EdgeNext, To: "1.1"}}},
			{ID: "1.1", Kind: vm.KindSet, Edges: []vm.Edge{{Label: vm.EdgeNext, To: "1.end"}}},
			{ID: "1.end", Kind: vm.KindStepEnd, Name: "s", Edges: []vm.Edge{{Label: vm.EdgeNext, To: "2"}}},
			{ID: "2", Kind: vm.KindSet, Edges: []vm.Edge{{Label: vm.EdgeNext}}},
		}})
	}
	if errs := layoutErrors(good()); len(errs) > 0 {
		t.Fatalf("the good layout: %v", errs)
	}
	tests := []struct {
		name  string
		spoil func(*graph.Layout)
		want  string
	}{
		{"overlap", func(l *graph.Layout) { l.Nodes[2].Y = l.Nodes[1].Y }, "overlap"},
		{"outside", func(l *graph.Layout) { l.Width = 10 }, "outside"},
		{"off the border", func(l *graph.Layout) { l.Edges[0].Points[0][1] += 5 }, "off the border"},
		{"out of its group", func(l *graph.Layout) { l.Groups[0].Height = 10 }, "not inside its group"},
		{"into a group", func(l *graph.Layout) { l.Nodes[5].Y = l.Nodes[3].Y; l.Nodes[5].X = l.Groups[0].X - 5 }, "overlaps group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := good()
			tt.spoil(l)
			errs := layoutErrors(l)
			if !strings.Contains(fmt.Sprint(errs), tt.want) {
				t.Errorf("errors %v, want one about %q", errs, tt.want)
			}
		})
	}
	for _, doc := range []string{"flowchart TD\n    a\nflowchart TD\n", "flowchart TD\n    subgraph x\n"} {
		if mermaidErr(doc) == nil {
			t.Errorf("mermaid %q passes", doc)
		}
	}
	for _, doc := range []string{"digraph a {\n}\ndigraph b {\n}\n", "digraph a { \"}\" \n"} {
		if dotErr(doc) == nil {
			t.Errorf("dot %q passes", doc)
		}
	}
	for _, doc := range []string{"<svg/>", `<svg xmlns="http://www.w3.org/2000/svg">`, `<html xmlns="http://www.w3.org/2000/svg"/>`} {
		if svgErr(doc) == nil {
			t.Errorf("svg %q passes", doc)
		}
	}
}
