package graph_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/graph"
	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
	"github.com/rogpeppe/go-internal/txtar"
)

// drawings are the writers, by the name of their section in the golden
// archives.
var drawings = []struct {
	name string
	draw func(io.Writer, ...*vm.Workflow) error
}{
	{"mermaid", graph.WriteMermaid},
	{"dot", graph.WriteDOT},
	{"svg", graph.WriteSVG},
	{"json", graph.WriteJSON},
}

// TestGolden compiles the .wf files of each testdata/*.txtar archive and
// compares every drawing of all their workflows with the archive's
// mermaid, dot, svg and json sections (go test -update rewrites them).
func TestGolden(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no archives: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			wfs := compileArchive(t, ar)
			if wfs == nil {
				t.Fatalf("%s has no .wf file that compiles", path)
			}
			compareDrawings(t, path, ar, wfs)
		})
	}
}

// TestBuilt draws workflows built by hand, so that what the compiler never
// makes (an edge to no node, ids and titles full of quotes, an empty
// workflow) is drawn as well.
func TestBuilt(t *testing.T) {
	str := func(src string) *vm.Value { return &vm.Value{Source: src} }
	tests := []struct {
		name string
		wfs  []*vm.Workflow
	}{
		{"empty", []*vm.Workflow{{ID: "empty"}}},
		{"escape", []*vm.Workflow{{
			ID:    `odd "id"`,
			Title: `Quotes "and" \backslashes\ <&>`,
			Entry: "greet",
			Nodes: []*vm.Node{
				{ID: "greet", Kind: "say", Label: "greet", Arg: str(`"Hi <<$name>> & #1 ` + "`x`" + `"`),
					Edges: []vm.Edge{{Label: vm.EdgeNext, To: "2"}}},
				{ID: "2", Kind: "say", Arg: str("\"\"\"\n  a very long\n  multi-line text that goes on and on\n  \"\"\""),
					Edges: []vm.Edge{{Label: vm.EdgeNext, To: "2.x"}, {Label: vm.EdgeError, To: "gone"}}},
				{ID: "2.x", Kind: vm.KindIf, Cond: &vm.Value{Source: `$a > 1 && $b < "x\\y"`},
					Edges: []vm.Edge{{Label: vm.EdgeTrue, To: ""}, {Label: vm.EdgeFalse, To: "greet"}}},
			},
		}}},
		{"nospans", []*vm.Workflow{{
			ID:    "nospans",
			Entry: "1",
			Nodes: []*vm.Node{
				{ID: "1", Kind: vm.KindStep, Name: "s", Edges: []vm.Edge{{Label: vm.EdgeNext, To: "1.1"}}},
				{ID: "1.1", Kind: vm.KindParallel, Name: "a,b", Edges: []vm.Edge{{Label: "branch a", To: "1.1.a.1"}, {Label: "branch b", To: "1.1.join"}}},
				{ID: "1.1.a.1", Kind: vm.KindSet, Edges: []vm.Edge{{Label: vm.EdgeNext, To: "1.1.join"}}},
				{ID: "1.1.join", Kind: vm.KindJoin, Edges: []vm.Edge{{Label: vm.EdgeNext, To: "1.end"}}},
				{ID: "1.end", Kind: vm.KindStepEnd, Name: "s", Edges: []vm.Edge{{Label: vm.EdgeNext, To: "1"}}},
			},
		}, {ID: "second", Title: "Second", Entry: "x", Nodes: []*vm.Node{{ID: "x", Kind: vm.KindEnd}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join("testdata", "built", tt.name+".txtar")
			ar, err := txtar.ParseFile(path)
			if err != nil {
				if !golden.Update() {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				ar = &txtar.Archive{}
			}
			compareDrawings(t, path, ar, tt.wfs)
		})
	}
}

// compileArchive compiles the .wf files of ar together and returns their
// workflows, or nil when there are none or they have errors.
func compileArchive(t *testing.T, ar *txtar.Archive) []*vm.Workflow {
	t.Helper()
	var srcs []compiler.Source
	for _, f := range ar.Files {
		if strings.HasSuffix(f.Name, ".wf") {
			srcs = append(srcs, compiler.Source{Name: f.Name, Text: f.Data})
		}
	}
	if len(srcs) == 0 {
		return nil
	}
	prog, _ := compiler.Compile(stdlib.Registry(), srcs...)
	if prog == nil {
		return nil
	}
	return prog.Workflows
}

// compareDrawings compares each drawing of wfs with its section of the
// archive at path, or rewrites the archive with -update.
func compareDrawings(t *testing.T, path string, ar *txtar.Archive, wfs []*vm.Workflow) {
	t.Helper()
	got := map[string][]byte{}
	for _, d := range drawings {
		var b bytes.Buffer
		if err := d.draw(&b, wfs...); err != nil {
			t.Fatal(err)
		}
		got[d.name] = b.Bytes()
	}
	if golden.Update() {
		var files []txtar.File
		for _, f := range ar.Files {
			if _, drawn := got[f.Name]; !drawn {
				files = append(files, f)
			}
		}
		for _, d := range drawings {
			files = append(files, txtar.File{Name: d.name, Data: got[d.name]})
		}
		ar.Files = files
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, d := range drawings {
		var want []byte
		found := false
		for _, f := range ar.Files {
			if f.Name == d.name {
				want, found = f.Data, true
			}
		}
		if !found {
			t.Errorf("%s has no %s section (run go test -update to add it)", path, d.name)
			continue
		}
		if !bytes.Equal(got[d.name], want) {
			t.Errorf("%s: the %s drawing differs (run go test -update to accept):\n--- got\n%s\n--- want\n%s", path, d.name, got[d.name], want)
		}
	}
}
