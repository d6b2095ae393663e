package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/internal/aguitest"
	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store/badger"
)

// fuzzWorkflows are small workflows of every kind a run can take: stateless,
// a conversation, a frontend tool, an interrupt, and two that share a name.
// None makes a network request.
var fuzzWorkflows = map[string]string{
	"echo.wf": `wf 1

workflow echo {
  title = "Echo"
  flow {
    say "You said <<$agent.latestUserMessage.content>> (<<len($agent.messages)>> messages)"
    output {said: $agent.latestUserMessage.content}
  }
}
`,
	"counter.wf": `wf 1

workflow counter {
  title        = "Counter"
  conversation = true
  flow {
    top: set $input.count = ($input.count ?? 0) + 1
    set $agent.state.turns = $input.count
    state sync
    say "Turn <<$input.count>>: <<$agent.latestUserMessage.content>>"
    wait: suspend
    goto top
  }
}
`,
	"refund.wf": `wf 1

workflow refund {
  title        = "Refund"
  conversation = true
  flow {
    top: say "Checking your order."
    confirm: frontend_tool "confirm_refund" {
      args = {orderId: "A-1"}
      on result { say "Approved: <<$confirm.value.approved>>" }
      on other { say "Never mind." }
    } -> $confirm
    wait: suspend
    goto top
  }
}

workflow approve {
  title        = "Approve"
  conversation = true
  flow {
    approve: interrupt {
      reason  = "approval"
      message = "Approve <<$agent.latestUserMessage.content>>?"
    } -> $decision
    say "Status <<$decision.status>>."
    wait: suspend
    goto approve
  }
}
`,
	"twins.wf": `wf 1

workflow twin_a {
  title = "Twin"
  flow { say "a" }
}

workflow twin_b {
  title = "Twin"
  flow { say "b" }
}
`,
}

// fuzzServer serves fuzzWorkflows from an in-memory store, with a small
// body limit and a short deadline so that no input can hold a run long.
func fuzzServer(tb testing.TB) http.Handler {
	tb.Helper()
	var srcs []compiler.Source
	for name, text := range fuzzWorkflows {
		srcs = append(srcs, compiler.Source{Name: name, Text: lang.Clean([]byte(text))})
	}
	reg := vm.NewRegistry()
	stdlib.RegisterWith(reg, stdlib.Options{
		Getenv:     func(string) string { return "" },
		HTTPClient: &http.Client{Transport: noNetwork{}},
	})
	prog, diags := compiler.Compile(reg, srcs...)
	if diags.HasErrors() {
		tb.Fatalf("compile: %v", diags.Err())
	}
	bundle, _ := compiler.Bundle(srcs)
	st, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := server.New(server.Config{
		Machine:   &vm.Machine{Program: prog, Registry: reg},
		Bundle:    bundle,
		Store:     st,
		Logger:    discardLogger(),
		BodyLimit: 64 << 10,
		Deadline:  10 * time.Second,
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		st.Close()
	})
	return srv.Handler()
}

type noNetwork struct{}

func (noNetwork) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("no network in fuzz tests")
}

