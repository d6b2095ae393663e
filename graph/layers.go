package graph

// The first phases of the layout: the cycles broken, a layer for every
// vertex, and the long edges cut into lanes, one per layer they cross.

// The kinds of a laid-out box (lnode.kind).
const (
	realBox = iota // a vertex of the model
	laneBox        // where an edge crosses a layer
	portBox        // where a back edge turns, beside the vertex it leaves or enters
	fillBox        // holds a group's place in a layer where it has nothing else
)

// layering is the state of one layout from the model to the drawing.
type layering struct {
	m   *model
	out *Layout

	back    []bool // per edge: it goes back up (a DFS back edge)
	self    []bool // per edge: it leaves and enters one vertex
	pre     []int  // per vertex: its DFS preorder number
	reached []bool // per vertex: reached from the start vertex

	boxes  []lnode
	layers [][]int // per layer, the boxes in order from left to right
	chains [][]int // per edge, the boxes it passes, from where it leaves to where it enters; nil for a self-loop
	up     [][]int // per box, the boxes of the layer above it is joined to
	down   [][]int // per box, the boxes of the layer below it is joined to

	glo, ghi    []int     // per group, its first and last layer
	gchain      [][]int   // per box, its groups from the outermost to the innermost
	members     [][]int   // per group, the boxes inside it at any depth
	gdepth      []int     // per group, how many groups it is in
	groupTop    []float64 // per group, the room it needs above its first layer
	groupBottom []float64 // and below its last
	rowTop      []float64 // per layer, the top of its boxes
	above       []float64 // per layer, the room the groups that begin in it take above it
	below       []float64 // per layer, the room the groups that end in it take below it

	left, right [][]neighbour // per item, the items beside it in some layer
	border      [][2]float64  // per group, its left and right sides as things stand
}

// lnode is one box of the layered graph: a vertex, an edge's lane, a
// back edge's turn, or a group's filler.
type lnode struct {
	kind   int
	vertex int // the model vertex of a real box, else -1
	edge   int // the model edge of a lane or port, else -1
	owner  int // a port's vertex box
	group  int // the innermost group, -1 for none
	layer  int
	w      float64 // width, centred on x
	right  float64 // room to the right of the box beyond w/2 (self-loops)
	x      float64 // centre
	pos    int     // index in its layer
	label  bool    // the edge's label sits on this lane
	weight float64 // how strongly it is pulled in line with its neighbours
}

func newLayering(m *model, out *Layout) *layering {
	return &layering{m: m, out: out}
}

// run lays the model out into l.out.
func (l *layering) run() {
	l.breakCycles()
	layer := l.assignLayers()
	l.cutEdges(layer)
	l.order()
	l.place()
	l.arrangeRows()
	boxes := l.groupBoxes()
	l.route(boxes)
}

// breakCycles walks the graph depth first from the start vertex, edges
// in order, then from every vertex not yet reached: an edge to a vertex on
// the walk's stack goes back up.
func (l *layering) breakCycles() {
	m := l.m
	n := len(m.vertices)
	outs := make([][]int, n)
	for i, e := range m.edges {
		outs[e.from] = append(outs[e.from], i)
	}
	l.back = make([]bool, len(m.edges))
	l.self = make([]bool, len(m.edges))
	l.pre = make([]int, n)
	l.reached = make([]bool, n)
	const (
		unseen = iota
		onStack
		done
	)
	state := make([]int8, n)
	count := 0
	type frame struct{ v, next int }
	visit := func(root int) {
		state[root] = onStack
		l.pre[root] = count
		count++
		stack := []frame{{v: root}}
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next == len(outs[f.v]) {
				state[f.v] = done
				stack = stack[:len(stack)-1]
				continue
			}
			ei := outs[f.v][f.next]
			f.next++
			t := m.edges[ei].to
			switch {
			case t == f.v:
				l.self[ei] = true
			case state[t] == onStack:
				l.back[ei] = true
			case state[t] == unseen:
				state[t] = onStack
				l.pre[t] = count
				count++
				stack = append(stack, frame{v: t})
			}
		}
	}
	visit(0)
	for v := range n {
		l.reached[v] = state[v] != unseen
	}
	for v := range n {
		if state[v] == unseen {
			visit(v)
		}
	}
}

