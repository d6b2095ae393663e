package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm/store"
)

// TestReplayKept replays a thread whose oldest events retention removed:
// without a cursor the replay starts at the oldest kept event; a cursor
// that points into the removed events is 410, since the client would
// miss events.
func TestReplayKept(t *testing.T) {
	e := newEnv(t, nil)
	for i, msg := range []string{"a", "b", "c"} {
		id := "r" + strconv.Itoa(i)
		e.stream(e.post("/agui/workflows/counter", `{"threadId": "kept", "runId": "`+id+`", "messages": [{"id": "`+id+`", "role": "user", "content": "`+msg+`"}]}`))
	}
	key := store.Key{Scope: "default", Workflow: "counter", Thread: "kept"}
	if _, _, err := e.store.Sweep(context.Background(), store.Retention{MaxEvents: 3}, time.Now()); err != nil {
		t.Fatal(err)
	}
	th, err := e.store.Thread(context.Background(), key)
	if err != nil || th.FirstSeq < 2 {
		t.Fatalf("thread after the sweep: first event %d, %v; want events removed", th.FirstSeq, err)
	}
	first := th.FirstSeq
	from := strconv.FormatUint(first-1, 10)
	get := func(query, lastEventID string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, e.http.URL+"/agui/threads/kept/replay"+query, nil)
		if lastEventID != "" {
			req.Header.Set("Last-Event-ID", lastEventID)
		}
		resp, err := e.http.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	outer := e.t
	for _, tc := range []struct {
		name, query, lastEventID string
		status                   int
		firstID                  uint64 // the id of the first frame, for 200
	}{
		{"no cursor", "", "", http.StatusOK, first},
		{"empty cursor", "?cursor=", "", http.StatusOK, first},
		{"no cursor, a limit", "?limit=1", "", http.StatusOK, first},
		{"cursor at the oldest kept", "?cursor=" + from, "", http.StatusOK, first},
		{"Last-Event-ID at the oldest kept", "", from, http.StatusOK, first},
		{"cursor 0", "?cursor=0", "", http.StatusGone, 0},
		{"cursor before the oldest kept", "?cursor=" + strconv.FormatUint(first-2, 10), "", http.StatusGone, 0},
		{"Last-Event-ID 0", "", "0", http.StatusGone, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			defer func() { e.t = outer }()
			resp := get(tc.query, tc.lastEventID)
			if tc.status != http.StatusOK {
				p := e.problem(resp, tc.status)
				if want := "replay from " + from; !strings.HasSuffix(str(p["detail"]), want) {
					t.Errorf("detail %q, want it to say %q", p["detail"], want)
				}
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				body, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			var ids []uint64
			for f, err := range agui.ReadSSE(resp.Body) {
				if err != nil {
					t.Fatal(err)
				}
				n, _ := strconv.ParseUint(f.ID, 10, 64)
				ids = append(ids, n)
			}
			if len(ids) == 0 || ids[0] != tc.firstID {
				t.Errorf("frame ids %v, want them to start at %d", ids, tc.firstID)
			}
		})
	}
}

