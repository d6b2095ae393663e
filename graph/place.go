package graph

import "math"

// An item is a box, or a group's box as a whole: box i is item i, group g
// is item len(boxes)+g. Items side by side in a layer keep apart.

// neighbour is an item beside another in some layer, and the room to keep
// between their sides.
type neighbour struct {
	item int
	room float64
}

// place gives every box its x. The items of each layer keep their order
// and their room: boxes apart, a group's boxes inside its box, a group's
// box clear of every item beside it in any layer it spans. Every box is
// first packed to the left, then moved, round after round and as far as
// that allows, to the mean of the boxes it is joined to, so that edges run
// straight and a decision sits above its branches.
func (l *layering) place() {
	l.neighbours(true)
	if !l.pack() {
		// Groups in orders that contradict each other across layers: keep
		// to each layer's own order, which never does.
		l.neighbours(false)
		l.pack()
	}
	l.border = make([][2]float64, len(l.m.groups))
	for g := range l.m.groups {
		l.measure(g)
	}
	cols := l.columns()
	for round := range balanceRounds {
		for j := range l.layers {
			k := j
			if round%2 == 1 {
				k = len(l.layers) - 1 - j
			}
			layer := l.layers[k]
			for p := range layer {
				i := layer[p]
				if round%4 >= 2 {
					i = layer[len(layer)-1-p]
				}
				if want, ok := l.wanted(i); ok {
					l.move(i, want)
				}
			}
		}
		l.straighten(cols)
	}
}

// move puts box i as close to x as its room lets it, and reports whether
// it got to x.
func (l *layering) move(i int, x float64) bool {
	lo, hi := l.bounds(i)
	if lo > hi {
		return false
	}
	was := l.boxes[i].x
	l.boxes[i].x = min(max(x, lo), hi)
	// A group's border moves out with the box, or back in when the box
	// was what it was against.
	for _, g := range l.gchain[i] {
		left, right := l.reach(i, len(l.boxes)+g)
		b := &l.border[g]
		if math.Abs(was-left-b[0]) < epsilon || math.Abs(was+right-b[1]) < epsilon {
			l.measure(g)
			continue
		}
		b[0], b[1] = min(b[0], l.boxes[i].x-left), max(b[1], l.boxes[i].x+right)
	}
	return math.Abs(l.boxes[i].x-x) < epsilon
}

// columns are the runs of boxes that should stand in one line: each box
// joined to exactly one box below it, which is joined to no other above,
// top to bottom. A chain of statements is one, and so are the lanes of a
// long edge.
func (l *layering) columns() [][]int {
	var cols [][]int
	for i := range l.boxes {
		if len(l.up[i]) == 1 && len(l.down[l.up[i][0]]) == 1 {
			continue // not the top of a column
		}
		col := []int{i}
		for j := i; len(l.down[j]) == 1 && len(l.up[l.down[j][0]]) == 1; {
			j = l.down[j][0]
			col = append(col, j)
		}
		if len(col) > 1 {
			cols = append(cols, col)
		}
	}
	return cols
}

// straighten puts each column in one line where there is room for it, or
// else each run of lanes in it: at the mean of the boxes joined to its
// ends, or as close to that as it may; a back edge's lanes as close to its
// vertices as they may.
func (l *layering) straighten(cols [][]int) {
	for _, col := range cols {
		if l.align(col) {
			continue
		}
		for j := 0; j < len(col); {
			k := j
			for k < len(col) && l.boxes[col[k]].kind != realBox {
				k++
			}
			if k-j > 1 {
				l.align(col[j:k])
			}
			j = k + 1
		}
	}
}