// assignLayers gives every vertex the length of the longest path to it
// from the start vertex, back edges reversed; a vertex the start vertex
// does not reach sits just above the nearest vertex it leads to.
func (l *layering) assignLayers() []int {
	m := l.m
	n := len(m.vertices)
	succ := make([][]int, n)
	indeg := make([]int, n)
	for i, e := range m.edges {
		if l.self[i] {
			continue
		}
		a, b := e.from, e.to
		if l.back[i] {
			a, b = b, a
		}
		succ[a] = append(succ[a], b)
		indeg[b]++
	}
	// A topological order, smallest preorder first among the ready.
	topo := make([]int, 0, n)
	ready := []int{}
	for v := range n {
		if indeg[v] == 0 {
			ready = append(ready, v)
		}
	}
	for len(ready) > 0 {
		best := 0
		for i, v := range ready {
			if l.pre[v] < l.pre[ready[best]] {
				best = i
			}
		}
		v := ready[best]
		ready = append(ready[:best], ready[best+1:]...)
		topo = append(topo, v)
		for _, s := range succ[v] {
			if indeg[s]--; indeg[s] == 0 {
				ready = append(ready, s)
			}
		}
	}
	// A group ends before what follows it: an edge that leaves a group
	// enters a layer below the group's last, so a loop's exit, a join, the
	// statement after a try are drawn under the whole block.
	floor := make([]int, n)
	var layer []int
	for range n + 1 {
		layer = make([]int, n)
		copy(layer, floor)
		for _, v := range topo {
			for _, s := range succ[v] {
				layer[s] = max(layer[s], layer[v]+1)
			}
		}
		for i := len(topo) - 1; i >= 0; i-- {
			v := topo[i]
			if l.reached[v] || len(succ[v]) == 0 {
				continue
			}
			lowest := layer[succ[v][0]]
			for _, s := range succ[v] {
				lowest = min(lowest, layer[s])
			}
			layer[v] = lowest - 1
		}
		_, hi := l.ranges(layer)
		raised := false
		for i, e := range m.edges {
			if l.self[i] || l.back[i] {
				continue
			}
			for g := m.vertices[e.from].group; g >= 0 && !m.inGroup(e.to, g); g = m.groups[g].parent {
				if layer[e.to] <= hi[g] {
					floor[e.to] = max(floor[e.to], hi[g]+1)
					raised = true
				}
			}
		}
		if !raised {
			break
		}
	}
	lowest := 0
	for _, k := range layer {
		lowest = min(lowest, k)
	}
	for v := range layer {
		layer[v] -= lowest
	}
	return layer
}

// ranges returns the first and last layer of each group's vertices.
func (l *layering) ranges(layer []int) (lo, hi []int) {
	m := l.m
	lo = make([]int, len(m.groups))
	hi = make([]int, len(m.groups))
	for g := range m.groups {
		lo[g], hi[g] = len(m.vertices)+1, -len(m.vertices)-1
	}
	for v, vx := range m.vertices {
		for g := vx.group; g >= 0; g = m.groups[g].parent {
			lo[g] = min(lo[g], layer[v])
			hi[g] = max(hi[g], layer[v])
		}
	}
	return lo, hi
}

