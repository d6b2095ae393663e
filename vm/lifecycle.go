package vm

// NodeObserver learns which node of the main flow runs (Observer.Nodes): a
// UI highlights it on the workflow's graph. The calls fall between the
// node's events in the order things happened: NodeStarted before the
// first event of the node, NodeFinished after its last.
//
// Only the nodes of the main flow are observed. The branches of a parallel
// node run at the same time and a called workflow is a graph of its own:
// their nodes are not reported, the parallel (or calling) node stays the
// running one until they are all done. A node that suspends the run gets
// no NodeFinished: the run stays at that node, which starts again when the
// run resumes. An error from either method fails the run.
type NodeObserver interface {
	// NodeStarted is called before node n runs.
	NodeStarted(n *Node) error
	// NodeFinished is called after node n ran to its end or failed.
	NodeFinished(n *Node, end NodeEnd) error
}

// NodeEnd is how a node of the main flow ended.
type NodeEnd struct {
	// Next is the node the flow goes on with: "" when the flow ends or the
	// run stops at this node, the catch node when a try block catches Err.
	Next string
	// Err is why the node failed, cancellation included; nil when it
	// completed.
	Err *Error
}

// Text is a node's kind and a short detail, as the workflow's drawings
// show it: `say "Hello"`, `http GET "https://…"`, `if $x > 1`.
func (n *Node) Text() string { return nodeText(n) }

// nodeStarted tells the observer that n starts. Without an observer it
// is a nil check the compiler inlines.
func (r *runner) nodeStarted(n *Node) *Error {
	if r.observer == nil {
		return nil
	}
	return r.notifyStarted(n)
}

// nodeEnded tells the observer how n ended.
func (r *runner) nodeEnded(n *Node, end NodeEnd) *Error {
	if r.observer == nil {
		return nil
	}
	return r.notifyEnded(n, end)
}

// notifyStarted and notifyEnded call the observer under the sink's lock.
func (r *runner) notifyStarted(n *Node) *Error {
	r.out.mu.Lock()
	defer r.out.mu.Unlock()
	return observerError(n, r.observer.NodeStarted(n))
}

func (r *runner) notifyEnded(n *Node, end NodeEnd) *Error {
	r.out.mu.Lock()
	defer r.out.mu.Unlock()
	return observerError(n, r.observer.NodeFinished(n, end))
}

func observerError(n *Node, err error) *Error {
	if err == nil {
		return nil
	}
	return &Error{Code: ErrInternal, Message: "observing the node failed: " + err.Error(), NodeID: n.ID, Span: n.Span}
}

// ended tells the observer how n ended and returns o, the run's outcome at
// n, unless the observer failed a run that had not.
func (r *runner) ended(n *Node, end NodeEnd, o Outcome) Outcome {
	if e := r.nodeEnded(n, end); e != nil && o.Status != Failed {
		return failed(e)
	}
	return o
}
