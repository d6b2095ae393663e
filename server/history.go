package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/google/uuid"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// HistoryRequest asks for the history of a conversation (the history
// route's body).
type HistoryRequest struct {
	_ struct{} `json:"-" additionalProperties:"true"`

	ThreadID     string `json:"threadId" minLength:"1" doc:"The conversation's thread id."`
	WorkflowID   string `json:"workflowId,omitempty" doc:"The workflow, by id; give this or workflowName."`
	WorkflowName string `json:"workflowName,omitempty" doc:"The workflow, by title; it must be the title of exactly one workflow."`
	MaxMessages  any    `json:"maxMessages,omitempty" doc:"A positive integer keeps the most recent messages (and what they need to render); anything else keeps them all."`
	Protocol     string `json:"protocolVersion,omitempty" doc:"The AG-UI version of the snapshot stream's events: 1.0 when empty; a version before 1.0 (0.0.57) sends them as the clients before 1.0 take them."`
}

// History is a conversation as a client restores it: its messages, its
// state and the frontend tool call it waits for.
type History struct {
	Messages             []Message     `json:"messages" doc:"AG-UI messages, for the client's initial messages."`
	State                any           `json:"state" doc:"The latest state: the checkpoint's, else reduced from the state events; null when there is none."`
	PendingFrontendTools []PendingTool `json:"pendingFrontendTools" doc:"At most one: the final frontend tool call, when it is unanswered and the last message."`

	// wait is what the thread waits for the client to answer, nil when
	// nothing: the snapshot stream's RUN_FINISHED carries it.
	wait *vm.Wait
}

// PendingTool is a frontend tool call that waits for its result.
type PendingTool struct{ agui.ToolCall }

// Schema describes a tool call.
func (PendingTool) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{
		Type: huma.TypeObject,
		Properties: map[string]*huma.Schema{
			"id":   {Type: huma.TypeString},
			"type": {Type: huma.TypeString, Enum: []any{"function"}},
			"function": {Type: huma.TypeObject, Properties: map[string]*huma.Schema{
				"name":      {Type: huma.TypeString},
				"arguments": {Type: huma.TypeString, Description: "A JSON object, as text."},
			}, Required: []string{"name", "arguments"}},
		},
		Required: []string{"id", "type", "function"},
	}
}

type historyInput struct {
	Accept string          `header:"Accept" required:"false"`
	Body   *HistoryRequest `required:"true"`
}

func (s *Server) registerHistory() {
	reg := s.api.OpenAPI().Components.Schemas
	envelope := reg.Schema(reflect.TypeFor[History](), true, "History")
	huma.Register(s.api, huma.Operation{
		OperationID: "history",
		Method:      http.MethodPost,
		Path:        s.base + "/history",
		Summary:     "Restore a conversation",
		Description: "The messages, state and pending frontend tool call of a conversation thread, reduced from its stored events, to restore a client after a reload. With `Accept: text/event-stream` the answer is the stream RUN_STARTED, STATE_SNAPSHOT, MESSAGES_SNAPSHOT, RUN_FINISHED instead. A stateless workflow keeps no history: its answer is empty.",
		Tags:        []string{"threads"},
		Responses: map[string]*huma.Response{
			"200": {
				Description: "The history, as JSON or as an AG-UI snapshot stream.",
				Content: map[string]*huma.MediaType{
					"application/json":  {Schema: envelope},
					"text/event-stream": {Schema: &huma.Schema{Type: huma.TypeString}},
				},
			},
		},
		MaxBodyBytes: s.cfg.BodyLimit,
		Errors:       []int{http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
	}, func(ctx context.Context, in *historyInput) (*huma.StreamResponse, error) {
		req := in.Body
		if req.WorkflowID != "" && req.WorkflowName != "" {
			return nil, badRequest("give workflowId or workflowName, not both")
		}
		if req.WorkflowID == "" && req.WorkflowName == "" {
			return nil, badRequest("workflowId or workflowName must name the conversation's workflow")
		}
		wf, err := s.workflow(selector{id: req.WorkflowID, name: req.WorkflowName})
		if err != nil {
			return nil, err
		}
		h := History{Messages: []Message{}, PendingFrontendTools: []PendingTool{}}
		if wf.Conversation {
			key := store.Key{Scope: scopeOf(ctx), Workflow: wf.ID, Thread: req.ThreadID}
			if h, err = s.history(ctx, key, maxMessages(req.MaxMessages)); err != nil {
				return nil, err
			}
		}
		if wantsStream(in.Accept) {
			d := dialectOf(req.Protocol)
			if wf.Conversation {
				key := store.Key{Scope: scopeOf(ctx), Workflow: wf.ID, Thread: req.ThreadID}
				return s.restore(ctx, key, req.ThreadID, "", maxMessages(req.MaxMessages), d)
			}
			return s.snapshot(req.ThreadID, "", h, d), nil
		}
		return &huma.StreamResponse{Body: func(ctx huma.Context) {
			_, w := humago.Unwrap(ctx)
			w.Header().Set("Content-Type", "application/json")
			ctx.SetStatus(http.StatusOK)
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			enc.Encode(h)
		}}, nil
	})
}

// all is the upTo of reduce that reads every event.
const all = math.MaxUint64

func wantsStream(accept string) bool { return strings.Contains(accept, "text/event-stream") }

// maxMessages reads maxMessages: a positive integer, else 0 (all).
func maxMessages(v any) int {
	f, ok := v.(float64)
	if !ok || f < 1 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0
	}
	return int(f)
}

