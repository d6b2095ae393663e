package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
)

// RunBackup checks backups of the stores that open makes (each fresh and
// empty), which must implement store.Dumper and store.Restorer, as
// subtests of t under "Backup":
//
//   - RoundTrip: a store holding a little of everything (sources, threads
//     in every status with frames, deltas, waits and wake times, silent and
//     hidden events, events removed by retention, running, queued and ended
//     runs with inputs, outcomes and errors, a thread never committed to, a
//     lease held) is backed up and restored into a fresh store, which then
//     holds the same, field by field, through every reading method; its
//     backup is the same bytes. The restored store goes on: versions and
//     sequence numbers continue, every lease is free, the runs left running
//     are stranded, and a lease token is higher than one the store granted
//     before the restore.
//   - Copy: store.Copy does the same without a backup.
//   - WhileServing: a backup taken while a thread is being committed to is
//     a consistent snapshot.
//   - Empty: the backup of an empty store restores into an empty store.
//   - Damaged: a backup cut short, with a byte changed or with bytes after
//     its end fails to restore with an error (store.ErrMalformedBackup
//     after the header), and the store stays empty and takes a good
//     backup after.
//   - Cancelled: a restore whose context is cancelled in the middle fails
//     with the context's error and leaves the store empty and usable.
//   - NotEmpty: a store that holds a source or a thread refuses a restore
//     (store.ErrNotEmpty) and keeps what it holds.
//
// other, when not nil, opens fresh, empty stores of another kind (another
// backend): then OtherKind restores the backup into one, restores that
// store's backup into one of open's, and copies each into the other, and
// all of them hold the same. Across kinds, times compare to the
// microsecond (PostgreSQL keeps no more). The suite closes every store it
// opens.
func RunBackup(t *testing.T, open, other func(t *testing.T) store.Store) {
	t.Helper()
	t.Run("Backup", func(t *testing.T) {
		for _, ch := range []struct {
			name string
			f    func(b *backups)
		}{
			{"RoundTrip", checkBackupRoundTrip},
			{"Copy", checkBackupCopy},
			{"WhileServing", checkBackupWhileServing},
			{"Empty", checkBackupEmpty},
			{"Damaged", checkBackupDamaged},
			{"Cancelled", checkBackupCancelled},
			{"NotEmpty", checkBackupNotEmpty},
			{"OtherKind", checkBackupOtherKind},
		} {
			t.Run(ch.name, func(t *testing.T) {
				if ch.name == "OtherKind" && other == nil {
					t.Skip("no store of another kind given")
				}
				ch.f(&backups{t: t, open: open, other: other})
			})
		}
	})
}

// backups opens the stores of a backup check.
type backups struct {
	t           *testing.T
	open, other func(t *testing.T) store.Store
}

// fresh opens a store with open (or other), which the check closes.
func (b *backups) fresh(open func(t *testing.T) store.Store) *tc {
	b.t.Helper()
	s := open(b.t)
	if s == nil {
		b.t.Fatal("open returned a nil store")
	}
	b.t.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.t.Errorf("Close: %v", err)
		}
	})
	if _, ok := s.(store.Dumper); !ok {
		b.t.Fatalf("%T does not implement store.Dumper", s)
	}
	if _, ok := s.(store.Restorer); !ok {
		b.t.Fatalf("%T does not implement store.Restorer", s)
	}
	return newTC(b.t, s)
}

// backup writes a backup of the store.
func (c *tc) backup() []byte {
	c.Helper()
	var buf bytes.Buffer
	if err := store.WriteBackup(c.ctx, &buf, c.s.(store.Dumper)); err != nil {
		c.Fatalf("WriteBackup: %v", err)
	}
	return buf.Bytes()
}

// restore restores a backup into the store.
func (c *tc) restore(backup []byte) error {
	return store.ReadBackup(c.ctx, bytes.NewReader(backup), c.s.(store.Restorer))
}

