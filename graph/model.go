package graph

import (
	"strings"

	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/vm"
)

// The names of the vertices that are not nodes. No node id has
// parentheses, so they never clash with one.
const (
	StartID = "(start)"
	EndID   = "(end)"
)

// The roles of a vertex (Vertex.Role).
const (
	RoleNode    = "node"    // a node of the workflow
	RoleStart   = "start"   // the start vertex, pointing at the entry
	RoleEnd     = "end"     // the end vertex, where edges that end the flow point
	RoleMissing = "missing" // an edge target that is no node of the workflow
)

// The kinds of a group (Group.Kind).
const (
	GroupStep     = "step"     // a step block: the step node, its body, its step_end node
	GroupLoop     = "loop"     // a for or while loop: the loop node and its body
	GroupTry      = "try"      // a try statement: the try node, its body and its catch group
	GroupCatch    = "catch"    // the catch node and its block, inside the try group
	GroupParallel = "parallel" // a parallel node, its join and its branch groups
	GroupBranch   = "branch"   // one branch of a parallel
	GroupHandler  = "handler"  // the block of an `on name` handler
)

// model is a workflow's graph as every drawing shows it: the vertices, the
// edges between them and the groups that box the blocks of compound
// statements.
type model struct {
	wf       *vm.Workflow
	vertices []vertex
	edges    []edge
	groups   []group // parents before their children
}

// vertex is one box of the drawing.
type vertex struct {
	id    string
	role  string
	node  *vm.Node // nil unless role is RoleNode
	group int      // the innermost group, -1 for none
}

// edge is one arrow of the drawing, between vertex indexes.
type edge struct {
	from, to int
	label    string
}

// group is a box around the vertices of a block.
type group struct {
	id, kind, label string
	parent          int // -1 for a top-level group
}

// inGroup reports whether vertex v is in group g, directly or in a group
// inside it.
func (m *model) inGroup(v, g int) bool {
	for h := m.vertices[v].group; h >= 0; h = m.groups[h].parent {
		if h == g {
			return true
		}
	}
	return false
}

// common returns the innermost group holding both vertices u and v, or -1.
func (m *model) common(u, v int) int {
	for g := m.vertices[v].group; g >= 0; g = m.groups[g].parent {
		if m.inGroup(u, g) {
			return g
		}
	}
	return -1
}

// dashed reports whether an edge of the label is drawn dashed.
func dashed(label string) bool { return label == vm.EdgeError }

// newModel builds the graph of w: a start vertex, one vertex per node in the
// order of w.Nodes, one per edge target that is not a node (in order of
// appearance), an end vertex when some edge ends the flow; the start edge,
// then every node's edges in order; and the groups the node ids and spans
// carry.
func newModel(w *vm.Workflow) *model {
	m := &model{wf: w}
	index := make(map[string]int, len(w.Nodes)+2)
	m.vertices = append(m.vertices, vertex{id: StartID, role: RoleStart, group: -1})
	for _, n := range w.Nodes {
		index[n.ID] = len(m.vertices)
		m.vertices = append(m.vertices, vertex{id: n.ID, role: RoleNode, node: n, group: -1})
	}
	end := -1
	target := func(id string) int {
		if id == "" {
			if end < 0 {
				end = len(m.vertices)
				m.vertices = append(m.vertices, vertex{id: EndID, role: RoleEnd, group: -1})
			}
			return end
		}
		i, ok := index[id]
		if !ok {
			i = len(m.vertices)
			index[id] = i
			m.vertices = append(m.vertices, vertex{id: id, role: RoleMissing, group: -1})
		}
		return i
	}
	// The end vertex goes last: look the targets up first, then append the
	// end vertex and point the edges that end the flow at it.
	const ends = -2
	add := func(from int, e vm.Edge) {
		to := ends
		if e.To != "" {
			to = target(e.To)
		}
		m.edges = append(m.edges, edge{from: from, to: to, label: e.Label})
	}
	add(0, vm.Edge{Label: vm.EdgeNext, To: w.Entry})
	for i, n := range w.Nodes {
		for _, e := range n.Edges {
			add(i+1, e)
		}
	}
	for i := range m.edges {
		if m.edges[i].to == ends {
			m.edges[i].to = target("")
		}
	}
	m.group(index)
	return m
}

