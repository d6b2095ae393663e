package vm

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// detailRunes is how many runes of a node's detail a drawing shows.
const detailRunes = 40

// WriteMermaid draws w as a Mermaid flowchart: a start vertex pointing at
// the entry, one vertex per node in the order of w.Nodes showing its id,
// kind and a short detail, an end vertex for the edges that end the flow,
// and every edge labelled with its name ("next" edges unlabelled, error
// edges dotted). Vertices are named n0, n1… since node ids hold dots.
func (w *Workflow) WriteMermaid(out io.Writer) error {
	g := newDrawing(w)
	b := bufio.NewWriter(out)
	fmt.Fprintf(b, "flowchart TD\n")
	fmt.Fprintf(b, "    %%%% workflow %s\n", mermaidComment(w.ID))
	fmt.Fprintf(b, "    start((\"start\"))\n")
	for i, n := range w.Nodes {
		text := mermaidText(n.ID) + "<br/>" + mermaidText(nodeText(n))
		open, close := "[\"", "\"]"
		switch {
		case n.Suspends:
			open, close = "{{\"", "\"}}"
		case isDecision(n.Kind):
			open, close = "{\"", "\"}"
		}
		fmt.Fprintf(b, "    %s%s%s%s\n", g.mermaidID(i), open, text, close)
	}
	for _, id := range g.missing {
		fmt.Fprintf(b, "    %s[\"%s<br/>missing\"]\n", g.ids[id], mermaidText(id))
	}
	if g.ends {
		fmt.Fprintf(b, "    stop((\"end\"))\n")
	}
	edge := func(from, to, label string) {
		switch label {
		case EdgeNext:
			fmt.Fprintf(b, "    %s --> %s\n", from, to)
		case EdgeError:
			fmt.Fprintf(b, "    %s -.->|\"%s\"| %s\n", from, mermaidText(label), to)
		default:
			fmt.Fprintf(b, "    %s -->|\"%s\"| %s\n", from, mermaidText(label), to)
		}
	}
	edge("start", g.mermaidTarget(w.Entry), EdgeNext)
	for i, n := range w.Nodes {
		for _, e := range n.Edges {
			edge(g.mermaidID(i), g.mermaidTarget(e.To), e.Label)
		}
	}
	return b.Flush()
}

// WriteDOT draws w as a Graphviz digraph with the same vertices and edges
// as WriteMermaid; vertices are named by their quoted node ids.
func (w *Workflow) WriteDOT(out io.Writer) error {
	g := newDrawing(w)
	b := bufio.NewWriter(out)
	fmt.Fprintf(b, "digraph %s {\n", dotQuote(w.ID))
	if w.Title != "" {
		fmt.Fprintf(b, "    label=%s;\n    labelloc=t;\n", dotQuote(truncate(w.Title)))
	}
	fmt.Fprintf(b, "    node [shape=box];\n")
	fmt.Fprintf(b, "    %s [shape=circle, label=\"start\"];\n", dotStart)
	for _, n := range w.Nodes {
		attrs := ""
		switch {
		case n.Suspends:
			attrs = "shape=hexagon, "
		case isDecision(n.Kind):
			attrs = "shape=diamond, "
		}
		fmt.Fprintf(b, "    %s [%slabel=%s];\n", dotQuote(n.ID), attrs, dotLabel(n.ID, nodeText(n)))
	}
	for _, id := range g.missing {
		fmt.Fprintf(b, "    %s [style=dashed, label=%s];\n", dotQuote(id), dotLabel(id, "missing"))
	}
	if g.ends {
		fmt.Fprintf(b, "    %s [shape=doublecircle, label=\"end\"];\n", dotEnd)
	}
	target := func(id string) string {
		if id == "" {
			return dotEnd
		}
		return dotQuote(id)
	}
	edge := func(from, to, label string) {
		switch label {
		case EdgeNext:
			fmt.Fprintf(b, "    %s -> %s;\n", from, to)
		case EdgeError:
			fmt.Fprintf(b, "    %s -> %s [label=%s, style=dashed];\n", from, to, dotQuote(label))
		default:
			fmt.Fprintf(b, "    %s -> %s [label=%s];\n", from, to, dotQuote(label))
		}
	}
	edge(dotStart, target(w.Entry), EdgeNext)
	for _, n := range w.Nodes {
		for _, e := range n.Edges {
			edge(dotQuote(n.ID), target(e.To), e.Label)
		}
	}
	fmt.Fprintf(b, "}\n")
	return b.Flush()
}

