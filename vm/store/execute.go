package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aguic/aguic/internal/every"
	"github.com/aguic/aguic/vm"
)

// Request is one run on a thread: what Begin needs to load or start the
// thread's frame, run it and keep it.
type Request struct {
	Key   Key
	Owner string // who holds the lease while the run lasts
	// Lease, when set, is a lease on Key the caller already holds (taken
	// to answer "busy" before anything starts): the run goes on under it,
	// renewing it while the run lasts, and leaves releasing it to the
	// caller. Otherwise Begin takes the lease as Owner and Run releases it.
	Lease *Lease
	TTL   time.Duration // the lease's length; it is renewed while the run lasts (0: one minute)
	RunID string

	Machine *vm.Machine // the current program
	Bundle  []byte      // its sources, stored under Machine.Program.Hash before the run; nil when the caller stored them once
	Load    Loader      // machines of older versions a thread may be pinned to

	// Fresh starts a new frame even when the thread has one (a stateless
	// workflow runs from the top on every request).
	Fresh bool
	// Context is the context of a new frame.
	Context map[string]any
	// Resume continues the thread's frame (nil for an empty resume).
	Resume *vm.Resume
	// Queued says that the run was queued (Queue) and starts now.
	Queued bool
	// Frames, when not nil, keeps the thread's frame as the run leaves it,
	// for the next run, and gives the run the frame the last one left.
	Frames *Frames
	// Live learns of the run as it happens: its events, and its nodes.
	Live Live
	// Events, when not nil, stands between the run and the sink that keeps
	// its events (and passes them to Live): it is given that sink and
	// returns the one the run emits to. The events it passes on, its own
	// included, are the run's.
	Events func(vm.Sink) vm.Sink
	// Release: the commit of the run's end gives the lease up, the
	// caller's (Lease) too, so that freeing the thread costs no write of
	// its own; Turn.Released says whether it did. A lease Begin took is
	// always given up so.
	Release bool
	// OnDurable, when not nil, is called once the turn's start is durable
	// (a power loss cannot lose it), when that happens before the run
	// ends: before the run's first node that is not pure, or at Turn.Sync.
	// It may be called from another goroutine than the run's. A turn that
	// Run returns from is durable, whether or not OnDurable was called.
	OnDurable func()
	Now       func() time.Time
}

// Turn is a run that has begun: its frame is loaded, and its lease is held
// and renewed until Run returns.
type Turn struct {
	st      Store
	lease   Lease
	ownLock bool   // Begin took the lease: Run releases it
	stop    func() // stops renewing the lease
	m       *vm.Machine
	f       *vm.Frame
	resume  *vm.Resume
	events  func(vm.Sink) vm.Sink // Request.Events
	j       *Journal
	// lost is done once the lease is lost: another process took the
	// thread over, and the run stops where it is.
	lost context.Context
	lose context.CancelFunc
}

// ErrInterrupted is returned by Begin for a thread whose last run was cut
// short by a crash and has not been recovered yet.
var ErrInterrupted = errors.New("the thread's last run was interrupted and is being recovered")

