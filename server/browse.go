package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// The routes that browse the threads of the request's scope: the list,
// one thread with what it waits for and its runs, a thread's runs, and
// its stored events as JSON pages. They read the store only.

// workflowField is how the browsing routes name the workflow, for the
// 400 of a thread id several workflows have.
const workflowField = "the query parameter workflow"

// maxScan is the most threads one request of the thread list reads,
// whatever its filters keep: a filter that keeps few threads answers a
// page with fewer than its limit (none, even) and the cursor to read on
// from, rather than reading without bound.
const maxScan = 1000

// ThreadInfo is a thread as the thread list shows it.
type ThreadInfo struct {
	ThreadID string    `json:"threadId"`
	Workflow string    `json:"workflow" doc:"The id of the thread's workflow."`
	Status   string    `json:"status" enum:"running,suspended,finished,failed,cancelled,queued" doc:"Where the thread stands."`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated" doc:"The time of the thread's last commit."`
	RunID    string    `json:"runId" doc:"The thread's last run: the one that wrote its checkpoint."`
	FirstSeq uint64    `json:"firstSeq" doc:"The sequence number of the oldest event kept (retention may have removed those before); 0 before the first event."`
	LastSeq  uint64    `json:"lastSeq" doc:"The sequence number of the last event."`
	Version  uint64    `json:"version" doc:"Adds 1 with every commit to the thread."`
}

// ThreadList is one page of the thread list.
type ThreadList struct {
	Threads []ThreadInfo `json:"threads"`
	Next    string       `json:"next" doc:"The cursor of the next page (the after parameter); empty on the last page."`
}

// ThreadDetail is one thread: where it stands, what it waits for and its
// latest runs.
type ThreadDetail struct {
	ThreadInfo
	Title        string    `json:"title,omitempty" doc:"The workflow's title."`
	Conversation bool      `json:"conversation" doc:"Whether the workflow is a conversation, which keeps the thread between requests."`
	Waiting      Waiting   `json:"waiting"`
	Runs         []RunInfo `json:"runs" doc:"The first page of the thread's runs, newest first, as GET {base}/threads/{threadId}/runs answers it."`
	RunsNext     string    `json:"runsNext" doc:"The cursor of the next page of runs; empty when there is none."`
}

// Waiting is what a thread waits for; only the fields of its kind are
// present.
type Waiting struct {
	For        string            `json:"for" enum:"user,tools,interrupts,time,nothing" doc:"user: the next user message (a suspend); tools: the results of frontend tool calls; interrupts: answers to interrupts (resume); time: a time, when the server wakes it; nothing: the thread is not suspended."`
	ToolCalls  []WaitingToolCall `json:"toolCalls,omitempty" doc:"for tools: the calls that wait for their results."`
	Interrupts []agui.Interrupt  `json:"interrupts,omitempty" doc:"for interrupts: the open interrupts, as RUN_FINISHED's outcome shows them."`
	WakeAt     time.Time         `json:"wakeAt,omitzero" doc:"for time: when the thread is woken."`
}

// WaitingToolCall is a frontend tool call that waits for its result.
type WaitingToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty" doc:"The tool's name; absent when the call's events were removed."`
	Args string `json:"args,omitempty" doc:"The arguments, a JSON object as text, as the call streamed them."`
}

// RunInfo is one run of a thread, without the input it started with.
type RunInfo struct {
	RunID      string        `json:"runId"`
	Status     string        `json:"status" enum:"running,suspended,finished,failed,cancelled,queued" doc:"How the run ended, or running, or queued behind the runs of its thread before it."`
	Started    time.Time     `json:"started" doc:"When the run started (for a queued run, when it was queued)."`
	Finished   time.Time     `json:"finished,omitzero"`
	DurationMs *int64        `json:"durationMs,omitempty" doc:"From start to finish, in milliseconds, once the run ended."`
	Outcome    *agui.Outcome `json:"outcome,omitempty" doc:"The outcome of a run that ended without failing, as its RUN_FINISHED shows it."`
	Error      string        `json:"error,omitempty" doc:"The message of a failed run, as its RUN_ERROR shows it."`
	Code       string        `json:"code,omitempty" doc:"The code of a failed run, as its RUN_ERROR shows it."`
}

// RunList is one page of a thread's runs.
type RunList struct {
	Runs []RunInfo `json:"runs"`
	Next string    `json:"next" doc:"The cursor of the next page (the after parameter); empty on the last page."`
}

// EventPage is one page of a thread's stored events.
type EventPage struct {
	Events   []StoredEvent `json:"events"`
	Next     string        `json:"next" doc:"The cursor of the next page (the after parameter): the sequence number of the last event read; empty once the page reached the end of the log."`
	FirstSeq uint64        `json:"firstSeq" doc:"The sequence number of the oldest event kept."`
	LastSeq  uint64        `json:"lastSeq" doc:"The sequence number of the last event."`
}