// groupOf finds the groups of the nodes: the blocks of step, for, while,
// try and parallel statements and of `on` handlers. A node belongs to the
// innermost compound statement that holds it, by its id (derived ids
// extend the id of the statement they are in: 4.1, 7.left.1,
// confirm.result.1) or, for a labelled node, by its span; which block of
// the statement it is in, by its id, by the edge that enters the block, or
// by the block of the nearest node before it in the source.
func (m *model) group(index map[string]int) {
	var containers []*vm.Node
	for _, n := range m.wf.Nodes {
		if compound(n) {
			containers = append(containers, n)
		}
	}
	if len(containers) == 0 {
		return
	}
	// inner[x] is the innermost container holding node x, or nil.
	inner := make(map[*vm.Node]*vm.Node, len(m.wf.Nodes))
	depth := make(map[*vm.Node]int, len(containers))
	for _, c := range containers {
		for _, o := range containers {
			if holds(o, c) {
				depth[c]++
			}
		}
	}
	for _, n := range m.wf.Nodes {
		for _, c := range containers {
			if holds(c, n) && (inner[n] == nil || depth[c] > depth[inner[n]]) {
				inner[n] = c
			}
		}
	}

	groups := map[string]int{} // group id → index
	var blockGroup func(c *vm.Node, block string) int
	// stmtGroup is the group of c's whole statement, or -1 for a node
	// with handlers, which has none.
	stmtGroup := func(c *vm.Node) int {
		kind, label := GroupStep, ""
		switch c.Kind {
		case vm.KindStep:
			label = c.Text()
		case vm.KindFor, vm.KindWhile:
			kind, label = GroupLoop, c.Kind
		case vm.KindTry:
			kind, label = GroupTry, vm.KindTry
		case vm.KindParallel:
			kind, label = GroupParallel, vm.KindParallel
		default:
			return -1
		}
		id := kind + " " + c.ID
		if i, ok := groups[id]; ok {
			return i
		}
		parent := -1
		if o := inner[c]; o != nil {
			parent = blockGroup(o, m.blockOf(o, c, inner))
		}
		groups[id] = len(m.groups)
		m.groups = append(m.groups, group{id: id, kind: kind, label: label, parent: parent})
		return groups[id]
	}
	// blockGroup is the group of the block of c named block ("" for the
	// statement's own group: the body of a step or loop, a try's body, a
	// parallel's node and join).
	blockGroup = func(c *vm.Node, block string) int {
		if block == "" {
			if g := stmtGroup(c); g >= 0 {
				return g
			}
			// A node with handlers has no group of its own: what is not in
			// a handler is in c's enclosing block.
			if o := inner[c]; o != nil {
				return blockGroup(o, m.blockOf(o, c, inner))
			}
			return -1
		}
		parent := stmtGroup(c)
		kind, id, label := GroupHandler, c.ID+"/on "+block, "on "+block
		switch c.Kind {
		case vm.KindTry:
			kind, label = GroupCatch, vm.KindCatch
			if catch := m.node(index, c.ID+".catch"); catch != nil && catch.Var != "" {
				label += " " + catch.Var
			}
			id = m.groups[parent].id + "/catch"
		case vm.KindParallel:
			kind, label = GroupBranch, "branch "+block
			id = m.groups[parent].id + "/" + label
		default:
			parent = blockGroup(c, "")
		}
		if i, ok := groups[id]; ok {
			return i
		}
		groups[id] = len(m.groups)
		m.groups = append(m.groups, group{id: id, kind: kind, label: label, parent: parent})
		return groups[id]
	}

	for i := range m.vertices {
		v := &m.vertices[i]
		if v.node == nil {
			continue
		}
		switch {
		case compound(v.node) && stmtGroup(v.node) >= 0:
			v.group = stmtGroup(v.node)
		case inner[v.node] != nil:
			c := inner[v.node]
			v.group = blockGroup(c, m.blockOf(c, v.node, inner))
		}
	}
	m.dropEmptyGroups()
}

// node returns the node with the given id, or nil.
func (m *model) node(index map[string]int, id string) *vm.Node {
	if i, ok := index[id]; ok {
		return m.vertices[i].node
	}
	return nil
}

// compound reports whether n's statement has blocks that are boxed: a step,
// a loop, a try, a parallel, or a node with `on` handlers.
func compound(n *vm.Node) bool {
	switch n.Kind {
	case vm.KindStep, vm.KindFor, vm.KindWhile, vm.KindTry, vm.KindParallel:
		return true
	}
	return len(handlers(n)) > 0
}