// Begin takes the thread's lease unless the caller holds it (ErrBusy when
// another run holds it), and loads the thread's frame on the program
// version it is pinned to (or starts a new frame on the current one).
// ErrRunExists when the thread has a run with req.RunID already.
//
// Begin writes nothing. The run's start (the run record with the turn's
// input, written ahead, and the thread marked running) is committed and
// synced before the run's first node that is not pure, or at Turn.Sync;
// from then on the turn survives a crash, and recovery runs it with exactly
// that input (see Request.OnDurable). A turn of pure nodes alone is
// committed once, at its end, start and end together: a crash before
// leaves the thread as the turn found it, and nothing of the turn was told
// or done outside.
func Begin(ctx context.Context, st Store, req Request) (*Turn, error) {
	ttl := req.TTL
	if ttl <= 0 {
		ttl = time.Minute
	}
	t := &Turn{st: st}
	if req.Lease != nil {
		t.lease = *req.Lease
	} else {
		var err error
		if t.lease, err = st.Acquire(ctx, req.Key, req.Owner, ttl); err != nil {
			return nil, err
		}
		t.ownLock = true
	}
	held := context.WithoutCancel(ctx)
	jl := t.lease // renewals change only the expiry, which commits do not check
	t.lost, t.lose = context.WithCancel(context.Background())
	t.stop = renew(held, st, &t.lease, ttl, t.lose)
	fail := func(err error) (*Turn, error) {
		t.end(held)
		return nil, err
	}

	var th Thread
	var sizes []int // of the thread's frame, then of its deltas
	if c := req.Frames.take(req.Key, jl.Version); c != nil && jl.Version != 0 {
		th, t.f, sizes = c.th, c.frame, append([]int{c.base}, c.sizes...)
	} else {
		var err error
		if th, err = st.Thread(ctx, req.Key); err != nil {
			return fail(err)
		}
		sizes = storedSizes(th)
	}
	if th.Status == Running && th.RunID != "" {
		return fail(fmt.Errorf("thread %s: %w", req.Key.Thread, ErrInterrupted))
	}
	m, bundle, hash := req.Machine, req.Bundle, req.Machine.Program.Hash
	in := turnInput{Resume: req.Resume}
	var base []byte // a new frame, written as the thread's frame
	var err error
	if (t.f != nil || len(th.Frame) > 0) && !req.Fresh {
		if th.Hash != hash {
			if m, err = req.Load(ctx, th.Hash); err != nil {
				return fail(fmt.Errorf("load version %s of thread %s: %w", short(th.Hash), req.Key.Thread, err))
			}
			bundle, hash = nil, th.Hash
		}
		if t.f == nil {
			if t.f, err = LoadFrame(th); err != nil {
				return fail(fmt.Errorf("thread %s: %w", req.Key.Thread, err))
			}
		}
		in.Deltas = len(sizes) - 1
		if th.Status == Suspended {
			in.Waiting = &waiting{RunID: th.RunID, Wait: th.Wait}
		}
	} else {
		if t.f, err = m.NewFrame(req.Key.Workflow, req.Context); err != nil {
			return fail(err)
		}
		if base, err = t.f.Marshal(); err != nil {
			return fail(err)
		}
		sizes = []int{len(base)}
	}
	if len(bundle) > 0 {
		if err := st.PutSource(held, hash, bundle); err != nil {
			return fail(fmt.Errorf("store the program: %w", err))
		}
	}
	now := req.Now
	if now == nil {
		now = time.Now
	}
	run := Run{ID: req.RunID, Key: req.Key, Status: Running, Started: now()}
	if req.Queued {
		q, err := st.Run(ctx, req.Key, req.RunID)
		if err != nil {
			return fail(fmt.Errorf("start queued run %s: %w", req.RunID, err))
		}
		if q.Status != Queued {
			return fail(fmt.Errorf("start queued run %s: %w", req.RunID, ErrRunExists))
		}
	}
	if !req.Queued {
		// The commit of the run's start or end checks it again.
		switch _, err := st.Run(ctx, req.Key, req.RunID); {
		case err == nil:
			return fail(fmt.Errorf("start run %s: %w", run.ID, ErrRunExists))
		case !errors.Is(err, ErrNotFound):
			return fail(fmt.Errorf("start run %s: %w", run.ID, err))
		}
	}
	t.m, t.resume, t.events = m, req.Resume, req.Events
	t.f.Track()
	t.j = newJournal(held, st, jl, run, hash, in, sizes, req.Live, now)
	th.Frame, th.Deltas = nil, nil
	t.j.thread, t.j.frames = th, req.Frames
	t.j.start = &start{frame: base, queued: req.Queued}
	t.j.undo = t.f.UndoDelta
	t.j.onDurable = req.OnDurable
	t.j.release = t.ownLock || req.Release
	return t, nil
}

// Frame is the frame the turn runs on. Before Run, its host may set a
// hidden entry (vm.Frame.SetHidden): the turn's commits keep it with the
// run's own changes.
func (t *Turn) Frame() *vm.Frame { return t.f }

// Sync writes the turn's start and makes it durable now, if it is not yet
// (see Request.OnDurable). Safe to call while the turn runs.
func (t *Turn) Sync() error { return t.j.Effect() }

// storedSizes returns the sizes of what the store keeps of a thread's
// frame: its frame's, then each delta's.
func storedSizes(th Thread) []int {
	sizes := []int{len(th.Frame)}
	for _, d := range th.Deltas {
		sizes = append(sizes, len(d))
	}
	return sizes
}

// LoadFrame returns the frame a thread holds: its Frame with its Deltas
// applied.
func LoadFrame(th Thread) (*vm.Frame, error) {
	f, err := vm.UnmarshalFrame(th.Frame)
	if err != nil {
		return nil, err
	}
	if err := f.ApplyDeltas(th.Deltas); err != nil {
		return nil, err
	}
	return f, nil
}

