package graph

import (
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/vm"
)

// The metric every drawing shares: node text is set in a 13px monospace
// font, each rune CharWidth wide, on lines LineHeight high. The SVG writer
// and the studio size text by these numbers, so a box always holds its text.
const (
	FontSize   = 13  // px, monospace
	CharWidth  = 7.8 // px per rune at FontSize
	LineHeight = 16  // px per line of text
)

// The shapes of a vertex (Vertex.Shape).
const (
	ShapeBox      = "box"      // a rectangle
	ShapeDecision = "decision" // a hexagon with pointed left and right ends (if, switch, while, for)
	ShapeSuspend  = "suspend"  // a rectangle with a double border and a pause mark: the run may suspend here
	ShapeCircle   = "circle"   // the start and end vertices
)

// The styles of an edge (Edge.Style).
const (
	StyleSolid  = "solid"
	StyleDashed = "dashed" // error edges
)

// DecisionInset is how far the left and right points of a decision reach
// beyond its text box, in px: the hexagon's corners sit DecisionInset in
// from the box's sides on its top and bottom, its points at the middle of
// its sides.
const DecisionInset = 14

// The sizes of a drawing, in px.
const (
	padX          = 10                          // text to a box's left and right sides
	padY          = 6                           // text to a box's top and bottom
	nodeHeight    = 2*LineHeight + 2*padY       // every box: two lines of text
	minNodeWidth  = 60                          // the narrowest box
	nodeGap       = 28                          // between boxes side by side
	laneGap       = 12                          // between an edge's lane and what is beside it
	laneWidth     = 4                           // an edge's lane through a layer
	layerGap      = 48                          // between layers, at the least
	groupPad      = 10                          // a group's border to what it holds
	groupLabel    = LineHeight + 4              // the band at the top of a group for its label
	labelPad      = 3                           // an edge label's text to its background's border
	labelHeight   = LineHeight + 2*labelPad     // an edge label's background
	loopReach     = 22                          // how far a self-loop reaches right of its node
	margin        = 12                          // around the whole drawing
	portSpacing   = 14                          // between the ends of edges that share a side
	circleSize    = nodeHeight                  // the diameter of the start and end circles
	sideSpread    = nodeHeight/2 - LineHeight/2 // how far right-side edge ends spread from the middle
	epsilon       = 1e-6                        // for comparing coordinates
	roundTo       = 10                          // coordinates are rounded to 1/roundTo px
	maxSweeps     = 8                           // the barycentre sweeps of the ordering
	balanceRounds = 24                          // the rounds that centre boxes between their neighbours
	unbounded     = math.MaxFloat64 / 4         // no constraint on a side
)

// Layout is a workflow's graph laid out for drawing: every vertex with its
// box, every edge as a polyline with the place of its label, every group
// as a box around its vertices. Coordinates are px from the top-left
// corner of the drawing, y growing downwards; every box and point lies in
// [0, Width] × [0, Height]. The same workflow always gives the same
// layout.
type Layout struct {
	Workflow string   `json:"workflow" doc:"The workflow's id."`
	Title    string   `json:"title,omitempty" doc:"The workflow's title."`
	Width    float64  `json:"width" doc:"The width of the drawing, in px."`
	Height   float64  `json:"height" doc:"The height of the drawing, in px."`
	Nodes    []Vertex `json:"nodes" doc:"The vertices: the start vertex, the nodes in source order, the edge targets that are no node, the end vertex."`
	Edges    []Edge   `json:"edges" doc:"The edges: from the start vertex to the entry, then each node's edges in order."`
	Groups   []Group  `json:"groups" doc:"The boxes around the blocks of steps, loops, try statements, parallel branches and handlers; a group comes before the groups inside it."`
}

