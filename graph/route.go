package graph

import (
	"cmp"
	"math"
	"slices"

	"github.com/aguic/aguic/vm"
)

// point is a place in the drawing.
type point [2]float64

// shape is a vertex's box as it is drawn, for where edges meet it.
type shape struct {
	kind   string
	cx, cy float64
	w, h   float64
}

// flat is the part of the top and bottom sides where edges may end.
func (s shape) flat() (lo, hi float64) {
	switch s.kind {
	case ShapeCircle:
		return s.cx - s.w/4, s.cx + s.w/4
	case ShapeDecision:
		return s.cx - s.w/2 + DecisionInset + laneWidth, s.cx + s.w/2 - DecisionInset - laneWidth
	}
	return s.cx - s.w/2 + laneWidth, s.cx + s.w/2 - laneWidth
}

// bottom is the y of the bottom side at x (x on the flat part).
func (s shape) bottom(x float64) float64 {
	if s.kind == ShapeCircle {
		return s.cy + circleY(s.w/2, x-s.cx)
	}
	return s.cy + s.h/2
}

// top is the y of the top side at x (x on the flat part).
func (s shape) top(x float64) float64 {
	if s.kind == ShapeCircle {
		return s.cy - circleY(s.w/2, x-s.cx)
	}
	return s.cy - s.h/2
}

// right is the x of the right side at y (y within the box).
func (s shape) right(y float64) float64 {
	switch s.kind {
	case ShapeCircle:
		return s.cx + circleY(s.w/2, y-s.cy)
	case ShapeDecision:
		return s.cx + s.w/2 - DecisionInset*math.Abs(y-s.cy)/(s.h/2)
	}
	return s.cx + s.w/2
}

// circleY is how far from the centre a circle of radius r reaches at
// distance d from its axis.
func circleY(r, d float64) float64 { return math.Sqrt(max(0, r*r-d*d)) }

// spread places n edge ends around the middle of [lo, hi], portSpacing
// apart or closer when the side is short.
func spread(n int, mid, lo, hi float64) []float64 {
	out := make([]float64, n)
	step := float64(portSpacing)
	if n > 1 {
		step = min(step, (hi-lo)/float64(n-1))
	}
	for j := range out {
		out[j] = min(max(mid+(float64(j)-float64(n-1)/2)*step, lo), hi)
	}
	return out
}

// route draws every edge through its lanes, places its label, and writes
// the places of everything into the layout.
func (l *layering) route(groups []rect) {
	m, out := l.m, l.out
	shapes := make([]shape, len(m.vertices))
	for v := range m.vertices {
		b := l.boxes[v]
		shapes[v] = shape{kind: out.Nodes[v].Shape, cx: b.x, cy: l.rowTop[b.layer] + nodeHeight/2, w: out.Nodes[v].Width, h: out.Nodes[v].Height}
	}
	ends := l.ports(shapes)
	paths := make([][]point, len(m.edges))
	for i, e := range m.edges {
		switch {
		case l.self[i]:
			s := shapes[e.from]
			p, q := ends[i][0], ends[i][1]
			reach := s.cx + s.w/2 + loopReach
			paths[i] = []point{p, {reach, p[1]}, {reach, q[1]}, q}
		case l.back[i]:
			chain := l.chains[i]
			p, q := ends[i][0], ends[i][1]
			path := []point{p}
			for _, c := range chain[1 : len(chain)-1] {
				b := l.boxes[c]
				top, bottom := l.rowTop[b.layer], l.rowTop[b.layer]+nodeHeight
				switch c {
				case chain[1]:
					path = append(path, point{b.x, p[1]}, point{b.x, top})
				case chain[len(chain)-2]:
					path = append(path, point{b.x, bottom}, point{b.x, q[1]})
				default:
					path = append(path, point{b.x, bottom}, point{b.x, top})
				}
			}
			paths[i] = simplify(append(path, q))
		default:
			chain := l.chains[i]
			path := []point{ends[i][0]}
			for _, c := range chain[1 : len(chain)-1] {
				b := l.boxes[c]
				path = append(path, point{b.x, l.rowTop[b.layer]}, point{b.x, l.rowTop[b.layer] + nodeHeight})
			}
			paths[i] = simplify(append(path, ends[i][1]))
		}
	}
	labels := l.placeLabels(shapes, paths)
	l.write(shapes, groups, paths, labels)
}