// TestCancelSelector sends cancel requests whose forwardedProps hold a
// malformed workflow selector: each is the 400 the run route answers to
// the same forwardedProps, and the run goes on. forwardedProps that hold
// no selector are free-form.
func TestCancelSelector(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker(t)
	run := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered
	outer := e.t
	for _, props := range []string{
		`{"aguic": "junk"}`,
		`{"aguic": 3}`,
		`{"aguic": {"workflowId": "slow", "workflowName": "Slow"}}`,
		`{"aguic": {"workflowId": "slow", "workflowName": "Echo"}}`,
		`{"workflowId": "slow", "workflowName": "Slow"}`,
		`{"aguic": {"workflowId": ""}}`,
		`{"aguic": {"workflowId": 7}}`,
		`{"workflowName": null}`,
	} {
		t.Run(props, func(t *testing.T) {
			e.t = t
			defer func() { e.t = outer }()
			want := e.problem(e.post("/agui", `{"threadId": "busy", "forwardedProps": `+props+`}`), http.StatusBadRequest)
			got := e.problem(e.post("/agui/cancel", `{"threadId": "busy", "forwardedProps": `+props+`}`), http.StatusBadRequest)
			if got["detail"] != want["detail"] || want["detail"] == nil {
				t.Errorf("cancel: %q\nrun:    %q", got["detail"], want["detail"])
			}
		})
	}
	e.t = outer
	// Nothing was cancelled: the run still waits on the HTTP server.
	if c := e.cancelStatus(`{"threadId": "busy", "forwardedProps": "junk"}`); c["status"] != "cancelled" || c["runId"] != "r1" {
		t.Errorf("cancel with free-form forwardedProps answered %v, want the run r1 cancelled", c)
	}
	if o := outcome(t, e.stream(run)); o["type"] != "cancelled" {
		t.Errorf("outcome %v, want cancelled", o)
	}

	// Free-form forwardedProps that name no workflow select none.
	for i, props := range []string{`"junk"`, `[1]`, `{"aguic": null}`, `{"aguic": {}}`, `{"aguic": {"nodeEvents": true}}`, `{"other": {"workflowId": 3}}`} {
		run := e.post("/agui/workflows/slow", slowBody(fmt.Sprintf("r2-%d", i), b.srv.URL))
		<-b.entered
		if c := e.cancelStatus(`{"threadId": "busy", "forwardedProps": ` + props + `}`); c["status"] != "cancelled" {
			t.Errorf("forwardedProps %s: cancel answered %v", props, c)
		}
		e.stream(run)
	}
}

// cancelStatus posts body to the cancel route and decodes its answer.
func (e *env) cancelStatus(body string) map[string]any {
	e.t.Helper()
	var c map[string]any
	decode(e.t, e.post("/agui/cancel", body), &c)
	return c
}

// TestAmbiguousThread names, in the 400 for a thread id several
// workflows have, the exact field each route picks the workflow with.
func TestAmbiguousThread(t *testing.T) {
	e := newEnv(t, nil)
	for _, wf := range []string{"counter", "refund"} {
		e.stream(e.post("/agui/workflows/"+wf, `{"threadId": "two", "messages": [{"id": "m", "role": "user", "content": "x"}]}`))
	}
	outer := e.t
	for _, tc := range []struct {
		name, method, path, body, field string
	}{
		{"run on a thread", "POST", "/agui/threads/two/runs", `{"messages": [{"id": "m2", "role": "user", "content": "y"}]}`, "name one with forwardedProps.aguic.workflowId"},
		{"messages", "GET", "/agui/threads/two/messages", "", "name one with the query parameter workflowId"},
		{"replay", "GET", "/agui/threads/two/replay", "", "name one with the query parameter workflowId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			defer func() { e.t = outer }()
			p := e.problem(e.send(tc.method, tc.path, tc.body), http.StatusBadRequest)
			if d := str(p["detail"]); !strings.HasSuffix(d, tc.field) {
				t.Errorf("detail %q, want it to end with %q", d, tc.field)
			}
		})
	}
}

// clock is a machine clock that tests move forward.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestExpiredInterrupt answers an interrupt past its expiresAt: resolving
// it is refused with a message that says to cancel it, cancelling it is
// accepted and takes the node's cancelled path, and the conversation goes
// on.
func TestExpiredInterrupt(t *testing.T) {
	clk := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	e := newEnv(t, func(c *server.Config) { c.Machine.Now = clk.Now })
	post := func(body string) []event {
		return e.stream(e.post("/agui/workflows/expiring", body))
	}
	resume := func(id, status string) string {
		return `{"threadId": "x1", "resume": [{"interruptId": "` + id + `", "status": "` + status + `", "payload": {"ok": true}}]}`
	}
	open := func(evs []event) map[string]any {
		t.Helper()
		o := outcome(t, evs)
		ins, _ := o["interrupts"].([]any)
		if o["type"] != "interrupt" || len(ins) != 1 {
			t.Fatalf("outcome %v, want one interrupt", o)
		}
		return ins[0].(map[string]any)
	}
	in := open(post(`{"threadId": "x1", "messages": [{"id": "m1", "role": "user", "content": "A-1"}]}`))
	if in["expiresAt"] != "2026-01-02T04:04:05.000Z" {
		t.Errorf("expiresAt %v", in["expiresAt"])
	}
	id := str(in["id"])
	clk.advance(time.Hour + time.Millisecond)

	for _, tc := range []struct {
		name, body string
		want       string // the RUN_ERROR's message, or the text of a run that goes on
		failed     bool
	}{
		{"resolved", resume(id, "resolved"), `interrupt "` + id + `" expired at 2026-01-02T04:04:05Z and can no longer be resolved: resume it with status "cancelled"`, true},
		{"a message", `{"threadId": "x1", "messages": [{"id": "m2", "role": "user", "content": "hello?"}]}`, `interrupt "` + id + `" (approval) has no resume entry`, true},
		{"cancelled", resume(id, "cancelled"), "Status cancelled.\n", false},
	} {
		evs := post(tc.body)
		end := last(evs)
		if tc.failed {
			if end["type"] != "RUN_ERROR" || end["code"] != "invalid_resume" || end["message"] != tc.want {
				t.Errorf("%s: %v\nwant RUN_ERROR invalid_resume %q", tc.name, end, tc.want)
			}
			continue
		}
		if o := outcome(t, evs); o["type"] != "success" || text(evs) != tc.want {
			t.Errorf("%s: text %q, outcome %v; want %q", tc.name, text(evs), o, tc.want)
		}
	}
	// The next turn opens a new interrupt, which can be resolved.
	in = open(post(`{"threadId": "x1", "messages": [{"id": "m3", "role": "user", "content": "B-2"}]}`))
	if evs := post(resume(str(in["id"]), "resolved")); text(evs) != "Status resolved.\n" {
		t.Errorf("the new interrupt resolved: %q", text(evs))
	}
}

