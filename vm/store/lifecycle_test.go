package store_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// observingSink learns of a run's events and its nodes.
type observingSink struct{ lines []string }

func (o *observingSink) EmitSeq(seq uint64, e vm.Event) error {
	if e.Type != vm.TextContent {
		o.lines = append(o.lines, fmt.Sprintf("%d %s", seq, e.Type))
	}
	return nil
}

func (o *observingSink) NodeStarted(n *vm.Node) error {
	o.lines = append(o.lines, "> "+n.ID)
	return nil
}

func (o *observingSink) NodeFinished(n *vm.Node, end vm.NodeEnd) error {
	o.lines = append(o.lines, "< "+n.ID+" -> "+end.Next)
	return nil
}

// TestExecuteObservesNodes: a live audience that observes nodes learns of them
// between the events, which the journal numbers and stores as ever; the
// node lifecycle itself is not stored.
func TestExecuteObservesNodes(t *testing.T) {
	e := newEnv(t)
	key := store.Key{Scope: "s", Workflow: "chat", Thread: "t"}
	live := &observingSink{}
	o, th, err := store.Execute(e.ctx, e.st, store.Request{Key: key, Owner: "o", RunID: "r", Machine: e.m, Bundle: e.bundle, Live: store.Live{Events: live.EmitSeq, Nodes: live}})
	if err != nil || o.Status != vm.Suspended {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	want := strings.Join([]string{
		"> top", "< top -> 2",
		"> 2", "1 TEXT_MESSAGE_START", "3 TEXT_MESSAGE_END", "< 2 -> 3",
		"> 3", "< 3 -> w",
		"> w",
	}, "\n")
	if got := strings.Join(live.lines, "\n"); got != want {
		t.Errorf("live:\n%s\nwant:\n%s", got, want)
	}
	if evs := events(t, e.st, key); len(evs) != 3 || th.LastSeq != 3 {
		t.Errorf("stored %d events (last seq %d), want the 3 of the text message", len(evs), th.LastSeq)
	}
}

// TestExecuteEvents: the sink Request.Events puts between the run and its
// journal sees every event first, and what it adds is the run's: stored,
// numbered and passed to the live audience in its place.
func TestExecuteEvents(t *testing.T) {
	e := newEnv(t)
	key := store.Key{Scope: "s", Workflow: "chat", Thread: "t"}
	live := &observingSink{}
	var seen []vm.EventType
	wrap := func(next vm.Sink) vm.Sink {
		return vm.SinkFunc(func(ev vm.Event) error {
			if ev.Type != vm.TextContent {
				seen = append(seen, ev.Type)
			}
			if ev.Type == vm.TextStart {
				if err := next.Emit(vm.Event{Type: vm.Custom, Name: "before"}); err != nil {
					return err
				}
			}
			return next.Emit(ev)
		})
	}
	_, th, err := store.Execute(e.ctx, e.st, store.Request{Key: key, Owner: "o", RunID: "r", Machine: e.m, Bundle: e.bundle, Live: store.Live{Events: live.EmitSeq}, Events: wrap})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(seen), "[TEXT_MESSAGE_START TEXT_MESSAGE_END]"; got != want {
		t.Errorf("the sink saw %s, want %s", got, want)
	}
	if got, want := strings.Join(live.lines, "\n"), "1 CUSTOM\n2 TEXT_MESSAGE_START\n4 TEXT_MESSAGE_END"; got != want {
		t.Errorf("live:\n%s\nwant:\n%s", got, want)
	}
	evs := events(t, e.st, key)
	if len(evs) != 4 || evs[0].Type != vm.Custom || evs[0].Name != "before" || th.LastSeq != 4 {
		t.Errorf("stored %+v (last seq %d), want the custom event before the text message", evs, th.LastSeq)
	}
}