// The threads of the filled store, and what RoundTrip checks on them.
var (
	bkRunning   = key("acme", "chat", "running")   // a run running, two queued; lease released: stranded
	bkSuspended = key("acme", "chat", "suspended") // a wait, a wake time, a frame and two deltas, a hidden event
	bkNew       = key("acme", "chat", "new")       // acquired and released: never committed to
	bkHeld      = key("acme", "chat", "held")      // a run running, its lease held at the backup
	bkDue       = key("acme", "chat2", "due")      // suspended, with an earlier wake time
	bkLong      = key("acme", "long", "t")         // 1,200 events, the first 200 removed by retention
	bkOther     = key("acme2", "chat", "running")  // a scope that another starts with
	bkFailed    = key("zeta/ünï", "w f", "failed") // a run with an error
	bkCancelled = key("zeta/ünï", "w f", "cancelled")
	bkDeleted   = key("acme", "chat", "deleted") // deleted before the backup: not in it

	bkScopes  = []string{"acme", "acme2", "zeta/ünï"}
	bkSources = []string{"sha256:00", "sha256:01", "sha256:02"}
	bkRuns    = map[store.Key][]string{
		bkRunning: {"r1", "r2", "r3"}, bkSuspended: {"r1"}, bkHeld: {"r1"}, bkDue: {"r1"},
		bkLong: {"r1", "r2", "r3"}, bkOther: {"r1"}, bkFailed: {"r1"}, bkCancelled: {"r1"},
	}
	bkStatuses = []store.Status{store.Running, store.Suspended, store.Finished, store.Failed, store.Cancelled, store.Queued}
)

// fillForBackup fills an empty store with a little of everything.
func (c *tc) fillForBackup() {
	c.Helper()
	srcs := [][]byte{
		[]byte("wf 1\n\nworkflow chat {\n  flow { say \"hi\" }\n}\n"),
		{0, 1, 2, 0xff, 0xfe, '\n', 0},
		bytes.Repeat([]byte("a long source\n"), 8<<10),
	}
	for i, h := range bkSources {
		if err := c.s.PutSource(c.ctx, h, srcs[i]); err != nil {
			c.Fatalf("PutSource(%q): %v", h, err)
		}
	}
	input := func(k store.Key, id string) []byte {
		return fmt.Appendf(nil, `{"thread":%q, "run":%q,"messages":[{"role":"user","content":"héllo"}]}`, k.Thread, id)
	}
	run := func(k store.Key, id string, status store.Status) *store.Run {
		r := mkRun(id, k, status)
		r.Input = input(k, id)
		return r
	}
	// Running, with queued runs; the lease released.
	l := c.acquire(bkRunning, "filler", long)
	c.commit(l, store.Commit{
		Checkpoint: checkpoint(store.Running, "r1", 1), Events: silentEvery(mkEvents("r1", 1, 5), 2),
		Run: run(bkRunning, "r1", store.Running), NewRun: true,
	})
	c.queue(bkRunning, "r3", 2000)
	c.queue(bkRunning, "r2", 1000)
	c.release(l)

	// Suspended, with a wait, a wake time, a frame and deltas.
	l = c.acquire(bkSuspended, "filler", long)
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 2), Events: mkEvents("r1", 1, 3), Run: run(bkSuspended, "r1", store.Running), NewRun: true})
	cp := checkpoint(store.Suspended, "r1", 3)
	cp.WakeAt = base.Add(time.Hour)
	done := run(bkSuspended, "r1", store.Suspended)
	done.Outcome = []byte(`{"status":"suspended", "wait": {"interrupt": "approve-3"}}`)
	c.commit(l, store.Commit{Checkpoint: cp, Events: mkEvents("r1", 4, 2), Hide: []uint64{2}, Run: done})
	c.commit(l, store.Commit{Delta: []byte(`{"set":{"count":4}}`)})
	c.commit(l, store.Commit{Delta: []byte(`{"set":{"count":5},  "pc": 7}`)})
	c.release(l)

	// Acquired, never committed to.
	c.release(c.acquire(bkNew, "filler", long))

	// Suspended, due earlier.
	l = c.acquire(bkDue, "filler", long)
	cp = checkpoint(store.Suspended, "r1", 4)
	cp.WakeAt = base.Add(time.Millisecond)
	c.commit(l, store.Commit{Checkpoint: cp, Events: mkEvents("r1", 1, 1), Run: run(bkDue, "r1", store.Suspended), NewRun: true})
	c.release(l)

	// 1,200 events in three runs, the first 200 of them removed.
	l = c.acquire(bkLong, "filler", long)
	for i, id := range bkRuns[bkLong] {
		c.commit(l, store.Commit{
			Checkpoint: checkpoint(store.Running, id, 10+i), Events: silentEvery(mkEvents(id, 1+400*i, 400), 7),
			Run: run(bkLong, id, store.Running), NewRun: true,
		})
		c.commit(l, store.Commit{Checkpoint: checkpoint(store.Finished, id, 20+i), Run: run(bkLong, id, store.Finished), Hide: []uint64{uint64(100 + 400*i)}})
	}
	c.release(l)
	if _, _, err := c.s.Sweep(c.ctx, store.Retention{MaxEvents: 1000}, time.Now()); err != nil {
		c.Fatalf("Sweep: %v", err)
	}

	// Ended threads, a thread in a scope that "acme" starts, a deleted one.
	for _, e := range []struct {
		k      store.Key
		status store.Status
	}{{bkOther, store.Finished}, {bkFailed, store.Failed}, {bkCancelled, store.Cancelled}, {bkDeleted, store.Finished}} {
		l := c.acquire(e.k, "filler", long)
		c.commit(l, store.Commit{Checkpoint: checkpoint(e.status, "r1", 30), Events: mkEvents("r1", 1, 2), Run: run(e.k, "r1", e.status), NewRun: true})
		c.release(l)
	}
	if err := c.s.DeleteThread(c.ctx, bkDeleted); err != nil {
		c.Fatalf("DeleteThread(%s): %v", ks(bkDeleted), err)
	}

	// Running, its lease held at the backup.
	l = c.acquire(bkHeld, "filler", long)
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 40), Events: mkEvents("r1", 1, 2), Run: run(bkHeld, "r1", store.Running), NewRun: true})
}

