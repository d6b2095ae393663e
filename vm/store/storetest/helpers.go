package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/aguic/aguic/vm/store"
)

// base is the first event time the checks store: whole microseconds, UTC.
var base = time.Date(2026, 3, 4, 5, 6, 7, 891000, time.UTC)

// ks formats a key for messages.
func ks(k store.Key) string { return fmt.Sprintf("{%q %q %q}", k.Scope, k.Workflow, k.Thread) }

// key builds a key.
func key(scope, workflow, thread string) store.Key {
	return store.Key{Scope: scope, Workflow: workflow, Thread: thread}
}

// mkEvents returns n events of run, whose Data names the run and i = from,
// from+1, … and whose times are base plus i milliseconds.
func mkEvents(run string, from, n int) []store.Event {
	evs := make([]store.Event, n)
	for j := range evs {
		i := from + j
		evs[j] = store.Event{
			RunID: run,
			Time:  base.Add(time.Duration(i) * time.Millisecond),
			Data:  fmt.Appendf(nil, `{"type":"CUSTOM","run":%q,"i":%d}`, run, i),
		}
	}
	return evs
}

// withSeqs returns copies of evs numbered from first on, as the store
// should return them.
func withSeqs(evs []store.Event, first uint64) []store.Event {
	out := slices.Clone(evs)
	for i := range out {
		out[i].Seq = first + uint64(i)
	}
	return out
}

// checkpoint returns a checkpoint with the given status, whose frame names
// n.
func checkpoint(status store.Status, run string, n int) *store.Thread {
	cp := &store.Thread{
		Status: status,
		Hash:   fmt.Sprintf("sha256:%064x", n),
		Frame:  fmt.Appendf(nil, `{"v":1,"node":"n%d","context":{"count":%d}}`, n, n),
		RunID:  run,
	}
	if status == store.Suspended {
		cp.Wait = fmt.Appendf(nil, `{"interrupt":"approve-%d"}`, n)
	}
	return cp
}

// mkRun returns a run record.
func mkRun(id string, k store.Key, status store.Status) *store.Run {
	r := &store.Run{ID: id, Key: k, Status: status, Started: base}
	switch status {
	case store.Finished, store.Failed, store.Cancelled:
		r.Finished = base.Add(1500 * time.Microsecond)
		r.Outcome = fmt.Appendf(nil, `{"status":%q}`, status)
	}
	if status == store.Failed {
		r.Error = "model: 500 internal error"
	}
	return r
}

func (c *tc) acquire(k store.Key, owner string, ttl time.Duration) store.Lease {
	c.Helper()
	l, err := c.s.Acquire(c.ctx, k, owner, ttl)
	if err != nil {
		c.Fatalf("Acquire(%s, %q, %v): %v", ks(k), owner, ttl, err)
	}
	if l.Key != k || l.Owner != owner {
		c.Fatalf("Acquire(%s, %q) returned a lease of %s owned by %q", ks(k), owner, ks(l.Key), l.Owner)
	}
	return l
}

func (c *tc) release(l store.Lease) {
	c.Helper()
	if err := c.s.Release(c.ctx, l); err != nil {
		c.Fatalf("Release(lease of %s, owner %q, token %d): %v", ks(l.Key), l.Owner, l.Token, err)
	}
}

func (c *tc) commit(l store.Lease, cm store.Commit) store.Thread {
	c.Helper()
	th, err := c.s.Commit(c.ctx, l, cm)
	if err != nil {
		c.Fatalf("Commit to %s (owner %q, token %d): %v", ks(l.Key), l.Owner, l.Token, err)
	}
	if th.Key != l.Key {
		c.Fatalf("Commit to %s returned the thread %s", ks(l.Key), ks(th.Key))
	}
	if th.Frame != nil || th.Deltas != nil {
		c.Errorf("Commit to %s returned a frame or deltas; it returns the thread's bookkeeping only", ks(l.Key))
	}
	// The rest of the checks compare whole threads: the frame and deltas
	// are what Thread reads.
	stored, err := c.s.Thread(c.ctx, l.Key)
	if err != nil {
		c.Fatalf("Thread(%s) after a commit: %v", ks(l.Key), err)
	}
	th.Frame, th.Deltas = stored.Frame, stored.Deltas
	return th
}

// runOf names the run create makes for k.
func runOf(k store.Key) string { return "run:" + k.Scope + ":" + k.Workflow + ":" + k.Thread }

// create acquires k, commits events in one commit with a checkpoint of
// status and a run runOf(k) of status, and releases the lease.
func (c *tc) create(k store.Key, status store.Status, events int) store.Thread {
	c.Helper()
	l := c.acquire(k, "creator", long)
	run := runOf(k)
	th := c.commit(l, store.Commit{
		Checkpoint: checkpoint(status, run, events),
		Events:     mkEvents(run, 1, events),
		Run:        mkRun(run, k, status),
	})
	c.release(l)
	return th
}