// TestRefusedResume sends a conversation a request that does not answer
// what it waits for: the run is refused, and the thread still reads as
// waiting, with what it waits for, until a request answers it.
func TestRefusedResume(t *testing.T) {
	for _, tc := range []struct {
		name, workflow string
		refused        string              // a body that does not answer the wait
		answer         func(string) string // a body that does, given what the run waits for
		said           string              // what the answer makes the flow say
	}{
		{
			name: "frontend tool, two tool messages", workflow: "refund",
			refused: `{"threadId": "w", "messages": [{"id": "t1", "role": "tool", "toolCallId": "x", "content": "a"}, {"id": "t2", "role": "tool", "toolCallId": "y", "content": "b"}]}`,
			answer: func(call string) string {
				return `{"threadId": "w", "messages": [{"id": "t3", "role": "tool", "toolCallId": "` + call + `", "content": "{\"approved\": true}"}]}`
			},
			said: "Approved: true\n",
		},
		{
			name: "interrupt, a message", workflow: "approve",
			refused: `{"threadId": "w", "messages": [{"id": "m2", "role": "user", "content": "well?"}]}`,
			answer: func(id string) string {
				return `{"threadId": "w", "resume": [{"interruptId": "` + id + `", "status": "resolved"}]}`
			},
			said: "Status resolved.\n",
		},
		{
			name: "interrupt, an unknown id", workflow: "approve",
			refused: `{"threadId": "w", "resume": [{"interruptId": "nope", "status": "resolved"}]}`,
			answer: func(id string) string {
				return `{"threadId": "w", "resume": [{"interruptId": "` + id + `", "status": "cancelled"}]}`
			},
			said: "Status cancelled.\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			path := "/agui/workflows/" + tc.workflow
			live := outcome(t, e.stream(e.post(path, `{"threadId": "w", "messages": [{"id": "m1", "role": "user", "content": "A-1"}]}`)))
			waitsFor := ""
			if ids, _ := live["pendingToolCallIds"].([]any); len(ids) == 1 {
				waitsFor = str(ids[0])
			} else if ins, _ := live["interrupts"].([]any); len(ins) == 1 {
				waitsFor = str(ins[0].(map[string]any)["id"])
			} else {
				t.Fatalf("outcome %v, want one pending call or interrupt", live)
			}
			before := e.waiting(tc.workflow, "w")

			end := last(e.stream(e.post(path, tc.refused)))
			if end["type"] != "RUN_ERROR" || end["code"] != "invalid_resume" {
				t.Fatalf("the refused request ended with %v, want RUN_ERROR invalid_resume", end)
			}
			if after := e.waiting(tc.workflow, "w"); !reflect.DeepEqual(after, before) {
				t.Errorf("after the refused request:\n%v\nbefore it:\n%v", after, before)
			}
			// The snapshot stream still ends as the live run did.
			if o := outcome(t, e.stream(e.post(path, `{"threadId": "w", "messages": []}`))); !reflect.DeepEqual(o, live) {
				t.Errorf("snapshot outcome %v, want %v", o, live)
			}
			if got := text(e.stream(e.post(path, tc.answer(waitsFor)))); got != tc.said {
				t.Errorf("the answer: text %q, want %q", got, tc.said)
			}
		})
	}
}