// StoredEvent is one event of a thread's log.
type StoredEvent struct {
	Seq   uint64          `json:"seq"`
	RunID string          `json:"runId" doc:"The run that stored it."`
	Time  time.Time       `json:"time" doc:"When it was stored."`
	Event json.RawMessage `json:"event" doc:"The AG-UI event, as the replay route sends it."`
}

type threadListInput struct {
	Workflow string `query:"workflow" doc:"Only the threads of this workflow (its id)."`
	Status   string `query:"status" enum:"running,suspended,finished,failed,cancelled,queued" doc:"Only the threads of this status."`
	After    string `query:"after" doc:"The next of the previous page; the first page when empty."`
	Limit    int    `query:"limit" minimum:"1" doc:"At most this many threads (default 100, at most 500)."`
}

type threadListOutput struct{ Body ThreadList }

type threadInput struct {
	ThreadID string `path:"threadId"`
	Workflow string `query:"workflow" doc:"The thread's workflow, when threads of several workflows have this id."`
}

type threadOutput struct{ Body ThreadDetail }

type threadRunsInput struct {
	ThreadID string `path:"threadId"`
	Workflow string `query:"workflow" doc:"The thread's workflow, when threads of several workflows have this id."`
	After    string `query:"after" doc:"The next of the previous page; the newest runs when empty."`
	Limit    int    `query:"limit" minimum:"1" doc:"At most this many runs (default 100, at most 500)."`
}

type threadRunsOutput struct{ Body RunList }

type threadEventsInput struct {
	ThreadID string `path:"threadId"`
	Workflow string `query:"workflow" doc:"The thread's workflow, when threads of several workflows have this id."`
	After    string `query:"after" doc:"The events after this sequence number; from the oldest event kept when empty."`
	Limit    int    `query:"limit" minimum:"1" doc:"At most this many events read (default 100, at most 500); the events hidden from replay count, though they are left out."`
}

type threadEventsOutput struct{ Body EventPage }

// Resolve checks the length of the thread id of the URL.
func (in *threadInput) Resolve(huma.Context) []error { return threadPath(in.ThreadID) }

// Resolve checks the length of the thread id of the URL.
func (in *threadRunsInput) Resolve(huma.Context) []error { return threadPath(in.ThreadID) }

// Resolve checks the length of the thread id of the URL.
func (in *threadEventsInput) Resolve(huma.Context) []error { return threadPath(in.ThreadID) }

func (s *Server) registerBrowse() {
	b := s.base
	op := func(id, path, summary, desc string) huma.Operation {
		return huma.Operation{OperationID: id, Method: http.MethodGet, Path: path, Summary: summary, Description: desc,
			Tags: []string{"threads"}, Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusServiceUnavailable}}
	}
	huma.Register(s.api, op("listThreads", b+"/threads", "List the threads",
		"The threads of the request's scope, of the workflows served, ordered by workflow id then thread id, a page at a time; workflow and status filter them. One request reads at most 1000 threads: a filter that keeps few answers a page with fewer than limit, and the next cursor to read on from."),
		s.threads)
	huma.Register(s.api, op("getThread", b+"/threads/{threadId}", "Describe a thread",
		"One thread: where it stands, what it waits for (the next user message, frontend tool calls, interrupts, a time, or nothing) and its latest runs."),
		s.describeThread)
	huma.Register(s.api, op("listThreadRuns", b+"/threads/{threadId}/runs", "A thread's runs",
		"The thread's runs, newest first, a page at a time: each with its status, times and outcome, never the input it started with."),
		s.threadRuns)
	eventsOp := op("threadEvents", b+"/threads/{threadId}/events", "A thread's stored events",
		"The thread's stored events after the cursor, as JSON pages: what the replay route streams (events hidden from replay left out, silent ones in), each with its sequence number, run id and time, to step through the log. 410 when the events after the cursor were removed.")
	eventsOp.Errors = []int{http.StatusBadRequest, http.StatusNotFound, http.StatusGone, http.StatusServiceUnavailable}
	huma.Register(s.api, eventsOp, s.threadEvents)
}

func (s *Server) threads(ctx context.Context, in *threadListInput) (*threadListOutput, error) {
	if in.Workflow != "" {
		if _, err := s.workflow(selector{id: in.Workflow}); err != nil {
			return nil, err
		}
	}
	ths, next, err := s.listThreads(ctx, in.Workflow, store.Status(in.Status), in.After, page(in.Limit))
	if err != nil {
		return nil, err
	}
	out := &threadListOutput{Body: ThreadList{Threads: make([]ThreadInfo, len(ths)), Next: next}}
	for i, th := range ths {
		out.Body.Threads[i] = threadInfo(th)
	}
	return out, nil
}