// Vertex is one vertex of a layout: a node of the workflow, the start or
// end vertex, or a missing edge target.
type Vertex struct {
	ID       string            `json:"id" doc:"The node id; (start) and (end) for the start and end vertices."`
	Kind     string            `json:"kind" doc:"The node's kind; empty for the start, end and missing vertices."`
	Label    string            `json:"label" doc:"The label written in the source, if any."`
	Text     string            `json:"text" doc:"The second line of the box: the kind and a short detail, as the Mermaid and DOT drawings show it."`
	Role     string            `json:"role" enum:"node,start,end,missing" doc:"node, start, end, or missing for an edge target that is no node."`
	Shape    string            `json:"shape" enum:"box,decision,suspend,circle" doc:"How the vertex is drawn: box, decision (if, switch, while, for), suspend (the run may pause here), circle (start and end)."`
	Suspends bool              `json:"suspends" doc:"Whether the node may suspend the run."`
	Group    string            `json:"group,omitempty" doc:"The id of the innermost group holding the vertex."`
	Span     *SourceSpan       `json:"span,omitempty" doc:"Where the node's statement is in the source."`
	Keys     map[string]string `json:"keys,omitempty" doc:"The node's key = value entries as written in the source, and what a set, if, while, for or catch holds (assigns, cond, max, var, iter), its positional argument (arg) and its result path (out)."`
	X        float64           `json:"x" doc:"The left side of the box."`
	Y        float64           `json:"y" doc:"The top of the box."`
	Width    float64           `json:"width"`
	Height   float64           `json:"height"`
}

// SourceSpan is a range of a source file; lines and columns count from 1,
// the end is exclusive.
type SourceSpan struct {
	File  string    `json:"file"`
	Start SourcePos `json:"start"`
	End   SourcePos `json:"end"`
}

// SourcePos is a position in a source file.
type SourcePos struct {
	Line int `json:"line"`
	Col  int `json:"col" doc:"The column, in runes."`
}

// Edge is one edge of a layout.
type Edge struct {
	From   string       `json:"from" doc:"The id of the vertex the edge leaves."`
	To     string       `json:"to" doc:"The id of the vertex the edge enters."`
	Label  string       `json:"label" doc:"The edge's name: next, true, false, body, case N, default, branch NAME, error, or a handler's name. A next edge is drawn without its label."`
	Style  string       `json:"style" enum:"solid,dashed" doc:"solid, or dashed for error edges."`
	Back   bool         `json:"back" doc:"Whether the edge goes back up (a loop, a goto to an earlier statement); it leaves and enters its vertices on their right side."`
	Points [][2]float64 `json:"points" doc:"The polyline, [x, y] pairs: the first on the border of the vertex the edge leaves, the last on the border of the vertex it enters, where the arrowhead goes."`
	LabelX float64      `json:"labelX" doc:"The centre of the drawn label; 0 for a next edge."`
	LabelY float64      `json:"labelY" doc:"The centre of the drawn label; 0 for a next edge."`
}

