package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// The page sizes of replay and messages.
const (
	defaultPage = 100
	maxPage     = 500
)

// findThread finds thread threadID of workflow workflowID, or of whichever
// workflow has one when workflowID is "", in the request's scope: 404 when
// there is none (a thread of another scope is none), 400 when several
// workflows have a thread of that id, whose detail says to name one with
// field, the route's way to pick the workflow.
func (s *Server) findThread(ctx context.Context, threadID, workflowID, field string) (store.Thread, *vm.Workflow, error) {
	ws := s.cfg.Machine.Program.Workflows
	if workflowID != "" {
		w, err := s.workflow(selector{id: workflowID})
		if err != nil {
			return store.Thread{}, nil, err
		}
		ws = []*vm.Workflow{w}
	}
	var (
		found store.Thread
		wf    *vm.Workflow
	)
	for _, w := range ws {
		th, err := s.cfg.Store.Thread(ctx, store.Key{Scope: scopeOf(ctx), Workflow: w.ID, Thread: threadID})
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return store.Thread{}, nil, storeFailed("reading the thread failed", err)
		}
		if wf != nil {
			return store.Thread{}, nil, badRequest(fmt.Sprintf("workflows %q and %q both have a thread %q: name one with %s", wf.ID, w.ID, threadID, field))
		}
		found, wf = th, w
	}
	if wf == nil {
		return store.Thread{}, nil, huma.Error404NotFound(fmt.Sprintf("there is no thread %q", threadID))
	}
	return found, wf, nil
}

// How the thread routes pick the workflow when threads of several
// workflows have the thread id, as their 400 answers name it.
const (
	queryField = "the query parameter workflowId"
	propsField = "forwardedProps.aguic.workflowId"
)

// ThreadRunInput is the body of a run on a thread the URL names: a
// RunAgentInput whose threadId may be left out.
type ThreadRunInput struct {
	_ struct{} `json:"-" additionalProperties:"true"`

	ThreadID        string         `json:"threadId,omitempty" doc:"The thread; when given it must be the one of the URL."`
	RunID           string         `json:"runId,omitempty" nullable:"true"`
	ParentRunID     string         `json:"parentRunId,omitempty" nullable:"true"`
	ProtocolVersion string         `json:"protocolVersion,omitempty" nullable:"true" doc:"The AG-UI version of the answer: 1.0 (what clients of AG-UI 1.0 send) or later gets AG-UI 1.0; none, as the clients before 1.0 send, or a version before 1.0 gets the shapes those clients accept."`
	Messages        []Message      `json:"messages,omitempty"`
	State           any            `json:"state,omitempty"`
	Tools           []Tool         `json:"tools,omitempty"`
	Context         []ContextEntry `json:"context,omitempty"`
	ForwardedProps  any            `json:"forwardedProps,omitempty" doc:"forwardedProps.aguic.workflowId or .workflowName picks the workflow when threads of several workflows have this id."`
	Resume          []ResumeEntry  `json:"resume,omitempty"`
}

type threadRunInput struct {
	ThreadID string          `path:"threadId"`
	Body     *ThreadRunInput `required:"true"`
}

type threadQuery struct {
	ThreadID   string `path:"threadId"`
	WorkflowID string `query:"workflowId" doc:"The thread's workflow, when threads of several workflows have this id."`
}

type replayInput struct {
	ThreadID    string `path:"threadId"`
	WorkflowID  string `query:"workflowId" doc:"The thread's workflow, when threads of several workflows have this id."`
	Cursor      string `query:"cursor" doc:"Replay the events after this one (the id of the last frame read); the start when empty."`
	LastEventID string `header:"Last-Event-ID" required:"false" doc:"The cursor, as an EventSource sends it on reconnect; the cursor parameter wins."`
	Limit       int    `query:"limit" minimum:"1" doc:"At most this many events (default 100, at most 500)."`
	Follow      bool   `query:"follow" doc:"Go on while a run is in progress on the thread: every event after the cursor, then the events of the run as they are committed, wherever it executes; the stream ends once no run is in progress. The limit does not apply."`
	Protocol    string `query:"protocolVersion" doc:"The AG-UI version of the events: 1.0 when empty; a version before 1.0 (0.0.57) sends them as the clients before 1.0 take them."`
}

type messagesInput struct {
	ThreadID   string `path:"threadId"`
	WorkflowID string `query:"workflowId" doc:"The thread's workflow, when threads of several workflows have this id."`
	Cursor     string `query:"cursor" doc:"The nextCursor of the previous page; the first page when empty."`
	Limit      int    `query:"limit" minimum:"1" doc:"At most this many messages (default 100, at most 500)."`
}