// history reduces the stored events of a thread into its messages and
// state; max > 0 keeps the most recent messages. 404 when the thread does
// not exist.
func (s *Server) history(ctx context.Context, key store.Key, max int) (History, error) {
	th, err := s.thread(ctx, key)
	if err != nil {
		return History{}, err
	}
	return s.historyOf(ctx, th, max)
}

// thread reads a thread: 404 when it does not exist.
func (s *Server) thread(ctx context.Context, key store.Key) (store.Thread, error) {
	th, err := s.cfg.Store.Thread(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return th, huma.Error404NotFound(fmt.Sprintf("workflow %q has no thread %q", key.Workflow, key.Thread))
	}
	if err != nil {
		return th, storeFailed("reading the thread failed", err)
	}
	return th, nil
}

func (s *Server) historyOf(ctx context.Context, th store.Thread, max int) (History, error) {
	red, err := s.reduce(ctx, th, all)
	if err != nil {
		return History{}, err
	}
	msgs := recent(red.Messages, max)
	h := History{Messages: make([]Message, len(msgs)), State: red.State, PendingFrontendTools: []PendingTool{}}
	for i, m := range msgs {
		h.Messages[i] = Message{m}
	}
	if st, ok := checkpointState(th); ok {
		h.State = st
	}
	h.wait = waitOf(th)
	if p := pendingTool(h.wait, msgs); p != nil {
		h.PendingFrontendTools = append(h.PendingFrontendTools, PendingTool{*p})
	}
	return h, nil
}

// restore is the stream that restores a client of the conversation key
// (see snapshot). When a run is in progress on the thread, in this process
// or another that shares the store, the snapshot is of the conversation
// before that run, and the stream goes on with the run's events, as they
// are committed, to its end: a client that reloads during a run sees it
// go on. runID "" is the run's id (or a new one). The stream speaks
// dialect d.
func (s *Server) restore(ctx context.Context, key store.Key, threadID, runID string, max int, d agui.Dialect) (*huma.StreamResponse, error) {
	rp, err := s.restoreReply(ctx, key, threadID, runID, max)
	if err != nil {
		return nil, err
	}
	return s.sse(rp, d), nil
}

// restoreReply is restore before it becomes a stream.
func (s *Server) restoreReply(ctx context.Context, key store.Key, threadID, runID string, max int) (reply, error) {
	th, err := s.thread(ctx, key)
	if err != nil {
		return reply{}, err
	}
	if th.Status != store.Running || th.RunID == "" {
		h, err := s.historyOf(ctx, th, max)
		if err != nil {
			return reply{}, err
		}
		return reply{run: s.snapshotRun(threadID, runID, h)}, nil
	}
	cut, err := s.runStart(ctx, th, th.RunID)
	if err != nil {
		return reply{}, storeFailed("reading the thread's events failed", err)
	}
	red, err := s.reduce(ctx, th, cut)
	if err != nil {
		return reply{}, err
	}
	msgs := recent(red.Messages, max)
	if runID == "" {
		runID = th.RunID
	}
	r := newRun(runID, key, s.now)
	r.threadID = threadID
	r.pushEvent(0, agui.RunStarted(threadID, runID, "", nil), false)
	r.pushEvent(0, agui.StateSnapshotEvent{Snapshot: red.State}, false)
	r.pushEvent(0, agui.MessagesSnapshotEvent{Messages: msgs}, false)
	// The snapshot ends before the run: its silent events are history the
	// client does not have yet.
	return reply{run: r, produce: func(ctx context.Context) { s.followRun(ctx, r, key, th.RunID, cut, true) }}, nil
}

// waitOf is what a suspended thread waits for the client to answer: its
// frontend tool calls or its interrupts; nil for anything else.
func waitOf(th store.Thread) *vm.Wait {
	if th.Status != store.Suspended || len(th.Wait) == 0 {
		return nil
	}
	var w vm.Wait
	if json.Unmarshal(th.Wait, &w) != nil {
		return nil
	}
	switch {
	case w.Kind == vm.WaitTool && len(w.ToolCallIDs) > 0, w.Kind == vm.WaitInterrupt && len(w.Interrupts) > 0:
		return &w
	}
	return nil
}

