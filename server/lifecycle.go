package server

import (
	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// NodeLifecycleActivity is the activityType of the node-lifecycle
// activity a run streams when Config.NodeLifecycle is on.
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
// The lifecycle is live only: it is not stored, so replay and history
// never show it, and its frames carry no id.
type lifecycle struct {
	*run
	messageID string
	sent      bool // the snapshot went out; the vm serializes the calls
}

// live is what streams r as it runs: its events, and the lifecycle of its
// nodes when the server is configured for it.
func (s *Server) live(r *run) store.Live {
	l := store.Live{Events: r.EmitSeq}
	if s.cfg.NodeLifecycle {
		l.Nodes = &lifecycle{run: r, messageID: vm.ActivityPrefix + "lifecycle-" + r.id}
	}
	return l
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
	l.send(stateOf(n, phaseStart))
	return nil
}

// NodeFinished streams the end of n.
func (l *lifecycle) NodeFinished(n *vm.Node, end vm.NodeEnd) error {
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
// deltas. Like every live event, it never fails the run.
func (l *lifecycle) send(st nodeState) {
	if !l.sent {
		l.sent = true
		l.pushEvent(0, agui.ActivitySnapshotEvent{MessageID: l.messageID, ActivityType: NodeLifecycleActivity, Content: lifecycleContent{Node: st}}, false)
		return
	}
	l.pushEvent(0, agui.ActivityDeltaEvent{MessageID: l.messageID, ActivityType: NodeLifecycleActivity, Patch: []agui.PatchOp{{Op: "add", Path: "/node", Value: st}}}, false)
}
