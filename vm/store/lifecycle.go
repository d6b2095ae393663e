package store

import "github.com/aguic/aguic/vm"

// observed is the sink of a run whose live sink is a vm.NodeObserver: the
// journal keeps and forwards the events, and the interpreter tells the
// live sink directly when a node of the main flow starts and ends. The
// node lifecycle is not stored: only the live audience sees it.
type observed struct {
	*Journal
	vm.NodeObserver
}

// sink is what Machine.Run is given: the journal, with its live sink's
// node observer when it has one.
func (j *Journal) sink() vm.Sink {
	if o, ok := j.live.(vm.NodeObserver); ok {
		return observed{j, o}
	}
	return j
}
