// Package storetest is the conformance suite every store.Store
// implementation must pass: a backend's own test hands the suite a
// function that opens a fresh store, and the suite runs each check of the
// contract written in package store as a subtest.
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openInMemory(t) })
//		storetest.RunReopen(t, func(t *testing.T, dir string) store.Store { return openDir(t, dir) })
//	}
//	func BenchmarkStore(b *testing.B) {
//		storetest.Bench(b, func(b *testing.B) store.Store { return openDir(b, b.TempDir()) })
//	}
//
// What it checks, group by group (the subtest names):
//
//   - Source: sources round-trip by hash, a second PutSource of a hash is a
//     no-op, an unknown hash is ErrNotFound.
//   - Lease: Acquire creates the thread; another owner gets ErrBusy while
//     the lease is unexpired; the same owner may acquire again; Renew keeps
//     the token and extends the lease; after Release or expiry another
//     owner takes the lease with a higher token and the former lease is
//     fenced out (Commit, Renew and Release fail with ErrLeaseLost and write
//     nothing); lease operations leave Version alone; among concurrent
//     Acquires exactly one wins.
//   - Commit: the checkpoint is replaced (only Status, Hash, Frame, Wait
//     and RunID are taken from it); events get Seq 1..n across commits and
//     keep every field; Hide marks earlier events; the run is upserted;
//     LastSeq, FirstSeq and Version follow; Expect is a compare-and-set; a
//     commit that fails writes nothing; the returned Thread is the stored
//     one.
//   - Events: paging from a cursor, the end of the log, LastEvents, and
//     ErrNotFound for a thread that does not exist.
//   - Threads: ordered by workflow and thread id, paged to the end, filtered
//     by workflow, never across scopes, without frames; key parts that
//     contain separator characters or prefix one another are never
//     confused.
//   - Runs: by id, and listed by status across scopes with paging; a
//     thread's runs listed newest first (by Started, then id), without
//     their input, paged to the end, a queued run moving when it starts;
//     every listing refuses a cursor it did not make (ErrCursor).
//   - Delete: DeleteThread removes the thread, its events and its runs, and
//     a lease from before it cannot write to the thread created again.
//   - Sweep: MaxEvents keeps each thread's last events (older cursors get
//     ErrExpired); FinishedTTL deletes ended threads idle longer than the
//     TTL and keeps running and suspended ones; the counts returned.
//   - Concurrent: goroutines sharing one lease, and owners handing a lease
//     to each other, commit to several threads at once; every log ends up
//     1..n without gap or repeat, each commit's events contiguous and each
//     committer's in its order.
//   - Context: every method called with a cancelled context returns an
//     error that wraps context.Canceled, and writes nothing.
//   - Bus: Pending gives the running run, then the queued ones in order;
//     Stranded lists the threads with pending runs and no live lease;
//     Watch wakes after a commit, a release, an enqueue and a deletion;
//     Cancel calls every OnCancel handler; TakeTask grants a task once
//     per period.
//
// RunBackup checks the portable backup (store.WriteBackup, ReadBackup,
// Copy) of a store that is a store.Dumper and a store.Restorer: round trips
// field by field, while serving, into another kind of store, and damaged,
// cancelled or refused restores that leave the destination empty.
//
// RunReopen checks durability: everything committed (sources, threads,
// events with their flags, runs, the status index, lease tokens) is there
// after Close and a new open on the same directory; sequence numbers and
// versions continue; deleted threads and swept events stay gone.
//
// Where the contract leaves room, the suite reads it so:
//
//   - The holder of an unexpired lease may Acquire it again (ErrBusy is for
//     another owner's lease) and gets a Token no lower; whether its earlier
//     copy stays valid is not checked.
//   - Renew keeps the Token. A released lease is not held: Commit, Renew and
//     Release with it fail with ErrLeaseLost. A lease granted after Release
//     or expiry has a higher Token than the one before, also across Close
//     and reopen. What a Commit with an expired lease that nobody took over
//     does is not checked.
//   - Only commits change Version (every commit, an empty one too, adds
//     one); Acquire, Renew and Release leave it, so a commit can Expect a
//     Version read before its lease was taken.
//   - A commit refused with ErrConflict or ErrLeaseLost writes nothing and
//     uses up no sequence number.
//   - Events(after) fails with ErrExpired when an event after it was
//     removed: after+1 < FirstSeq. FirstSeq is 1 once a thread has events
//     and none was removed. LastEvents of a thread that does not exist is
//     ErrNotFound, as Events.
//   - Frame, Wait, Data, Outcome and sources come back byte for byte.
//   - A listing may return a cursor on a full last page if the next page is
//     empty with next ""; never an empty page with a cursor. The order of
//     Runs is not checked.
//   - DeleteThread takes the lease with the thread: another owner can
//     Acquire the key at once, and the former lease cannot write
//     (ErrLeaseLost, or ErrNotFound while the key is not used again).
//   - Sweep's event count may include the events of the threads it deleted
//     or not.
//
// The suite closes every store it opens; open must not close it. It never
// sleeps: the two checks that need time to pass wait on a ticker, for at
// most a few seconds, until the condition holds (a lease of 20ms has been
// taken over; a lease of 300ms renewed for an hour is past its first
// expiry). Times it stores have whole microseconds (what PostgreSQL keeps)
// and are compared with time.Time.Equal. Keys are valid UTF-8 without NUL
// bytes.
//
// RunShared checks, on two stores opened on one database, what several
// processes that share a store rely on: leases and fencing across them,
// commits read across them, watches and cancel requests that reach the
// other, a task taken once across them, stranded runs of a lease left to
// expire.
//
// Bench measures what the hot paths cost: appending events in batches of
// 100, committing a 4 KiB checkpoint, and reading the last 100 events of a
// thread holding 100,000.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
)