// ports finds where each edge leaves and enters its vertices: a forward
// edge from the bottom side to the top side, the ends sharing a side in
// the order of where they go, so they do not cross; a back edge and a
// self-loop on the right side.
func (l *layering) ports(shapes []shape) [][2]point {
	m := l.m
	ends := make([][2]point, len(m.edges))
	type end struct {
		edge  int
		rank  int     // on the right side: 0 leaving, 1 a self-loop, 2 arriving
		along float64 // where the edge goes on from this end
		at    float64 // the place on the side
	}
	outs := make([][]end, len(m.vertices))
	ins := make([][]end, len(m.vertices))
	sides := make([][]end, len(m.vertices))
	for i, e := range m.edges {
		if l.self[i] || l.back[i] {
			continue
		}
		outs[e.from] = append(outs[e.from], end{edge: i, along: l.boxes[l.chains[i][1]].x})
	}
	place := func(list []end, s shape) {
		slices.SortStableFunc(list, func(a, b end) int { return cmp.Compare(a.along, b.along) })
		lo, hi := s.flat()
		mid := s.cx
		if len(list) == 1 {
			mid = list[0].along
		}
		for j, x := range spread(len(list), mid, lo, hi) {
			list[j].at = x
		}
	}
	for v, list := range outs {
		place(list, shapes[v])
		for _, o := range list {
			ends[o.edge][0] = point{o.at, shapes[v].bottom(o.at)}
			e := m.edges[o.edge]
			along := ends[o.edge][0][0]
			if chain := l.chains[o.edge]; len(chain) > 2 {
				along = l.boxes[chain[len(chain)-2]].x
			}
			ins[e.to] = append(ins[e.to], end{edge: o.edge, along: along})
		}
	}
	for v, list := range ins {
		place(list, shapes[v])
		for _, o := range list {
			ends[o.edge][1] = point{o.at, shapes[v].top(o.at)}
		}
	}
	// The right side, from the top: back edges leaving (the nearest lane
	// highest), self-loops, back edges arriving (the nearest lane lowest).
	for i, e := range m.edges {
		switch {
		case l.self[i]:
			sides[e.from] = append(sides[e.from], end{edge: i, rank: 1}, end{edge: i, rank: 1})
		case l.back[i]:
			chain := l.chains[i]
			sides[e.from] = append(sides[e.from], end{edge: i, rank: 0, along: l.boxes[chain[1]].x})
			sides[e.to] = append(sides[e.to], end{edge: i, rank: 2, along: -l.boxes[chain[len(chain)-2]].x})
		}
	}
	for v, list := range sides {
		slices.SortStableFunc(list, func(a, b end) int { return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.along, b.along)) })
		s := shapes[v]
		ys := spread(len(list), s.cy, s.cy-sideSpread, s.cy+sideSpread)
		for j, o := range list {
			p := point{s.right(ys[j]), ys[j]}
			switch {
			case o.rank == 1 && j > 0 && list[j-1].edge == o.edge:
				ends[o.edge][1] = p
			case o.rank <= 1:
				ends[o.edge][0] = p
			default:
				ends[o.edge][1] = p
			}
		}
	}
	return ends
}

// simplify drops repeated points and the middle one of three in a line.
func simplify(path []point) []point {
	out := path[:0:0]
	for _, p := range path {
		if n := len(out); n > 0 && near(out[n-1], p) {
			continue
		}
		if n := len(out); n >= 2 && collinear(out[n-2], out[n-1], p) {
			out[n-1] = p
			continue
		}
		out = append(out, p)
	}
	return out
}

func near(p, q point) bool { return math.Abs(p[0]-q[0]) < epsilon && math.Abs(p[1]-q[1]) < epsilon }

// collinear reports whether b lies on the straight line from a to c,
// between them.
func collinear(a, b, c point) bool {
	cross := (b[0]-a[0])*(c[1]-a[1]) - (b[1]-a[1])*(c[0]-a[0])
	dot := (b[0]-a[0])*(c[0]-b[0]) + (b[1]-a[1])*(c[1]-b[1])
	return math.Abs(cross) < epsilon && dot >= 0
}

// placeLabels returns the centre of each edge's label ({0, 0} for a next
// edge): on its lane when the edge has one for it, right of a self-loop,
// else on the edge in the middle of the strip between the layers it joins
// that no group border or label takes, labels that would overlap there
// pushed apart.
func (l *layering) placeLabels(shapes []shape, paths [][]point) []point {
	m := l.m
	labels := make([]point, len(m.edges))
	strips := make([][]int, len(l.layers)) // per layer, the edges whose labels go in the strip below it
	for i, e := range m.edges {
		if e.label == vm.EdgeNext {
			continue
		}
		switch chain := l.chains[i]; {
		case l.self[i]:
			s := shapes[e.from]
			labels[i] = point{s.cx + s.w/2 + loopReach + laneGap/2 + labelWidth(e.label)/2, s.cy}
		case len(chain) > 2 && l.boxes[chain[1]].label:
			b := l.boxes[chain[1]]
			labels[i] = point{b.x, l.rowTop[b.layer] + nodeHeight/2}
		default:
			k := l.boxes[e.from].layer
			y := (l.rowTop[k] + nodeHeight + l.below[k] + l.rowTop[k+1] - l.above[k+1]) / 2
			p, q := paths[i][0], paths[i][1]
			labels[i] = point{p[0] + (q[0]-p[0])*(y-p[1])/(q[1]-p[1]), y}
			strips[k] = append(strips[k], i)
		}
	}
	for _, strip := range strips {
		slices.SortStableFunc(strip, func(a, b int) int { return cmp.Compare(labels[a][0], labels[b][0]) })
		xs := make([]float64, len(strip))
		ws := make([]float64, len(strip))
		for j, i := range strip {
			xs[j], ws[j] = labels[i][0], labelWidth(m.edges[i].label)
		}
		for j, x := range unclutter(xs, ws, labelPad) {
			labels[strip[j]][0] = x
		}
	}
	return labels
}