func (c *tc) thread(k store.Key) store.Thread {
	c.Helper()
	th, err := c.s.Thread(c.ctx, k)
	if err != nil {
		c.Fatalf("Thread(%s): %v", ks(k), err)
	}
	if th.Key != k {
		c.Fatalf("Thread(%s) returned the thread %s", ks(k), ks(th.Key))
	}
	return th
}

func (c *tc) events(k store.Key, after uint64, limit int) []store.Event {
	c.Helper()
	evs, err := c.s.Events(c.ctx, k, after, limit)
	if err != nil {
		c.Fatalf("Events(%s, after %d, limit %d): %v", ks(k), after, limit, err)
	}
	return evs
}

// allEvents reads a thread's whole log, from after, in pages of 1000.
func (c *tc) allEvents(k store.Key, after uint64) []store.Event {
	c.Helper()
	var all []store.Event
	for {
		evs := c.events(k, after, 1000)
		if len(evs) == 0 {
			return all
		}
		if evs[0].Seq <= after {
			c.Fatalf("Events(%s, after %d) returned Seq %d first", ks(k), after, evs[0].Seq)
		}
		all = append(all, evs...)
		after = evs[len(evs)-1].Seq
	}
}

func (c *tc) lastEvents(k store.Key, n int) []store.Event {
	c.Helper()
	evs, err := c.s.LastEvents(c.ctx, k, n)
	if err != nil {
		c.Fatalf("LastEvents(%s, %d): %v", ks(k), n, err)
	}
	return evs
}

func (c *tc) run(k store.Key, id string) store.Run {
	c.Helper()
	r, err := c.s.Run(c.ctx, k, id)
	if err != nil {
		c.Fatalf("Run(%s, %q): %v", ks(k), id, err)
	}
	return r
}

// wantErr fails the check unless err wraps target.
func (c *tc) wantErr(what string, err, target error) {
	c.Helper()
	if !errors.Is(err, target) {
		c.Errorf("%s: got error %v, want %s", what, err, errName(target))
	}
}

// errName names a store error as the code spells it.
func errName(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{
		{store.ErrNotFound, "ErrNotFound"},
		{store.ErrBusy, "ErrBusy"},
		{store.ErrLeaseLost, "ErrLeaseLost"},
		{store.ErrConflict, "ErrConflict"},
		{store.ErrExpired, "ErrExpired"},
		{store.ErrCursor, "ErrCursor"},
		{context.Canceled, "context.Canceled"},
	} {
		if err == e.err {
			return e.name
		}
	}
	return err.Error()
}

// notFound fails the check unless the thread k is gone: Thread, Events and
// LastEvents all return ErrNotFound.
func (c *tc) notFound(k store.Key, why string) {
	c.Helper()
	_, err := c.s.Thread(c.ctx, k)
	c.wantErr(fmt.Sprintf("%s: Thread(%s)", why, ks(k)), err, store.ErrNotFound)
	_, err = c.s.Events(c.ctx, k, 0, 10)
	c.wantErr(fmt.Sprintf("%s: Events(%s, 0, 10)", why, ks(k)), err, store.ErrNotFound)
	_, err = c.s.LastEvents(c.ctx, k, 10)
	c.wantErr(fmt.Sprintf("%s: LastEvents(%s, 10)", why, ks(k)), err, store.ErrNotFound)
}

// sameEvents fails the check unless got equals want, field by field.
func (c *tc) sameEvents(what string, got, want []store.Event) {
	c.Helper()
	if d := diffEvents(got, want); d != "" {
		c.Errorf("%s: %s", what, d)
	}
}

func diffEvents(got, want []store.Event) string {
	var b strings.Builder
	if len(got) != len(want) {
		fmt.Fprintf(&b, "got %d events (Seq %s), want %d (Seq %s)", len(got), seqs(got), len(want), seqs(want))
		return b.String()
	}
	for i := range got {
		if d := diffEvent(got[i], want[i]); d != "" {
			fmt.Fprintf(&b, "event %d (want Seq %d): %s; ", i, want[i].Seq, d)
		}
	}
	return strings.TrimSuffix(b.String(), "; ")
}