// handlers returns the handler edges of n, in order: the edges of a node of
// a registered kind besides next and error.
func handlers(n *vm.Node) []vm.Edge {
	if n.Spec == nil {
		return nil
	}
	var hs []vm.Edge
	for _, e := range n.Edges {
		if e.Label != vm.EdgeNext && e.Label != vm.EdgeError {
			hs = append(hs, e)
		}
	}
	return hs
}

// holds reports whether the statement of container c holds node n: n's id
// extends c's, or n's span lies in c's.
func holds(c, n *vm.Node) bool {
	if c == n {
		return false
	}
	if strings.HasPrefix(n.ID, c.ID+".") {
		return true
	}
	return within(n.Span, c.Span)
}

// within reports whether span a lies in span b, both real spans of one file.
func within(a, b diag.Span) bool {
	return a.Start.IsValid() && b.Start.IsValid() && a.File == b.File &&
		b.Start.Offset < b.End.Offset &&
		b.Start.Offset <= a.Start.Offset && a.End.Offset <= b.End.Offset
}

// blockOf names the block of container c that holds n: "" for the
// statement's own group, a branch or handler name, or "catch".
func (m *model) blockOf(c, n *vm.Node, inner map[*vm.Node]*vm.Node) string {
	switch c.Kind {
	case vm.KindStep, vm.KindFor, vm.KindWhile:
		return ""
	case vm.KindTry:
		catch := c.ID + ".catch"
		if n.ID == catch || strings.HasPrefix(n.ID, catch+".") {
			return "catch"
		}
		if cn := m.wf.Node(catch); cn != nil && cn.Span.Start.IsValid() && n.Span.Start.IsValid() && n.Span.Start.Offset >= cn.Span.Start.Offset {
			return "catch"
		}
		return ""
	case vm.KindParallel:
		if n.ID == c.ID+".join" {
			return ""
		}
	}
	var names []string
	for _, e := range c.Edges {
		if name, ok := strings.CutPrefix(e.Label, "branch "); ok && c.Kind == vm.KindParallel {
			names = append(names, name)
		}
	}
	if c.Kind != vm.KindParallel {
		for _, e := range handlers(c) {
			names = append(names, e.Label)
		}
	}
	// seed is the block a node of c is known to be in: by its id, or as
	// the first node of the block (the target of the edge that enters it).
	seed := func(x *vm.Node) string {
		for i, name := range names {
			if strings.HasPrefix(x.ID, c.ID+"."+name+".") {
				return name
			}
			label := name
			if c.Kind == vm.KindParallel {
				label = "branch " + name
			}
			if x.ID == c.Next(label) && x.ID != c.ID+".join" {
				return names[i]
			}
		}
		return ""
	}
	if b := seed(n); b != "" {
		return b
	}
	// A labelled node: the block of the nearest node before it that holds
	// a known place, the blocks being in source order.
	best, bestAt := "", -1
	for _, x := range m.wf.Nodes {
		if x == n || !holds(c, x) || !x.Span.Start.IsValid() || !n.Span.Start.IsValid() || x.Span.Start.Offset > n.Span.Start.Offset {
			continue
		}
		if b := seed(x); b != "" && x.Span.Start.Offset > bestAt {
			best, bestAt = b, x.Span.Start.Offset
		}
	}
	return best
}

// dropEmptyGroups removes the groups that hold no vertex, directly or in a
// group inside them (a branch or handler with an empty block), and
// renumbers the rest.
func (m *model) dropEmptyGroups() {
	used := make([]bool, len(m.groups))
	for _, v := range m.vertices {
		for g := v.group; g >= 0 && !used[g]; g = m.groups[g].parent {
			used[g] = true
		}
	}
	renum := make([]int, len(m.groups))
	var kept []group
	for i, g := range m.groups {
		renum[i] = -1
		if used[i] {
			renum[i] = len(kept)
			kept = append(kept, g)
		}
	}
	for i := range kept {
		if kept[i].parent >= 0 {
			kept[i].parent = renum[kept[i].parent]
		}
	}
	for i := range m.vertices {
		if g := m.vertices[i].group; g >= 0 {
			m.vertices[i].group = renum[g]
		}
	}
	m.groups = kept
}

// isDecision reports whether a node of kind chooses between edges by a
// condition and is drawn as a decision.
func isDecision(kind string) bool {
	switch kind {
	case vm.KindIf, vm.KindSwitch, vm.KindWhile, vm.KindFor:
		return true
	}
	return false
}