// post sends body to path through h, as an AG-UI client does.
func fuzzPost(h http.Handler, path, accept string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// fuzzRoutes are the run routes the fuzzer picks from.
var fuzzRoutes = []string{
	"/agui",
	"/agui/workflows/echo",
	"/agui/workflows/counter",
	"/agui/workflows/refund",
	"/agui/workflows/approve",
	"/agui/threads/c1/runs",
	"/agui/threads/i1/runs",
	"/agui/threads/" + strings.Repeat("t", 300) + "/runs",
}

// runSeeds are request bodies, valid and not, for every run route.
var runSeeds = []string{
	// Valid.
	`{"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hello"}, {"id": "m2", "role": "assistant", "content": "hi"}, {"id": "m3", "role": "user", "content": "again"}], "state": {}, "tools": [], "context": [], "forwardedProps": {"aguic": {"workflowId": "echo"}}, "unknownKey": true}`,
	`{"threadId": "c1", "runId": null, "parentRunId": null, "messages": [{"id": "m1", "role": "user", "content": "x"}], "state": {"user": "ada"}, "forwardedProps": {"workflowId": "counter"}}`,
	`{"threadId": "c1", "messages": [], "forwardedProps": {"aguic": {"workflowName": "Counter"}}}`,
	`{"threadId": "i1", "messages": [{"id": "m1", "role": "user", "content": "A-1"}], "forwardedProps": {"aguic": {"workflowId": "approve"}}}`,
	`{"threadId": "i1", "messages": [], "resume": [{"interruptId": "x", "status": "resolved", "payload": {"ok": true}}], "forwardedProps": {"aguic": {"workflowId": "approve"}}}`,
	`{"threadId": "f1", "messages": [{"id": "m1", "role": "user", "content": "refund please"}], "forwardedProps": {"aguic": {"workflowId": "refund"}}}`,
	`{"threadId": "f1", "messages": [{"id": "m2", "role": "tool", "toolCallId": "call-1", "content": "{\"approved\": true}"}], "forwardedProps": {"aguic": {"workflowId": "refund"}}}`,
	`{"threadId": "t2", "messages": [{"id": "a", "role": "assistant", "content": null, "toolCalls": [{"id": "tc", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, {"id": "b", "role": "tool", "toolCallId": "tc", "content": "ok"}, {"id": "u", "role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "source": {"type": "url", "value": "https://example.com/a.png"}}]}], "tools": [{"name": "f", "description": "d", "parameters": {"type": "object"}}], "context": [{"description": "d", "value": "v"}]}`,
	`{"threadId": "t3", "messages": [{"id": "s", "role": "system", "content": [{"type": "text", "text": "x"}]}, {"id": "m1", "role": "user", "content": "x"}]}`,
	`{"threadId": "t4", "messages": [{"id": "d", "role": "developer", "content": "x"}, {"id": "r", "role": "reasoning", "content": "x"}, {"id": "a", "role": "activity", "activityType": "t", "content": {"k": 1}}]}`,
	// For the thread routes, which take the thread from the URL.
	`{"messages": [{"id": "m9", "role": "user", "content": "x"}]}`,
	`{"messages": [], "forwardedProps": {"aguic": {"workflowId": "counter"}}}`,
	`{"resume": [{"interruptId": "x", "status": "cancelled"}], "forwardedProps": {"workflowId": "approve"}}`,
	`{"messages": [{"id": "m9", "role": "user", "content": "x"}], "forwardedProps": {"aguic": {"nodeEvents": true}}}`,
	`{"threadId": "t5", "messages": [{"id": "m1", "role": "user", "content": "x"}], "forwardedProps": {"aguic": {"workflowId": "echo", "nodeEvents": true}}}`,
	// Invalid.
	`{"threadId": "t5", "messages": [{"id": "m1", "role": "user", "content": "x"}], "forwardedProps": {"aguic": {"workflowId": "echo", "nodeEvents": "yes"}}}`,
	``,
	`null`,
	`[1]`,
	`"x"`,
	`{`,
	`{"threadId": `,
	`{}`,
	`{"threadId": ""}`,
	`{"threadId": 7}`,
	`{"threadId": "t", "messages": [{"id": "m", "role": "robot", "content": "x"}]}`,
	`{"threadId": "t", "messages": [{"id": "m", "role": "user", "content": 7}]}`,
	`{"threadId": "t", "messages": {"id": "m"}}`,
	`{"threadId": "t", "resume": [{"interruptId": "x", "status": "maybe"}]}`,
	`{"threadId": "t", "resume": [{"interruptId": "", "status": "resolved"}]}`,
	`{"threadId": "t", "forwardedProps": {"aguic": {"workflowId": "nope"}}}`,
	`{"threadId": "t", "forwardedProps": {"aguic": {"workflowName": "Twin"}}}`,
	`{"threadId": "t", "forwardedProps": {"aguic": {"workflowId": "echo", "workflowName": "Echo"}}}`,
	`{"threadId": "t", "forwardedProps": {"workflowId": 3}}`,
	`{"threadId": "t", "forwardedProps": {"aguic": 3}}`,
	`{"threadId": "t", "forwardedProps": []}`,
	`{"threadId": "t", "tools": [{"name": 1}], "context": [{"value": {}}]}`,
	`{"threadId": "t", "state": 1e999}`,
	`{"threadId": "t\u0000", "runId": "\ud800", "messages": [{"id": "m", "role": "user", "content": "\u2028<<$agent>>"}]}`,
	`{"threadId": "t", "threadId": "u"}`,
	`{"threadId": "t", "state": ` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	"\xef\xbb\xbf{\"threadId\": \"t\"}",
	"{\"threadId\": \"t\"}\n{}",
	// Ids over their limit, and answers to interrupts no thread waits for.
	`{"threadId": "` + strings.Repeat("t", 300) + `", "forwardedProps": {"aguic": {"workflowId": "echo"}}}`,
	`{"threadId": "t", "runId": "` + strings.Repeat("r", 300) + `", "messages": [{"id": "` + strings.Repeat("m", 300) + `", "role": "tool", "toolCallId": "` + strings.Repeat("c", 300) + `", "content": "x"}]}`,
	`{"threadId": "c1", "messages": [], "resume": [{"interruptId": "x", "status": "resolved"}], "forwardedProps": {"aguic": {"workflowId": "counter"}}}`,
	`{"threadId": "f1", "resume": [{"interruptId": "x", "status": "cancelled"}], "forwardedProps": {"aguic": {"workflowId": "refund"}}}`,
	`{"threadId": "new", "resume": [{"interruptId": "x", "status": "cancelled"}], "forwardedProps": {"aguic": {"workflowId": "approve"}}}`,
}

// FuzzRunInput posts arbitrary bytes to the run routes. The answer is
// never a panic nor a 5xx: it is a 4xx problem, or a well-formed AG-UI
// event stream that starts with RUN_STARTED (or is a lone RUN_ERROR: a
// request the workflow cannot take) and ends with its only terminal event.
func FuzzRunInput(f *testing.F) {
	for i := range fuzzRoutes {
		for _, s := range runSeeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		rec := fuzzPost(h, path, "text/event-stream", body)
		switch {
		case rec.Code == http.StatusOK:
			checkRunStream(t, rec)
		case rec.Code >= 400 && rec.Code < 500:
			checkProblem(t, rec)
		default:
			t.Fatalf("POST %s %q: status %d: %s", path, body, rec.Code, rec.Body)
		}
	})
}

