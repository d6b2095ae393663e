package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aguic/aguic/vm"
)

// Journal is the vm.Sink of a run that a Store keeps: every event goes to
// the live sink at once (silent ones excepted) and, with the frame's delta,
// to the store when the run checkpoints, in one commit. Consecutive deltas
// of one text message, reasoning message or tool call's arguments are
// joined before they are stored, so replay yields the same text in fewer
// events.
//
// What a run writes, and when:
//
//   - before the first node that is not pure (a model, HTTP or tool
//     call) runs, or when the turn is to be made durable early
//     (Turn.Sync): its start, the run record with the turn's input and
//     the thread marked running, synced, so that nothing the turn does
//     reaches the world before its input is durable (Effect);
//   - after each node that is not pure: the frame's delta since the last
//     checkpoint and the events since, lazily;
//   - its end (Finish): the run's deltas replaced by one delta of all it
//     changed (or the whole frame, when the deltas have grown past it),
//     the last events, the outcome, synced; with the start when it was not
//     written before.
//
// The turn is durable from the first sync on, and its OnDurable callback
// learns it then: a server sends nothing of the turn before. A turn that
// runs only pure nodes is thus one commit, synced, at its end, like a
// database transaction: a crash before it leaves the thread as the turn
// found it, with nothing of the turn told to anyone or done outside, and
// the client sends the turn again.
//
// The journal holds the run's lease but does not renew or release it.
type Journal struct {
	store   Store
	ctx     context.Context
	lease   Lease
	run     Run
	hash    string
	live    Live
	now     func() time.Time
	input   turnInput
	base    int                             // the size of the thread's frame
	sizes   []int                           // the sizes of the deltas it keeps
	kept    int                             // their sum
	frames  *Frames                         // where the frame goes when the run ends, for the next run
	undo    func(seq int64) ([]byte, error) // the delta that undoes the turn, with the id counter at seq
	pending []Event
	last    vm.Event // the last pending event, decoded
	// joined holds the text of last while deltas join it: the last
	// pending event's Data is encoded again only before a commit, not at
	// every delta, which would take time quadratic in the text's length.
	joined strings.Builder
	stale  bool     // the last pending event's Data lacks deltas joined since
	hide   []string // tool calls to hide from replay
	thread Thread

	// start, while not nil, is the run's start, not written yet; begin
	// writes it, or Finish with the run's end. startMu is held while it
	// is written, since Turn.Sync may write it beside the run.
	startMu sync.Mutex
	start   *start

	// durable is set once the run's start is durable (after a sync, or
	// the commit of the run's end); onDurable, when not nil, is called at
	// a sync before the run's end.
	durable   atomic.Bool
	onDurable func()
	// release: the run's end gives the lease up in its commit
	// (Commit.Release); released once it did.
	release, released bool
}

// start is what the commit of a run's start writes besides the run record
// and its input.
type start struct {
	frame  []byte // a new frame, written as the thread's frame; nil to keep the thread's
	queued bool   // the run record exists already, queued
}

// turnInput is a run's Input: what recovery needs to run the turn again
// from its start, or to undo it.
type turnInput struct {
	// Deltas is how many frame deltas the thread had when the run started:
	// the thread as the run found it is its frame with those deltas.
	Deltas int `json:"deltas"`
	// Resume is what the run was started with (nil for a run from the top).
	Resume *vm.Resume `json:"resume,omitempty"`
	// Waiting is what the thread waited for when the run started (the run
	// that left it waiting, and its wait): a failed run leaves it waiting.
	Waiting *waiting `json:"waiting,omitempty"`
}

type waiting struct {
	RunID string          `json:"runId"`
	Wait  json.RawMessage `json:"wait,omitempty"`
}

// A thread's frame is written whole again when its deltas would outgrow
// it (or compactBytes, for a small frame), or number compactDeltas: what a
// run writes is then at most about twice what it changed, whatever the
// size of the frame, and loading a thread reads at most about twice its
// frame (or compactBytes).
const (
	compactBytes  = 8 << 10
	compactDeltas = 1000
)

// Emit keeps e for the next commit and passes it to the live sink.
func (j *Journal) Emit(e vm.Event) error {
	switch e.Type {
	case vm.HideToolCall:
		j.hide = append(j.hide, e.ToolCallID)
		return j.emitLive(0, e)
	case vm.Usage:
		return j.emitLive(0, e) // counted by the live sink, never stored
	}
	if n := len(j.pending); n > 0 && joins(j.last, e) {
		if !j.stale {
			j.joined.Reset()
			j.joined.WriteString(j.last.Delta)
			j.stale = true
		}
		j.joined.WriteString(e.Delta)
		return j.emitLive(j.thread.LastSeq+uint64(n), e)
	}
	if err := j.encodeJoined(); err != nil {
		return err
	}
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("store event %s: %w", e.Type, err)
	}
	j.pending = append(j.pending, Event{RunID: j.run.ID, Time: j.now(), Silent: e.Silent, Hidden: e.Hidden, Data: data})
	j.last = e
	return j.emitLive(j.thread.LastSeq+uint64(len(j.pending)), e)
}

