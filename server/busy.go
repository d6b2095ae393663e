package server

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// The busy policies hold across the processes that share a store: a run
// is queued in the store (store.Queue), in the order the runs came; each
// queued run waits, watching its thread, until the runs before it have
// ended, wherever they were sent, then takes the thread's lease and
// begins. An interrupting run cancels the run in progress wherever it
// executes (Store.Cancel) and waits for the thread's lease.

// queue registers a queued run of this process on the thread; s.mu is
// held.
func (s *Server) queue(key store.Key, runID string) *run {
	r := s.newRun(key, runID)
	r.queued = &store.Request{}
	s.queues[key] = append(s.queues[key], r)
	return r
}

// enqueue writes a queued run ahead (store.Queue), so that it survives a
// crash, and keeps what it begins with for when its turn comes. On an
// error the run leaves the queue.
func (s *Server) enqueue(r *run, req store.Request) error {
	*r.queued = req
	if err := store.Queue(r.ctx, s.cfg.Store, req); err != nil {
		s.forget(r)
		s.drop(r)
		return err
	}
	return nil
}

// queuedAhead reports whether the thread has queued runs: a new run goes
// behind them.
func (s *Server) queuedAhead(ctx context.Context, key store.Key) (bool, error) {
	pending, err := s.cfg.Store.Pending(ctx, key)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(pending, func(p store.Run) bool { return p.Status == store.Queued }), nil
}

// waitTurn begins a queued run once its turn has come: it is the first
// run pending on its thread and takes the thread's lease. It reads the
// thread's pending runs again whenever the thread changes. A run that
// another process began meanwhile (recovering the runs of a process that
// died, which it takes for one) is followed there instead. A run that
// cannot begin ends its stream with RUN_ERROR; it stays queued in the
// store when the server is stopping, and runs at the next start.
func (s *Server) waitTurn(r *run) {
	changed, stop := s.cfg.Store.Watch(r.key)
	defer stop()
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		if err := r.ctx.Err(); err != nil {
			s.queuedFailed(r, err)
			return
		}
		pending, err := s.cfg.Store.Pending(r.ctx, r.key)
		if err == nil {
			i := slices.IndexFunc(pending, func(p store.Run) bool { return p.ID == r.id })
			switch {
			case i < 0 || pending[i].Status == store.Running:
				s.followQueued(r)
				return
			case i == 0:
				err = s.acquire(r.ctx, r)
				if err == nil {
					s.beginQueued(r)
					return
				}
			}
		}
		if err != nil && !errors.Is(err, store.ErrBusy) && !errors.Is(err, store.ErrUnavailable) {
			s.queuedFailed(r, err)
			return
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-r.ctx.Done():
		}
	}
}

// beginQueued begins a queued run whose turn has come, under the lease
// it took.
func (s *Server) beginQueued(r *run) {
	s.mu.Lock()
	s.runs[r.key] = r
	s.mu.Unlock()
	req := *r.queued
	req.Lease, req.Queued = &r.lease, true
	turn, err := store.Begin(r.ctx, s.cfg.Store, req)
	if err != nil {
		s.cfg.Store.Release(context.WithoutCancel(r.ctx), r.lease)
		s.queuedFailed(r, err)
		return
	}
	r.trace.Chain(turn.Frame())
	s.execute(r, turn)
}

// followQueued streams a queued run that another process began, from the
// store, to its end.
func (s *Server) followQueued(r *run) {
	defer s.wg.Done()
	defer close(r.done)
	defer r.cancel()
	s.forget(r)
	th, err := s.cfg.Store.Thread(r.ctx, r.key)
	var after uint64
	if err == nil {
		after, err = s.runStart(r.ctx, th, r.id)
	}
	if err != nil {
		s.followFailed(r.ctx, r, err)
		return
	}
	s.followRun(r.ctx, r, r.key, r.id, after, false)
	r.end()
}

// queuedFailed ends the stream of a queued run that could not begin.
func (s *Server) queuedFailed(r *run, err error) {
	code := vm.ErrInternal
	msg := "starting the queued run failed: " + err.Error()
	if r.ctx.Err() != nil {
		code, msg = "shutting_down", "the server stopped before the queued run began; it runs when the server starts again"
	}
	r.mu.Lock()
	r.final = vm.Failed
	r.mu.Unlock()
	r.trace.End(vm.Outcome{}, err)
	r.pushEvent(0, agui.RunError(msg, code), true)
	s.forget(r)
	s.drop(r)
}

// interruptElsewhere asks the process that executes the run in progress
// on the thread to cancel it, and returns once the thread has changed (or
// a while has passed): the caller takes the lease again.
func (s *Server) interruptElsewhere(ctx context.Context, key store.Key) error {
	changed, stop := s.cfg.Store.Watch(key)
	defer stop()
	th, err := s.cfg.Store.Thread(ctx, key)
	if err != nil {
		return storeFailed("reading the thread failed", err)
	}
	if th.Status == store.Running && th.RunID != "" {
		if err := s.cfg.Store.Cancel(ctx, key, th.RunID); err != nil {
			return storeFailed("sending the cancel request failed", err)
		}
	}
	select {
	case <-changed:
	case <-time.After(followPoll):
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