// silentEvery marks every nth event silent.
func silentEvery(evs []store.Event, n int) []store.Event {
	for i := range evs {
		evs[i].Silent = i%n == 0
	}
	return evs
}

// backupView is what a store holds, read through its methods.
type backupView struct {
	threads  []store.Thread // scope by scope, as listed
	events   map[store.Key][]store.Event
	expired  map[store.Key]bool // Events before FirstSeq is ErrExpired
	runs     map[store.Key][]store.Run
	byStatus map[store.Status][]string // Runs, as thread/id
	pending  map[store.Key][]string
	due      []store.Key
	sources  map[string][]byte
}

// view reads what the store holds of what fillForBackup writes.
func (c *tc) view() backupView {
	c.Helper()
	v := backupView{
		events: map[store.Key][]store.Event{}, expired: map[store.Key]bool{}, runs: map[store.Key][]store.Run{},
		byStatus: map[store.Status][]string{}, pending: map[store.Key][]string{}, sources: map[string][]byte{},
	}
	for _, sc := range bkScopes {
		v.threads = append(v.threads, c.listThreads(sc, "", 3)...)
	}
	for i, th := range v.threads {
		k := th.Key
		// Threads lists bookkeeping; the frame and deltas are Thread's.
		stored := c.thread(k)
		v.threads[i].Frame, v.threads[i].Deltas = stored.Frame, stored.Deltas
		v.events[k] = c.allEvents(k, max(th.FirstSeq, 1)-1)
		if th.FirstSeq > 1 {
			_, err := c.s.Events(c.ctx, k, th.FirstSeq-2, 10)
			v.expired[k] = errors.Is(err, store.ErrExpired)
		}
		for _, id := range bkRuns[k] {
			r, err := c.s.Run(c.ctx, k, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				c.Fatalf("Run(%s, %q): %v", ks(k), id, err)
			}
			v.runs[k] = append(v.runs[k], r)
		}
		v.pending[k] = c.pending(k)
	}
	for _, st := range bkStatuses {
		for _, r := range c.listRuns(st, 4) {
			v.byStatus[st] = append(v.byStatus[st], r.Key.Scope+"/"+r.Key.Workflow+"/"+r.Key.Thread+"/"+r.ID)
		}
		slices.Sort(v.byStatus[st])
	}
	due, err := c.s.Due(c.ctx, base.Add(24*time.Hour), 100)
	if err != nil {
		c.Fatalf("Due: %v", err)
	}
	v.due = due
	for _, h := range bkSources {
		src, err := c.s.Source(c.ctx, h)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			c.Fatalf("Source(%q): %v", h, err)
		}
		if err == nil {
			v.sources[h] = src
		}
	}
	return v
}

