package graph

import (
	"cmp"
	"slices"
)

// order arranges the boxes of each layer from left to right so that few
// edges cross: first in the order of a depth-first walk, then sweeps
// down and up the layers sorting each by the barycentre of its
// neighbours in the layer before, keeping the best arrangement seen. The
// boxes of a group stay side by side in every layer, groups side by side
// in the same order in every layer, and a back edge's port right beside
// its vertex.
func (l *layering) order() {
	m := l.m
	// first is the earliest a walk from the start reaches a box: the
	// order of the first arrangement, and of groups side by side.
	first := make([]float64, len(l.boxes))
	for i, b := range l.boxes {
		switch b.kind {
		case realBox:
			first[i] = float64(l.pre[b.vertex])
		case laneBox, portBox:
			first[i] = float64(l.pre[m.edges[b.edge].from]) + 0.5
		}
	}
	gfirst := make([]float64, len(m.groups))
	for g := range gfirst {
		gfirst[g] = float64(len(l.boxes) + len(m.vertices))
		for _, i := range l.members[g] {
			if l.boxes[i].kind != fillBox {
				gfirst[g] = min(gfirst[g], first[i])
			}
		}
	}
	for i, b := range l.boxes {
		if b.kind == fillBox {
			first[i] = gfirst[b.group]
		}
	}
	for k := range l.layers {
		l.sortLayer(k, first, gfirst)
	}
	best := l.crossings()
	saved := l.saveOrder()
	key := make([]float64, len(l.boxes))
	for sweep := range maxSweeps {
		if best == 0 {
			break
		}
		downward := sweep%2 == 0
		for j := range l.layers {
			k := j
			if !downward {
				k = len(l.layers) - 1 - j
			}
			for _, i := range l.layers[k] {
				near := l.up[i]
				if !downward {
					near = l.down[i]
				}
				key[i] = float64(l.boxes[i].pos)
				if len(near) > 0 {
					sum := 0.0
					for _, o := range near {
						sum += float64(l.boxes[o].pos)
					}
					key[i] = sum / float64(len(near))
				}
			}
			l.sortLayer(k, key, gfirst)
		}
		if c := l.crossings(); c < best {
			best, saved = c, l.saveOrder()
		}
	}
	l.layers = saved
	for _, layer := range l.layers {
		for p, i := range layer {
			l.boxes[i].pos = p
		}
	}
}

// sortLayer orders layer k by key, groups kept together: at every depth
// the boxes and the groups of a group are sorted by key (a group's key is
// the mean of its boxes' in the layer), then the groups among them put in
// the order of gfirst. Ports are put back beside their vertices.
func (l *layering) sortLayer(k int, key, gfirst []float64) {
	type item struct {
		box   int // a box, or -1 for a group
		group int
		boxes []int
		key   float64
	}
	var arrange func(depth int, boxes []int) []int
	arrange = func(depth int, boxes []int) []int {
		var items []item
		at := map[int]int{} // group → index in items
		for _, i := range boxes {
			if len(l.gchain[i]) == depth {
				items = append(items, item{box: i, group: -1, key: key[i]})
				continue
			}
			g := l.gchain[i][depth]
			j, ok := at[g]
			if !ok {
				j = len(items)
				at[g] = j
				items = append(items, item{box: -1, group: g})
			}
			items[j].boxes = append(items[j].boxes, i)
			items[j].key += key[i]
		}
		for j := range items {
			if items[j].box < 0 {
				items[j].key /= float64(len(items[j].boxes))
			}
		}
		slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(a.key, b.key) })
		// The groups keep one order in every layer.
		var slots []int
		var groups []item
		for j, it := range items {
			if it.box < 0 {
				slots = append(slots, j)
				groups = append(groups, it)
			}
		}
		slices.SortStableFunc(groups, func(a, b item) int {
			return cmp.Or(cmp.Compare(gfirst[a.group], gfirst[b.group]), cmp.Compare(a.group, b.group))
		})
		for j, s := range slots {
			items[s] = groups[j]
		}
		out := make([]int, 0, len(boxes))
		for _, it := range items {
			if it.box >= 0 {
				out = append(out, it.box)
			} else {
				out = append(out, arrange(depth+1, it.boxes)...)
			}
		}
		return out
	}
	// The current order first, so that equal keys keep it.
	layer := slices.Clone(l.layers[k])
	slices.SortStableFunc(layer, func(a, b int) int { return cmp.Compare(l.boxes[a].pos, l.boxes[b].pos) })
	var ports []int
	rest := layer[:0]
	for _, i := range layer {
		if l.boxes[i].kind == portBox {
			ports = append(ports, i)
		} else {
			rest = append(rest, i)
		}
	}
	sorted := arrange(0, rest)
	// A port goes right after its vertex or, when it is in an outer group
	// (a back edge entering a loop or a step from outside), right after
	// the group inside that one that holds its vertex. The ports in inner
	// groups go first, so the outer ones land after them.
	slices.SortStableFunc(ports, func(a, b int) int { return cmp.Compare(len(l.gchain[b]), len(l.gchain[a])) })
	for _, p := range ports {
		o := l.boxes[p].owner
		depth := len(l.gchain[p])
		at := slices.Index(sorted, o)
		if len(l.gchain[o]) > depth {
			inner := l.gchain[o][depth]
			for j, i := range sorted {
				if len(l.gchain[i]) > depth && l.gchain[i][depth] == inner {
					at = j
				}
			}
		}
		for at+1 < len(sorted) && l.boxes[sorted[at+1]].kind == portBox && l.boxes[sorted[at+1]].owner == o {
			at++
		}
		sorted = slices.Insert(sorted, at+1, p)
	}
	l.layers[k] = sorted
	for p, i := range sorted {
		l.boxes[i].pos = p
	}
}

// crossings counts the pairs of joins between adjacent layers that cross.
func (l *layering) crossings() int {
	total := 0
	var joins [][2]int
	for k := 0; k+1 < len(l.layers); k++ {
		joins = joins[:0]
		for _, i := range l.layers[k] {
			for _, j := range l.down[i] {
				joins = append(joins, [2]int{l.boxes[i].pos, l.boxes[j].pos})
			}
		}
		for a := range joins {
			for b := a + 1; b < len(joins); b++ {
				if (joins[a][0]-joins[b][0])*(joins[a][1]-joins[b][1]) < 0 {
					total++
				}
			}
		}
	}
	return total
}

func (l *layering) saveOrder() [][]int {
	saved := make([][]int, len(l.layers))
	for k, layer := range l.layers {
		saved[k] = slices.Clone(layer)
	}
	return saved
}