// align puts the boxes of run, a part of a column, in one line, and
// reports whether there was room for it.
func (l *layering) align(run []int) bool {
	lo, hi := -unbounded, unbounded
	back := false
	for _, c := range run {
		a, b := l.bounds(c)
		lo, hi = max(lo, a), min(hi, b)
		back = back || l.boxes[c].kind == portBox
	}
	if lo > hi {
		return false
	}
	want := lo
	if !back {
		sum, n := 0.0, 0
		for _, o := range l.up[run[0]] {
			sum, n = sum+l.boxes[o].x, n+1
		}
		for _, o := range l.down[run[len(run)-1]] {
			sum, n = sum+l.boxes[o].x, n+1
		}
		if n == 0 {
			for _, c := range run {
				sum, n = sum+l.boxes[c].x, n+1
			}
		}
		want = sum / float64(n)
	}
	x := min(max(want, lo), hi)
	was := make([]float64, len(run))
	for j, c := range run {
		was[j] = l.boxes[c].x
	}
	for j, c := range run {
		if !l.move(c, x) {
			// Moving one box took the room of another: put them back.
			for k := j; k >= 0; k-- {
				l.move(run[k], was[k])
			}
			return false
		}
	}
	return true
}

// wanted is where box i would best be: the mean of the boxes it is joined
// to; the middle of its group's boxes for a filler. ok is false when
// nothing pulls it.
func (l *layering) wanted(i int) (x float64, ok bool) {
	b := l.boxes[i]
	if b.kind == fillBox {
		sum, n := 0.0, 0
		for _, o := range l.members[b.group] {
			if l.boxes[o].kind != fillBox {
				sum += l.boxes[o].x
				n++
			}
		}
		if n == 0 {
			return 0, false
		}
		return sum / float64(n), true
	}
	sum, weight := 0.0, 0.0
	for _, near := range [2][]int{l.up[i], l.down[i]} {
		for _, o := range near {
			w := l.boxes[o].weight * b.weight
			sum += l.boxes[o].x * w
			weight += w
		}
	}
	if weight == 0 {
		return 0, false
	}
	return sum / weight, true
}

// neighbours finds the items side by side: for two boxes next to each
// other in a layer, the items they are in that share a group (or none),
// the two boxes themselves when they are in the same groups. With across
// false, every pair is the two boxes, apart by the group borders between
// them: the orders of the layers alone.
func (l *layering) neighbours(across bool) {
	n := len(l.boxes) + len(l.m.groups)
	l.left = make([][]neighbour, n)
	l.right = make([][]neighbour, n)
	rooms := map[[2]int]float64{}
	var pairs [][2]int
	for _, layer := range l.layers {
		for p := 1; p < len(layer); p++ {
			u, v := layer[p-1], layer[p]
			depth := 0
			for depth < len(l.gchain[u]) && depth < len(l.gchain[v]) && l.gchain[u][depth] == l.gchain[v][depth] {
				depth++
			}
			x, y := l.itemAt(u, depth), l.itemAt(v, depth)
			room := float64(laneGap)
			if l.boxes[u].kind == realBox && l.boxes[v].kind == realBox && x == u && y == v {
				room = nodeGap
			}
			if !across {
				x, y = u, v
				if l.boxes[u].kind == realBox && l.boxes[v].kind == realBox {
					room = nodeGap
				}
				room += float64((len(l.gchain[u]) - depth + len(l.gchain[v]) - depth) * groupPad)
			}
			key := [2]int{x, y}
			if old, ok := rooms[key]; !ok {
				pairs = append(pairs, key)
				rooms[key] = room
			} else {
				rooms[key] = max(old, room)
			}
		}
	}
	for _, key := range pairs {
		l.right[key[0]] = append(l.right[key[0]], neighbour{item: key[1], room: rooms[key]})
		l.left[key[1]] = append(l.left[key[1]], neighbour{item: key[0], room: rooms[key]})
	}
}

// itemAt is the item box i is in at depth: the box itself when it is in
// no deeper group, else its group at that depth.
func (l *layering) itemAt(i, depth int) int {
	if depth == len(l.gchain[i]) {
		return i
	}
	return len(l.boxes) + l.gchain[i][depth]
}

