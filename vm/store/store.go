// Package store is where conversations live between requests: the Store
// interface that every backend implements, and the types it stores.
//
// A Store keeps, for each thread (scope, workflow, thread id): its
// checkpoint (a serialized vm.Frame, the frame deltas written since, and
// the hash of the workflow source it runs on), an append-only event log
// with gap-free sequence numbers, its runs with the input each was started
// with, and a lease that lets one run at a time write to it. It also keeps
// workflow sources by content hash, so a suspended conversation resumes on
// its own version after the file changed.
//
// What stays true, for every implementation (the storetest package checks
// it): sequence numbers of a thread start at 1 and never skip or repeat;
// a commit writes its checkpoint, events and run in one transaction; only
// the holder of a thread's current lease can commit to it, and a lease
// taken over after it expired fences out its former holder; everything
// committed is there after Close and reopen.
//
// Several processes may share one store (PostgreSQL): a Store is then also
// how they reach each other. Leases keep one run per thread across all of
// them; Watch tells a process that a thread changed in another (a client
// that follows a run executing elsewhere); Cancel reaches the process that
// executes a run; Stranded finds the runs of a process that died, once
// their leases expired; TakeTask lets one process of many do a periodic
// task. A store that one process owns (Badger) implements these within
// the process, with a Hub.
//
// Every store backs up to, and restores from, one portable format
// (backup.go, backupformat.go): a backup of one kind of store restores
// into another.
package store

import (
	"context"
	"errors"
	"time"
)

// The errors a Store returns; wrap-compatible with errors.Is.
var (
	ErrNotFound  = errors.New("not found")
	ErrBusy      = errors.New("another run holds the thread") // Acquire: the lease is held
	ErrLeaseLost = errors.New("the lease is no longer held")  // Commit, Renew, Release: fenced out
	ErrConflict  = errors.New("the thread changed since it was read")
	ErrExpired   = errors.New("the events before this cursor were removed")
	ErrRunExists = errors.New("the thread already has a run with this id")
	// ErrCursor: a listing was given a cursor it did not make.
	ErrCursor = errors.New("malformed cursor")
	// ErrUnavailable: the store cannot be reached now (its database is
	// down, or did not answer in time). Nothing was written; the same call
	// may succeed later.
	ErrUnavailable = errors.New("the store is unavailable")
)

// Key names a thread. Scope separates tenants: one scope can never read or
// write another's threads.
type Key struct {
	Scope    string `json:"scope"`
	Workflow string `json:"workflow"`
	Thread   string `json:"thread"`
}

// Status is where a thread or a run stands.
type Status string

// The statuses.
const (
	Running   Status = "running"   // a run is executing
	Suspended Status = "suspended" // waiting for the client
	Finished  Status = "finished"  // the flow ended
	Failed    Status = "failed"    // the last run failed
	Cancelled Status = "cancelled" // the last run was cancelled
	Queued    Status = "queued"    // a run waiting for the runs of its thread before it (Enqueue)
)