// cutEdges makes the boxes: one per vertex, one lane per layer a long
// edge crosses, a port on each end of a back edge, and a filler where a
// group has nothing in a layer of its range; and joins each to its
// neighbours in the layers above and below.
func (l *layering) cutEdges(layer []int) {
	m := l.m
	out := l.out
	for v := range m.vertices {
		l.boxes = append(l.boxes, lnode{kind: realBox, vertex: v, edge: -1, owner: -1, group: m.vertices[v].group,
			layer: layer[v], w: out.Nodes[v].Width, weight: 1})
	}
	l.glo, l.ghi = l.ranges(layer)
	l.chains = make([][]int, len(m.edges))
	for i, e := range m.edges {
		if l.self[i] {
			l.boxes[e.from].right += loopReach + laneGap
			if e.label != "" && e.label != "next" {
				l.boxes[e.from].right += textWidth(e.label) + 2*labelPad
			}
			continue
		}
		labelled := e.label != "next"
		lane := func(kind, at, group, owner int) int {
			l.boxes = append(l.boxes, lnode{kind: kind, vertex: -1, edge: i, owner: owner, group: group, layer: at, w: laneWidth, weight: 2})
			return len(l.boxes) - 1
		}
		a, b := layer[e.from], layer[e.to]
		chain := []int{e.from}
		if l.back[i] {
			chain = append(chain, lane(portBox, a, m.vertices[e.from].group, e.from))
			for k := a - 1; k > b; k-- {
				chain = append(chain, lane(laneBox, k, l.laneGroup(e, k, true), -1))
			}
			chain = append(chain, lane(portBox, b, m.common(e.from, e.to), e.to))
		} else {
			for k := a + 1; k < b; k++ {
				chain = append(chain, lane(laneBox, k, l.laneGroup(e, k, false), -1))
			}
		}
		if labelled && len(chain) > 1 {
			c := &l.boxes[chain[1]]
			c.label = true
			c.w = textWidth(e.label) + 2*labelPad
		}
		l.chains[i] = append(chain, e.to)
	}
	l.fill()
	l.layers = nil
	for i, b := range l.boxes {
		for len(l.layers) <= b.layer {
			l.layers = append(l.layers, nil)
		}
		l.layers[b.layer] = append(l.layers[b.layer], i)
	}
	l.up = make([][]int, len(l.boxes))
	l.down = make([][]int, len(l.boxes))
	for _, chain := range l.chains {
		for j := 1; j < len(chain); j++ {
			a, b := chain[j-1], chain[j]
			switch l.boxes[b].layer - l.boxes[a].layer {
			case 1:
				l.down[a] = append(l.down[a], b)
				l.up[b] = append(l.up[b], a)
			case -1:
				l.up[a] = append(l.up[a], b)
				l.down[b] = append(l.down[b], a)
			}
		}
	}
	l.gchain = make([][]int, len(l.boxes))
	l.members = make([][]int, len(m.groups))
	l.gdepth = make([]int, len(m.groups))
	for g, gr := range m.groups {
		if gr.parent >= 0 {
			l.gdepth[g] = l.gdepth[gr.parent] + 1
		}
	}
	for i, b := range l.boxes {
		var chain []int
		for g := b.group; g >= 0; g = m.groups[g].parent {
			chain = append(chain, g)
			l.members[g] = append(l.members[g], i)
		}
		for x, y := 0, len(chain)-1; x < y; x, y = x+1, y-1 {
			chain[x], chain[y] = chain[y], chain[x]
		}
		l.gchain[i] = chain
	}
}

// laneGroup is the group a lane of edge e in layer k belongs to: the
// innermost group holding either end (only the end it leaves, for a back
// edge) whose layers include k, so an edge stays inside a group while the
// group lasts.
func (l *layering) laneGroup(e edge, k int, back bool) int {
	m := l.m
	ends := []int{e.from, e.to}
	if back {
		ends = ends[:1]
	}
	best, depth := -1, -1
	for _, v := range ends {
		d := 0
		for g := m.vertices[v].group; g >= 0; g = m.groups[g].parent {
			d++
		}
		for g := m.vertices[v].group; g >= 0; g = m.groups[g].parent {
			if l.glo[g] <= k && k <= l.ghi[g] && d > depth {
				best, depth = g, d
				break
			}
			d--
		}
	}
	return best
}

// fill adds a filler for each group in each layer of its range where none
// of its boxes is, so that the group holds a place in every layer it
// spans. Inner groups first: a filler of an inner group holds its place
// for the outer ones too.
func (l *layering) fill() {
	m := l.m
	present := make([]map[int]bool, len(m.groups))
	for g := range present {
		present[g] = map[int]bool{}
	}
	mark := func(g, k int) {
		for ; g >= 0; g = m.groups[g].parent {
			present[g][k] = true
		}
	}
	for _, b := range l.boxes {
		mark(b.group, b.layer)
	}
	for g := len(m.groups) - 1; g >= 0; g-- {
		for k := l.glo[g]; k <= l.ghi[g]; k++ {
			if !present[g][k] {
				l.boxes = append(l.boxes, lnode{kind: fillBox, vertex: -1, edge: -1, owner: -1, group: g, layer: k})
				mark(g, k)
			}
		}
	}
}