// sameView fails the check unless the store holds what want recorded. With
// exact false, times need only agree to the microsecond.
func (c *tc) sameView(what string, want backupView, exact bool) {
	c.Helper()
	got := c.view()
	if !exact {
		got.alignTimes(want)
	}
	if !slices.Equal(threadKeys(got.threads), threadKeys(want.threads)) {
		c.Fatalf("%s: Threads lists %s, want %s", what, fmtKeys(threadKeys(got.threads)), fmtKeys(threadKeys(want.threads)))
	}
	for i, th := range want.threads {
		k := th.Key
		c.sameThread(fmt.Sprintf("%s: thread %s", what, ks(k)), got.threads[i], th)
		c.sameEvents(fmt.Sprintf("%s: events of %s", what, ks(k)), got.events[k], want.events[k])
		if got.expired[k] != want.expired[k] {
			c.Errorf("%s: Events(%s) before FirstSeq %d: ErrExpired %v, want %v", what, ks(k), th.FirstSeq, got.expired[k], want.expired[k])
		}
		if g, w := runIDs(got.runs[k]), runIDs(want.runs[k]); !slices.Equal(g, w) {
			c.Errorf("%s: the runs of %s are %q, want %q", what, ks(k), g, w)
			continue
		}
		for j, r := range want.runs[k] {
			c.sameRun(fmt.Sprintf("%s: run %q of %s", what, r.ID, ks(k)), got.runs[k][j], r)
		}
		if !slices.Equal(got.pending[k], want.pending[k]) {
			c.Errorf("%s: Pending(%s) is %q, want %q", what, ks(k), got.pending[k], want.pending[k])
		}
	}
	for _, st := range bkStatuses {
		if !slices.Equal(got.byStatus[st], want.byStatus[st]) {
			c.Errorf("%s: Runs(%q) lists %q, want %q", what, st, got.byStatus[st], want.byStatus[st])
		}
	}
	if !slices.Equal(got.due, want.due) {
		c.Errorf("%s: Due lists %s, want %s", what, fmtKeys(got.due), fmtKeys(want.due))
	}
	for _, h := range bkSources {
		if g, w := got.sources[h], want.sources[h]; !bytes.Equal(g, w) || (g == nil) != (w == nil) {
			c.Errorf("%s: Source(%q) has %d bytes (found %v), want %d (found %v)", what, h, len(g), g != nil, len(w), w != nil)
		}
	}
}

// alignTimes sets each time of v that is within a microsecond of the one
// of want to want's.
func (v *backupView) alignTimes(want backupView) {
	align := func(got *time.Time, want time.Time) {
		if d := got.Sub(want); d > -time.Microsecond && d < time.Microsecond {
			*got = want
		}
	}
	for i := range min(len(v.threads), len(want.threads)) {
		g, w := &v.threads[i], want.threads[i]
		align(&g.Created, w.Created)
		align(&g.Updated, w.Updated)
		align(&g.WakeAt, w.WakeAt)
		if g.Key != w.Key {
			continue
		}
		for j := range min(len(v.events[g.Key]), len(want.events[g.Key])) {
			align(&v.events[g.Key][j].Time, want.events[g.Key][j].Time)
		}
		for j := range min(len(v.runs[g.Key]), len(want.runs[g.Key])) {
			align(&v.runs[g.Key][j].Started, want.runs[g.Key][j].Started)
			align(&v.runs[g.Key][j].Finished, want.runs[g.Key][j].Finished)
		}
	}
}

// sameEmpty fails the check unless the store holds none of what
// fillForBackup writes.
func (c *tc) sameEmpty(what string) {
	c.Helper()
	v := c.view()
	if len(v.threads) != 0 || len(v.sources) != 0 || len(v.due) != 0 {
		c.Fatalf("%s: the store holds %d threads (%s), %d sources and %d due threads; want it empty",
			what, len(v.threads), fmtKeys(threadKeys(v.threads)), len(v.sources), len(v.due))
	}
	for st, runs := range v.byStatus {
		if len(runs) > 0 {
			c.Fatalf("%s: Runs(%q) lists %q; want the store empty", what, st, runs)
		}
	}
}

