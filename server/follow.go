package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// A client may follow a run that executes in another process sharing the
// store (a replica behind the same load balancer): the store announces
// every change of the thread (Store.Watch), and the follower reads the
// events committed since its cursor. So the client gets the run's events
// as they are committed (at each saved node, and at the end), then the
// run's end, which its record holds.

// followPoll is how often a follower reads the store again when no change
// was announced: a safety net, since every change wakes it at once.
const followPoll = 10 * time.Second

// followPage is how many events a follower reads at a time.
const followPage = 500

type joinInput struct {
	ThreadID    string `path:"threadId"`
	RunID       string `path:"runId"`
	WorkflowID  string `query:"workflowId" doc:"The thread's workflow, when threads of several workflows have this id."`
	Cursor      string `query:"cursor" doc:"Go on after this event (the id of the last frame read); from the run's first event when empty."`
	LastEventID string `header:"Last-Event-ID" required:"false" doc:"The cursor, as an EventSource sends it on reconnect; the cursor parameter wins."`
	NodeEvents  bool   `query:"nodeEvents" doc:"Stream the lifecycle of the run's nodes (the activity graph.node.lifecycle) from now on, when this process executes the run; a run that another process executes streams none."`
}

func (s *Server) registerJoin() {
	op := huma.Operation{
		OperationID: "joinRun",
		Method:      http.MethodGet,
		Path:        s.base + "/threads/{threadId}/runs/{runId}/events",
		Summary:     "Follow a run",
		Description: "The events of one run of the thread, as the run's own stream sends them: RUN_STARTED, the run's events after the cursor, then RUN_FINISHED or RUN_ERROR as the run ended. A run in progress is followed live, wherever it executes: in this process as it happens, in another process that shares the store as its events are committed. A client that lost its stream reconnects here with the id of the last frame it read. 404 when the thread has no such run.",
		Tags:        []string{"runs"},
		Errors:      []int{http.StatusBadRequest, http.StatusNotFound, http.StatusServiceUnavailable},
		Responses:   sseResponses(),
	}
	huma.Register(s.api, op, s.join)
}

// cursorOf parses the cursor of a request (the parameter, else the
// Last-Event-ID header): 0 when there is none.
func cursorOf(param, header string) (uint64, bool, error) {
	cursor := param
	if cursor == "" {
		cursor = header
	}
	if cursor == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(cursor), 10, 64)
	if err != nil {
		return 0, false, badRequest(fmt.Sprintf("malformed cursor %q: a cursor is the id of an event (the id: line of an SSE frame), a whole number", cursor))
	}
	return n, true, nil
}

func (s *Server) join(ctx context.Context, in *joinInput) (*huma.StreamResponse, error) {
	after, _, err := cursorOf(in.Cursor, in.LastEventID)
	if err != nil {
		return nil, err
	}
	th, _, err := s.findThread(ctx, in.ThreadID, in.WorkflowID, queryField)
	if err != nil {
		return nil, err
	}
	if r := s.localRun(th.Key, in.RunID); r != nil {
		nodes := in.NodeEvents || s.cfg.NodeLifecycle
		if nodes {
			r.enableNodes()
		}
		return s.streamAfter(r, after, nodes), nil
	}
	rec, err := s.cfg.Store.Run(ctx, th.Key, in.RunID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, huma.Error404NotFound(fmt.Sprintf("thread %q has no run %q", in.ThreadID, in.RunID))
	case err != nil:
		return nil, storeFailed("reading the run failed", err)
	}
	r := newRun(rec.ID, th.Key, s.now)
	r.threadID = in.ThreadID
	r.pushEvent(0, agui.RunStarted(in.ThreadID, rec.ID, "", nil), false)
	return s.streamWith(r, func(ctx context.Context) {
		if after == 0 {
			var err error
			if after, err = s.runStart(ctx, th, rec.ID); err != nil {
				s.followFailed(ctx, r, err)
				return
			}
		}
		s.followRun(ctx, r, th.Key, rec.ID, after, false)
	}), nil
}

// localRun returns the run of this process with the id on the thread, or
// nil.
func (s *Server) localRun(key store.Key, runID string) *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runs[key]; r != nil && r.id == runID {
		return r
	}
	for _, r := range s.queues[key] {
		if r.id == runID {
			return r
		}
	}
	return nil
}

// streamWith is stream(r), with produce filling r in a goroutine of its
// own while the client reads: produce ends r, or returns when its context
// ends (the client went away, or the server stops).
func (s *Server) streamWith(r *run, produce func(ctx context.Context)) *huma.StreamResponse {
	resp := s.stream(r)
	body := resp.Body
	resp.Body = func(hctx huma.Context) {
		req, _ := humago.Unwrap(hctx)
		ctx, cancel := context.WithCancel(req.Context())
		defer cancel()
		stop := context.AfterFunc(s.runCtx, cancel)
		defer stop()
		go func() {
			produce(ctx)
			if ctx.Err() != nil {
				r.end() // the server stops: the stream ends with it
			}
		}()
		body(hctx)
	}
	return resp
}

