package graph

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aguic/aguic/vm"
)

// WriteMermaid draws the workflows as one Mermaid flowchart: a start
// vertex pointing at the entry, one vertex per node showing its id, kind
// and a short detail (hexagons for nodes that may suspend, rhombuses for
// decisions), a vertex per missing target, an end vertex for the edges
// that end the flow, every edge with its name ("next" edges unlabelled,
// error edges dotted), and a subgraph per group. With several workflows
// each is a subgraph titled by its title and id, and vertex names start
// with the workflow's number (w0_n1) so they are unique in the document.
func WriteMermaid(w io.Writer, wfs ...*vm.Workflow) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "flowchart TD\n")
	several := len(wfs) > 1
	models := make([]*model, len(wfs))
	names := make([][]string, len(wfs))
	for i, wf := range wfs {
		m := newModel(wf)
		models[i] = m
		prefix, indent := "", "    "
		if several {
			prefix, indent = "w"+strconv.Itoa(i)+"_", "        "
			fmt.Fprintf(b, "    subgraph w%d [\"%s\"]\n", i, mermaidText(heading(wf)))
		}
		fmt.Fprintf(b, "%s%%%% workflow %s\n", indent, mermaidComment(wf.ID))
		names[i] = make([]string, len(m.vertices))
		for v, vx := range m.vertices {
			switch vx.role {
			case RoleStart:
				names[i][v] = prefix + "start"
			case RoleEnd:
				names[i][v] = prefix + "stop"
			default:
				names[i][v] = prefix + "n" + strconv.Itoa(v-1)
			}
		}
		m.nest(b, indent, func(b *bufio.Writer, indent string, g int) {
			fmt.Fprintf(b, "%ssubgraph %sg%d [\"%s\"]\n", indent, prefix, g, mermaidText(m.groups[g].label))
		}, func(b *bufio.Writer, indent string) {
			fmt.Fprintf(b, "%send\n", indent)
		}, func(b *bufio.Writer, indent string, v int) {
			vx := m.vertices[v]
			switch vx.role {
			case RoleStart:
				fmt.Fprintf(b, "%s%s((\"start\"))\n", indent, names[i][v])
			case RoleEnd:
				fmt.Fprintf(b, "%s%s((\"end\"))\n", indent, names[i][v])
			case RoleMissing:
				fmt.Fprintf(b, "%s%s[\"%s<br/>missing\"]\n", indent, names[i][v], mermaidText(vx.id))
			default:
				open, close := "[\"", "\"]"
				switch {
				case vx.node.Suspends:
					open, close = "{{\"", "\"}}"
				case isDecision(vx.node.Kind):
					open, close = "{\"", "\"}"
				}
				fmt.Fprintf(b, "%s%s%s%s<br/>%s%s\n", indent, names[i][v], open, mermaidText(vx.id), mermaidText(vx.node.Text()), close)
			}
		})
		if several {
			fmt.Fprintf(b, "    end\n")
		}
	}
	for i, m := range models {
		for _, e := range m.edges {
			from, to := names[i][e.from], names[i][e.to]
			switch {
			case e.label == vm.EdgeNext:
				fmt.Fprintf(b, "    %s --> %s\n", from, to)
			case dashed(e.label):
				fmt.Fprintf(b, "    %s -.->|\"%s\"| %s\n", from, mermaidText(e.label), to)
			default:
				fmt.Fprintf(b, "    %s -->|\"%s\"| %s\n", from, mermaidText(e.label), to)
			}
		}
	}
	return b.Flush()
}