// ThreadMessages is one page of a thread's messages.
type ThreadMessages struct {
	ThreadID   string    `json:"threadId"`
	WorkflowID string    `json:"workflowId"`
	Status     string    `json:"status" doc:"Where the thread stands: running, suspended, finished, failed or cancelled."`
	Messages   []Message `json:"messages"`
	NextCursor string    `json:"nextCursor,omitempty" doc:"The cursor of the next page; absent on the last."`
}

type messagesOutput struct {
	Body ThreadMessages
}

// Cancelled is the answer to a cancel request: the run and how it ended.
type Cancelled struct {
	ThreadID   string `json:"threadId"`
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
	Status     string `json:"status" doc:"How the run ended: cancelled, or finished, suspended or failed when it ended on its own first."`
}

type cancelOutput struct {
	Body Cancelled
}

type cancelInput struct {
	Body *RunAgentInput `required:"true"`
}

func (s *Server) registerThreads() {
	b := s.base
	op := func(method, id, path, summary, desc string, errs ...int) huma.Operation {
		return huma.Operation{OperationID: id, Method: method, Path: path, Summary: summary, Description: desc, Tags: []string{"threads"}, Errors: errs}
	}

	runOp := op(http.MethodPost, "runThread", b+"/threads/{threadId}/runs", "Run on a thread",
		"Runs the workflow of an existing thread with this request, as POST {base}/workflows/{id} does; forwardedProps picks the workflow when threads of several workflows have this id.",
		http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable)
	runOp.Tags = []string{"runs"}
	runOp.MaxBodyBytes, runOp.BodyReadTimeout, runOp.Responses = s.cfg.BodyLimit, defaultReadLimit, sseResponses()
	huma.Register(s.api, runOp, func(ctx context.Context, in *threadRunInput) (*huma.StreamResponse, error) {
		body := in.Body
		if body.ThreadID != "" && body.ThreadID != in.ThreadID {
			return nil, badRequest(fmt.Sprintf("the body's threadId %q is not the URL's %q", body.ThreadID, in.ThreadID))
		}
		ra := RunAgentInput{
			ThreadID: in.ThreadID, RunID: body.RunID, ParentRunID: body.ParentRunID, ProtocolVersion: body.ProtocolVersion,
			Messages: body.Messages, State: body.State, Tools: body.Tools, Context: body.Context,
			ForwardedProps: body.ForwardedProps, Resume: body.Resume,
		}
		var wf *vm.Workflow
		sel, picked, err := optionalSelector(body.ForwardedProps)
		if err != nil {
			return nil, err
		}
		if picked {
			if wf, err = s.workflow(sel); err != nil {
				return nil, err
			}
			if _, err := s.cfg.Store.Thread(ctx, store.Key{Scope: scopeOf(ctx), Workflow: wf.ID, Thread: in.ThreadID}); errors.Is(err, store.ErrNotFound) {
				return nil, huma.Error404NotFound(fmt.Sprintf("workflow %q has no thread %q", wf.ID, in.ThreadID))
			}
		} else if _, wf, err = s.findThread(ctx, in.ThreadID, "", propsField); err != nil {
			return nil, err
		}
		return s.start(ctx, runRequest{wf: wf, in: &ra})
	})

	cancelOp := op(http.MethodPost, "cancel", b+"/cancel", "Cancel a run",
		"Cancels the run in progress on the request's thread (threadId, and forwardedProps.aguic.workflowId or .workflowName when threads of several workflows have that id): its stream ends with RUN_FINISHED, outcome cancelled. Answers once the run has ended; 404 when nothing runs on the thread.",
		http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable)
	cancelOp.MaxBodyBytes = s.cfg.BodyLimit
	huma.Register(s.api, cancelOp,
		func(ctx context.Context, in *cancelInput) (*cancelOutput, error) {
			workflowID := ""
			sel, picked, err := optionalSelector(in.Body.ForwardedProps)
			if err != nil {
				return nil, err
			}
			if picked {
				wf, err := s.workflow(sel)
				if err != nil {
					return nil, err
				}
				workflowID = wf.ID
			}
			return s.cancelRun(ctx, in.Body.ThreadID, workflowID, propsField)
		})

	huma.Register(s.api, op(http.MethodPost, "interruptThread", b+"/threads/{threadId}/interrupt", "Interrupt a thread",
		"Cancels the run in progress on the thread, as POST {base}/cancel does; 404 when nothing runs on it.",
		http.StatusBadRequest, http.StatusNotFound, http.StatusServiceUnavailable),
		func(ctx context.Context, in *threadQuery) (*cancelOutput, error) {
			return s.cancelRun(ctx, in.ThreadID, in.WorkflowID, queryField)
		})

	replayOp := op(http.MethodGet, "replay", b+"/threads/{threadId}/replay", "Replay a thread's events",
		"The thread's stored events after the cursor, as server-sent events whose ids are the cursors to continue from; events hidden from replay are left out. 400 for a malformed cursor, 410 when the events after it were removed.",
		http.StatusBadRequest, http.StatusNotFound, http.StatusGone, http.StatusServiceUnavailable)
	replayOp.Responses = map[string]*huma.Response{"200": {
		Description: "Stored AG-UI events, each frame `id: <seq>` and `data: <event JSON>`.",
		Content:     map[string]*huma.MediaType{"text/event-stream": {Schema: &huma.Schema{Type: huma.TypeString}}},
	}}
	huma.Register(s.api, replayOp, s.replay)

	huma.Register(s.api, op(http.MethodGet, "threadMessages", b+"/threads/{threadId}/messages", "A thread's messages",
		"The thread's history as AG-UI messages, reduced from its stored events, a page at a time.",
		http.StatusBadRequest, http.StatusNotFound, http.StatusServiceUnavailable),
		s.messages)
}