// Group is a box around the vertices of a block.
type Group struct {
	ID     string  `json:"id" doc:"Unique in the layout: the kind and the statement's node id (step 4, parallel 3), a block inside it after a slash (parallel 3/branch pros, try 5/catch), or the node id and handler for a handler's block (confirm/on result)."`
	Kind   string  `json:"kind" enum:"step,loop,try,catch,parallel,branch,handler" doc:"step, loop, try, catch, parallel, branch or handler."`
	Label  string  `json:"label" doc:"The text drawn at the top of the box."`
	Parent string  `json:"parent,omitempty" doc:"The id of the group holding this one."`
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// LayOut lays w's graph out: layers from the start vertex down, the nodes of
// each layer ordered to cross few edges, groups kept together, edges
// routed between the boxes.
func LayOut(w *vm.Workflow) *Layout {
	m := newModel(w)
	l := &Layout{Workflow: w.ID, Title: w.Title}
	l.Nodes = make([]Vertex, len(m.vertices))
	for i, v := range m.vertices {
		l.Nodes[i] = describe(m, v)
	}
	l.Edges = make([]Edge, len(m.edges))
	for i, e := range m.edges {
		style := StyleSolid
		if dashed(e.label) {
			style = StyleDashed
		}
		l.Edges[i] = Edge{From: m.vertices[e.from].id, To: m.vertices[e.to].id, Label: e.label, Style: style}
	}
	l.Groups = make([]Group, len(m.groups))
	for i, g := range m.groups {
		l.Groups[i] = Group{ID: g.id, Kind: g.kind, Label: g.label}
		if g.parent >= 0 {
			l.Groups[i].Parent = m.groups[g.parent].id
		}
	}
	newLayering(m, l).run()
	return l
}

// WriteJSON writes the layouts of the workflows as an indented JSON
// array, one Layout per workflow.
func WriteJSON(w io.Writer, wfs ...*vm.Workflow) error {
	layouts := make([]*Layout, len(wfs))
	for i, wf := range wfs {
		layouts[i] = LayOut(wf)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(layouts)
}

// describe is what a layout says of a vertex besides its place.
func describe(m *model, v vertex) Vertex {
	out := Vertex{ID: v.id, Role: v.role, Shape: ShapeBox, Height: nodeHeight}
	if v.group >= 0 {
		out.Group = m.groups[v.group].id
	}
	switch v.role {
	case RoleStart, RoleEnd:
		out.Shape, out.Text = ShapeCircle, v.role
		out.Width, out.Height = circleSize, circleSize
		return out
	case RoleMissing:
		out.Text = RoleMissing
		out.Width = boxWidth(v.id, out.Text)
		return out
	}
	n := v.node
	out.Kind, out.Label, out.Text, out.Suspends = n.Kind, n.Label, n.Text(), n.Suspends
	switch {
	case n.Suspends:
		out.Shape = ShapeSuspend
	case isDecision(n.Kind):
		out.Shape = ShapeDecision
	}
	out.Width = boxWidth(n.ID, out.Text)
	if out.Shape == ShapeDecision {
		out.Width += 2 * DecisionInset
	}
	if n.Span.Start.IsValid() {
		out.Span = spanOf(n.Span)
	}
	out.Keys = keys(n)
	return out
}

// boxWidth is the width of a box showing two lines of text.
func boxWidth(first, second string) float64 {
	return max(minNodeWidth, max(textWidth(first), textWidth(second))+2*padX)
}

// textWidth is the width of s in the shared metric.
func textWidth(s string) float64 { return float64(utf8.RuneCountInString(s)) * CharWidth }

func spanOf(s diag.Span) *SourceSpan {
	return &SourceSpan{File: s.File, Start: SourcePos{Line: s.Start.Line, Col: s.Start.Col}, End: SourcePos{Line: s.End.Line, Col: s.End.Col}}
}

// keys are a node's entries as written, and what its kind holds outside
// them.
func keys(n *vm.Node) map[string]string {
	out := make(map[string]string, len(n.Keys)+2)
	for k, v := range n.Keys {
		if v != nil {
			out[k] = v.Source
		}
	}
	put := func(k, v string) {
		if _, ok := out[k]; !ok && v != "" {
			out[k] = v
		}
	}
	if len(n.Assigns) > 0 {
		lines := make([]string, len(n.Assigns))
		for i, a := range n.Assigns {
			lines[i] = a.Path.String() + " = " + source(a.Value)
		}
		put("assigns", strings.Join(lines, "\n"))
	}
	put("cond", source(n.Cond))
	put("iter", source(n.Iter))
	put("var", n.Var)
	if n.Kind == vm.KindWhile && n.Max > 0 {
		put("max", strconv.Itoa(n.Max))
	}
	put("arg", source(n.Arg))
	if n.Out != nil {
		put("out", n.Out.String())
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func source(v *vm.Value) string {
	if v == nil {
		return ""
	}
	return v.Source
}

// round keeps a coordinate to a tenth of a pixel, so layouts print short
// and compare exactly.
func round(v float64) float64 { return math.Round(v*roundTo) / roundTo }