// check is one conformance check, run on a fresh store.
type check struct {
	name string
	f    func(c *tc)
}

// group is a named list of checks; its name is the outer subtest.
type group struct {
	name   string
	checks []check
}

func groups() []group {
	return []group{
		{"Source", sourceChecks},
		{"Lease", leaseChecks},
		{"Commit", commitChecks},
		{"Events", eventChecks},
		{"Threads", threadChecks},
		{"Runs", runChecks},
		{"Deltas", deltaChecks},
		{"Delete", deleteChecks},
		{"Sweep", sweepChecks},
		{"Concurrent", concurrentChecks},
		{"Context", contextChecks},
		{"Wake", wakeChecks},
		{"Bus", busChecks},
	}
}

// Run runs every conformance check as a subtest of t, each on a fresh
// store from open. The suite closes the store when the subtest ends.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	for _, g := range groups() {
		t.Run(g.name, func(t *testing.T) {
			for _, ch := range g.checks {
				t.Run(ch.name, func(t *testing.T) {
					s := open(t)
					if s == nil {
						t.Fatal("open returned a nil store")
					}
					t.Cleanup(func() {
						if err := s.Close(); err != nil {
							t.Errorf("Close: %v", err)
						}
					})
					ch.f(newTC(t, s))
				})
			}
		})
	}
}

// reopenCheck is a durability check; it opens, closes and reopens the store
// through r.
type reopenCheck struct {
	name string
	f    func(r *reopener)
}

// RunReopen runs the durability checks as subtests of t. Each gets its own
// directory (from t.TempDir) and calls open on it several times, closing
// the store in between; the suite closes every store it opens.
func RunReopen(t *testing.T, open func(t *testing.T, dir string) store.Store) {
	t.Helper()
	t.Run("Reopen", func(t *testing.T) {
		for _, ch := range reopenChecks {
			t.Run(ch.name, func(t *testing.T) {
				r := &reopener{t: t, dir: t.TempDir(), open: open}
				t.Cleanup(func() {
					if r.cur != nil {
						if err := r.cur.Close(); err != nil {
							t.Errorf("Close: %v", err)
						}
					}
				})
				ch.f(r)
			})
		}
	})
}

// reopener opens the store of one directory, one instance at a time.
type reopener struct {
	t    *testing.T
	dir  string
	open func(t *testing.T, dir string) store.Store
	cur  store.Store
	n    int
}

// Open opens the store on the directory; the previous instance must be
// closed.
func (r *reopener) Open() *tc {
	r.t.Helper()
	if r.cur != nil {
		r.t.Fatal("storetest: Open while the previous store is still open")
	}
	r.n++
	s := r.open(r.t, r.dir)
	if s == nil {
		r.t.Fatalf("open %d of %s returned a nil store", r.n, r.dir)
	}
	r.cur = s
	return newTC(r.t, s)
}

// Close closes the open store and fails the test when Close fails.
func (r *reopener) Close() {
	r.t.Helper()
	s := r.cur
	r.cur = nil
	if err := s.Close(); err != nil {
		r.t.Fatalf("Close (open %d of %s): %v", r.n, r.dir, err)
	}
}

// Long is the TTL of leases that must not expire during a check.
const long = time.Hour

// tc is a check's test, store and context, with helpers that fail the test
// on unexpected errors.
type tc struct {
	*testing.T
	s   store.Store
	ctx context.Context
}

func newTC(t *testing.T, s store.Store) *tc {
	return &tc{T: t, s: s, ctx: t.Context()}
}