func (j *Journal) emitLive(seq uint64, e vm.Event) error {
	if j.live.Events == nil || e.Silent {
		return nil
	}
	return j.live.Events(seq, e)
}

// encodeJoined encodes the last pending event again with the deltas
// joined to it since it was last encoded.
func (j *Journal) encodeJoined() error {
	if !j.stale {
		return nil
	}
	j.stale = false
	j.last.Delta = j.joined.String()
	j.joined.Reset()
	data, err := json.Marshal(j.last)
	if err != nil {
		return fmt.Errorf("store event %s: %w", j.last.Type, err)
	}
	j.pending[len(j.pending)-1].Data = data
	return nil
}

// joins reports whether e continues the text of last.
func joins(last, e vm.Event) bool {
	if last.Type != e.Type || last.Silent != e.Silent || last.Hidden != e.Hidden {
		return false
	}
	switch e.Type {
	case vm.TextContent, vm.ReasoningContent:
		return last.MessageID == e.MessageID
	case vm.ToolCallArgs:
		return last.ToolCallID == e.ToolCallID
	}
	return false
}

// Checkpoint commits the frame's delta and the events since the last
// commit. Lazy: a process crash loses nothing, and the run's end is synced
// (Finish); after a power cut, recovery runs the lost nodes again.
func (j *Journal) Checkpoint(f *vm.Frame) error {
	if err := j.begin(); err != nil {
		return err
	}
	d, err := f.Delta()
	if err != nil {
		return err
	}
	return j.commit(Commit{Delta: d, Lazy: true})
}

// Effect makes the run's start durable, unless it is already, before a
// node that is not pure runs. Safe to call beside the run's own calls
// (Turn.Sync does).
func (j *Journal) Effect() error {
	if j.durable.Load() {
		return nil
	}
	if err := j.begin(); err != nil {
		return err
	}
	if err := j.store.Sync(j.ctx); err != nil {
		return fmt.Errorf("sync run %s: %w", j.run.ID, err)
	}
	if j.durable.CompareAndSwap(false, true) && j.onDurable != nil {
		j.onDurable()
	}
	return nil
}

// begin commits the run's start, lazily, unless it is written already.
// It leaves j.thread to the run's own commits: the start adds no event.
func (j *Journal) begin() error {
	j.startMu.Lock()
	defer j.startMu.Unlock()
	if j.start == nil {
		return nil
	}
	c, err := j.startCommit()
	if err != nil {
		return err
	}
	c.Lazy = true
	if _, err := j.store.Commit(j.ctx, j.lease, c); err != nil {
		return fmt.Errorf("start run %s: %w", j.run.ID, err)
	}
	j.start = nil
	return nil
}

// startCommit is the commit of the run's start: the run record with the
// turn's input, written ahead, and the thread marked running.
func (j *Journal) startCommit() (Commit, error) {
	input, err := json.Marshal(j.input)
	if err != nil {
		return Commit{}, fmt.Errorf("store the input of run %s: %w", j.run.ID, err)
	}
	run := j.run
	run.Input = input
	return Commit{
		Checkpoint: &Thread{Status: Running, Hash: j.hash, Frame: j.start.frame, RunID: run.ID},
		Run:        &run,
		NewRun:     !j.start.queued,
	}, nil
}