// checkRunStream checks the stream of a run.
func checkRunStream(t *testing.T, rec *httptest.ResponseRecorder) []map[string]any {
	t.Helper()
	evs := checkStream(t, rec)
	first, last := evs[0], evs[len(evs)-1]
	if first["type"] == "RUN_ERROR" {
		if len(evs) != 1 {
			t.Fatalf("the stream starts with RUN_ERROR and goes on: %s", rec.Body)
		}
		return evs
	}
	if first["type"] != "RUN_STARTED" {
		t.Fatalf("the first event is %v, want RUN_STARTED: %s", first["type"], rec.Body)
	}
	terminals := 0
	for _, ev := range evs {
		if ev["type"] == "RUN_FINISHED" || ev["type"] == "RUN_ERROR" {
			terminals++
		}
	}
	if terminals != 1 || last["type"] != "RUN_FINISHED" && last["type"] != "RUN_ERROR" {
		t.Fatalf("%d terminal events, the last event is %v; want exactly one, last: %s", terminals, last["type"], rec.Body)
	}
	if last["type"] == "RUN_FINISHED" && (last["threadId"] != first["threadId"] || last["runId"] != first["runId"]) {
		t.Fatalf("RUN_STARTED %v/%v, RUN_FINISHED %v/%v", first["threadId"], first["runId"], last["threadId"], last["runId"])
	}
	return evs
}