// WriteDOT draws the workflows as one Graphviz digraph with the vertices
// and edges of WriteMermaid, and a cluster per group. One workflow is the
// digraph, labelled with its title and id when it has a title, its
// vertices named by their ids ("1", "(start)"). With several, each is a cluster labelled with its
// title and id, and vertex names start with the workflow id and a slash
// ("chat/1", "chat/(start)") so they are unique in the document.
func WriteDOT(w io.Writer, wfs ...*vm.Workflow) error {
	b := bufio.NewWriter(w)
	several := len(wfs) > 1
	switch {
	case len(wfs) == 1 && wfs[0].Title != "":
		fmt.Fprintf(b, "digraph %s {\n    label=%s;\n    labelloc=t;\n", dotQuote(wfs[0].ID), dotQuote(heading(wfs[0])))
	case len(wfs) == 1:
		fmt.Fprintf(b, "digraph %s {\n", dotQuote(wfs[0].ID))
	default:
		fmt.Fprintf(b, "digraph \"workflows\" {\n")
	}
	fmt.Fprintf(b, "    node [shape=box];\n")
	models := make([]*model, len(wfs))
	names := make([]func(v int) string, len(wfs))
	for i, wf := range wfs {
		m := newModel(wf)
		models[i] = m
		prefix, indent := "", "    "
		if several {
			prefix, indent = wf.ID+"/", "        "
			fmt.Fprintf(b, "    subgraph \"cluster_w%d\" {\n", i)
			fmt.Fprintf(b, "        label=%s;\n        labeljust=l;\n", dotQuote(heading(wf)))
		}
		name := func(v int) string { return dotQuote(prefix + m.vertices[v].id) }
		names[i] = name
		m.nest(b, indent, func(b *bufio.Writer, indent string, g int) {
			fmt.Fprintf(b, "%ssubgraph \"cluster_w%d_g%d\" {\n%s    label=%s;\n%s    style=\"rounded,dashed\";\n",
				indent, i, g, indent, dotQuote(m.groups[g].label), indent)
		}, func(b *bufio.Writer, indent string) {
			fmt.Fprintf(b, "%s}\n", indent)
		}, func(b *bufio.Writer, indent string, v int) {
			vx := m.vertices[v]
			switch vx.role {
			case RoleStart:
				fmt.Fprintf(b, "%s%s [shape=circle, label=\"start\"];\n", indent, name(v))
			case RoleEnd:
				fmt.Fprintf(b, "%s%s [shape=doublecircle, label=\"end\"];\n", indent, name(v))
			case RoleMissing:
				fmt.Fprintf(b, "%s%s [style=dashed, label=%s];\n", indent, name(v), dotLabel(vx.id, RoleMissing))
			default:
				attrs := ""
				switch {
				case vx.node.Suspends:
					attrs = "shape=hexagon, "
				case isDecision(vx.node.Kind):
					attrs = "shape=diamond, "
				}
				fmt.Fprintf(b, "%s%s [%slabel=%s];\n", indent, name(v), attrs, dotLabel(vx.id, vx.node.Text()))
			}
		})
		if several {
			fmt.Fprintf(b, "    }\n")
		}
	}
	for i, m := range models {
		for _, e := range m.edges {
			from, to := names[i](e.from), names[i](e.to)
			switch {
			case e.label == vm.EdgeNext:
				fmt.Fprintf(b, "    %s -> %s;\n", from, to)
			case dashed(e.label):
				fmt.Fprintf(b, "    %s -> %s [label=%s, style=dashed];\n", from, to, dotQuote(e.label))
			default:
				fmt.Fprintf(b, "    %s -> %s [label=%s];\n", from, to, dotQuote(e.label))
			}
		}
	}
	fmt.Fprintf(b, "}\n")
	return b.Flush()
}

// nest writes the vertices in their groups: the vertices outside any
// group in order, each group (opened, its vertices and inner groups,
// closed) where its first vertex comes.
func (m *model) nest(b *bufio.Writer, indent string, enter func(*bufio.Writer, string, int), leave func(*bufio.Writer, string), vertex func(*bufio.Writer, string, int)) {
	var scope func(g int, indent string)
	scope = func(g int, indent string) {
		done := map[int]bool{}
		for v, vx := range m.vertices {
			// h: the group holding v that is g or directly inside g.
			h := vx.group
			for h >= 0 && m.groups[h].parent != g && h != g {
				h = m.groups[h].parent
			}
			switch {
			case h == g && vx.group == g:
				vertex(b, indent, v)
			case h >= 0 && h != g && m.groups[h].parent == g && !done[h]:
				done[h] = true
				enter(b, indent, h)
				scope(h, indent+"    ")
				leave(b, indent)
			}
		}
	}
	scope(-1, indent)
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
	"\n", " ",
	"\r", " ",
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
