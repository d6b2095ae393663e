package store

import "github.com/aguic/aguic/vm"

// Live is what learns of a run as it happens, beside the store. A field
// left nil is not called.
type Live struct {
	// Events receives each event that is not silent, with the sequence
	// number of the stored event it is, or is part of (the deltas of one
	// text message are stored joined into one event, and share its
	// number); 0 for an event that is never stored.
	Events func(seq uint64, e vm.Event) error
	// Nodes learns when the nodes of the main flow start and end. The
	// node lifecycle is not stored: only the live audience sees it.
	Nodes vm.NodeObserver
}

// observer is what Machine.Run reports to: the journal keeps and saves the
// run and passes its events on; the live audience learns of its nodes.
func (j *Journal) observer() vm.Observer {
	return vm.Observer{Events: j, Saver: j, Nodes: j.live.Nodes}
}