// cancelRun cancels the run in progress on the thread of the request's
// scope, in this process or in another that shares the store, and waits
// until it has ended (or ctx is done); field is how the route names the
// workflow, for the 400 when runs of several are in progress on the
// thread id.
func (s *Server) cancelRun(ctx context.Context, threadID, workflowID, field string) (*cancelOutput, error) {
	scope := scopeOf(ctx)
	s.mu.Lock()
	var found []*run
	for k, r := range s.runs {
		if k.Scope == scope && k.Thread == threadID && (workflowID == "" || k.Workflow == workflowID) {
			found = append(found, r)
		}
	}
	s.mu.Unlock()
	switch {
	case len(found) == 0:
		return s.cancelElsewhere(ctx, threadID, workflowID, field)
	case len(found) > 1:
		return nil, badRequest(fmt.Sprintf("runs of several workflows are in progress on thread %q: name the workflow with %s", threadID, field))
	}
	r := found[0]
	r.cancel()
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &cancelOutput{Body: Cancelled{ThreadID: threadID, WorkflowID: r.key.Workflow, RunID: r.id, Status: string(r.status())}}, nil
}

// cancelElsewhere cancels a run that no run of this process is: one that
// another process sharing the store executes. The store's threads say
// which run is in progress; the store carries the request to its process,
// and the run's record says when it has ended.
func (s *Server) cancelElsewhere(ctx context.Context, threadID, workflowID, field string) (*cancelOutput, error) {
	var running []store.Thread
	for _, w := range s.cfg.Machine.Program.Workflows {
		if workflowID != "" && w.ID != workflowID {
			continue
		}
		th, err := s.cfg.Store.Thread(ctx, store.Key{Scope: scopeOf(ctx), Workflow: w.ID, Thread: threadID})
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return nil, storeFailed("reading the thread failed", err)
		}
		if th.Status == store.Running && th.RunID != "" {
			running = append(running, th)
		}
	}
	switch {
	case len(running) == 0:
		return nil, huma.Error404NotFound(fmt.Sprintf("nothing runs on thread %q", threadID))
	case len(running) > 1:
		return nil, badRequest(fmt.Sprintf("runs of several workflows are in progress on thread %q: name the workflow with %s", threadID, field))
	}
	th := running[0]
	changed, stop := s.cfg.Store.Watch(th.Key)
	defer stop()
	// A run no process executes (its process died) is cancelled here; one
	// that a process executes holds its thread's lease, and the cancel
	// request goes to that process.
	switch err := store.CancelStranded(ctx, s.cfg.Store, th.Key, th.RunID, s.owner(th.RunID), s.cfg.LeaseTTL); {
	case err == nil:
		return &cancelOutput{Body: Cancelled{ThreadID: threadID, WorkflowID: th.Key.Workflow, RunID: th.RunID, Status: string(store.Cancelled)}}, nil
	case errors.Is(err, store.ErrBusy), errors.Is(err, store.ErrNotFound):
	default:
		return nil, storeFailed("cancelling the run failed", err)
	}
	if err := s.cfg.Store.Cancel(ctx, th.Key, th.RunID); err != nil {
		return nil, storeFailed("sending the cancel request failed", err)
	}
	status, err := s.awaitEnd(ctx, th.Key, th.RunID, changed)
	if err != nil {
		return nil, err
	}
	return &cancelOutput{Body: Cancelled{ThreadID: threadID, WorkflowID: th.Key.Workflow, RunID: th.RunID, Status: string(status)}}, nil
}

