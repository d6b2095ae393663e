package server

import (
	"context"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// enqueue writes a queued run ahead (store.Queue), so that it survives a
// crash, and keeps what it begins with for when its turn comes. On an
// error the run leaves the queue.
func (s *Server) enqueue(r *run, req store.Request) error {
	*r.queued = req
	if err := store.Queue(r.ctx, s.cfg.Store, req); err != nil {
		s.mu.Lock()
		q := s.queues[r.key]
		for i, x := range q {
			if x == r {
				s.queues[r.key] = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		if len(s.queues[r.key]) == 0 {
			delete(s.queues, r.key)
		}
		s.mu.Unlock()
		s.drop(r)
		return err
	}
	return nil
}

// beginQueued begins a queued run whose turn has come: it takes the
// thread's lease, starts the run in the store and runs it. A run that
// cannot begin ends its stream with RUN_ERROR and hands the thread on; it
// stays queued in the store when the server is stopping, and runs at the
// next start.
func (s *Server) beginQueued(r *run) {
	fail := func(err error) {
		code := vm.ErrInternal
		msg := "starting the queued run failed: " + err.Error()
		if r.ctx.Err() != nil {
			code, msg = "shutting_down", "the server stopped before the queued run began; it runs when the server starts again"
		}
		r.mu.Lock()
		r.final = vm.Failed
		r.mu.Unlock()
		r.pushEvent(0, agui.RunError(msg, code), true)
		s.handOver(r)
		s.drop(r)
	}
	if err := s.lease(r.ctx, r); err != nil {
		fail(err)
		return
	}
	req := *r.queued
	req.Lease, req.Queued = &r.lease, true
	turn, err := store.Begin(r.ctx, s.cfg.Store, req)
	if err != nil {
		s.cfg.Store.Release(context.WithoutCancel(r.ctx), r.lease)
		fail(err)
		return
	}
	s.execute(r, turn)
}
