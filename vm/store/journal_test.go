package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// registry holds the node kinds of these tests: `stream "a b c"` emits a
// text message one word at a time, `wait` suspends until resumed, `boom`
// fails, and `ask "id"` emits a tool call and, when resumed, hides it.
func registry() *vm.Registry {
	r := vm.NewRegistry()
	r.AddKind(&vm.KindSpec{Name: "stream", Doc: "Streams words.", Example: `stream "a b"`,
		Arg: &vm.ArgSpec{Name: "text", Type: vm.TypeString, Required: true},
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			v, _ := c.Arg()
			id := c.NextID("msg")
			c.Emit(vm.Event{Type: vm.TextStart, MessageID: id, Role: "assistant"})
			for _, w := range []rune(vm.Text(v)) {
				c.Emit(vm.Event{Type: vm.TextContent, MessageID: id, Delta: string(w)})
			}
			return vm.Step{}, c.Emit(vm.Event{Type: vm.TextEnd, MessageID: id})
		}})
	r.AddKind(&vm.KindSpec{Name: "wait", Doc: "Waits.", Example: `w: wait`, Suspend: vm.SuspendAlways, Convo: true,
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			if c.Resume == nil {
				return vm.Step{Wait: &vm.Wait{Kind: vm.WaitUser}}, nil
			}
			return vm.Step{}, nil
		}})
	r.AddKind(&vm.KindSpec{Name: "boom", Doc: "Fails.", Example: `boom`,
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			return vm.Step{}, vm.Errorf(vm.ErrNode, "boom")
		}})
	r.AddKind(&vm.KindSpec{Name: "ask", Doc: "Calls a tool.", Example: `t: ask "x"`, Suspend: vm.SuspendAlways, Convo: true,
		Arg: &vm.ArgSpec{Name: "id", Type: vm.TypeString, Required: true},
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			v, _ := c.Arg()
			id := vm.Text(v)
			if c.Resume == nil {
				c.Emit(vm.Event{Type: vm.ToolCallStart, ToolCallID: id, ToolCallName: "pick"})
				c.Emit(vm.Event{Type: vm.ToolCallEnd, ToolCallID: id})
				return vm.Step{Wait: &vm.Wait{Kind: vm.WaitTool, ToolCallIDs: []string{id}}}, nil
			}
			return vm.Step{}, c.Emit(vm.Event{Type: vm.HideToolCall, ToolCallID: id})
		}})
	return r
}

const program = `wf 1
workflow chat {
  conversation = true
  flow {
    top: set $turn = ($turn ?? 0) + 1
    stream "turn <<$turn>>"
    if $agent.fail == true {
      boom
    }
    w: wait
    goto top
  }
}
workflow tools {
  conversation = true
  flow {
    t: ask "call-1"
    stream "done"
  }
}
`

type env struct {
	st      *badger.Store
	m       *vm.Machine
	bundle  []byte
	ctx     context.Context
	runs    int
	machine func(string) (*vm.Machine, error)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srcs := []compiler.Source{{Name: "p.wf", Text: []byte(program)}}
	reg := registry()
	prog, diags := compiler.Compile(reg, srcs...)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	bundle, _ := compiler.Bundle(srcs)
	return &env{st: st, m: &vm.Machine{Program: prog, Registry: reg}, bundle: bundle, ctx: context.Background()}
}

func (e *env) exec(t *testing.T, key store.Key, resume *vm.Resume) (vm.Outcome, store.Thread) {
	t.Helper()
	e.runs++
	o, th, err := store.Execute(e.ctx, e.st, store.Request{
		Key: key, Owner: "test", RunID: fmt.Sprintf("run-%d", e.runs),
		Machine: e.m, Bundle: e.bundle,
		Load: func(ctx context.Context, hash string) (*vm.Machine, error) {
			if hash == e.m.Program.Hash {
				return e.m, nil
			}
			return nil, fmt.Errorf("unknown version %s", hash)
		},
		Resume: resume,
	})
	if err != nil {
		t.Fatal(err)
	}
	return o, th
}