// Thread is a thread's checkpoint and bookkeeping.
type Thread struct {
	Key
	Status   Status    `json:"status"`
	Hash     string    `json:"hash"`            // the workflow source the frame runs on
	Frame    []byte    `json:"frame"`           // the serialized vm.Frame
	Deltas   [][]byte  `json:"deltas"`          // the frame deltas written since Frame, in order
	Wait     []byte    `json:"wait,omitempty"`  // JSON of what a suspended run waits for
	WakeAt   time.Time `json:"wakeAt,omitzero"` // when a thread that waits for a time is to be woken; zero for none (Due lists it then)
	RunID    string    `json:"runId"`           // the run that wrote the checkpoint
	LastSeq  uint64    `json:"lastSeq"`         // the sequence number of the last event
	FirstSeq uint64    `json:"firstSeq"`        // the oldest event still kept (retention)
	Version  uint64    `json:"version"`         // adds 1 with every commit, nothing else changes it; 0 for a new thread
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// Event is one stored event of a thread's log.
type Event struct {
	Seq    uint64    `json:"seq"`
	RunID  string    `json:"runId"`
	Time   time.Time `json:"time"`
	Silent bool      `json:"silent,omitempty"` // stored, not sent live
	Hidden bool      `json:"hidden,omitempty"` // never replayed
	Data   []byte    `json:"data"`             // the event, JSON
}

// Run is one execution of a thread's workflow.
type Run struct {
	ID       string    `json:"id"`
	Key      Key       `json:"key"`
	Status   Status    `json:"status"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Outcome  []byte    `json:"outcome,omitempty"` // JSON of the vm.Outcome
	Error    string    `json:"error,omitempty"`
	// Input is what the run was started with (the turn's messages, state,
	// resume answers…), written ahead in the commit that starts the run:
	// recovery resumes a crashed run with exactly this input.
	Input []byte `json:"input,omitempty"`
}

// Lease is the right to run on a thread, until Expires. Token fences: a
// commit carries it, and a store refuses a token older than the thread's.
type Lease struct {
	Key     Key       `json:"key"`
	Owner   string    `json:"owner"`
	Token   uint64    `json:"token"`
	Expires time.Time `json:"expires"`
	// Version is the thread's Version when Acquire granted the lease:
	// while the lease is held, no one else changes the thread.
	Version uint64 `json:"version"`
}

// Commit is what a run writes at its start, at a checkpoint or at its end,
// all at once.
type Commit struct {
	// Checkpoint, when not nil, sets the thread's Status, Hash, Wait,
	// WakeAt and RunID; its Frame, when not nil, replaces the thread's
	// frame and drops every delta.
	Checkpoint *Thread
	// Trim, when set, keeps only the first Keep of the thread's deltas.
	Trim bool
	Keep int
	// Delta, when not nil, is appended to the thread's deltas (after what
	// Checkpoint and Trim did).
	Delta []byte
	// Events are appended in order; the store assigns their Seq.
	Events []Event
	// Hide marks these earlier events of the thread hidden.
	Hide []uint64
	// Run creates or replaces the run record of the lease's thread when
	// not nil.
	Run *Run
	// NewRun says that Run starts a run: ErrRunExists when the thread
	// already has a run with its id.
	NewRun bool
	// Expect, when not zero, is the thread's Version the commit is based
	// on: a different one fails with ErrConflict (compare-and-set).
	Expect uint64
	// Lazy lets Commit return before the commit reaches the disk: a
	// process crash loses nothing, a power cut may lose it and the lazy
	// commits after the last one that was not lazy (or the last Sync).
	Lazy bool
	// Release gives the lease up with the commit, as Release after it
	// would (the lease can then no longer commit, renew or release): the
	// commit that ends a run frees its thread without another write. A
	// commit refused for any reason releases nothing.
	Release bool
}

// Page asks for a slice of a listing: after a cursor, at most Limit items.
type Page struct {
	After string // "" for the first page
	Limit int    // 0 means 100
}

// Retention says what a store may forget.
type Retention struct {
	MaxEvents   int           // per thread; older events are removed (0: keep all)
	FinishedTTL time.Duration // finished, failed or cancelled threads idle this long are deleted (0: keep)
}

// Store keeps threads, their event logs, runs, leases and workflow
// sources. Implementations are safe for concurrent use. Byte fields come
// back exactly as stored, and a method called with a done context fails
// with an error wrapping ctx.Err().
type Store interface {
	// PutSource stores a workflow source under its hash; storing a hash
	// again is a no-op.
	PutSource(ctx context.Context, hash string, src []byte) error
	// Source returns the source stored under hash, or ErrNotFound.
	Source(ctx context.Context, hash string) ([]byte, error)

	// Acquire takes the thread's lease for owner until now+ttl, creating
	// the thread when it does not exist. It fails with ErrBusy while
	// another owner's lease is unexpired; the same owner may acquire again.
	// Every new grant has a token higher than any earlier one for the key,
	// across restarts and deletions.
	Acquire(ctx context.Context, key Key, owner string, ttl time.Duration) (Lease, error)
	// Claim takes the thread's lease for owner, as Acquire does, only
	// while the thread has runs running or queued, and returns them as
	// Pending orders them. It is one step with respect to Commit: a run
	// whose last commit gives its lease up is either still running, and
	// its lease held (ErrBusy), or over, and then Claim takes nothing. So
	// recovery never holds the lease of a thread it has nothing to do on,
	// which the thread's next request would find busy. ErrBusy while
	// another owner's lease is unexpired; a zero Lease and no runs when the
	// thread has none pending or does not exist (Claim creates no thread).
	Claim(ctx context.Context, key Key, owner string, ttl time.Duration) (Lease, []Run, error)
	// Renew extends a lease still held; ErrLeaseLost when it is not.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release gives the lease up; ErrLeaseLost when it was not held.
	// A released lease can no longer commit, renew or release.
	Release(ctx context.Context, l Lease) error

	// Commit writes c to the lease's thread in one transaction and
	// returns the thread as it is after it, without its Frame and Deltas.
	// ErrLeaseLost when the lease is not the thread's current one;
	// ErrConflict when c.Expect differs; ErrRunExists as NewRun says.
	Commit(ctx context.Context, l Lease, c Commit) (Thread, error)
	// Due lists the threads whose WakeAt is set and at or before now,
	// earliest first, at most limit of them.
	Due(ctx context.Context, now time.Time, limit int) ([]Key, error)
	// Sync returns once every commit that returned before it was called,
	// lazy ones included, is durable: a power loss cannot lose it.
	Sync(ctx context.Context) error

	// Thread returns a thread, or ErrNotFound.
	Thread(ctx context.Context, key Key) (Thread, error)
	// Threads lists a scope's threads (all workflows when workflow is
	// ""), ordered by workflow and thread id, from a cursor; next is ""
	// on the last page. The threads come without their Frame and Deltas
	// (Thread reads them), so a page costs its bookkeeping only.
	// ErrCursor for a cursor it did not make.
	Threads(ctx context.Context, scope, workflow string, p Page) (threads []Thread, next string, err error)
	// DeleteThread removes a thread, its events, its runs and its lease.
	DeleteThread(ctx context.Context, key Key) error

	// Events returns up to limit events with Seq > after, in order.
	// ErrExpired when events after `after` were removed (after+1 <
	// FirstSeq); ErrNotFound when the thread does not exist.
	Events(ctx context.Context, key Key, after uint64, limit int) ([]Event, error)
	// LastEvents returns the thread's last n events, in order; ErrNotFound
	// when the thread does not exist.
	LastEvents(ctx context.Context, key Key, n int) ([]Event, error)

	// Run returns a run of a thread by id, or ErrNotFound. Run ids are
	// the thread's own: two threads may each have a run "r1".
	Run(ctx context.Context, key Key, id string) (Run, error)
	// Enqueue writes a run that is to start when the runs of its thread
	// before it have ended: run.Status must be Queued, and its Input is
	// what it will start with. It needs no lease (another run holds it);
	// ErrNotFound when the thread does not exist, ErrRunExists when it has
	// a run with this id. Begin starts it; recovery starts the queued runs
	// a crash left, in the order of their Started time.
	Enqueue(ctx context.Context, key Key, run Run) error
	// Runs lists the runs with the given status, across all scopes (used
	// at start-up to recover runs a crash left running). ErrCursor for a
	// cursor it did not make.
	Runs(ctx context.Context, status Status, p Page) (runs []Run, next string, err error)
	// ThreadRuns lists the runs of a thread, newest first: by Started
	// time, latest first, then by id; next is "" on the last page. A page
	// costs what it lists, however many runs the thread has. The runs come
	// without their Input. None for a thread that does not exist;
	// ErrCursor for a cursor it did not make.
	ThreadRuns(ctx context.Context, key Key, p Page) (runs []Run, next string, err error)

	// Sweep applies the retention policy as of now (a thread is idle for
	// now minus its Updated time) and returns how many events and threads
	// it removed.
	Sweep(ctx context.Context, r Retention, now time.Time) (events, threads int, err error)

	// Pending returns the runs of the thread that are running or queued:
	// the running one first, then the queued ones in the order of their
	// Started time (then their id). None for a thread that has none or
	// does not exist.
	Pending(ctx context.Context, key Key) ([]Run, error)
	// Stranded lists up to limit threads that have a run running or
	// queued while nobody holds their lease (it was released, it expired,
	// or the store was opened since): runs that a process which died, or
	// lost the store, left for recovery to go on with.
	Stranded(ctx context.Context, limit int) ([]Key, error)

	// Watch returns a channel that receives a value after the thread
	// changed, in this process or another that shares the store: a commit,
	// its lease released, a run enqueued, the thread deleted. It also
	// receives one whenever the store may have missed a change (it lost
	// and regained its connection to the others), so a watcher reads again
	// whatever it watches. Values coalesce: one can stand for several
	// changes. stop ends the watch and must be called; the channel is
	// never closed.
	Watch(key Key) (changed <-chan struct{}, stop func())
	// Cancel asks whichever process executes run runID of the thread to
	// cancel it: every handler that OnCancel added, in every process that
	// shares the store (this one included), is called with the key and
	// the run id. It returns once the request is sent, not once the run
	// has ended.
	Cancel(ctx context.Context, key Key, runID string) error
	// OnCancel adds a handler of the cancel requests; stop removes it.
	// Handlers must not block.
	OnCancel(handle func(key Key, runID string)) (stop func())
	// TakeTask reports whether the caller is to do the periodic task
	// named task now: true when no caller, in any process that shares the
	// store, took it within the last period, and the take is recorded.
	// So a task that every process offers to do every period is done about
	// once a period, not once per process.
	TakeTask(ctx context.Context, task string, period time.Duration) (bool, error)

	// Close releases the store's resources. Everything committed stays.
	Close() error
}

// ThreadCounter is a store that counts its threads by status, across
// scopes, for a process's metrics. A count costs one pass over the
// threads' bookkeeping at most (never their frames or events); a thread
// whose first run has not committed yet has no status and is not counted.
type ThreadCounter interface {
	CountThreads(ctx context.Context) (map[Status]int, error)
}