// reach is how far box i reaches left and right of its centre within item
// y: its half width, and a group padding for each group from y in.
func (l *layering) reach(i, y int) (left, right float64) {
	b := l.boxes[i]
	left, right = b.w/2, b.w/2+b.right
	if y >= len(l.boxes) {
		pad := float64((len(l.gchain[i]) - l.gdepth[y-len(l.boxes)]) * groupPad)
		left, right = left+pad, right+pad
	}
	return left, right
}

// sides returns the left and right sides of item y as things stand.
func (l *layering) sides(y int) (left, right float64) {
	if y < len(l.boxes) {
		b := l.boxes[y]
		return b.x - b.w/2, b.x + b.w/2 + b.right
	}
	g := l.border[y-len(l.boxes)]
	return g[0], g[1]
}

// bounds returns how far left and right box i may go with everything else
// where it is: clear of the items beside it and beside each group it is in.
func (l *layering) bounds(i int) (lo, hi float64) {
	lo, hi = -unbounded, unbounded
	for j := -1; j < len(l.gchain[i]); j++ {
		y := i
		if j >= 0 {
			y = len(l.boxes) + l.gchain[i][j]
		}
		left, right := l.reach(i, y)
		for _, nb := range l.left[y] {
			_, side := l.sides(nb.item)
			lo = max(lo, side+nb.room+left)
		}
		for _, nb := range l.right[y] {
			side, _ := l.sides(nb.item)
			hi = min(hi, side-nb.room-right)
		}
	}
	return lo, hi
}

// measure sets the border of group g around its boxes.
func (l *layering) measure(g int) {
	item := len(l.boxes) + g
	b := [2]float64{unbounded, -unbounded}
	for _, i := range l.members[g] {
		left, right := l.reach(i, item)
		b[0], b[1] = min(b[0], l.boxes[i].x-left), max(b[1], l.boxes[i].x+right)
	}
	l.border[g] = b
}

// pack puts every box as far left as its room lets it: the longest paths
// through the boxes and the groups' sides, each group's left side before
// its boxes and inner groups, its right side after them, an item's right
// side before the left side of the item right of it. It reports false
// when the rooms go round in a cycle.
func (l *layering) pack() bool {
	nb := len(l.boxes)
	n := nb + 2*len(l.m.groups)
	leftOf := func(g int) int { return nb + 2*g }
	rightOf := func(g int) int { return nb + 2*g + 1 }
	type arc struct {
		to int
		d  float64
	}
	arcs := make([][]arc, n)
	indeg := make([]int, n)
	add := func(a, b int, d float64) {
		arcs[a] = append(arcs[a], arc{to: b, d: d})
		indeg[b]++
	}
	for i, b := range l.boxes {
		if b.group >= 0 {
			add(leftOf(b.group), i, groupPad+b.w/2)
			add(i, rightOf(b.group), b.w/2+b.right+groupPad)
		}
	}
	for g, gr := range l.m.groups {
		if gr.parent >= 0 {
			add(leftOf(gr.parent), leftOf(g), groupPad)
			add(rightOf(g), rightOf(gr.parent), groupPad)
		}
	}
	for x, list := range l.right {
		from, base := x, 0.0
		if x >= nb {
			from = rightOf(x - nb)
		} else {
			base = l.boxes[x].w/2 + l.boxes[x].right
		}
		for _, y := range list {
			to, d := y.item, base+y.room
			if to >= nb {
				to = leftOf(to - nb)
			} else {
				d += l.boxes[to].w / 2
			}
			add(from, to, d)
		}
	}
	at := make([]float64, n)
	queue := make([]int, 0, n)
	for v := range n {
		if indeg[v] == 0 {
			queue = append(queue, v)
		}
	}
	done := 0
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		done++
		for _, a := range arcs[v] {
			at[a.to] = max(at[a.to], at[v]+a.d)
			if indeg[a.to]--; indeg[a.to] == 0 {
				queue = append(queue, a.to)
			}
		}
	}
	for i := range l.boxes {
		l.boxes[i].x = at[i]
	}
	return done == n
}