func events(t *testing.T, st store.Store, key store.Key) []vm.Event {
	t.Helper()
	evs, err := st.Events(context.Background(), key, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]vm.Event, len(evs))
	for i, se := range evs {
		if se.Seq != uint64(i+1) {
			t.Errorf("event %d has seq %d: the log has a gap", i, se.Seq)
		}
		if out[i], err = se.Decode(); err != nil {
			t.Fatal(err)
		}
		out[i].Hidden = se.Hidden
	}
	return out
}

func TestJournalCoalescesAndKeepsTurns(t *testing.T) {
	e := newEnv(t)
	key := store.Key{Scope: "s", Workflow: "chat", Thread: "t1"}
	o, th := e.exec(t, key, nil)
	if o.Status != vm.Suspended || th.Status != store.Suspended || th.Hash != e.m.Program.Hash {
		t.Fatalf("turn 1: %+v, thread %+v", o, th)
	}
	if src, err := e.st.Source(e.ctx, th.Hash); err != nil || len(src) == 0 {
		t.Errorf("the program version is not stored: %v", err)
	}
	evs := events(t, e.st, key)
	if len(evs) != 3 || evs[1].Type != vm.TextContent || evs[1].Delta != "turn 1" {
		t.Fatalf("stored events %+v: want START, one joined CONTENT \"turn 1\", END", evs)
	}
	o, th = e.exec(t, key, &vm.Resume{Agent: map[string]any{"who": "x"}})
	if o.Status != vm.Suspended {
		t.Fatalf("turn 2: %+v %v", o, o.Err)
	}
	evs = events(t, e.st, key)
	if len(evs) != 6 || evs[4].Delta != "turn 2" || th.LastSeq != 6 {
		t.Fatalf("after turn 2: %d events, last seq %d", len(evs), th.LastSeq)
	}
}