// awaitEnd waits until the run's record says it has ended, reading it
// again whenever the thread changes (changed, from a watch taken before
// the run could end), and returns how it ended.
func (s *Server) awaitEnd(ctx context.Context, key store.Key, runID string, changed <-chan struct{}) (store.Status, error) {
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		r, err := s.cfg.Store.Run(ctx, key, runID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// A run cut before its start was written leaves no record: it
			// never ran, as far as anyone can tell.
			return store.Cancelled, nil
		case err != nil:
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", storeFailed("reading the run failed", err)
		case ended(r.Status):
			return r.Status, nil
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func (s *Server) replay(ctx context.Context, in *replayInput) (*huma.StreamResponse, error) {
	after, explicit, err := cursorOf(in.Cursor, in.LastEventID)
	if err != nil {
		return nil, err
	}
	limit := page(in.Limit)
	if in.Follow {
		limit = followPage
	}
	th, _, err := s.findThread(ctx, in.ThreadID, in.WorkflowID, queryField)
	if err != nil {
		return nil, err
	}
	evs, th, err := s.storedEvents(ctx, th, after, explicit, limit)
	if err != nil {
		return nil, err
	}
	if !explicit {
		after = kept(th)
	}
	r := newRun("", th.Key, s.now)
	for _, se := range evs {
		after = se.Seq
		if !se.Hidden {
			r.pushStored(se)
		}
	}
	if in.Follow {
		return s.streamWith(r, dialectOf(in.Protocol), func(ctx context.Context) { s.followThread(ctx, r, th.Key, after) }), nil
	}
	r.end()
	close(r.done)
	return s.stream(r, dialectOf(in.Protocol)), nil
}

// storedEvents reads up to limit of the stored events of th after the
// cursor, hidden ones included, and returns them with the thread as last
// read. Without a cursor (explicit false) it reads from the oldest event
// retention kept, and starts again at the new oldest when retention
// removes more meanwhile; an explicit cursor into the removed events is
// 410, since the client would miss events.
func (s *Server) storedEvents(ctx context.Context, th store.Thread, after uint64, explicit bool, limit int) ([]store.Event, store.Thread, error) {
	if !explicit {
		after = kept(th)
	}
	evs, err := s.cfg.Store.Events(ctx, th.Key, after, limit)
	for !explicit && errors.Is(err, store.ErrExpired) {
		t, terr := s.cfg.Store.Thread(ctx, th.Key)
		if terr != nil || kept(t) <= after {
			return nil, th, storeFailed("reading the thread's events failed", err)
		}
		th, after = t, kept(t)
		evs, err = s.cfg.Store.Events(ctx, th.Key, after, limit)
	}
	switch {
	case errors.Is(err, store.ErrExpired):
		return nil, th, huma.NewError(http.StatusGone, fmt.Sprintf("the events after %d were removed; replay from %d", after, kept(th)))
	case err != nil:
		return nil, th, storeFailed("reading the thread's events failed", err)
	}
	return evs, th, nil
}

// kept is the cursor of the oldest event of th that retention kept: the
// sequence number before it.
func kept(th store.Thread) uint64 {
	if th.FirstSeq > 0 {
		return th.FirstSeq - 1
	}
	return 0
}

func page(limit int) int {
	switch {
	case limit <= 0:
		return defaultPage
	case limit > maxPage:
		return maxPage
	}
	return limit
}

func (s *Server) messages(ctx context.Context, in *messagesInput) (*messagesOutput, error) {
	start := 0
	if in.Cursor != "" {
		n, err := strconv.Atoi(in.Cursor)
		if err != nil || n < 0 {
			return nil, badRequest(fmt.Sprintf("malformed cursor %q", in.Cursor))
		}
		start = n
	}
	th, wf, err := s.findThread(ctx, in.ThreadID, in.WorkflowID, queryField)
	if err != nil {
		return nil, err
	}
	red, err := s.reduce(ctx, th, all)
	if err != nil {
		return nil, err
	}
	all := red.Messages
	start = min(start, len(all))
	end := min(start+page(in.Limit), len(all))
	out := &messagesOutput{Body: ThreadMessages{ThreadID: in.ThreadID, WorkflowID: wf.ID, Status: string(th.Status), Messages: make([]Message, 0, end-start)}}
	for _, m := range all[start:end] {
		out.Body.Messages = append(out.Body.Messages, Message{m})
	}
	if end < len(all) {
		out.Body.NextCursor = strconv.Itoa(end)
	}
	return out, nil
}