// listThreads reads the threads of the request's scope (of workflow, when
// not "") in the store's order from the cursor after, keeps those of the
// workflows served and of the status (any when ""), up to limit of them,
// reading at most maxScan threads, and returns them with the cursor after
// the last thread it read, "" at the end. It reads in growing pages, so
// that a filter that keeps few threads takes few reads; a page that goes
// on past the last thread it takes is read again up to that thread, for
// the cursor after it.
func (s *Server) listThreads(ctx context.Context, workflow string, status store.Status, after string, limit int) ([]store.Thread, string, error) {
	scope := scopeOf(ctx)
	// keep takes the threads of ths the filters keep, up to n of them, and
	// says where the last one taken is and whether ths holds more.
	keep := func(ths []store.Thread, n int) (kept []store.Thread, last int, more bool) {
		last = -1
		for i, th := range ths {
			if (status != "" && th.Status != status) || s.cfg.Machine.Program.Workflow(th.Workflow) == nil {
				continue
			}
			if len(kept) == n {
				return kept, last, true
			}
			kept, last = append(kept, th), i
		}
		return kept, last, false
	}
	read := func(after string, n int) ([]store.Thread, string, error) {
		ths, next, err := s.cfg.Store.Threads(ctx, scope, workflow, store.Page{After: after, Limit: n})
		if err != nil {
			return nil, "", listFailed("listing the threads failed", after, err)
		}
		return ths, next, nil
	}
	var out []store.Thread
	for scanned, size := 0, limit; ; {
		ths, next, err := read(after, size)
		if err != nil {
			return nil, "", err
		}
		scanned += len(ths)
		want := limit - len(out)
		kept, last, more := keep(ths, want)
		if more {
			// The page holds more than the rest of this one takes.
			again, next, err := read(after, last+1)
			if err != nil {
				return nil, "", err
			}
			kept, _, _ = keep(again, want)
			return append(out, kept...), next, nil
		}
		out = append(out, kept...)
		if next == "" || len(out) == limit || scanned >= maxScan {
			return out, next, nil
		}
		after = next
		size = min(max(2*size, limit-len(out)), maxPage, maxScan-scanned)
	}
}

// listFailed is the answer to a listing the store refused: 400 for a
// cursor it did not make.
func listFailed(what, after string, err error) error {
	if errors.Is(err, store.ErrCursor) {
		return badRequest(fmt.Sprintf("malformed cursor %q: pass the next of the page before", after))
	}
	return storeFailed(what, err)
}

func threadInfo(th store.Thread) ThreadInfo {
	return ThreadInfo{
		ThreadID: th.Thread, Workflow: th.Workflow, Status: string(th.Status), Created: th.Created, Updated: th.Updated,
		RunID: th.RunID, FirstSeq: th.FirstSeq, LastSeq: th.LastSeq, Version: th.Version,
	}
}

func (s *Server) describeThread(ctx context.Context, in *threadInput) (*threadOutput, error) {
	th, wf, err := s.findThread(ctx, in.ThreadID, in.Workflow, workflowField)
	if err != nil {
		return nil, err
	}
	waiting, err := s.waiting(ctx, th)
	if err != nil {
		return nil, err
	}
	runs, next, err := s.runList(ctx, th, "", defaultPage)
	if err != nil {
		return nil, err
	}
	return &threadOutput{Body: ThreadDetail{
		ThreadInfo: threadInfo(th), Title: wf.Title, Conversation: wf.Conversation,
		Waiting: waiting, Runs: runs, RunsNext: next,
	}}, nil
}

// The kinds of Waiting.For.
const (
	waitsForUser       = "user"
	waitsForTools      = "tools"
	waitsForInterrupts = "interrupts"
	waitsForTime       = "time"
	waitsForNothing    = "nothing"
)

// waiting is what th waits for, from the wait its suspended run stored; a
// frontend tool call's name and arguments are read from the events of
// that run.
func (s *Server) waiting(ctx context.Context, th store.Thread) (Waiting, error) {
	var w vm.Wait
	if th.Status != store.Suspended || json.Unmarshal(th.Wait, &w) != nil {
		return Waiting{For: waitsForNothing}, nil
	}
	switch w.Kind {
	case vm.WaitUser:
		return Waiting{For: waitsForUser}, nil
	case vm.WaitTool:
		calls, err := s.toolCalls(ctx, th, w.ToolCallIDs)
		return Waiting{For: waitsForTools, ToolCalls: calls}, err
	case vm.WaitInterrupt:
		out := Waiting{For: waitsForInterrupts, Interrupts: make([]agui.Interrupt, len(w.Interrupts))}
		for i, in := range w.Interrupts {
			out.Interrupts[i] = agui.FromVMInterrupt(in)
		}
		return out, nil
	case vm.WaitTimer:
		out := Waiting{For: waitsForTime, WakeAt: th.WakeAt}
		if w.Until > 0 {
			out.WakeAt = time.UnixMilli(w.Until).UTC()
		}
		return out, nil
	}
	return Waiting{For: waitsForNothing}, nil
}