// grantBefore has the store grant a lease on bkRunning and delete the
// thread, so that it is empty again, and returns the lease's token.
func (c *tc) grantBefore() uint64 {
	c.Helper()
	l := c.acquire(bkRunning, "before-restore", long)
	if err := c.s.DeleteThread(c.ctx, bkRunning); err != nil {
		c.Fatalf("DeleteThread(%s): %v", ks(bkRunning), err)
	}
	return l.Token
}

// goesOn checks a store restored from want: every lease is free, the
// threads with running or queued runs are stranded, a new lease has a
// token above before, and a commit continues Version and sequence numbers.
func (c *tc) goesOn(what string, want backupView, before uint64) {
	c.Helper()
	keys, err := c.s.Stranded(c.ctx, 100)
	if err != nil {
		c.Fatalf("%s: Stranded: %v", what, err)
	}
	slices.SortFunc(keys, compareKey)
	if wantKeys := []store.Key{bkHeld, bkRunning}; !slices.Equal(keys, wantKeys) {
		c.Errorf("%s: Stranded lists %s, want %s: leases do not survive a restore", what, fmtKeys(keys), fmtKeys(wantKeys))
	}
	l := c.acquire(bkRunning, "after-restore", long)
	if l.Token <= before {
		c.Errorf("%s: a lease granted after the restore has token %d, one granted before it had %d", what, l.Token, before)
	}
	if _, err := c.s.Acquire(c.ctx, bkHeld, "another", long); err != nil {
		c.Errorf("%s: Acquire(%s) by another owner than the one that held it at the backup: %v", what, ks(bkHeld), err)
	}
	var th store.Thread
	for _, t := range want.threads {
		if t.Key == bkRunning {
			th = t
		}
	}
	got, err := c.s.Commit(c.ctx, l, store.Commit{Events: mkEvents("r9", 90, 1), Expect: th.Version})
	if err != nil {
		c.Fatalf("%s: Commit to %s expecting Version %d: %v", what, ks(bkRunning), th.Version, err)
	}
	if got.Version != th.Version+1 || got.LastSeq != th.LastSeq+1 {
		c.Errorf("%s: a commit after the restore left Version %d and LastSeq %d, want %d and %d", what, got.Version, got.LastSeq, th.Version+1, th.LastSeq+1)
	}
	c.release(l)
}

func compareKey(a, b store.Key) int {
	return strings.Compare(a.Scope+"\x00"+a.Workflow+"\x00"+a.Thread, b.Scope+"\x00"+b.Workflow+"\x00"+b.Thread)
}

func checkBackupRoundTrip(b *backups) {
	src := b.fresh(b.open)
	src.fillForBackup()
	want := src.view()
	if len(want.threads) != 9 || !want.expired[bkLong] || len(want.events[bkLong]) != 1000 {
		src.Fatalf("the filled store lists %d threads (%s), %d events of %s (expired before: %v); want 9 threads and 1000 events, the first removed",
			len(want.threads), fmtKeys(threadKeys(want.threads)), len(want.events[bkLong]), ks(bkLong), want.expired[bkLong])
	}
	backup := src.backup()
	src.sameView("the store after its backup", want, true)

	dst := b.fresh(b.open)
	before := dst.grantBefore()
	if err := dst.restore(backup); err != nil {
		dst.Fatalf("ReadBackup: %v", err)
	}
	dst.sameView("the restored store", want, true)
	if again := dst.backup(); !bytes.Equal(again, backup) {
		dst.Errorf("the backup of the restored store (%d bytes) differs from the backup it was restored from (%d bytes)", len(again), len(backup))
	}
	dst.goesOn("the restored store", want, before)
}

func checkBackupCopy(b *backups) {
	src := b.fresh(b.open)
	src.fillForBackup()
	want := src.view()
	dst := b.fresh(b.open)
	before := dst.grantBefore()
	if err := store.Copy(dst.ctx, dst.s.(store.Restorer), src.s.(store.Dumper)); err != nil {
		dst.Fatalf("Copy: %v", err)
	}
	dst.sameView("the copy", want, true)
	dst.goesOn("the copy", want, before)
	if err := store.Copy(dst.ctx, dst.s.(store.Restorer), src.s.(store.Dumper)); !errors.Is(err, store.ErrNotEmpty) {
		dst.Errorf("Copy into a store that is not empty: got %v, want ErrNotEmpty", err)
	}
}