// checkStream checks a 200 answer is an AG-UI event stream, LF-framed, of
// AG-UI events, and returns them.
func checkStream(t *testing.T, rec *httptest.ResponseRecorder) []map[string]any {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("status 200, Content-Type %q: %s", ct, rec.Body)
	}
	raw := rec.Body.Bytes()
	if !bytes.HasSuffix(raw, []byte("\n\n")) {
		t.Fatalf("the stream does not end with a whole frame: %q", raw)
	}
	var evs []map[string]any
	for fr, err := range agui.ReadSSE(bytes.NewReader(raw)) {
		if err != nil {
			t.Fatalf("the stream is not well-formed SSE: %v: %q", err, raw)
		}
		if fr.Event != "" {
			t.Fatalf("a frame has the event name %q; AG-UI frames have none", fr.Event)
		}
		if _, err := aguitest.DecodeEvent(fr.Data); err != nil {
			t.Fatalf("frame %s is not an AG-UI event: %v", fr.Data, err)
		}
		var ev map[string]any
		if err := json.Unmarshal(fr.Data, &ev); err != nil {
			t.Fatalf("frame %q: %v", fr.Data, err)
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 {
		t.Fatalf("an empty stream: %q", raw)
	}
	return evs
}

// checkProblem checks a 4xx answer is an RFC 9457 problem of its status.
func checkProblem(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d, Content-Type %q: %s", rec.Code, ct, rec.Body)
	}
	var p struct {
		Status int    `json:"status"`
		Title  string `json:"title"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("status %d, a problem that is not JSON: %v: %s", rec.Code, err, rec.Body)
	}
	if p.Status != rec.Code || p.Title == "" {
		t.Fatalf("status %d, problem %s", rec.Code, rec.Body)
	}
}

// historySeeds are history requests, valid and not.
var historySeeds = []string{
	`{"threadId": "c1", "workflowId": "counter"}`,
	`{"threadId": "c1", "workflowName": "Counter", "maxMessages": 1}`,
	`{"threadId": "f1", "workflowId": "refund", "maxMessages": 2}`,
	`{"threadId": "i1", "workflowId": "approve", "maxMessages": "x"}`,
	`{"threadId": "t1", "workflowId": "echo"}`,
	`{"threadId": "nope", "workflowId": "counter", "maxMessages": -1}`,
	`{"threadId": "c1", "workflowId": "counter", "maxMessages": 1e300}`,
	`{"threadId": "c1", "workflowId": "counter", "maxMessages": 0.5}`,
	`{"threadId": "c1", "workflowId": "counter", "extra": [1]}`,
	``,
	`{`,
	`[]`,
	`{}`,
	`{"threadId": ""}`,
	`{"threadId": "c1"}`,
	`{"threadId": "c1", "workflowId": "counter", "workflowName": "Counter"}`,
	`{"threadId": "c1", "workflowId": "nope"}`,
	`{"threadId": "c1", "workflowName": "Twin"}`,
	`{"threadId": "c1", "workflowId": 1}`,
}

// FuzzHistoryInput posts arbitrary bytes to POST {base}/history, as JSON
// and as an event stream, on a store that holds a conversation of each
// kind. The answer is never a panic nor a 5xx: a 4xx problem, the history
// as JSON, or the snapshot stream RUN_STARTED, STATE_SNAPSHOT,
// MESSAGES_SNAPSHOT, RUN_FINISHED.
func FuzzHistoryInput(f *testing.F) {
	for _, s := range historySeeds {
		f.Add(false, []byte(s))
		f.Add(true, []byte(s))
	}
	h := fuzzServer(f)
	for _, req := range []struct{ path, body string }{
		{"/agui/workflows/counter", `{"threadId": "c1", "messages": [{"id": "m1", "role": "user", "content": "hi"}], "state": {"user": "ada"}}`},
		{"/agui/workflows/counter", `{"threadId": "c1", "messages": [{"id": "m2", "role": "user", "content": "again"}]}`},
		{"/agui/workflows/refund", `{"threadId": "f1", "messages": [{"id": "m1", "role": "user", "content": "refund please"}]}`},
		{"/agui/workflows/approve", `{"threadId": "i1", "messages": [{"id": "m1", "role": "user", "content": "A-1"}]}`},
	} {
		rec := fuzzPost(h, req.path, "text/event-stream", []byte(req.body))
		if rec.Code != http.StatusOK {
			f.Fatalf("POST %s: %d: %s", req.path, rec.Code, rec.Body)
		}
	}
	f.Fuzz(func(t *testing.T, stream bool, body []byte) {
		accept := "application/json"
		if stream {
			accept = "text/event-stream"
		}
		rec := fuzzPost(h, "/agui/history", accept, body)
		switch {
		case rec.Code >= 400 && rec.Code < 500:
			checkProblem(t, rec)
			return
		case rec.Code != http.StatusOK:
			t.Fatalf("POST /agui/history %q: status %d: %s", body, rec.Code, rec.Body)
		}
		if stream {
			var types []string
			for _, ev := range checkStream(t, rec) {
				types = append(types, fmt.Sprint(ev["type"]))
			}
			if got, want := strings.Join(types, " "), "RUN_STARTED STATE_SNAPSHOT MESSAGES_SNAPSHOT RUN_FINISHED"; got != want {
				t.Fatalf("the snapshot stream is %s, want %s", got, want)
			}
			return
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("status 200, Content-Type %q", ct)
		}
		var hist map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &hist); err != nil {
			t.Fatalf("the history is not an object: %v: %s", err, rec.Body)
		}
		var msgs, pending []json.RawMessage
		if len(hist) != 3 || hist["state"] == nil ||
			json.Unmarshal(hist["messages"], &msgs) != nil || msgs == nil ||
			json.Unmarshal(hist["pendingFrontendTools"], &pending) != nil || pending == nil || len(pending) > 1 {
			t.Fatalf("the history is not {messages, state, pendingFrontendTools}: %s", rec.Body)
		}
	})
}

// browseRoutes are the routes that browse threads, and the keys of their
// JSON answers.
var browseRoutes = []struct {
	path string
	keys []string
}{
	{"/agui/threads", []string{"threads", "next"}},
	{"/agui/threads/c1", []string{"threadId", "workflow", "status", "created", "updated", "runId", "firstSeq", "lastSeq", "version", "title", "conversation", "waiting", "runs", "runsNext"}},
	{"/agui/threads/c1/runs", []string{"runs", "next"}},
	{"/agui/threads/c1/events", []string{"events", "next", "firstSeq", "lastSeq"}},
}

// FuzzBrowseQuery sends arbitrary query strings to the routes that browse
// threads, on a store that holds a thread of each kind. The answer is
// never a panic nor a 5xx: a 4xx problem, or 200 with the route's JSON
// object.
func FuzzBrowseQuery(f *testing.F) {
	for i := range browseRoutes {
		for _, q := range []string{
			"", "limit=1", "limit=0", "limit=-1", "limit=x", "limit=99999999999999999999",
			"workflow=counter", "workflow=nope", "workflow=", "status=suspended", "status=asleep", "status=",
			"after=1", "after=x", "after=-1", "after=%zz", "after=eyJzIjoxLCJyIjoiciJ9", "after=AAAAAAAAAAA",
			"workflow=counter&status=finished&limit=2&after=", "limit=1&limit=2", "nodeEvents=true",
		} {
			f.Add(uint8(i), q)
		}
	}
	h := fuzzServer(f)
	for _, req := range []struct{ path, body string }{
		{"/agui/workflows/counter", `{"threadId": "c1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}`},
		{"/agui/workflows/counter", `{"threadId": "c1", "messages": [{"id": "m2", "role": "user", "content": "again"}]}`},
		{"/agui/workflows/refund", `{"threadId": "f1", "messages": [{"id": "m1", "role": "user", "content": "refund please"}]}`},
		{"/agui/workflows/approve", `{"threadId": "i1", "messages": [{"id": "m1", "role": "user", "content": "A-1"}]}`},
		{"/agui/workflows/echo", `{"threadId": "e1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}`},
	} {
		if rec := fuzzPost(h, req.path, "text/event-stream", []byte(req.body)); rec.Code != http.StatusOK {
			f.Fatalf("POST %s: %d: %s", req.path, rec.Code, rec.Body)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, query string) {
		r := browseRoutes[int(route)%len(browseRoutes)]
		req, err := http.NewRequest(http.MethodGet, "http://aguic"+r.path, nil)
		if err != nil {
			t.Skip()
		}
		req.URL.RawQuery = query
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch {
		case rec.Code >= 400 && rec.Code < 500:
			checkProblem(t, rec)
			return
		case rec.Code != http.StatusOK:
			t.Fatalf("GET %s?%s: status %d: %s", r.path, query, rec.Code, rec.Body)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &obj); err != nil {
			t.Fatalf("GET %s?%s: the answer is not an object: %v: %s", r.path, query, err, rec.Body)
		}
		for _, k := range r.keys {
			if _, ok := obj[k]; !ok {
				t.Fatalf("GET %s?%s: the answer has no %q: %s", r.path, query, k, rec.Body)
			}
		}
	})
}