func diffEvent(got, want store.Event) string {
	var d []string
	if got.Seq != want.Seq {
		d = append(d, fmt.Sprintf("Seq %d, want %d", got.Seq, want.Seq))
	}
	if got.RunID != want.RunID {
		d = append(d, fmt.Sprintf("RunID %q, want %q", got.RunID, want.RunID))
	}
	if !got.Time.Equal(want.Time) {
		d = append(d, fmt.Sprintf("Time %v, want %v", got.Time, want.Time))
	}
	if got.Silent != want.Silent {
		d = append(d, fmt.Sprintf("Silent %v, want %v", got.Silent, want.Silent))
	}
	if got.Hidden != want.Hidden {
		d = append(d, fmt.Sprintf("Hidden %v, want %v", got.Hidden, want.Hidden))
	}
	if !bytes.Equal(got.Data, want.Data) {
		d = append(d, fmt.Sprintf("Data %q, want %q", got.Data, want.Data))
	}
	return strings.Join(d, ", ")
}

// seqs formats the sequence numbers of evs, the middle elided when long.
func seqs(evs []store.Event) string {
	var parts []string
	for i, e := range evs {
		if len(evs) > 12 && i >= 6 && i < len(evs)-5 {
			if i == 6 {
				parts = append(parts, "…")
			}
			continue
		}
		parts = append(parts, fmt.Sprint(e.Seq))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// checkSeqs fails the check unless evs are numbered first, first+1, …, last.
func (c *tc) checkSeqs(what string, evs []store.Event, first, last uint64) {
	c.Helper()
	want := 0
	if last >= first {
		want = int(last - first + 1)
	}
	if len(evs) != want {
		c.Errorf("%s: got %d events (Seq %s), want Seq %d..%d", what, len(evs), seqs(evs), first, last)
		return
	}
	for i, e := range evs {
		if e.Seq != first+uint64(i) {
			c.Errorf("%s: event %d has Seq %d, want %d (Seq %s)", what, i, e.Seq, first+uint64(i), seqs(evs))
			return
		}
	}
}

// sameThread fails the check unless got equals want in every field.
func (c *tc) sameThread(what string, got, want store.Thread) {
	c.Helper()
	if d := diffThread(got, want); d != "" {
		c.Errorf("%s: %s", what, d)
	}
}

func diffThread(got, want store.Thread) string {
	var d []string
	if got.Key != want.Key {
		d = append(d, fmt.Sprintf("Key %s, want %s", ks(got.Key), ks(want.Key)))
	}
	d = append(d, diffCheckpoint(got, want)...)
	if got.LastSeq != want.LastSeq {
		d = append(d, fmt.Sprintf("LastSeq %d, want %d", got.LastSeq, want.LastSeq))
	}
	if got.FirstSeq != want.FirstSeq {
		d = append(d, fmt.Sprintf("FirstSeq %d, want %d", got.FirstSeq, want.FirstSeq))
	}
	if got.Version != want.Version {
		d = append(d, fmt.Sprintf("Version %d, want %d", got.Version, want.Version))
	}
	if !got.Created.Equal(want.Created) {
		d = append(d, fmt.Sprintf("Created %v, want %v", got.Created, want.Created))
	}
	if !got.Updated.Equal(want.Updated) {
		d = append(d, fmt.Sprintf("Updated %v, want %v", got.Updated, want.Updated))
	}
	return strings.Join(d, ", ")
}

// diffCheckpoint compares the fields a Commit's Checkpoint sets.
func diffCheckpoint(got, want store.Thread) []string {
	var d []string
	if got.Status != want.Status {
		d = append(d, fmt.Sprintf("Status %q, want %q", got.Status, want.Status))
	}
	if got.Hash != want.Hash {
		d = append(d, fmt.Sprintf("Hash %q, want %q", got.Hash, want.Hash))
	}
	if !bytes.Equal(got.Frame, want.Frame) {
		d = append(d, fmt.Sprintf("Frame %q, want %q", got.Frame, want.Frame))
	}
	if !slices.EqualFunc(got.Deltas, want.Deltas, bytes.Equal) {
		d = append(d, fmt.Sprintf("Deltas %q, want %q", got.Deltas, want.Deltas))
	}
	if !bytes.Equal(got.Wait, want.Wait) {
		d = append(d, fmt.Sprintf("Wait %q, want %q", got.Wait, want.Wait))
	}
	if got.RunID != want.RunID {
		d = append(d, fmt.Sprintf("RunID %q, want %q", got.RunID, want.RunID))
	}
	return d
}

// sameRun fails the check unless got equals want in every field.
func (c *tc) sameRun(what string, got, want store.Run) {
	c.Helper()
	if d := diffRun(got, want); d != "" {
		c.Errorf("%s: %s", what, d)
	}
}

func diffRun(got, want store.Run) string {
	var d []string
	if got.ID != want.ID {
		d = append(d, fmt.Sprintf("ID %q, want %q", got.ID, want.ID))
	}
	if got.Key != want.Key {
		d = append(d, fmt.Sprintf("Key %s, want %s", ks(got.Key), ks(want.Key)))
	}
	if got.Status != want.Status {
		d = append(d, fmt.Sprintf("Status %q, want %q", got.Status, want.Status))
	}
	if !got.Started.Equal(want.Started) {
		d = append(d, fmt.Sprintf("Started %v, want %v", got.Started, want.Started))
	}
	if !got.Finished.Equal(want.Finished) {
		d = append(d, fmt.Sprintf("Finished %v, want %v", got.Finished, want.Finished))
	}
	if !bytes.Equal(got.Outcome, want.Outcome) {
		d = append(d, fmt.Sprintf("Outcome %q, want %q", got.Outcome, want.Outcome))
	}
	if got.Error != want.Error {
		d = append(d, fmt.Sprintf("Error %q, want %q", got.Error, want.Error))
	}
	if !bytes.Equal(got.Input, want.Input) {
		d = append(d, fmt.Sprintf("Input %q, want %q", got.Input, want.Input))
	}
	return strings.Join(d, ", ")
}

// listThreads follows Threads' cursor to the end with pages of limit and
// returns every thread listed.
func (c *tc) listThreads(scope, workflow string, limit int) []store.Thread {
	c.Helper()
	return listAll(c, fmt.Sprintf("Threads(%q, %q)", scope, workflow), limit, func(p store.Page) ([]store.Thread, string, error) {
		return c.s.Threads(c.ctx, scope, workflow, p)
	})
}

// listThreadRuns follows ThreadRuns' cursor to the end with pages of
// limit and returns every run listed, in order.
func (c *tc) listThreadRuns(k store.Key, limit int) []store.Run {
	c.Helper()
	return listAll(c, fmt.Sprintf("ThreadRuns(%s)", ks(k)), limit, func(p store.Page) ([]store.Run, string, error) {
		return c.s.ThreadRuns(c.ctx, k, p)
	})
}

// listRuns follows Runs' cursor to the end with pages of limit and returns
// every run listed.
func (c *tc) listRuns(status store.Status, limit int) []store.Run {
	c.Helper()
	return listAll(c, fmt.Sprintf("Runs(%q)", status), limit, func(p store.Page) ([]store.Run, string, error) {
		return c.s.Runs(c.ctx, status, p)
	})
}

// listAll follows the cursor of a listing (what names it in messages) to
// the end with pages of limit, and returns every item listed. Each page
// must hold at most limit items (100 for 0), and a cursor must lead on: a
// page with a cursor is not empty, and a cursor never repeats.
func listAll[T any](c *tc, what string, limit int, list func(store.Page) ([]T, string, error)) []T {
	c.Helper()
	var all []T
	after := ""
	seen := map[string]bool{}
	for page := 1; ; page++ {
		items, next, err := list(store.Page{After: after, Limit: limit})
		if err != nil {
			c.Fatalf("%s, after %q, limit %d, page %d: %v", what, after, limit, page, err)
		}
		if eff := max(limit, 0); (eff == 0 && len(items) > 100) || (eff > 0 && len(items) > eff) {
			c.Fatalf("%s, limit %d, page %d: got %d items, more than the limit", what, limit, page, len(items))
		}
		all = append(all, items...)
		if next == "" {
			return all
		}
		if len(items) == 0 {
			c.Fatalf("%s, after %q, limit %d, page %d: nothing but a next cursor %q", what, after, limit, page, next)
		}
		if seen[next] || next == after {
			c.Fatalf("%s, limit %d, page %d: the cursor %q repeats", what, limit, page, next)
		}
		seen[next] = true
		after = next
	}
}

// runIDs returns the ids of runs, sorted.
func runIDs(runs []store.Run) []string {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	slices.Sort(ids)
	return ids
}

// threadKeys returns the keys of threads, in their order.
func threadKeys(ths []store.Thread) []store.Key {
	keys := make([]store.Key, len(ths))
	for i, th := range ths {
		keys[i] = th.Key
	}
	return keys
}

func fmtKeys(keys []store.Key) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = ks(k)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// eventually calls cond until it returns true, giving up with a fatal
// error naming what after timeout. It waits on a ticker between calls: a
// bounded wait for a condition, not a timed assertion.
func (c *tc) eventually(what string, timeout time.Duration, cond func() bool) {
	c.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			c.Fatalf("%s: still not the case after %v", what, timeout)
		}
		select {
		case <-tick.C:
		case <-c.ctx.Done():
			c.Fatalf("%s: %v", what, c.ctx.Err())
		}
	}
}

// until waits, without sleeping, until the store's lease l has expired by
// the local clock: it yields until time.Now() passes l.Expires.
func (c *tc) until(l store.Lease) {
	c.Helper()
	c.eventually(fmt.Sprintf("the lease of %s expiring at %v", ks(l.Key), l.Expires), 10*time.Second, func() bool {
		runtime.Gosched()
		return time.Now().After(l.Expires)
	})
}