func checkBackupOtherKind(b *backups) {
	src := b.fresh(b.open)
	src.fillForBackup()
	want := src.view()
	backup := src.backup()

	o := b.fresh(b.other)
	before := o.grantBefore()
	if err := o.restore(backup); err != nil {
		o.Fatalf("ReadBackup into a store of the other kind: %v", err)
	}
	o.sameView("the store of the other kind", want, false)
	back := o.backup()

	dst := b.fresh(b.open)
	if err := dst.restore(back); err != nil {
		dst.Fatalf("ReadBackup of the other kind's backup: %v", err)
	}
	dst.sameView("the store restored from the other kind's backup", want, false)
	o.goesOn("the store of the other kind", want, before)

	o2 := b.fresh(b.other)
	if err := store.Copy(o2.ctx, o2.s.(store.Restorer), src.s.(store.Dumper)); err != nil {
		o2.Fatalf("Copy into a store of the other kind: %v", err)
	}
	o2.sameView("the copy into the other kind", want, false)
	dst2 := b.fresh(b.open)
	if err := store.Copy(dst2.ctx, dst2.s.(store.Restorer), o2.s.(store.Dumper)); err != nil {
		dst2.Fatalf("Copy from a store of the other kind: %v", err)
	}
	dst2.sameView("the copy from the other kind", want, false)
}

// checkBackupWhileServing backs a store up while a thread is being
// committed to: each backup is a snapshot, whole and consistent, that
// restores, whatever commits it ran beside.
func checkBackupWhileServing(b *backups) {
	src := b.fresh(b.open)
	k := key("acme", "chat", "busy")
	l := src.acquire(k, "writer", long)
	src.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1), Events: mkEvents("r1", 1, 200), Run: mkRun("r1", k, store.Running), NewRun: true})
	stop := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		for i := 1; ; i++ {
			select {
			case <-stop:
				wrote <- nil
				return
			default:
			}
			if _, err := src.s.Commit(src.ctx, l, store.Commit{Events: mkEvents("r1", 200+i*20, 20), Delta: fmt.Appendf(nil, `{"i":%d}`, i)}); err != nil {
				wrote <- err
				return
			}
		}
	}()
	var backups [][]byte
	for range 5 {
		backups = append(backups, src.backup())
	}
	close(stop)
	if err := <-wrote; err != nil {
		src.Fatalf("Commit beside the backups: %v", err)
	}
	for i, backup := range backups {
		dst := b.fresh(b.open)
		if err := dst.restore(backup); err != nil {
			dst.Fatalf("ReadBackup of backup %d, taken while serving: %v", i+1, err)
		}
		th := dst.thread(k)
		dst.Logf("backup %d holds Version %d of the thread being committed to", i+1, th.Version)
		dst.checkSeqs(fmt.Sprintf("backup %d: events", i+1), dst.allEvents(k, 0), 1, th.LastSeq)
		if th.Version < 1 || th.LastSeq != 200+20*(th.Version-1) || len(th.Deltas) != int(th.Version-1) {
			dst.Errorf("backup %d: thread with Version %d, LastSeq %d and %d deltas: not a state the thread was in", i+1, th.Version, th.LastSeq, len(th.Deltas))
		}
	}
}

func checkBackupEmpty(b *backups) {
	src := b.fresh(b.open)
	backup := src.backup()
	dst := b.fresh(b.open)
	if err := dst.restore(backup); err != nil {
		dst.Fatalf("ReadBackup of an empty store's backup: %v", err)
	}
	dst.sameEmpty("after restoring an empty store")
	dst.fillForBackup()
}

