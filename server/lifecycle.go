package server

import (
	"sync"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// NodeLifecycleActivity is the activityType of the node-lifecycle
// activity a run streams when Config.NodeLifecycle is on, or its request
// asks for it (forwardedProps.aguic.nodeEvents).
const NodeLifecycleActivity = "graph.node.lifecycle"

// The phases of a node in the node-lifecycle activity.
const (
	phaseStart    = "start"    // the node began to run
	phaseComplete = "complete" // it ran to its end
	phaseError    = "error"    // it failed (or the run was cancelled in it)
)

// lifecycle streams the lifecycle of the nodes of a run's main flow, so a
// UI can highlight the node that runs:
// one activity message per run, "activity:lifecycle-<runId>", whose
// content is {node: {nodeId, kind, label?, text, phase, next?, error?,
// code?}}. The first node's start is an ACTIVITY_SNAPSHOT that creates the
// message; every later change is an ACTIVITY_DELTA that adds /node. A node that suspends the run stays at "start".
//
// Every run of the server has one, off until someone wants it: the
// server's configuration, the run's request, or a client that follows the
// run in this process (enable). Once on, its frames are the run's, marked
// as node frames: each stream of the run shows them or leaves them out as
// its client asked. A lifecycle turned on while a node runs starts with
// that node's start.
//
// The lifecycle is live only: it is not stored, so replay and history
// never show it, and its frames carry no id.
type lifecycle struct {
	run       *run
	messageID string

	mu   sync.Mutex // the vm calls in order; enable comes from a follower
	on   bool
	sent bool     // the snapshot went out
	cur  *vm.Node // the node that started and has not ended; nil between nodes
}

// live is what streams r as it runs: its events, and the lifecycle of its
// nodes, on from the start when the server is configured for it, nodes is
// set or a follower asked for it already.
func (s *Server) live(r *run, nodes bool) store.Live {
	l := &lifecycle{run: r, messageID: vm.ActivityPrefix + "lifecycle-" + r.id}
	r.mu.Lock()
	l.on = nodes || s.cfg.NodeLifecycle || r.wantNodes
	r.nodes = l
	r.mu.Unlock()
	return store.Live{Events: r.EmitSeq, Nodes: l}
}

// enableNodes turns the lifecycle of r's nodes on for a follower that
// wants it: at once when the run executes, else once it starts.
func (r *run) enableNodes() {
	r.mu.Lock()
	r.wantNodes = true
	l := r.nodes
	r.mu.Unlock()
	if l != nil {
		l.enable()
	}
}

// enable turns the lifecycle on, if it is not, starting with the node
// that runs.
func (l *lifecycle) enable() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		return
	}
	l.on = true
	if l.cur != nil {
		l.send(stateOf(l.cur, phaseStart))
	}
}

// nodeState is the value of /node.
type nodeState struct {
	NodeID string `json:"nodeId"`
	Kind   string `json:"kind"`
	Label  string `json:"label,omitempty"` // the label written in the source
	Text   string `json:"text"`            // the kind and a detail, as the workflow's graph shows it
	Phase  string `json:"phase"`
	Next   string `json:"next,omitempty"`  // the node that runs next, once this one ended
	Error  string `json:"error,omitempty"` // phase error: the message
	Code   string `json:"code,omitempty"`  // phase error: the error code
}

// lifecycleContent is the activity's content.
type lifecycleContent struct {
	Node nodeState `json:"node"`
}

// NodeStarted streams the start of n.
func (l *lifecycle) NodeStarted(n *vm.Node) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cur = n
	if l.on {
		l.send(stateOf(n, phaseStart))
	}
	return nil
}

// NodeFinished streams the end of n.
func (l *lifecycle) NodeFinished(n *vm.Node, end vm.NodeEnd) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cur = nil
	if !l.on {
		return nil
	}
	st := stateOf(n, phaseComplete)
	st.Next = end.Next
	if end.Err != nil {
		st.Phase, st.Error, st.Code = phaseError, end.Err.Message, end.Err.Code
	}
	l.send(st)
	return nil
}

func stateOf(n *vm.Node, phase string) nodeState {
	return nodeState{NodeID: n.ID, Kind: n.Kind, Label: n.Label, Text: n.Text(), Phase: phase}
}

// send streams st: the snapshot that creates the activity message, then
// deltas; l.mu is held. Like every live event, it never fails the run.
func (l *lifecycle) send(st nodeState) {
	if !l.sent {
		l.sent = true
		l.run.pushNode(agui.ActivitySnapshotEvent{MessageID: l.messageID, ActivityType: NodeLifecycleActivity, Content: lifecycleContent{Node: st}})
		return
	}
	l.run.pushNode(agui.ActivityDeltaEvent{MessageID: l.messageID, ActivityType: NodeLifecycleActivity, Patch: []agui.PatchOp{{Op: "add", Path: "/node", Value: st}}})
}
