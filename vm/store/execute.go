package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aguic/aguic/vm"
)

// Request is one run on a thread: what Execute needs to load or start the
// thread's frame, run it and keep it.
type Request struct {
	Key   Key
	Owner string // who holds the lease while the run lasts
	// Lease, when set, is a lease on Key the caller already holds (taken
	// to answer "busy" before anything starts): Execute runs under it,
	// renewing it while the run lasts, and leaves releasing it to the
	// caller. Otherwise Execute takes the lease as Owner and releases it.
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
	// Live receives the events as they happen; nil for none. When it is a
	// vm.NodeObserver it also learns when each node of the main flow
	// starts and ends (not stored).
	Live vm.Sink
	Now  func() time.Time
}

// Execute takes the thread's lease unless the caller holds it (ErrBusy when
// another run holds it),
// loads its frame on the program version the frame is pinned to (or starts
// a new frame on the current one), runs it with the journal as sink, keeps
// the outcome and releases the lease. The thread is returned as the run
// left it.
func Execute(ctx context.Context, st Store, req Request) (vm.Outcome, Thread, error) {
	ttl := req.TTL
	if ttl <= 0 {
		ttl = time.Minute
	}
	var lease Lease
	if req.Lease != nil {
		lease = *req.Lease
	} else {
		var err error
		if lease, err = st.Acquire(ctx, req.Key, req.Owner, ttl); err != nil {
			return vm.Outcome{}, Thread{}, err
		}
	}
	held := context.WithoutCancel(ctx)
	jl := lease // renewals change only the expiry, which commits do not check
	stop := renew(held, st, &lease, ttl)
	defer func() {
		stop()
		if req.Lease == nil {
			st.Release(held, lease)
		}
	}()

	t, err := st.Thread(ctx, req.Key)
	if err != nil {
		return vm.Outcome{}, Thread{}, err
	}
	m, bundle, hash := req.Machine, req.Bundle, req.Machine.Program.Hash
	var f *vm.Frame
	if len(t.Frame) > 0 && !req.Fresh {
		if t.Hash != hash {
			if m, err = req.Load(ctx, t.Hash); err != nil {
				return vm.Outcome{}, t, fmt.Errorf("load version %s of thread %s: %w", short(t.Hash), req.Key.Thread, err)
			}
			bundle, hash = nil, t.Hash
		}
		if f, err = vm.UnmarshalFrame(t.Frame); err != nil {
			return vm.Outcome{}, t, fmt.Errorf("thread %s: %w", req.Key.Thread, err)
		}
	} else if f, err = m.NewFrame(req.Key.Workflow, req.Context); err != nil {
		return vm.Outcome{}, t, err
	}
	j, err := NewJournal(ctx, st, jl, Run{ID: req.RunID}, hash, bundle, f, req.Live, req.Now)
	if err != nil {
		return vm.Outcome{}, t, err
	}
	if t.Status == Suspended && !req.Fresh {
		j.waiting = &t
	}
	o := m.Run(ctx, f, req.Resume, j.sink())
	if err := j.Finish(f, o); err != nil {
		return o, j.Thread(), err
	}
	return o, j.Thread(), nil
}

// renew keeps the lease alive until stop is called.
func renew(ctx context.Context, st Store, l *Lease, ttl time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if nl, err := st.Renew(ctx, *l, ttl); err == nil {
					*l = nl
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