// Finish commits the run's end: the last events, the run's deltas replaced
// by one (or the whole frame), what a suspended run waits for, and the
// run's outcome. A failed or cancelled run leaves the thread's frame as the
// run found it, so the conversation stays where it was: a client may send
// the turn again, or another.
func (j *Journal) Finish(f *vm.Frame, o vm.Outcome) error {
	// A Turn.Sync beside waits for the end, which makes the turn durable.
	j.startMu.Lock()
	defer j.startMu.Unlock()
	status := statusOf(o.Status)
	cp := &Thread{Status: status, Hash: j.hash, RunID: j.run.ID}
	c := Commit{Checkpoint: cp}
	var err error
	if o.Wait != nil {
		if cp.Wait, err = json.Marshal(o.Wait); err != nil {
			return err
		}
	}
	cp.WakeAt = wakeAt(o.Wait)
	if o.Status == vm.Failed || o.Status == vm.Cancelled {
		// Back to the frame the run found, but with the id counter as the
		// run left it: the failed run's events were stored and streamed,
		// and the next run must not make their ids again.
		c.Trim, c.Keep = true, j.input.Deltas
		if c.Delta, err = j.undo(f.Seq); err != nil {
			return err
		}
		if w := j.input.Waiting; w != nil {
			// The thread still waits where it waited: for the same tool
			// results or interrupt answers, which the client may send again.
			cp.Status, cp.Wait, cp.RunID = Suspended, w.Wait, w.RunID
			cp.WakeAt = waitingWake(w.Wait, j.now())
		}
	} else {
		d, err := f.RunDelta()
		if err != nil {
			return err
		}
		if j.kept+len(d) > max(j.base, compactBytes) || len(j.sizes)+1 > compactDeltas {
			if cp.Frame, err = f.Marshal(); err != nil {
				return err
			}
		} else {
			c.Trim, c.Keep, c.Delta = true, len(j.sizes), d
		}
	}
	if st := j.start; st != nil {
		// The run's start was not written: the end writes it, without the
		// input, which only recovery of a run cut short reads.
		c.NewRun = !st.queued
		if st.frame != nil && cp.Frame == nil {
			cp.Frame = st.frame // the new frame, which c.Delta changes
		}
	}
	keep := func() {
		// The next run of the thread starts from f, as the store now has it.
		next := &cached{th: j.thread, frame: f, base: j.base, sizes: slices.Clip(j.sizes)}
		if cp.Frame != nil {
			next.base, next.sizes = len(cp.Frame), nil
		}
		if c.Delta != nil {
			next.sizes = append(next.sizes, len(c.Delta))
		}
		j.frames.put(next)
	}
	outcome, err := json.Marshal(o)
	if err != nil {
		return err
	}
	// The input is kept while the run runs, for recovery; the run's events
	// keep what became of it.
	j.run.Status, j.run.Finished, j.run.Outcome, j.run.Input = status, j.now(), outcome, nil
	if o.Err != nil {
		j.run.Error = o.Err.Message
	}
	runRec := j.run
	c.Run = &runRec
	c.Release = j.release
	if err := j.commit(c); err != nil {
		j.frames.drop(j.lease.Key)
		return err
	}
	j.released = c.Release
	j.start = nil
	if o.Status == vm.Failed || o.Status == vm.Cancelled {
		j.frames.drop(j.lease.Key)
	} else {
		keep()
	}
	return nil
}

// Thread returns the thread as the last commit left it, without its frame
// and deltas.
func (j *Journal) Thread() Thread { return j.thread }

func statusOf(s vm.Status) Status {
	switch s {
	case vm.Suspended:
		return Suspended
	case vm.Failed:
		return Failed
	case vm.Cancelled:
		return Cancelled
	}
	return Finished
}

func (j *Journal) commit(c Commit) error {
	if err := j.encodeJoined(); err != nil {
		return err
	}
	c.Events = j.pending
	if len(j.hide) > 0 {
		seqs, err := j.findToolCall(j.hide)
		if err != nil {
			return err
		}
		c.Hide = seqs
	}
	t, err := j.store.Commit(j.ctx, j.lease, c)
	if err != nil {
		return fmt.Errorf("commit run %s: %w", j.run.ID, err)
	}
	j.thread, j.pending, j.hide = t, nil, nil
	if !c.Lazy {
		// The commit of the run's end: the run returns now, which says
		// more than onDurable would.
		j.durable.Store(true)
	}
	return nil
}

// findToolCall marks pending events of the tool calls hidden and returns
// the sequence numbers of their stored events.
func (j *Journal) findToolCall(ids []string) ([]uint64, error) {
	match := func(data []byte) bool {
		var e vm.Event
		if json.Unmarshal(data, &e) != nil {
			return false
		}
		for _, id := range ids {
			if e.ToolCallID == id {
				return true
			}
		}
		return false
	}
	for i := range j.pending {
		if match(j.pending[i].Data) {
			j.pending[i].Hidden = true
		}
	}
	var seqs []uint64
	after := uint64(0)
	for {
		evs, err := j.store.Events(j.ctx, j.lease.Key, after, 500)
		if errors.Is(err, ErrExpired) {
			t, terr := j.store.Thread(j.ctx, j.lease.Key)
			if terr != nil {
				return nil, terr
			}
			after = t.FirstSeq - 1
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			if !e.Hidden && match(e.Data) {
				seqs = append(seqs, e.Seq)
			}
		}
		if len(evs) < 500 {
			return seqs, nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// Decode returns the vm.Event a stored event holds.
func (e Event) Decode() (vm.Event, error) {
	var out vm.Event
	err := json.Unmarshal(e.Data, &out)
	return out, err
}

// waitingWake is when a thread that goes back to a wait it stored (JSON)
// after a failed run is to be woken: its time, while that is still to come.
// A thread whose time has come and whose run failed, the run of its wake
// included, is not woken again, which would fail again every second: it
// waits for its next request, which the node then takes.
func waitingWake(wait []byte, now time.Time) time.Time {
	var w vm.Wait
	if json.Unmarshal(wait, &w) != nil {
		return time.Time{}
	}
	if t := wakeAt(&w); t.After(now) {
		return t
	}
	return time.Time{}
}

// wakeAt is when a thread suspended on w is to be woken: its time for a
// timer, zero for anything else.
func wakeAt(w *vm.Wait) time.Time {
	if w == nil || w.Kind != vm.WaitTimer || w.Until <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(w.Until).UTC()
}