// followRun adds to r the events of run runID on the thread after the
// cursor, as they are committed, then the run's terminal event once its
// record says it has ended. Silent events are left out, as the run's own
// stream leaves them out, unless silent is set: a restore needs them, since
// its snapshot is of the conversation before the run.
func (s *Server) followRun(ctx context.Context, r *run, key store.Key, runID string, after uint64, silent bool) {
	changed, stop := s.cfg.Store.Watch(key)
	defer stop()
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	seen, last := false, false
	for {
		var err error
		var past bool
		if after, seen, past, err = s.followEvents(ctx, r, key, runID, after, seen, silent); err != nil {
			s.followFailed(ctx, r, err)
			return
		}
		rec, err := s.cfg.Store.Run(ctx, key, runID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			r.pushEvent(0, agui.RunError(fmt.Sprintf("the run %s is gone: its thread was deleted", runID), "not_found"), true)
			return
		case err != nil:
			s.followFailed(ctx, r, err)
			return
		}
		if ended(rec.Status) || past {
			// The events its last commit wrote may have come after the
			// read above: read once more, then end.
			if last {
				r.mu.Lock()
				r.final = vm.Status(rec.Status)
				r.mu.Unlock()
				r.pushEvent(0, storedTerminal(r.threadID, r.id, rec), true)
				return
			}
			last = true
			continue
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// followEvents adds to r the stored events of run runID after the cursor
// (its silent ones only when silent is set), and returns the new cursor,
// whether an event of the run was seen, and whether the log has gone past
// the run (an event of a later run).
func (s *Server) followEvents(ctx context.Context, r *run, key store.Key, runID string, after uint64, seen, silent bool) (uint64, bool, bool, error) {
	past := false
	after, err := s.eachEvent(ctx, key, after, func(se store.Event) bool {
		if se.RunID != runID {
			past = seen
			return !seen
		}
		seen = true
		if (silent || !se.Silent) && !se.Hidden {
			r.pushStored(se)
		}
		return true
	})
	return after, seen, past, err
}

// eachEvent calls each with the thread's stored events after the cursor,
// in order, a page at a time, until each returns false or the log ends,
// and returns the cursor after the last event each took.
func (s *Server) eachEvent(ctx context.Context, key store.Key, after uint64, each func(store.Event) bool) (uint64, error) {
	for {
		evs, err := s.cfg.Store.Events(ctx, key, after, followPage)
		if err != nil {
			return after, err
		}
		for _, se := range evs {
			if !each(se) {
				return after, nil
			}
			after = se.Seq
		}
		if len(evs) < followPage {
			return after, nil
		}
	}
}

// pushStored adds the frame of a stored event, with its sequence number
// and its time.
func (r *run) pushStored(se store.Event) {
	if data, ok := storedFrame(se); ok {
		r.push(frame{seq: se.Seq, data: data}, false)
	}
}

// storedFrame is the AG-UI event JSON of a stored event, stamped with its
// time; false for one that is no AG-UI event (a marker of the log only)
// or that does not decode.
func storedFrame(se store.Event) ([]byte, bool) {
	e, err := se.Decode()
	if err != nil {
		return nil, false
	}
	ev, ok := agui.FromVM(e)
	if !ok {
		return nil, false
	}
	data, err := agui.WithTimestamp(ev, se.Time).MarshalJSON()
	return data, err == nil
}

// followFailed ends r with RUN_ERROR for a store that failed, unless the
// follower stopped because its client went away.
func (s *Server) followFailed(ctx context.Context, r *run, err error) {
	if ctx.Err() != nil {
		return
	}
	code := vm.ErrInternal
	if errors.Is(err, store.ErrUnavailable) {
		code = codeUnavailable
	}
	r.pushEvent(0, agui.RunError("following the run failed: "+err.Error(), code), true)
}

// ended reports whether a run of this status has ended.
func ended(st store.Status) bool { return st != store.Running && st != store.Queued }

// storedTerminal is the terminal event of a run that ended, from its
// record, for the stream of run runID.
func storedTerminal(threadID, runID string, rec store.Run) agui.Event {
	var o vm.Outcome
	if json.Unmarshal(rec.Outcome, &o) != nil || o.Status == "" {
		o = vm.Outcome{Status: vm.Status(rec.Status)}
		if rec.Status == store.Failed {
			o.Err = &vm.Error{Code: vm.ErrInternal, Message: rec.Error}
		}
	}
	return agui.RunFinished(threadID, runID, o, nil)
}

// runStart returns the cursor before the first event of run runID: the
// events of a run are contiguous in its thread's log, and the last run's
// are at its end, so it reads the log back from the end, in growing
// pages, until it finds an event of another run before the run's. A run
// with no events yet starts after the last event of th, as read.
func (s *Server) runStart(ctx context.Context, th store.Thread, runID string) (uint64, error) {
	key := th.Key
	total := int(th.LastSeq - min(th.LastSeq, kept(th)))
	for n := 64; ; n *= 2 {
		evs, err := s.cfg.Store.LastEvents(ctx, key, n)
		if err != nil {
			return 0, err
		}
		end := -1 // the last event of the run
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].RunID == runID {
				end = i
				break
			}
		}
		whole := len(evs) < n || n >= total
		if end < 0 {
			if whole {
				return th.LastSeq, nil // no event of the run yet
			}
			continue
		}
		i := end
		for i >= 0 && evs[i].RunID == runID {
			i--
		}
		switch {
		case i >= 0:
			return evs[i].Seq, nil
		case whole:
			return kept(th), nil
		}
	}
}

// followThread adds to r the thread's stored events after the cursor, as
// they are committed, while a run is in progress on it; it ends r when
// none is.
func (s *Server) followThread(ctx context.Context, r *run, key store.Key, after uint64) {
	changed, stop := s.cfg.Store.Watch(key)
	defer stop()
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	last := false
	for {
		var err error
		after, err = s.eachEvent(ctx, key, after, func(se store.Event) bool {
			if !se.Hidden {
				r.pushStored(se)
			}
			return true
		})
		if err != nil {
			s.followFailed(ctx, r, err)
			return
		}
		th, err := s.cfg.Store.Thread(ctx, key)
		if err != nil {
			s.followFailed(ctx, r, err)
			return
		}
		if th.Status != store.Running {
			if last {
				r.end()
				return
			}
			last = true
			continue
		}
		last = false
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}