// reduce folds the stored events of a thread into messages and state, as a
// replay shows them: hidden events left out, silent ones in, up to the
// event of sequence number upTo (all for every event).
func (s *Server) reduce(ctx context.Context, th store.Thread, upTo uint64) (*agui.Reducer, error) {
	red := &agui.Reducer{}
	after := uint64(0)
	if th.FirstSeq > 0 {
		after = th.FirstSeq - 1
	}
	for {
		evs, err := s.cfg.Store.Events(ctx, th.Key, after, 500)
		if errors.Is(err, store.ErrExpired) {
			// Retention removed events meanwhile: start at the oldest kept.
			t, terr := s.cfg.Store.Thread(ctx, th.Key)
			if terr != nil || t.FirstSeq <= after+1 {
				return nil, storeFailed("reading the thread's events failed", err)
			}
			after = t.FirstSeq - 1
			continue
		}
		if err != nil {
			return nil, storeFailed("reading the thread's events failed", err)
		}
		for _, se := range evs {
			if se.Seq > upTo {
				return red, nil
			}
			e, err := se.Decode()
			if err != nil {
				continue
			}
			e.Silent, e.Hidden = se.Silent, se.Hidden
			if err := red.Add(e); err != nil {
				s.log.Warn("a stored event does not apply", "workflow", th.Key.Workflow, "thread", th.Key.Thread, "seq", se.Seq, "error", err.Error())
			}
		}
		if len(evs) < 500 {
			return red, nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// recent returns the last max messages (all when max is 0), reaching
// back for the assistant message of every tool result it keeps, so that
// the history still renders.
func recent(msgs []agui.Message, max int) []agui.Message {
	if max <= 0 || max >= len(msgs) {
		return msgs
	}
	start := len(msgs) - max
	for changed := true; changed; {
		changed = false
		for i := start; i < len(msgs); i++ {
			m := msgs[i]
			if m.Role != agui.RoleTool || m.ToolCallID == "" {
				continue
			}
			for j := start - 1; j >= 0; j-- {
				if hasCall(msgs[j], m.ToolCallID) {
					start, changed = j, true
					break
				}
			}
		}
	}
	return msgs[start:]
}

func hasCall(m agui.Message, id string) bool {
	for _, tc := range m.ToolCalls {
		if tc.ID == id {
			return true
		}
	}
	return false
}

// checkpointState is the AG-UI state the thread's checkpoint holds:
// $agent.state of its frame.
func checkpointState(th store.Thread) (any, bool) {
	if len(th.Frame) == 0 {
		return nil, false
	}
	f, err := store.LoadFrame(th)
	if err != nil {
		return nil, false
	}
	agent, _ := f.Context["agent"].(map[string]any)
	st, ok := agent["state"]
	if !ok || st == nil {
		return nil, false
	}
	return st, true
}

// pendingTool is the frontend tool call the thread waits for (w), when
// it is a call of the last message and has no result.
func pendingTool(w *vm.Wait, msgs []agui.Message) *agui.ToolCall {
	if w == nil || w.Kind != vm.WaitTool || len(msgs) == 0 {
		return nil
	}
	last := msgs[len(msgs)-1]
	for i := len(last.ToolCalls) - 1; i >= 0; i-- {
		tc := last.ToolCalls[i]
		for _, id := range w.ToolCallIDs {
			if tc.ID == id {
				return &tc
			}
		}
	}
	return nil
}

// snapshot is the stream that restores a client: RUN_STARTED,
// STATE_SNAPSHOT, MESSAGES_SNAPSHOT, RUN_FINISHED. runID "" makes one.
// RUN_FINISHED has the outcome the last run ended with when the thread
// waits for the client (pendingToolCallIds, interrupts), so a client that
// reloads learns what it has to answer; else a plain success. The stream
// speaks dialect d.
func (s *Server) snapshot(threadID, runID string, h History, d agui.Dialect) *huma.StreamResponse {
	return s.stream(s.snapshotRun(threadID, runID, h), d)
}

// snapshotRun is the ended run whose frames are snapshot's.
func (s *Server) snapshotRun(threadID, runID string, h History) *run {
	if runID == "" {
		runID = "run-" + uuid.NewString()
	}
	r := newRun(runID, store.Key{Thread: threadID}, s.now)
	msgs := make([]agui.Message, len(h.Messages))
	for i, m := range h.Messages {
		msgs[i] = m.Message
	}
	r.pushEvent(0, agui.RunStarted(threadID, runID, "", nil), false)
	r.pushEvent(0, agui.StateSnapshotEvent{Snapshot: h.State}, false)
	r.pushEvent(0, agui.MessagesSnapshotEvent{Messages: msgs}, false)
	o := vm.Outcome{Status: vm.Finished}
	if h.wait != nil {
		o = vm.Outcome{Status: vm.Suspended, Wait: h.wait}
	}
	r.pushEvent(0, agui.RunFinished(threadID, runID, o, nil), true)
	close(r.done)
	return r
}