// toolCalls are the frontend tool calls ids, with the name and arguments
// the run that suspended th (th.RunID) streamed for each; a call whose
// events retention removed has its id only.
func (s *Server) toolCalls(ctx context.Context, th store.Thread, ids []string) ([]WaitingToolCall, error) {
	from, err := s.runStart(ctx, th, th.RunID)
	if err != nil {
		return nil, storeFailed("reading the thread's events failed", err)
	}
	red := &agui.Reducer{}
	_, err = s.eachEvent(ctx, th.Key, from, func(se store.Event) bool {
		if se.RunID != th.RunID {
			return false
		}
		if e, err := se.Decode(); err == nil {
			e.Silent, e.Hidden = se.Silent, se.Hidden
			red.Add(e) // an event that does not apply names no call
		}
		return true
	})
	if err != nil && !errors.Is(err, store.ErrExpired) {
		return nil, storeFailed("reading the thread's events failed", err)
	}
	calls := make([]WaitingToolCall, len(ids))
	for i, id := range ids {
		calls[i].ID = id
		if tc := red.ToolCall(id); tc != nil {
			calls[i].Name, calls[i].Args = tc.Function.Name, tc.Function.Arguments
		}
	}
	return calls, nil
}

func (s *Server) threadRuns(ctx context.Context, in *threadRunsInput) (*threadRunsOutput, error) {
	th, _, err := s.findThread(ctx, in.ThreadID, in.Workflow, workflowField)
	if err != nil {
		return nil, err
	}
	runs, next, err := s.runList(ctx, th, in.After, page(in.Limit))
	if err != nil {
		return nil, err
	}
	return &threadRunsOutput{Body: RunList{Runs: runs, Next: next}}, nil
}

// runList is a page of the runs of th, newest first, from the cursor.
func (s *Server) runList(ctx context.Context, th store.Thread, after string, limit int) ([]RunInfo, string, error) {
	recs, next, err := s.cfg.Store.ThreadRuns(ctx, th.Key, store.Page{After: after, Limit: limit})
	if err != nil {
		return nil, "", listFailed("listing the thread's runs failed", after, err)
	}
	runs := make([]RunInfo, len(recs))
	for i, rec := range recs {
		runs[i] = runInfo(th.Thread, rec)
	}
	return runs, next, nil
}

// runInfo describes a run from its record; the outcome, error and code
// are those of the terminal event the run's stream ended with.
func runInfo(threadID string, rec store.Run) RunInfo {
	r := RunInfo{RunID: rec.ID, Status: string(rec.Status), Started: rec.Started, Finished: rec.Finished}
	if !rec.Finished.IsZero() {
		d := rec.Finished.Sub(rec.Started).Milliseconds()
		r.DurationMs = &d
	}
	if !ended(rec.Status) {
		return r
	}
	switch ev := storedTerminal(threadID, rec.ID, rec).(type) {
	case agui.RunFinishedEvent:
		r.Outcome = ev.Outcome
	case agui.RunErrorEvent:
		r.Error, r.Code = ev.Message, ev.Code
	}
	return r
}

func (s *Server) threadEvents(ctx context.Context, in *threadEventsInput) (*threadEventsOutput, error) {
	after, explicit, err := cursorOf(in.After, "")
	if err != nil {
		return nil, err
	}
	th, _, err := s.findThread(ctx, in.ThreadID, in.Workflow, workflowField)
	if err != nil {
		return nil, err
	}
	limit := page(in.Limit)
	evs, th, err := s.storedEvents(ctx, th, after, explicit, limit)
	if err != nil {
		return nil, err
	}
	out := &threadEventsOutput{Body: EventPage{Events: []StoredEvent{}, FirstSeq: th.FirstSeq, LastSeq: th.LastSeq}}
	for _, se := range evs {
		out.Body.LastSeq = max(out.Body.LastSeq, se.Seq)
		if se.Hidden {
			continue
		}
		if data, ok := storedFrame(se); ok {
			out.Body.Events = append(out.Body.Events, StoredEvent{Seq: se.Seq, RunID: se.RunID, Time: se.Time, Event: data})
		}
	}
	if len(evs) == limit {
		out.Body.Next = strconv.FormatUint(evs[len(evs)-1].Seq, 10)
	}
	return out, nil
}