// TestJournalJoinsAcrossCommits: deltas joined since the last commit are
// stored whole, and deltas after a commit start a stored event of their
// own.
func TestJournalJoinsAcrossCommits(t *testing.T) {
	e := newEnv(t)
	key := store.Key{Scope: "s", Workflow: "chat", Thread: "j1"}
	turn, err := store.Begin(e.ctx, e.st, store.Request{Key: key, Owner: "o", RunID: "r1", Machine: e.m, Bundle: e.bundle})
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Abandon()
	j, f := turn.Journal(), turn.Frame()
	emit := func(evs ...vm.Event) {
		for _, ev := range evs {
			if err := j.Emit(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	delta := func(d string) vm.Event { return vm.Event{Type: vm.TextContent, MessageID: "m", Delta: d} }
	emit(vm.Event{Type: vm.TextStart, MessageID: "m", Role: "assistant"}, delta("a"), delta("b"), delta("c"))
	if err := j.Checkpoint(f); err != nil {
		t.Fatal(err)
	}
	emit(delta("d"), delta("e"), vm.Event{Type: vm.TextEnd, MessageID: "m"}, delta("x"))
	if err := j.Finish(f, vm.Outcome{Status: vm.Finished}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range events(t, e.st, key) {
		got = append(got, string(ev.Type)+":"+ev.Delta)
	}
	want := []string{"TEXT_MESSAGE_START:", "TEXT_MESSAGE_CONTENT:abc", "TEXT_MESSAGE_CONTENT:de", "TEXT_MESSAGE_END:", "TEXT_MESSAGE_CONTENT:x"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stored %q, want %q", got, want)
	}
}

func TestJournalFailedTurnLeavesTheConversation(t *testing.T) {
	e := newEnv(t)
	key := store.Key{Scope: "s", Workflow: "chat", Thread: "t1"}
	e.exec(t, key, nil)
	before, _ := e.st.Thread(e.ctx, key)
	o, th := e.exec(t, key, &vm.Resume{Agent: map[string]any{"fail": true}})
	if o.Status != vm.Failed || th.Status != store.Suspended {
		t.Fatalf("failing turn: %+v, thread %s, want failed and the thread still suspended", o, th.Status)
	}
	if string(th.Wait) != string(before.Wait) || th.RunID != before.RunID {
		t.Errorf("a failed turn must leave the thread as the turn found it: wait and run id")
	}
	after, _ := e.st.Thread(e.ctx, key)
	fb, _ := store.LoadFrame(before)
	fa, _ := store.LoadFrame(after)
	if fa.Seq <= fb.Seq {
		t.Errorf("id counter %d after a failed turn that made ids, want more than %d: the next turn would make them again", fa.Seq, fb.Seq)
	}
	fa.Seq = fb.Seq
	if a, b := fmt.Sprint(fa), fmt.Sprint(fb); a != b {
		t.Errorf("a failed turn must leave the frame as the turn found it, but for its id counter:\n%s\nwant\n%s", a, b)
	}
	run, err := e.st.Run(e.ctx, key, "run-2")
	if err != nil || run.Status != store.Failed || run.Error != "boom" {
		t.Errorf("run record %+v, %v", run, err)
	}
	o, _ = e.exec(t, key, &vm.Resume{Agent: map[string]any{}})
	if o.Status != vm.Suspended {
		t.Fatalf("the turn after a failure: %+v %v", o, o.Err)
	}
	th, _ = e.st.Thread(e.ctx, key)
	f, _ := store.LoadFrame(th)
	if f.Context["turn"] != 2 {
		t.Errorf("turn counter %v after one failed and two good turns, want 2", f.Context["turn"])
	}
}

func TestJournalHidesToolCalls(t *testing.T) {
	e := newEnv(t)
	key := store.Key{Scope: "s", Workflow: "tools", Thread: "t1"}
	if o, _ := e.exec(t, key, nil); o.Status != vm.Suspended {
		t.Fatalf("first run: %+v", o)
	}
	if o, _ := e.exec(t, key, &vm.Resume{}); o.Status != vm.Finished {
		t.Fatalf("second run: %+v %v", o, o.Err)
	}
	for _, ev := range events(t, e.st, key) {
		if ev.ToolCallID == "call-1" && !ev.Hidden {
			t.Errorf("event %s of the hidden tool call is not hidden", ev.Type)
		}
		if ev.Type == vm.HideToolCall {
			t.Errorf("HIDE_TOOL_CALL is an instruction, not an event to store")
		}
	}
}

func TestRecover(t *testing.T) {
	e := newEnv(t)
	key := store.Key{Scope: "s", Workflow: "chat", Thread: "t1"}
	// A run that saved its first node boundary and then died.
	turn, err := store.Begin(e.ctx, e.st, store.Request{Key: key, Owner: "crashed", TTL: time.Millisecond, RunID: "dead", Machine: e.m, Bundle: e.bundle})
	if err != nil {
		t.Fatal(err)
	}
	turn.Abandon()
	f := turn.Frame()
	f.Node = e.m.Program.Workflow("chat").Node("top").Next(vm.EdgeNext)
	if err := f.Set(&vm.Path{Root: "turn"}, 1); err != nil {
		t.Fatal(err)
	}
	if err := turn.Journal().Checkpoint(f); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // the dead owner's lease expires
	got, err := store.Recover(e.ctx, e.st, "recoverer", 0, func(ctx context.Context, hash string) (*vm.Machine, error) {
		if hash != e.m.Program.Hash {
			return nil, errors.New("unknown version")
		}
		return e.m, nil
	})
	if err != nil || len(got) != 1 || got[0].Err != nil || got[0].Outcome.Status != vm.Suspended {
		t.Fatalf("Recover = %+v, %v", got, err)
	}
	th, _ := e.st.Thread(e.ctx, key)
	run, _ := e.st.Run(e.ctx, key, "dead")
	if th.Status != store.Suspended || run.Status != store.Suspended {
		t.Errorf("after recovery: thread %s, run %s", th.Status, run.Status)
	}
	evs := events(t, e.st, key)
	if len(evs) != 3 || evs[1].Delta != "turn 1" {
		t.Errorf("the recovered run resumed at the wrong node: %+v", evs)
	}
}

type seqRecorder struct{ seqs []uint64 }

func (r *seqRecorder) EmitSeq(seq uint64, e vm.Event) error {
	r.seqs = append(r.seqs, seq)
	return nil
}

// TestJournalLiveSeqs: a live event's sequence number is the one of the
// stored event it is part of, across turns.
func TestJournalLiveSeqs(t *testing.T) {
	e := newEnv(t)
	key := store.Key{Scope: "s", Workflow: "chat", Thread: "t1"}
	var all []uint64
	for turn := range 2 {
		rec := &seqRecorder{}
		var resume *vm.Resume
		if turn > 0 {
			resume = &vm.Resume{}
		}
		e.runs++
		if _, _, err := store.Execute(e.ctx, e.st, store.Request{Key: key, Owner: "o", RunID: fmt.Sprint(e.runs), Machine: e.m, Bundle: e.bundle, Resume: resume, Live: store.Live{Events: rec.EmitSeq}}); err != nil {
			t.Fatal(err)
		}
		all = append(all, rec.seqs...)
	}
	// Each turn streams START, six one-letter deltas ("turn 1"), END: the
	// deltas are stored as one event.
	want := []uint64{1, 2, 2, 2, 2, 2, 2, 3, 4, 5, 5, 5, 5, 5, 5, 6}
	if fmt.Sprint(all) != fmt.Sprint(want) {
		t.Errorf("live seqs %v, want %v", all, want)
	}
}

// TestMaintain: the retention loop sweeps before it returns, then stops
// with its context.
func TestMaintain(t *testing.T) {
	e := newEnv(t)
	key := store.Key{Scope: "s", Workflow: "chat", Thread: "t1"}
	for i := range 3 {
		var resume *vm.Resume
		if i > 0 {
			resume = &vm.Resume{}
		}
		e.exec(t, key, resume)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := store.Maintain(ctx, e.st, store.Retention{MaxEvents: 2}, time.Hour, nil)
	th, err := e.st.Thread(e.ctx, key)
	if err != nil || th.FirstSeq != th.LastSeq-1 {
		t.Fatalf("after the first sweep: events %d..%d, %v; want the last 2", th.FirstSeq, th.LastSeq, err)
	}
	cancel()
	<-done
	if _, err := e.st.Events(e.ctx, key, 0, 10); !errors.Is(err, store.ErrExpired) {
		t.Errorf("events from the start after trimming to 2: %v, want ErrExpired", err)
	}
	if closed := store.Maintain(e.ctx, e.st, store.Retention{}, 0, nil); closed == nil {
		t.Error("a zero policy must return a closed channel")
	} else {
		<-closed
	}
}

// TestExecuteUnderTheCallersLease: a run under a lease its caller holds
// leaves the lease with the caller, who releases it.
func TestExecuteUnderTheCallersLease(t *testing.T) {
	e := newEnv(t)
	key := store.Key{Scope: "s", Workflow: "chat", Thread: "t1"}
	lease, err := e.st.Acquire(e.ctx, key, "server", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	o, _, err := store.Execute(e.ctx, e.st, store.Request{Key: key, Owner: "server", Lease: &lease, RunID: "r", Machine: e.m})
	if err != nil || o.Status != vm.Suspended {
		t.Fatalf("run: %+v, %v", o, err)
	}
	if _, err := e.st.Acquire(e.ctx, key, "other", time.Minute); !errors.Is(err, store.ErrBusy) {
		t.Errorf("after the run another owner took the thread (%v): the caller's lease was released", err)
	}
	if err := e.st.Release(e.ctx, lease); err != nil {
		t.Errorf("the caller cannot release its lease: %v", err)
	}
}