// unclutter moves the centres xs (sorted) of boxes of widths ws apart so
// that they are at least sep apart, each run of boxes that would overlap
// centred where its boxes wanted to be on average.
func unclutter(xs, ws []float64, sep float64) []float64 {
	type run struct {
		first, n int
		width    float64 // from the left side of the first box to the right side of the last
		sum      float64 // the sum over its boxes of where each wants the run's left side
	}
	offset := make([]float64, len(xs)) // a box's centre from its run's left side
	var runs []run
	for j, x := range xs {
		offset[j] = ws[j] / 2
		r := run{first: j, n: 1, width: ws[j], sum: x - offset[j]}
		for len(runs) > 0 {
			p := runs[len(runs)-1]
			if p.sum/float64(p.n)+p.width+sep <= r.sum/float64(r.n) {
				break
			}
			shift := p.width + sep
			for k := r.first; k < r.first+r.n; k++ {
				offset[k] += shift
			}
			r = run{first: p.first, n: p.n + r.n, width: shift + r.width, sum: p.sum + r.sum - float64(r.n)*shift}
			runs = runs[:len(runs)-1]
		}
		runs = append(runs, r)
	}
	out := make([]float64, len(xs))
	for _, r := range runs {
		left := r.sum / float64(r.n)
		for k := r.first; k < r.first+r.n; k++ {
			out[k] = left + offset[k]
		}
	}
	return out
}

// labelWidth is the width of an edge label's background.
func labelWidth(label string) float64 { return textWidth(label) + 2*labelPad }

// write puts the places into the layout, moved so the drawing starts at
// the margin, rounded.
func (l *layering) write(shapes []shape, groups []rect, paths [][]point, labels []point) {
	m, out := l.m, l.out
	bounds := rect{unbounded, unbounded, -unbounded, -unbounded}
	grow := func(r rect) {
		bounds = rect{min(bounds.x0, r.x0), min(bounds.y0, r.y0), max(bounds.x1, r.x1), max(bounds.y1, r.y1)}
	}
	for _, s := range shapes {
		grow(rect{s.cx - s.w/2, s.cy - s.h/2, s.cx + s.w/2, s.cy + s.h/2})
	}
	for _, r := range groups {
		grow(r)
	}
	for i, path := range paths {
		for _, p := range path {
			grow(rect{p[0], p[1], p[0], p[1]})
		}
		if e := m.edges[i]; e.label != vm.EdgeNext {
			w, h := labelWidth(e.label), float64(labelHeight)
			grow(rect{labels[i][0] - w/2, labels[i][1] - h/2, labels[i][0] + w/2, labels[i][1] + h/2})
		}
	}
	if len(shapes) == 0 {
		bounds = rect{}
	}
	dx, dy := margin-bounds.x0, margin-bounds.y0
	out.Width = round(bounds.x1 - bounds.x0 + 2*margin)
	out.Height = round(bounds.y1 - bounds.y0 + 2*margin)
	for v, s := range shapes {
		out.Nodes[v].X = round(s.cx - s.w/2 + dx)
		out.Nodes[v].Y = round(s.cy - s.h/2 + dy)
	}
	for g, r := range groups {
		out.Groups[g].X, out.Groups[g].Y = round(r.x0+dx), round(r.y0+dy)
		out.Groups[g].Width, out.Groups[g].Height = round(r.x1-r.x0), round(r.y1-r.y0)
	}
	for i, path := range paths {
		pts := make([][2]float64, len(path))
		for j, p := range path {
			pts[j] = [2]float64{round(p[0] + dx), round(p[1] + dy)}
		}
		out.Edges[i].Points = pts
		out.Edges[i].Back = l.back[i] || l.self[i]
		if m.edges[i].label != vm.EdgeNext {
			out.Edges[i].LabelX, out.Edges[i].LabelY = round(labels[i][0]+dx), round(labels[i][1]+dy)
		}
	}
}