func checkBackupDamaged(b *backups) {
	src := b.fresh(b.open)
	src.fillForBackup()
	want := src.view()
	good := src.backup()
	header := bytes.IndexByte(good, '\n') + 1
	if header == 0 {
		src.Fatalf("the backup has no header line: it starts %q", good[:min(len(good), 40)])
	}
	flip := func(at int) []byte {
		bad := bytes.Clone(good)
		bad[at] ^= 0x10
		return bad
	}
	newer := bytes.Clone(good)
	copy(newer, "aguic store backup 9")
	for _, tt := range []struct {
		name      string
		data      []byte
		malformed bool
	}{
		{"Nothing", nil, false},
		{"NotABackup", []byte("hello, world\n"), false},
		{"NewerVersion", newer, false},
		{"HeaderOnly", good[:header], true},
		{"CutInTheFirstRecord", good[:header+3], true},
		{"CutInTheMiddle", good[:len(good)/2], true},
		{"CutBeforeTheEnd", good[:len(good)-50], true},
		{"LastByteMissing", good[:len(good)-1], true},
		{"ByteChangedInAThird", flip(len(good) / 3), true},
		{"ByteChangedInTwoThirds", flip(2 * len(good) / 3), true},
		{"ByteChangedAtTheEnd", flip(len(good) - 10), true},
		{"ByteAfterTheEnd", append(bytes.Clone(good), '\n'), true},
	} {
		b.t.Run(tt.name, func(t *testing.T) {
			b := &backups{t: t, open: b.open}
			dst := b.fresh(b.open)
			err := dst.restore(tt.data)
			if err == nil {
				dst.Fatalf("ReadBackup succeeded")
			}
			if tt.malformed && !errors.Is(err, store.ErrMalformedBackup) {
				dst.Errorf("ReadBackup: got %v, want an error wrapping store.ErrMalformedBackup", err)
			}
			dst.sameEmpty(fmt.Sprintf("after a failed restore (%v)", err))
			if err := dst.restore(good); err != nil {
				dst.Fatalf("ReadBackup of a good backup after a failed one: %v", err)
			}
			dst.sameView("the store restored after a failed restore", want, true)
		})
	}
}

func checkBackupCancelled(b *backups) {
	src := b.fresh(b.open)
	src.fillForBackup()
	want := src.view()
	good := src.backup()
	dst := b.fresh(b.open)
	ctx, cancel := context.WithCancel(dst.ctx)
	defer cancel()
	r := &cancelAt{r: bytes.NewReader(good), left: len(good) / 2, cancel: cancel}
	if err := store.ReadBackup(ctx, r, dst.s.(store.Restorer)); !errors.Is(err, context.Canceled) {
		dst.Fatalf("ReadBackup cancelled in the middle: got %v, want an error wrapping context.Canceled", err)
	}
	dst.sameEmpty("after a cancelled restore")
	if err := dst.restore(good); err != nil {
		dst.Fatalf("ReadBackup after a cancelled one: %v", err)
	}
	dst.sameView("the store restored after a cancelled restore", want, true)
	if err := store.WriteBackup(ctx, io.Discard, src.s.(store.Dumper)); !errors.Is(err, context.Canceled) {
		src.Errorf("WriteBackup with a cancelled context: got %v, want an error wrapping context.Canceled", err)
	}
}

// cancelAt reads from r, and calls cancel once left bytes were read.
type cancelAt struct {
	r      io.Reader
	left   int
	cancel func()
}

func (c *cancelAt) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.cancel()
		return 0, context.Canceled
	}
	n, err := c.r.Read(p[:min(len(p), c.left)])
	c.left -= n
	return n, err
}

func checkBackupNotEmpty(b *backups) {
	src := b.fresh(b.open)
	src.fillForBackup()
	good := src.backup()
	for _, tt := range []struct {
		name string
		fill func(c *tc)
	}{
		{"Source", func(c *tc) {
			if err := c.s.PutSource(c.ctx, bkSources[0], []byte("mine")); err != nil {
				c.Fatal(err)
			}
		}},
		{"Thread", func(c *tc) { c.create(bkFailed, store.Failed, 3) }},
		{"NewThread", func(c *tc) { c.release(c.acquire(bkNew, "mine", long)) }},
	} {
		b.t.Run(tt.name, func(t *testing.T) {
			b := &backups{t: t, open: b.open}
			dst := b.fresh(b.open)
			tt.fill(dst)
			want := dst.view()
			if err := dst.restore(good); !errors.Is(err, store.ErrNotEmpty) {
				dst.Fatalf("ReadBackup into a store that holds a %s: got %v, want an error wrapping store.ErrNotEmpty", strings.ToLower(tt.name), err)
			}
			dst.sameView("the store that refused a restore", want, true)
		})
	}
}