// waiting is what the routes that read a thread say it waits for: its
// status, the history's pending frontend tools, and the outcome its
// snapshot stream ends with.
func (e *env) waiting(workflow, thread string) map[string]any {
	e.t.Helper()
	var page map[string]any
	decode(e.t, e.get("/agui/threads/"+thread+"/messages?workflowId="+workflow), &page)
	body := `{"threadId": "` + thread + `", "workflowId": "` + workflow + `"}`
	var h map[string]any
	e.postJSON("/agui/history", body, &h)
	snap := e.stream(e.post("/agui/history", body))
	return map[string]any{"status": page["status"], "pendingFrontendTools": h["pendingFrontendTools"], "outcome": last(snap)["outcome"]}
}

// TestHistoryOutcome reloads conversations that wait: the snapshot
// stream, from /history and from a run request with no message, ends
// with the outcome the live run ended with.
func TestHistoryOutcome(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct{ workflow string }{
		{"approve"}, // an interrupt
		{"refund"},  // a frontend tool: pendingToolCallIds
		{"counter"}, // suspend: a plain success
	} {
		t.Run(tc.workflow, func(t *testing.T) {
			e.t = t
			live := outcome(t, e.stream(e.post("/agui/workflows/"+tc.workflow, `{"threadId": "ho", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "A-1"}]}`)))
			req, _ := http.NewRequest(http.MethodPost, e.http.URL+"/agui/history", strings.NewReader(`{"threadId": "ho", "workflowId": "`+tc.workflow+`"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "text/event-stream")
			resp, err := e.http.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			for name, evs := range map[string][]event{
				"history":     e.stream(resp),
				"run request": e.stream(e.post("/agui/workflows/"+tc.workflow, `{"threadId": "ho", "runId": "r2", "messages": []}`)),
			} {
				var types []string
				for _, ev := range evs {
					types = append(types, ev.typ())
				}
				if got := strings.Join(types, " "); got != "RUN_STARTED STATE_SNAPSHOT MESSAGES_SNAPSHOT RUN_FINISHED" {
					t.Errorf("%s: events %s", name, got)
				}
				if o := outcome(t, evs); !reflect.DeepEqual(o, live) {
					t.Errorf("%s: snapshot outcome %v, want the live %v", name, o, live)
				}
			}
		})
	}
}

// TestReasoningCapability checks the reasoning capability against what
// the workflows stream when the provider reasons: claimed (streaming)
// when a model node, or one of a called workflow, streams reasoning;
// absent when every model node sets stream_reasoning = false.
func TestReasoningCapability(t *testing.T) {
	e := newEnv(t, nil)
	outer := e.t
	for _, tc := range []struct {
		workflow string
		want     string // the capability's JSON, "" when absent
	}{
		{"reason_on", `{"supported":true,"streaming":true}`},
		{"reason_call", `{"supported":true,"streaming":true}`},
		{"reason_off", ``},
		{"echo", ``}, // no model node
	} {
		t.Run(tc.workflow, func(t *testing.T) {
			e.t = t
			defer func() { e.t = outer }()
			var info struct {
				Capabilities struct {
					Reasoning json.RawMessage `json:"reasoning"`
				} `json:"capabilities"`
			}
			decode(t, e.get("/agui/workflows/"+tc.workflow), &info)
			if got := string(info.Capabilities.Reasoning); got != tc.want {
				t.Errorf("reasoning %s, want %s", got, tc.want)
			}
			evs := e.stream(e.post("/agui/workflows/"+tc.workflow, `{"threadId": "rc", "messages": [{"id": "m", "role": "user", "content": "ponder"}]}`))
			reasoned := false
			for _, ev := range evs {
				if ev.typ() == "REASONING_MESSAGE_CONTENT" {
					reasoned = true
				}
			}
			if claimed := tc.want != ""; reasoned != claimed {
				t.Errorf("the run streamed reasoning: %v; the capability claims it: %v", reasoned, claimed)
			}
		})
	}
}