// arrangeRows sets the top of every layer: a layer is as high as a box,
// and layers are apart by layerGap, or more where groups end and begin
// between them and need room for their borders and labels.
func (l *layering) arrangeRows() {
	m := l.m
	top := make([]float64, len(m.groups))    // room a group needs above its first layer
	bottom := make([]float64, len(m.groups)) // and below its last
	for g := len(m.groups) - 1; g >= 0; g-- {
		top[g] += groupPad + groupLabel
		bottom[g] += groupPad
		if p := m.groups[g].parent; p >= 0 {
			if l.glo[p] == l.glo[g] {
				top[p] = max(top[p], top[g])
			}
			if l.ghi[p] == l.ghi[g] {
				bottom[p] = max(bottom[p], bottom[g])
			}
		}
	}
	above := make([]float64, len(l.layers))
	below := make([]float64, len(l.layers))
	for g := range m.groups {
		above[l.glo[g]] = max(above[l.glo[g]], top[g])
		below[l.ghi[g]] = max(below[l.ghi[g]], bottom[g])
	}
	l.groupTop, l.groupBottom = top, bottom
	l.above, l.below = above, below
	l.rowTop = make([]float64, len(l.layers))
	l.rowTop[0] = above[0]
	for k := 1; k < len(l.layers); k++ {
		l.rowTop[k] = l.rowTop[k-1] + nodeHeight + max(layerGap, below[k-1]+above[k]+labelHeight+2*labelPad)
	}
}

// rect is an axis-aligned rectangle.
type rect struct{ x0, y0, x1, y1 float64 }

// groupBoxes measures the box of every group around its boxes and the
// groups inside it. A box narrower than its label is widened to the
// right, and everything right of it moved over to make room.
func (l *layering) groupBoxes() []rect {
	m := l.m
	roomy := make([]bool, len(m.groups))
	for {
		boxes, natural := l.measureGroups()
		widened := -1
		for g := len(m.groups) - 1; g >= 0; g-- {
			if !roomy[g] && boxes[g].x1 > natural[g]+epsilon {
				widened = g
				break
			}
		}
		if widened < 0 {
			return boxes
		}
		roomy[widened] = true
		shift := boxes[widened].x1 - natural[widened]
		for i := range l.boxes {
			if l.boxes[i].x > natural[widened] {
				l.boxes[i].x += shift
			}
		}
	}
}

// measureGroups returns every group's box, widened to its label, and its
// right side before the widening.
func (l *layering) measureGroups() (boxes []rect, natural []float64) {
	m := l.m
	boxes = make([]rect, len(m.groups))
	natural = make([]float64, len(m.groups))
	for g := range boxes {
		boxes[g] = rect{x0: unbounded, x1: -unbounded,
			y0: l.rowTop[l.glo[g]] - l.groupTop[g], y1: l.rowTop[l.ghi[g]] + nodeHeight + l.groupBottom[g]}
	}
	for _, b := range l.boxes {
		if b.group >= 0 {
			r := &boxes[b.group]
			r.x0 = min(r.x0, b.x-b.w/2-groupPad)
			r.x1 = max(r.x1, b.x+b.w/2+b.right+groupPad)
		}
	}
	for g := len(m.groups) - 1; g >= 0; g-- {
		natural[g] = boxes[g].x1
		boxes[g].x1 = max(boxes[g].x1, boxes[g].x0+textWidth(m.groups[g].label)+3*groupPad)
		if p := m.groups[g].parent; p >= 0 {
			boxes[p].x0 = min(boxes[p].x0, boxes[g].x0-groupPad)
			boxes[p].x1 = max(boxes[p].x1, boxes[g].x1+groupPad)
		}
	}
	return boxes, natural
}
