package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aguic/aguic/vm"
)

// Journal is the vm.Sink of a run that a Store keeps: every event goes to
// the live sink at once (silent ones excepted) and, with the frame, to the
// store at each node boundary in one commit. Consecutive deltas of one text
// message, reasoning message or tool call's arguments are joined before
// they are stored, so replay yields the same text in fewer events.
//
// Use it as: NewJournal, Machine.Run with the journal as sink, Finish with
// the outcome. The journal holds the run's lease but does not renew or
// release it.
type Journal struct {
	store   Store
	ctx     context.Context
	lease   Lease
	run     Run
	hash    string
	live    vm.Sink
	now     func() time.Time
	before  []byte  // the frame as the run found it
	waiting *Thread // the thread as the run found it, when it was suspended
	pending []Event
	last    vm.Event // the last pending event, decoded
	// joined holds the text of last while deltas join it: the last
	// pending event's Data is encoded again only before a commit, not at
	// every delta, which would take time quadratic in the text's length.
	joined strings.Builder
	stale  bool     // the last pending event's Data lacks deltas joined since
	hide   []string // tool calls to hide from replay
	thread Thread
}

// NewJournal starts journaling run on the thread of lease. frame is the
// frame the run starts from (the journal puts it back if the run fails),
// bundle the program's sources, stored under hash unless nil, live
// receives events as they happen (nil for none), and now is the clock (nil
// for time.Now). It records the run as running.
func NewJournal(ctx context.Context, st Store, lease Lease, run Run, hash string, bundle []byte, frame *vm.Frame, live vm.Sink, now func() time.Time) (*Journal, error) {
	if now == nil {
		now = time.Now
	}
	before, err := frame.Marshal()
	if err != nil {
		return nil, err
	}
	j := &Journal{store: st, ctx: context.WithoutCancel(ctx), lease: lease, run: run, hash: hash, live: live, now: now, before: before}
	if len(bundle) > 0 {
		if err := st.PutSource(j.ctx, hash, bundle); err != nil {
			return nil, fmt.Errorf("store the program: %w", err)
		}
	}
	j.run.Key, j.run.Status = lease.Key, Running
	if j.run.Started.IsZero() {
		j.run.Started = now()
	}
	runRec := j.run
	t, err := st.Commit(j.ctx, lease, Commit{
		Checkpoint: &Thread{Status: Running, Hash: hash, Frame: before, RunID: run.ID},
		Run:        &runRec,
		Lazy:       true, // lost in a power cut, the run never started
	})
	if err != nil {
		return nil, fmt.Errorf("start run %s: %w", run.ID, err)
	}
	j.thread = t
	return j, nil
}

// SeqSink is a live sink that also learns each event's sequence number:
// the Seq of the stored event it is, or is part of (the deltas of a text
// message joined into one stored event share its number).
type SeqSink interface {
	EmitSeq(seq uint64, e vm.Event) error
}

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
	if j.live == nil || e.Silent {
		return nil
	}
	if s, ok := j.live.(SeqSink); ok {
		return s.EmitSeq(seq, e)
	}
	return j.live.Emit(e)
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

// Checkpoint commits the frame and the events since the last commit.
func (j *Journal) Checkpoint(f *vm.Frame) error {
	frame, err := f.Marshal()
	if err != nil {
		return err
	}
	// Lazy: a process crash loses nothing, and the run's end is synced
	// (Finish); after a power cut, recovery runs the lost nodes again.
	return j.commit(Commit{Checkpoint: &Thread{Status: Running, Hash: j.hash, Frame: frame, RunID: j.run.ID}, Lazy: true})
}

// Finish commits the run's end: the last events, the frame, what a
// suspended run waits for, and the run's outcome. A failed run leaves the
// thread's frame as the run found it, so the conversation stays where it
// was: a client may send the turn again.
func (j *Journal) Finish(f *vm.Frame, o vm.Outcome) error {
	status := statusOf(o.Status)
	frame, err := f.Marshal()
	if err != nil {
		return err
	}
	cp := &Thread{Status: status, Hash: j.hash, Frame: frame, RunID: j.run.ID}
	if o.Wait != nil {
		if cp.Wait, err = json.Marshal(o.Wait); err != nil {
			return err
		}
	}
	if o.Status == vm.Failed {
		// Back to the frame the run found, but with the id counter as the
		// run left it: the failed run's events were stored and streamed,
		// and the next run must not make their ids again.
		if cp.Frame, err = j.rollback(f); err != nil {
			return err
		}
		if w := j.waiting; w != nil {
			// The thread still waits where it waited: for the same tool
			// results or interrupt answers, which the client may send again.
			cp.Status, cp.Wait, cp.RunID = Suspended, w.Wait, w.RunID
		}
	}
	outcome, err := json.Marshal(o)
	if err != nil {
		return err
	}
	j.run.Status, j.run.Finished, j.run.Outcome = status, j.now(), outcome
	if o.Err != nil {
		j.run.Error = o.Err.Message
	}
	runRec := j.run
	return j.commit(Commit{Checkpoint: cp, Run: &runRec})
}

// rollback returns the frame the run started from, with f's id counter.
func (j *Journal) rollback(f *vm.Frame) ([]byte, error) {
	before, err := vm.UnmarshalFrame(j.before)
	if err != nil {
		return nil, err
	}
	before.Seq = max(before.Seq, f.Seq)
	return before.Marshal()
}

// Thread returns the thread as the last commit left it.
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