// newJournal journals run on the thread of lease, whose stored frame and
// deltas have the sizes given, as they were when the run (or its
// recovery) started.
func newJournal(ctx context.Context, st Store, lease Lease, run Run, hash string, in turnInput, sizes []int, live Live, now func() time.Time) *Journal {
	if now == nil {
		now = time.Now
	}
	j := &Journal{store: st, ctx: context.WithoutCancel(ctx), lease: lease, run: run, hash: hash, input: in, live: live, now: now,
		base: sizes[0], sizes: sizes[1:]}
	for _, n := range j.sizes {
		j.kept += n
	}
	return j
}

// Run runs the turn to its end, keeps the outcome, stops renewing the
// lease and releases it if Begin took it. The thread is returned as the
// run left it, without its frame and deltas.
func (t *Turn) Run(ctx context.Context) (vm.Outcome, Thread, error) {
	return t.run(ctx, nil)
}

// RunUntil is Run, but a run that stops because stop is done (and ctx
// with it) is left as it is in the store, running, without its end: it
// goes on from its last save when recovery resumes it, in this process
// or another that shares the store. Run returns stop's error then.
func (t *Turn) RunUntil(ctx, stop context.Context) (vm.Outcome, Thread, error) {
	return t.run(ctx, stop)
}

// run is Run; a run that stop (the process's context) cancels is left as
// it is in the store, running, for recovery to go on with at the next
// start, while one that ctx alone cancels ends cancelled. stop may be nil.
func (t *Turn) run(ctx, stop context.Context) (vm.Outcome, Thread, error) {
	defer t.end(context.WithoutCancel(ctx))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(t.lost, cancel)()
	obs := t.j.observer()
	if t.events != nil {
		obs.Events = t.events(obs.Events)
	}
	o := t.m.Run(ctx, t.f, t.resume, obs)
	if stop != nil && o.Status == vm.Cancelled && stop.Err() != nil {
		return o, t.j.Thread(), stop.Err()
	}
	if t.lost.Err() != nil {
		return o, t.j.Thread(), fmt.Errorf("run %s: another process took the thread over, its lease having expired; the run goes on there: %w", t.j.run.ID, ErrLeaseLost)
	}
	if err := t.j.Finish(t.f, o); err != nil {
		return o, t.j.Thread(), err
	}
	return o, t.j.Thread(), nil
}

func (t *Turn) end(ctx context.Context) {
	t.stop()
	t.lose()
	if t.ownLock && !t.Released() {
		t.st.Release(ctx, t.lease)
	}
}

// Released reports whether the commit of the run's end gave the lease up
// (Request.Release): the caller has nothing left to release.
func (t *Turn) Released() bool { return t.j != nil && t.j.released }

// queuedInput is the Input of a queued run: what Begin will be asked.
type queuedInput struct {
	Fresh   bool           `json:"fresh,omitempty"`
	Context map[string]any `json:"context,omitempty"`
	Resume  *vm.Resume     `json:"resume,omitempty"`
}

// Queue writes req as a run of its thread that starts when the runs before
// it have ended (Store.Enqueue): once it returns, the turn survives a crash
// and recovery starts it, in order, if no process does before. Begin with
// req.Queued starts it.
func Queue(ctx context.Context, st Store, req Request) error {
	in, err := json.Marshal(queuedInput{Fresh: req.Fresh, Context: req.Context, Resume: req.Resume})
	if err != nil {
		return fmt.Errorf("store the input of run %s: %w", req.RunID, err)
	}
	now := req.Now
	if now == nil {
		now = time.Now
	}
	return st.Enqueue(ctx, req.Key, Run{ID: req.RunID, Status: Queued, Started: now(), Input: in})
}

// Execute begins a run and runs it: Begin, then Turn.Run.
func Execute(ctx context.Context, st Store, req Request) (vm.Outcome, Thread, error) {
	t, err := Begin(ctx, st, req)
	if err != nil {
		return vm.Outcome{}, Thread{}, err
	}
	return t.Run(ctx)
}

// renew keeps the lease alive until stop is called.
// lost, when not nil, is called once the store says the lease is no longer
// held (another process took it over after it expired): renewing it is
// over.
func renew(ctx context.Context, st Store, l *Lease, ttl time.Duration, lost func()) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := every.Run(ctx, ttl/3, func() {
		nl, err := st.Renew(ctx, *l, ttl)
		switch {
		case err == nil:
			*l = nl
		case errors.Is(err, ErrLeaseLost):
			if lost != nil {
				lost()
			}
			cancel()
		}
	})
	return func() {
		cancel()
		<-done
	}
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