// The DOT names of the start and end vertices; no node id has parentheses.
const (
	dotStart = `"(start)"`
	dotEnd   = `"(end)"`
)

// drawing is what both formats need to know about w's vertices.
type drawing struct {
	ids     map[string]string // node id → Mermaid vertex name
	missing []string          // edge targets that are not nodes, in order of appearance
	ends    bool              // whether some edge (or the entry) ends the flow
}

func newDrawing(w *Workflow) *drawing {
	g := &drawing{ids: make(map[string]string, len(w.Nodes))}
	for i, n := range w.Nodes {
		g.ids[n.ID] = "n" + strconv.Itoa(i)
	}
	see := func(to string) {
		if to == "" {
			g.ends = true
			return
		}
		if _, ok := g.ids[to]; !ok {
			g.ids[to] = "n" + strconv.Itoa(len(g.ids))
			g.missing = append(g.missing, to)
		}
	}
	see(w.Entry)
	for _, n := range w.Nodes {
		for _, e := range n.Edges {
			see(e.To)
		}
	}
	return g
}

func (g *drawing) mermaidID(i int) string { return "n" + strconv.Itoa(i) }

func (g *drawing) mermaidTarget(id string) string {
	if id == "" {
		return "stop"
	}
	return g.ids[id]
}

// isDecision reports whether a node of kind chooses between edges by a
// condition and is drawn as a diamond.
func isDecision(kind string) bool {
	switch kind {
	case KindIf, KindSwitch, KindWhile, KindFor:
		return true
	}
	return false
}

// nodeText is a node's kind and a short detail: "say \"Hello\"",
// "http GET \"https://…\"", "if $x > 1".
func nodeText(n *Node) string {
	d := truncate(nodeDetail(n))
	if d == "" {
		return n.Kind
	}
	return n.Kind + " " + d
}

// nodeDetail is the part of a node worth showing beside its kind.
func nodeDetail(n *Node) string {
	src := func(v *Value) string {
		if v == nil {
			return ""
		}
		return v.Source
	}
	switch n.Kind {
	case KindSet:
		parts := make([]string, len(n.Assigns))
		for i, a := range n.Assigns {
			parts[i] = a.Path.String() + " = " + src(a.Value)
		}
		return strings.Join(parts, "; ")
	case KindIf:
		return src(n.Cond)
	case KindWhile:
		return src(n.Cond) + " max " + strconv.Itoa(n.Max)
	case KindFor:
		return n.Var + " in " + src(n.Iter)
	case KindStep, KindStepEnd:
		return strconv.Quote(n.Name)
	case KindParallel:
		return n.Name
	case KindCatch:
		return n.Var
	case KindSwitch, KindTry, KindJoin, KindEnd:
		return ""
	}
	// Registered kinds: the word and the positional argument, or else what
	// the kind's Detail shows (the model a model node calls).
	parts := make([]string, 0, 2)
	if n.Word != "" {
		parts = append(parts, n.Word)
	}
	if s := src(n.Arg); s != "" {
		parts = append(parts, s)
	} else if n.Word == "" && n.Spec != nil && n.Spec.Detail != nil {
		if d := n.Spec.Detail(n); d != "" {
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, " ")
}

// truncate puts s on one line, whitespace runs collapsed, and cuts it to
// detailRunes runes with an ellipsis.
func truncate(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= detailRunes {
		return s
	}
	r := []rune(s)
	return string(r[:detailRunes-1]) + "…"
}

// mermaidText escapes s for a quoted Mermaid label: quotes, markup and the
// characters Mermaid's own entity codes use become entity codes.
var mermaidText = strings.NewReplacer(
	`#`, "#35;",
	`"`, "#quot;",
	`&`, "#amp;",
	`<`, "#lt;",
	`>`, "#gt;",
	"`", "#96;",
).Replace

// mermaidComment keeps a %% comment on its one line.
func mermaidComment(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}

// dotQuote renders s as a DOT quoted string.
func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "").Replace(s) + `"`
}

// dotLabel renders a two-line vertex label.
func dotLabel(first, second string) string {
	q1, q2 := dotQuote(first), dotQuote(second)
	return q1[:len(q1)-1] + `\n` + q2[1:]
}
