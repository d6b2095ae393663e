package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/internal/aguitest"
	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// env is a server over the workflows of testdata, on an in-memory store.
type env struct {
	t     *testing.T
	srv   *server.Server
	http  *httptest.Server
	store *badger.Store
	// served receives the path of every request the handler finished.
	served chan string
}

func newEnv(t *testing.T, edit func(*server.Config)) *env {
	t.Helper()
	return newEnvOf(t, filepath.Join("testdata", "*.wf"), edit)
}

// newEnvOf is newEnv over the workflows of the files glob names.
func newEnvOf(t *testing.T, glob string, edit func(*server.Config)) *env {
	t.Helper()
	srv, st := newServerOf(t, glob, edit)
	return envOf(t, srv, st)
}

// envOf serves srv, on st, over HTTP for the test.
func envOf(t *testing.T, srv *server.Server, st *badger.Store) *env {
	t.Helper()
	e := &env{t: t, srv: srv, store: st, served: make(chan string, 100)}
	h := srv.Handler()
	e.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		e.served <- r.URL.Path
	}))
	t.Cleanup(e.http.Close) // runs before newServer's cleanup
	return e
}

// newServer compiles the workflows of testdata and serves them from an
// in-memory store; the cleanup shuts the server down and closes the store.
func newServer(tb testing.TB, edit func(*server.Config)) (*server.Server, *badger.Store) {
	tb.Helper()
	return newServerOf(tb, filepath.Join("testdata", "*.wf"), edit)
}

// newServerOf is newServer over the workflows of the files glob names.
func newServerOf(tb testing.TB, glob string, edit func(*server.Config)) (*server.Server, *badger.Store) {
	tb.Helper()
	return newServerWith(tb, glob, filepath.Join("testdata", "usage.script"), nil, edit)
}

// newServerWith is newServerOf with the models answering from script, and
// the stdlib's options edited by options when it is not nil.
func newServerWith(tb testing.TB, glob, script string, options func(*stdlib.Options), edit func(*server.Config)) (*server.Server, *badger.Store) {
	tb.Helper()
	files, err := filepath.Glob(glob)
	if err != nil {
		tb.Fatal(err)
	}
	var srcs []compiler.Source
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		srcs = append(srcs, compiler.Source{Name: f, Text: lang.Clean(text)})
	}
	reg := vm.NewRegistry()
	scripted, err := llm.LoadScript(script)
	if err != nil {
		tb.Fatal(err)
	}
	models := llm.Resolver(map[string]llm.Provider{"script": scripted, "other": scripted})
	opts := stdlib.Options{Getenv: func(string) string { return "" }, Models: models}
	if options != nil {
		options(&opts)
	}
	stdlib.RegisterWith(reg, opts)
	prog, diags := compiler.Compile(reg, srcs...)
	if diags.HasErrors() {
		tb.Fatalf("compile: %v", diags.Err())
	}
	bundle, _ := compiler.Bundle(srcs)
	st, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := server.Config{
		Machine: &vm.Machine{Program: prog, Registry: reg},
		Bundle:  bundle,
		Store:   st,
		Logger:  discardLogger(),
	}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := server.New(cfg)
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
	return srv, st
}

// post sends body to path as an AG-UI client does.
func (e *env) post(path, body string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.http.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := e.http.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

func (e *env) get(path string) *http.Response {
	e.t.Helper()
	resp, err := e.http.Client().Get(e.http.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// event is one frame of a stream, decoded.
type event struct {
	id   string
	data map[string]any
}

func (ev event) typ() string { return str(ev.data["type"]) }

// stream checks the response is an AG-UI event stream and reads all of it:
// RUN_STARTED (or RUN_ERROR) first, exactly one terminal event, last, and
// the body closed after it.
func (e *env) stream(resp *http.Response) []event {
	e.t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("status %d, want 200: %s", resp.StatusCode, body)
	}
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != want {
			e.t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	var evs []event
	for f, err := range agui.ReadSSE(resp.Body) {
		if err != nil {
			e.t.Fatalf("reading the stream: %v", err)
		}
		if _, err := aguitest.DecodeEvent(f.Data); err != nil {
			e.t.Errorf("frame %s is not an AG-UI event: %v", f.Data, err)
		}
		var m map[string]any
		if err := json.Unmarshal(f.Data, &m); err != nil {
			e.t.Fatalf("frame %q: %v", f.Data, err)
		}
		evs = append(evs, event{id: f.ID, data: m})
	}
	if len(evs) == 0 {
		e.t.Fatal("empty stream")
	}
	if first := evs[0].typ(); first != "RUN_STARTED" && first != "RUN_ERROR" {
		e.t.Errorf("first event %s, want RUN_STARTED", first)
	}
	terminals := 0
	for _, ev := range evs {
		if ev.typ() == "RUN_FINISHED" || ev.typ() == "RUN_ERROR" {
			terminals++
		}
	}
	if last := evs[len(evs)-1].typ(); terminals != 1 || last != "RUN_FINISHED" && last != "RUN_ERROR" {
		e.t.Errorf("%d terminal events, the last event is %s; want exactly one, last", terminals, last)
	}
	return evs
}

// text joins the text of every TEXT_MESSAGE_CONTENT.
func text(evs []event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.typ() == "TEXT_MESSAGE_CONTENT" {
			b.WriteString(str(ev.data["delta"]))
			b.WriteString("\n")
		}
	}
	return b.String()
}

func str(v any) string { s, _ := v.(string); return s }

func last(evs []event) map[string]any { return evs[len(evs)-1].data }

func outcome(t *testing.T, evs []event) map[string]any {
	t.Helper()
	end := last(evs)
	if end["type"] != "RUN_FINISHED" {
		t.Fatalf("the run ended with %v, want RUN_FINISHED", end)
	}
	o, _ := end["outcome"].(map[string]any)
	return o
}

func TestStateless(t *testing.T) {
	e := newEnv(t, nil)
	evs := e.stream(e.post("/agui/workflows/echo", `{
		"threadId": "t1", "runId": "r1",
		"messages": [
			{"id": "m1", "role": "user", "content": "hello"},
			{"id": "m2", "role": "assistant", "content": "hi"},
			{"id": "m3", "role": "user", "content": "again"}
		],
		"state": {}, "tools": [], "context": [], "forwardedProps": {},
		"protocolVersion": "1.0", "unknownKey": true
	}`))
	start := evs[0].data
	if start["threadId"] != "t1" || start["runId"] != "r1" || start["protocolVersion"] != "1.0" {
		t.Errorf("RUN_STARTED = %v", start)
	}
	if evs[0].id != "" {
		t.Errorf("RUN_STARTED has id %q; it is not stored", evs[0].id)
	}
	end := last(evs)
	if end["threadId"] != "t1" || end["runId"] != "r1" {
		t.Errorf("RUN_FINISHED = %v", end)
	}
	if o := outcome(t, evs); o["type"] != "success" {
		t.Errorf("outcome %v", o)
	}
	if r, _ := end["result"].(map[string]any); r["said"] != "again" {
		t.Errorf("result %v, want {said: again}", end["result"])
	}
	if got, want := text(evs), "You said again (3 messages)\n"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	var types []string
	prev := 0
	for _, ev := range evs[1 : len(evs)-1] {
		types = append(types, ev.typ())
		n, err := strconv.Atoi(ev.id)
		if err != nil || n < prev {
			t.Errorf("%s has id %q after %d; want stored sequence numbers in order", ev.typ(), ev.id, prev)
		}
		prev = n
	}
	if got, want := strings.Join(types, " "), "STEP_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END STEP_FINISHED"; got != want {
		t.Errorf("events %s\nwant %s", got, want)
	}

	// An empty runId gets one; the stream's ids agree.
	evs = e.stream(e.post("/agui/workflows/echo", `{"threadId": "t1", "runId": null, "parentRunId": null, "messages": [{"id": "m1", "role": "user", "content": "x"}]}`))
	id := str(evs[0].data["runId"])
	if id == "" || id == "r1" || last(evs)["runId"] != id {
		t.Errorf("generated run id %q, RUN_FINISHED has %v", id, last(evs)["runId"])
	}
}

func TestRunError(t *testing.T) {
	e := newEnv(t, nil)
	// A stateless workflow rebuilds chat; a multimodal system message
	// cannot go there: RUN_ERROR, and nothing runs.
	evs := e.stream(e.post("/agui/workflows/echo", `{"threadId": "t1", "messages": [{"id": "s", "role": "system", "content": [{"type": "text", "text": "x"}]}, {"id": "m1", "role": "user", "content": "x"}]}`))
	if len(evs) != 1 || evs[0].typ() != "RUN_ERROR" || !strings.Contains(str(evs[0].data["message"]), "content must be a string") {
		t.Errorf("events %v, want one RUN_ERROR", evs)
	}
	if _, err := e.store.Thread(context.Background(), store.Key{Scope: "default", Workflow: "echo", Thread: "t1"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the thread exists (%v); nothing should have run", err)
	}
}

func TestConversation(t *testing.T) {
	e := newEnv(t, nil)
	body := func(id, msg string) string {
		return `{"threadId": "c1", "runId": "` + id + `", "messages": [{"id": "` + id + `-m", "role": "user", "content": "` + msg + `"}], "state": {"user": "ada"}}`
	}
	evs := e.stream(e.post("/agui/workflows/counter", body("r1", "hi")))
	if got := text(evs); got != "Turn 1: hi\n" {
		t.Errorf("first turn %q", got)
	}
	if o := outcome(t, evs); o["type"] != "success" || o["pendingToolCallIds"] != nil {
		t.Errorf("outcome %v", o)
	}
	evs = e.stream(e.post("/agui/workflows/counter", body("r2", "again")))
	if got := text(evs); got != "Turn 2: again\n" {
		t.Errorf("second turn %q", got)
	}
	for _, ev := range evs {
		if ev.typ() == "STATE_SNAPSHOT" || ev.typ() == "STATE_DELTA" {
			goto synced
		}
	}
	t.Errorf("no state event in %v", evs)
synced:
	th, err := e.store.Thread(context.Background(), store.Key{Scope: "default", Workflow: "counter", Thread: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != store.Suspended || th.RunID != "r2" {
		t.Errorf("thread %s after run %s, want suspended after r2", th.Status, th.RunID)
	}
}

func TestFrontendTool(t *testing.T) {
	e := newEnv(t, nil)
	evs := e.stream(e.post("/agui/workflows/refund", `{"threadId": "f1", "runId": "r1", "protocolVersion": "1.0", "messages": [{"id": "m1", "role": "user", "content": "refund please"}]}`))
	o := outcome(t, evs)
	pending, _ := o["pendingToolCallIds"].([]any)
	if o["type"] != "success" || len(pending) != 1 {
		t.Fatalf("outcome %v, want success with one pending tool call", o)
	}
	call := str(pending[0])
	started := false
	for _, ev := range evs {
		if ev.typ() == "TOOL_CALL_START" && ev.data["toolCallId"] == call && ev.data["toolCallName"] == "confirm_refund" {
			started = true
		}
	}
	if !started {
		t.Errorf("no TOOL_CALL_START of %s in the stream", call)
	}
	evs = e.stream(e.post("/agui/workflows/refund", `{"threadId": "f1", "runId": "r2", "messages": [{"id": "m2", "role": "tool", "toolCallId": "`+call+`", "content": "{\"approved\": true}"}]}`))
	if got := text(evs); !strings.Contains(got, "Approved: true") {
		t.Errorf("text after the tool result %q", got)
	}
}

func TestInterrupt(t *testing.T) {
	e := newEnv(t, nil)
	evs := e.stream(e.post("/agui/workflows/approve", `{"threadId": "i1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "A-1"}]}`))
	o := outcome(t, evs)
	ins, _ := o["interrupts"].([]any)
	if o["type"] != "interrupt" || len(ins) != 1 {
		t.Fatalf("outcome %v, want one interrupt", o)
	}
	in := ins[0].(map[string]any)
	if in["reason"] != "approval" || in["message"] != "Approve A-1?" {
		t.Errorf("interrupt %v", in)
	}
	evs = e.stream(e.post("/agui/workflows/approve", `{"threadId": "i1", "runId": "r2", "messages": [], "resume": [{"interruptId": "`+str(in["id"])+`", "status": "resolved", "payload": {"ok": true}}]}`))
	if got := text(evs); got != "Status resolved.\n" {
		t.Errorf("text after resume %q", got)
	}
}

// problem checks a problem+json answer.
func (e *env) problem(resp *http.Response, status int) map[string]any {
	e.t.Helper()
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		e.t.Errorf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		e.t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p map[string]any
	if err := json.Unmarshal(body, &p); err != nil {
		e.t.Fatalf("body %s: %v", body, err)
	}
	if p["status"] != float64(status) || p["title"] != http.StatusText(status) {
		e.t.Errorf("problem %v, want status %d", p, status)
	}
	return p
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.BodyLimit = 4096 })
	msgs := `"messages": [{"id": "m1", "role": "user", "content": "hi"}]`
	outer := t
	for _, tc := range []struct {
		name, path, body string
		status           int
		detail           string // a part of the problem's detail or errors
	}{
		{"malformed JSON", "/agui/workflows/echo", `{"threadId": `, 400, ""},
		{"not an object", "/agui/workflows/echo", `[1]`, 400, ""},
		{"no threadId", "/agui/workflows/echo", `{` + msgs + `}`, 400, "threadId"},
		{"empty threadId", "/agui/workflows/echo", `{"threadId": "", ` + msgs + `}`, 400, "threadId"},
		{"bad role", "/agui/workflows/echo", `{"threadId": "t", "messages": [{"id": "m", "role": "robot", "content": "x"}]}`, 400, "role"},
		{"bad content", "/agui/workflows/echo", `{"threadId": "t", "messages": [{"id": "m", "role": "user", "content": 7}]}`, 400, "content"},
		{"bad resume", "/agui/workflows/approve", `{"threadId": "t", "resume": [{"interruptId": "x", "status": "maybe"}]}`, 400, "status"},
		{"unknown workflow id", "/agui/workflows/nope", `{"threadId": "t", ` + msgs + `}`, 404, "nope"},
		{"no selector", "/agui", `{"threadId": "t", ` + msgs + `}`, 400, "workflowId"},
		{"unknown workflowId", "/agui", `{"threadId": "t", "forwardedProps": {"aguic": {"workflowId": "nope"}}}`, 404, "nope"},
		{"unknown workflowName", "/agui", `{"threadId": "t", "forwardedProps": {"aguic": {"workflowName": "Nope"}}}`, 404, "Nope"},
		{"ambiguous workflowName", "/agui", `{"threadId": "t", "forwardedProps": {"aguic": {"workflowName": "Twin"}}}`, 400, "2 workflows"},
		{"id and name", "/agui", `{"threadId": "t", "forwardedProps": {"aguic": {"workflowId": "echo", "workflowName": "Echo"}}}`, 400, "not both"},
		{"id and name directly", "/agui", `{"threadId": "t", "forwardedProps": {"workflowId": "echo", "workflowName": "Echo"}}`, 400, "not both"},
		{"selector not a string", "/agui", `{"threadId": "t", "forwardedProps": {"workflowId": 3}}`, 400, "workflowId"},
		{"oversized body", "/agui/workflows/echo", `{"threadId": "t", "state": "` + strings.Repeat("x", 5000) + `"}`, 413, "too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			defer func() { e.t = outer }()
			p := e.problem(e.post(tc.path, tc.body), tc.status)
			all, _ := json.Marshal(p)
			if !bytes.Contains(all, []byte(tc.detail)) {
				t.Errorf("problem %s does not mention %s", all, tc.detail)
			}
		})
	}
}

func TestSelector(t *testing.T) {
	e := newEnv(t, nil)
	for _, props := range []string{
		`{"aguic": {"workflowId": "echo"}}`,
		`{"aguic": {"workflowName": "Echo"}}`,
		`{"workflowName": "Echo"}`,
		`{"workflowId": "echo", "aguic": {"other": 1}}`,
	} {
		evs := e.stream(e.post("/agui", `{"threadId": "s", "messages": [{"id": "m", "role": "user", "content": "yo"}], "forwardedProps": `+props+`}`))
		if got := text(evs); got != "You said yo (1 messages)\n" {
			t.Errorf("forwardedProps %s: text %q", props, got)
		}
	}
}

// blocker is an HTTP server whose answers wait until release is called.
type blocker struct {
	srv     *httptest.Server
	entered chan struct{}
	gate    chan struct{}
}

func newBlocker(t *testing.T) *blocker {
	b := &blocker{entered: make(chan struct{}, 10), gate: make(chan struct{})}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.entered <- struct{}{}
		select {
		case <-b.gate:
			io.WriteString(w, "ok")
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		b.release()
		b.srv.Close()
	})
	return b
}

func (b *blocker) release() {
	select {
	case <-b.gate:
	default:
		close(b.gate)
	}
}

func slowBody(runID, url string) string {
	return `{"threadId": "busy", "runId": "` + runID + `", "protocolVersion": "1.0", "messages": [{"id": "m", "role": "user", "content": "go"}], "state": {"url": "` + url + `"}}`
}

func TestBusy(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker(t)
	first := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered // the run holds the thread
	p := e.problem(e.post("/agui/workflows/slow", slowBody("r2", b.srv.URL)), http.StatusConflict)
	if !strings.Contains(str(p["detail"]), `thread "busy"`) {
		t.Errorf("409 detail %v", p["detail"])
	}
	// Another thread of the same workflow is free.
	other := e.post("/agui/workflows/slow", strings.Replace(slowBody("r3", b.srv.URL), `"busy"`, `"other"`, 1))
	<-b.entered
	b.release()
	evs := e.stream(first)
	if got := text(evs); got != "Fetching.\nFetched ok.\n" {
		t.Errorf("text %q", got)
	}
	e.stream(other)
	// The lease is free as soon as the terminal event is out.
	evs = e.stream(e.post("/agui/workflows/slow", slowBody("r4", b.srv.URL)))
	if o := outcome(t, evs); o["type"] != "success" {
		t.Errorf("outcome %v", o)
	}
}

func TestBusyAcrossServers(t *testing.T) {
	// Two servers on one store (two replicas): the store's lease decides.
	e := newEnv(t, nil)
	b := newBlocker(t)
	cfg := server.Config{Machine: e.machine(t), Store: e.store, Logger: discardLogger(), Owner: "replica-2"}
	other, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(other.Handler())
	defer hs.Close()
	first := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered
	resp, err := http.Post(hs.URL+"/agui/workflows/slow", "application/json", strings.NewReader(slowBody("r2", b.srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	e.problem(resp, http.StatusConflict)
	b.release()
	e.stream(first)
}

// machine compiles testdata again, for a second server.
func (e *env) machine(t *testing.T) *vm.Machine {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.wf"))
	var srcs []compiler.Source
	for _, f := range files {
		text, _ := os.ReadFile(f)
		srcs = append(srcs, compiler.Source{Name: f, Text: lang.Clean(text)})
	}
	reg := vm.NewRegistry()
	stdlib.Register(reg)
	prog, diags := compiler.Compile(reg, srcs...)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	return &vm.Machine{Program: prog, Registry: reg}
}

func TestDisconnect(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.http.URL+"/agui/workflows/slow", strings.NewReader(slowBody("r1", b.srv.URL)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-b.entered
	// The client reads the start of the stream, then goes away.
	for f, err := range agui.ReadSSE(resp.Body) {
		if err != nil || !bytes.Contains(f.Data, []byte(`"RUN_STARTED"`)) {
			t.Fatalf("first frame %s, %v", f.Data, err)
		}
		break
	}
	cancel()
	resp.Body.Close()
	if path := <-e.served; path != "/agui/workflows/slow" {
		t.Fatalf("served %s", path)
	}
	// The handler returned; the run still waits on the HTTP server.
	b.release()
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := e.srv.Shutdown(sctx); err != nil { // waits for the run
		t.Fatal(err)
	}
	key := store.Key{Scope: "default", Workflow: "slow", Thread: "busy"}
	th, err := e.store.Thread(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != store.Finished || th.RunID != "r1" {
		t.Errorf("thread %s after run %s, want finished after r1", th.Status, th.RunID)
	}
	evs, err := e.store.Events(context.Background(), key, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, se := range evs {
		ev, _ := se.Decode()
		if ev.Type == vm.TextContent {
			said = append(said, ev.Delta)
		}
	}
	if got := strings.Join(said, "|"); got != "Fetching.|Fetched ok." {
		t.Errorf("stored text %q", got)
	}
}

func TestShutdownCancels(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker(t)
	first := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	evs := e.stream(first)
	if o := outcome(t, evs); o["type"] != "cancelled" {
		t.Errorf("outcome %v, want cancelled", o)
	}
	e.problem(e.post("/agui/workflows/echo", `{"threadId": "t"}`), http.StatusServiceUnavailable)
}

func TestDeadline(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Deadline = 50 * time.Millisecond })
	b := newBlocker(t)
	evs := e.stream(e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL)))
	end := last(evs)
	if end["type"] != "RUN_ERROR" || end["code"] != vm.ErrDeadline {
		t.Errorf("the run ended with %v, want RUN_ERROR deadline", end)
	}
}

func TestWorkflows(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.get("/agui/workflows")
	var list []map[string]any
	decode(t, resp, &list)
	var ids []string
	for _, w := range list {
		ids = append(ids, str(w["id"]))
		if !strings.HasPrefix(str(w["graph"]), "flowchart TD\n") {
			t.Errorf("%s: graph %q", w["id"], w["graph"])
		}
		if w["capabilities"] != nil {
			t.Errorf("%s: the list shows capabilities", w["id"])
		}
	}
	if got, want := strings.Join(ids, " "), "approve counter dialects dialects_helper echo expiring nap reason_call reason_off reason_on refund slow twin_a twin_b usage"; got != want {
		t.Errorf("ids %s, want %s", got, want)
	}
	echo := list[slices.Index(ids, "echo")]
	if echo["title"] != "Echo" || echo["description"] != "Repeats what the user said." || echo["conversation"] != false || echo["url"] != "/agui/workflows/echo" {
		t.Errorf("echo %v", echo)
	}

	var one map[string]any
	decode(t, e.get("/agui/workflows/refund"), &one)
	caps, _ := json.Marshal(one["capabilities"])
	want := `{"execution":{"codeExecution":false,"maxExecutionTime":3600000,"maxIterations":1000},"humanInTheLoop":{"approvals":true,"supported":true},"identity":{"name":"Refund","type":"aguic workflow"},"multimodal":{"input":{"audio":false,"file":false,"image":false,"pdf":false,"video":false},"output":{"audio":false,"image":false}},"output":{"structuredOutput":false,"supportedMimeTypes":["text/plain","application/json"]},"tools":{"clientProvided":true,"supported":true},"transport":{"httpBinary":false,"resumable":true,"streaming":true,"websocket":false}}`
	if string(caps) != want {
		t.Errorf("capabilities %s\nwant %s", caps, want)
	}
	decode(t, e.get("/agui/workflows/counter"), &one)
	caps, _ = json.Marshal(one["capabilities"])
	want = `{"execution":{"codeExecution":false,"maxExecutionTime":3600000,"maxIterations":1000},"humanInTheLoop":{"supported":true},"identity":{"name":"Counter","type":"aguic workflow"},"multimodal":{"input":{"audio":false,"file":false,"image":false,"pdf":false,"video":false},"output":{"audio":false,"image":false}},"output":{"structuredOutput":false,"supportedMimeTypes":["text/plain","application/json"]},"state":{"deltas":true,"persistentState":true,"snapshots":true},"transport":{"httpBinary":false,"resumable":true,"streaming":true,"websocket":false}}`
	if string(caps) != want {
		t.Errorf("capabilities %s\nwant %s", caps, want)
	}
	e.problem(e.get("/agui/workflows/nope"), http.StatusNotFound)
}

func TestService(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.BasePath = "/api/agui/" })
	var h map[string]any
	decode(t, e.get("/healthz"), &h)
	if len(h) != 1 || h["status"] != "ok" {
		t.Errorf("healthz %v", h)
	}
	var doc struct {
		OpenAPI string
		Info    struct{ Title, Version string }
		Paths   map[string]map[string]struct {
			Responses map[string]any
		}
	}
	decode(t, e.get("/openapi.json"), &doc)
	if doc.OpenAPI != "3.1.0" || doc.Info.Title != "aguic" || doc.Info.Version == "" {
		t.Errorf("openapi %s, info %+v", doc.OpenAPI, doc.Info)
	}
	for _, p := range []string{"/api/agui", "/api/agui/workflows/{id}", "/api/agui/workflows", "/healthz"} {
		if doc.Paths[p] == nil {
			t.Errorf("the OpenAPI document has no path %s", p)
		}
	}
	run := doc.Paths["/api/agui/workflows/{id}"]["post"]
	for _, code := range []string{"200", "400", "404", "409", "413", "415"} {
		if run.Responses[code] == nil {
			t.Errorf("the run operation does not document %s", code)
		}
	}
	if run.Responses["422"] != nil {
		t.Error("the run operation documents 422; the server answers 400")
	}
	resp := e.get("/openapi.yaml")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("openapi.yaml: %d", resp.StatusCode)
	}
	resp = e.get("/docs")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("/openapi.json")) || bytes.Contains(body, []byte("unpkg.com")) || bytes.Contains(body, []byte("cdn.jsdelivr")) {
		t.Errorf("/docs: %d; want the embedded API browser pointing at /openapi.json", resp.StatusCode)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func decode(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if bytes.Contains(body, []byte(`"$schema"`)) {
		t.Errorf("the body has $schema: %s", body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
}

// postJSON sends body to path and decodes the JSON answer.
func (e *env) postJSON(path, body string, v any) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.http.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		e.t.Errorf("Content-Type %q", ct)
	}
	reflect.ValueOf(v).Elem().SetZero() // json.Unmarshal would merge into what v holds
	decode(e.t, resp, v)
}

type history struct {
	Messages             []map[string]any `json:"messages"`
	State                any              `json:"state"`
	PendingFrontendTools []map[string]any `json:"pendingFrontendTools"`
}

func contents(msgs []map[string]any) string {
	var parts []string
	for _, m := range msgs {
		s := str(m["role"]) + ":" + str(m["content"])
		if tcs, ok := m["toolCalls"].([]any); ok {
			for _, tc := range tcs {
				s += " →" + str(tc.(map[string]any)["function"].(map[string]any)["name"])
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}

func TestHistory(t *testing.T) {
	e := newEnv(t, nil)
	turn := func(id, msg string) {
		e.stream(e.post("/agui/workflows/counter", `{"threadId": "h1", "runId": "`+id+`", "messages": [{"id": "`+id+`-m", "role": "user", "content": "`+msg+`"}], "state": {"user": "ada"}}`))
	}
	turn("r1", "hi")
	turn("r2", "again")

	var h history
	e.postJSON("/agui/history", `{"threadId": "h1", "workflowId": "counter"}`, &h)
	if got, want := contents(h.Messages), "assistant:Turn 1: hi | assistant:Turn 2: again"; got != want {
		t.Errorf("messages %s\nwant %s", got, want)
	}
	if st, _ := json.Marshal(h.State); string(st) != `{"turns":2,"user":"ada"}` {
		t.Errorf("state %s", st)
	}
	if h.PendingFrontendTools == nil || len(h.PendingFrontendTools) != 0 {
		t.Errorf("pendingFrontendTools %v, want []", h.PendingFrontendTools)
	}
	for _, max := range []string{`1`, `1.0`} {
		e.postJSON("/agui/history", `{"threadId": "h1", "workflowName": "Counter", "maxMessages": `+max+`}`, &h)
		if got := contents(h.Messages); got != "assistant:Turn 2: again" {
			t.Errorf("maxMessages %s: %s", max, got)
		}
	}
	for _, max := range []string{`0`, `-1`, `1.5`, `"2"`, `null`} {
		e.postJSON("/agui/history", `{"threadId": "h1", "workflowId": "counter", "maxMessages": `+max+`}`, &h)
		if len(h.Messages) != 2 {
			t.Errorf("maxMessages %s: %d messages, want all 2", max, len(h.Messages))
		}
	}

	// A stateless workflow keeps no history.
	e.stream(e.post("/agui/workflows/echo", `{"threadId": "h1", "messages": [{"id": "m", "role": "user", "content": "x"}]}`))
	var empty map[string]any
	e.postJSON("/agui/history", `{"threadId": "h1", "workflowId": "echo"}`, &empty)
	if b, _ := json.Marshal(empty); string(b) != `{"messages":[],"pendingFrontendTools":[],"state":null}` {
		t.Errorf("stateless history %s", b)
	}

	// The same as a stream.
	req, _ := http.NewRequest(http.MethodPost, e.http.URL+"/agui/history", strings.NewReader(`{"threadId": "h1", "workflowId": "counter"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	snapshotStream(t, e.stream(resp), "h1", 2)

	// A run request with no messages on a known conversation is answered
	// with the snapshot; nothing runs.
	evs := e.stream(e.post("/agui/workflows/counter", `{"threadId": "h1", "runId": "r3", "messages": []}`))
	snapshotStream(t, evs, "h1", 2)
	if evs[0].data["runId"] != "r3" {
		t.Errorf("snapshot run id %v, want r3", evs[0].data["runId"])
	}
	e.postJSON("/agui/history", `{"threadId": "h1", "workflowId": "counter"}`, &h)
	if len(h.Messages) != 2 {
		t.Errorf("%d messages after the snapshot request; it must not run", len(h.Messages))
	}
	// On a new thread it runs.
	evs = e.stream(e.post("/agui/workflows/counter", `{"threadId": "h2", "messages": []}`))
	if got := text(evs); got != "Turn 1: \n" {
		t.Errorf("first turn without a message: %q", got)
	}

	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{"workflowId": "counter"}`, 400},
		{`{"threadId": 7, "workflowId": "counter"}`, 400},
		{`{"threadId": "h1"}`, 400},
		{`{"threadId": "h1", "workflowId": "counter", "workflowName": "Counter"}`, 400},
		{`{"threadId": "h1", "workflowName": "Twin"}`, 400},
		{`{"threadId": "h1", "workflowId": "nope"}`, 404},
		{`{"threadId": "h1", "workflowName": "Nope"}`, 404},
		{`{"threadId": "nope", "workflowId": "counter"}`, 404},
		{`{"threadId": "h1", "workflowId": "refund"}`, 404}, // the thread is another workflow's
		{`{"threadId": `, 400},
	} {
		e.problem(e.post("/agui/history", tc.body), tc.status)
	}
}

// snapshotStream checks the stream that restores a client.
func snapshotStream(t *testing.T, evs []event, thread string, messages int) {
	t.Helper()
	var types []string
	for _, ev := range evs {
		types = append(types, ev.typ())
	}
	if got, want := strings.Join(types, " "), "RUN_STARTED STATE_SNAPSHOT MESSAGES_SNAPSHOT RUN_FINISHED"; got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	if evs[0].data["threadId"] != thread || evs[0].data["runId"] != evs[3].data["runId"] {
		t.Errorf("ids %v / %v", evs[0].data, evs[3].data)
	}
	if msgs, _ := evs[2].data["messages"].([]any); len(msgs) != messages {
		t.Errorf("MESSAGES_SNAPSHOT has %d messages, want %d", len(msgs), messages)
	}
}

func TestHistoryTools(t *testing.T) {
	e := newEnv(t, nil)
	evs := e.stream(e.post("/agui/workflows/refund", `{"threadId": "f1", "runId": "r1", "protocolVersion": "1.0", "messages": [{"id": "m1", "role": "user", "content": "refund please"}]}`))
	call := str(outcome(t, evs)["pendingToolCallIds"].([]any)[0])
	var h history
	e.postJSON("/agui/history", `{"threadId": "f1", "workflowId": "refund"}`, &h)
	if got, want := contents(h.Messages), "assistant:Checking your order. | assistant: →confirm_refund"; got != want {
		t.Errorf("messages %s\nwant %s", got, want)
	}
	if len(h.PendingFrontendTools) != 1 || h.PendingFrontendTools[0]["id"] != call {
		t.Errorf("pendingFrontendTools %v, want the call %s", h.PendingFrontendTools, call)
	}
	e.stream(e.post("/agui/workflows/refund", `{"threadId": "f1", "runId": "r2", "messages": [{"id": "m2", "role": "tool", "toolCallId": "`+call+`", "content": "{\"approved\": true}"}]}`))
	e.postJSON("/agui/history", `{"threadId": "f1", "workflowId": "refund", "maxMessages": 2}`, &h)
	// The tool result needs its call: three messages for two.
	if got, want := contents(h.Messages), `assistant: →confirm_refund | tool:{"approved": true} | assistant:Approved: true`; got != want {
		t.Errorf("messages %s\nwant %s", got, want)
	}
	if len(h.PendingFrontendTools) != 0 {
		t.Errorf("pendingFrontendTools %v after the result", h.PendingFrontendTools)
	}
}

func TestCancel(t *testing.T) {
	for _, route := range []string{"cancel", "interrupt"} {
		t.Run(route, func(t *testing.T) {
			e := newEnv(t, nil)
			b := newBlocker(t)
			cancel := func() *http.Response {
				if route == "cancel" {
					return e.post("/agui/cancel", `{"threadId": "busy", "forwardedProps": {"aguic": {"workflowId": "slow"}}}`)
				}
				return e.post("/agui/threads/busy/interrupt", ``)
			}
			e.problem(cancel(), http.StatusNotFound) // nothing runs yet
			first := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
			<-b.entered
			var c map[string]any
			decode(t, cancel(), &c)
			if c["status"] != "cancelled" || c["runId"] != "r1" || c["workflowId"] != "slow" || c["threadId"] != "busy" {
				t.Errorf("cancel answered %v", c)
			}
			evs := e.stream(first)
			if o := outcome(t, evs); o["type"] != "cancelled" {
				t.Errorf("outcome %v, want cancelled", o)
			}
			th, err := e.store.Thread(context.Background(), store.Key{Scope: "default", Workflow: "slow", Thread: "busy"})
			if err != nil || th.Status != store.Cancelled {
				t.Errorf("thread %s, %v; want cancelled", th.Status, err)
			}
			e.problem(cancel(), http.StatusNotFound) // nothing runs any more
		})
	}
}

func TestThreadRuns(t *testing.T) {
	e := newEnv(t, nil)
	msg := func(id, text string) string {
		return `{"runId": "` + id + `", "messages": [{"id": "` + id + `-m", "role": "user", "content": "` + text + `"}]}`
	}
	e.problem(e.post("/agui/threads/c9/runs", msg("r0", "x")), http.StatusNotFound)
	e.stream(e.post("/agui/workflows/counter", `{"threadId": "c9", `+msg("r1", "hi")[1:]))
	evs := e.stream(e.post("/agui/threads/c9/runs", msg("r2", "again")))
	if got := text(evs); got != "Turn 2: again\n" {
		t.Errorf("text %q", got)
	}
	if evs[0].data["threadId"] != "c9" || evs[0].data["runId"] != "r2" {
		t.Errorf("RUN_STARTED %v", evs[0].data)
	}
	e.problem(e.post("/agui/threads/c9/runs", `{"threadId": "other", "messages": []}`), http.StatusBadRequest)
	// Threads of the same id in two workflows: the request must pick one.
	e.stream(e.post("/agui/workflows/refund", `{"threadId": "c9", `+msg("r3", "x")[1:]))
	e.problem(e.post("/agui/threads/c9/runs", msg("r4", "x")), http.StatusBadRequest)
	evs = e.stream(e.post("/agui/threads/c9/runs", `{"messages": [{"id": "m5", "role": "user", "content": "three"}], "forwardedProps": {"aguic": {"workflowId": "counter"}}}`))
	if got := text(evs); got != "Turn 3: three\n" {
		t.Errorf("text %q", got)
	}
}

func TestReplay(t *testing.T) {
	e := newEnv(t, nil)
	live := e.stream(e.post("/agui/workflows/counter", `{"threadId": "rp", "runId": "r1", "messages": [{"id": "m", "role": "user", "content": "hi"}], "state": {}}`))
	get := func(query, lastEventID string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, e.http.URL+"/agui/threads/rp/replay"+query, nil)
		if lastEventID != "" {
			req.Header.Set("Last-Event-ID", lastEventID)
		}
		resp, err := e.http.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	frames := func(resp *http.Response) []agui.Frame {
		t.Helper()
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			body, _ := io.ReadAll(resp.Body)
			t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		var out []agui.Frame
		for f, err := range agui.ReadSSE(resp.Body) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, f)
		}
		return out
	}
	// The stored events are the live ones that had an id.
	var want []string
	for _, ev := range live {
		if ev.id != "" {
			want = append(want, ev.id+" "+ev.typ())
		}
	}
	got := func(fs []agui.Frame) []string {
		var out []string
		for _, f := range fs {
			var m map[string]any
			json.Unmarshal(f.Data, &m)
			out = append(out, f.ID+" "+str(m["type"]))
		}
		return out
	}
	all := got(frames(get("", "")))
	if strings.Join(all, ",") != strings.Join(want, ",") {
		t.Errorf("replay %v\nwant %v", all, want)
	}
	if part := got(frames(get("?cursor=2&limit=2", ""))); strings.Join(part, ",") != strings.Join(want[2:4], ",") {
		t.Errorf("cursor 2, limit 2: %v, want %v", part, want[2:4])
	}
	if part := got(frames(get("", "3"))); strings.Join(part, ",") != strings.Join(want[3:], ",") {
		t.Errorf("Last-Event-ID 3: %v, want %v", part, want[3:])
	}
	if part := got(frames(get("?limit=9999", ""))); len(part) != len(want) {
		t.Errorf("limit over the max: %d frames", len(part))
	}
	e.problem(get("?cursor=abc", ""), http.StatusBadRequest)
	e.problem(get("", "x-1"), http.StatusBadRequest)
	e.problem(get("?limit=0", ""), http.StatusBadRequest)
	resp, _ := e.http.Client().Get(e.http.URL + "/agui/threads/nope/replay")
	e.problem(resp, http.StatusNotFound)

	// Retention removed the oldest events: a cursor before them is gone.
	n, _, err := e.store.Sweep(context.Background(), store.Retention{MaxEvents: 2}, time.Now())
	if err != nil || n == 0 {
		t.Fatalf("sweep removed %d events: %v", n, err)
	}
	e.problem(get("?cursor=0", ""), http.StatusGone)
}

func TestThreadMessages(t *testing.T) {
	e := newEnv(t, nil)
	for i, msg := range []string{"a", "b", "c"} {
		id := "r" + strconv.Itoa(i)
		e.stream(e.post("/agui/workflows/counter", `{"threadId": "tm", "runId": "`+id+`", "messages": [{"id": "`+id+`", "role": "user", "content": "`+msg+`"}]}`))
	}
	var p map[string]any
	decode(t, e.get("/agui/threads/tm/messages?limit=2"), &p)
	if p["workflowId"] != "counter" || p["status"] != "suspended" || p["nextCursor"] != "2" {
		t.Errorf("page 1 %v", p)
	}
	if msgs, _ := p["messages"].([]any); len(msgs) != 2 {
		t.Errorf("page 1 has %d messages", len(msgs))
	}
	p = nil
	decode(t, e.get("/agui/threads/tm/messages?limit=2&cursor=2"), &p)
	msgs, _ := p["messages"].([]any)
	if len(msgs) != 1 || p["nextCursor"] != nil || str(msgs[0].(map[string]any)["content"]) != "Turn 3: c" {
		t.Errorf("page 2 %v", p)
	}
	e.problem(e.get("/agui/threads/tm/messages?cursor=x"), http.StatusBadRequest)
	e.problem(e.get("/agui/threads/none/messages"), http.StatusNotFound)
	e.problem(e.get("/agui/threads/tm/messages?workflowId=nope"), http.StatusNotFound)
}

func TestKeepAlive(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.KeepAlive = time.Millisecond })
	b := newBlocker(t)
	resp := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	defer resp.Body.Close()
	<-b.entered
	// While the run waits, the stream carries keep-alive comments.
	buf := make([]byte, 0, 4096)
	chunk := make([]byte, 512)
	for !bytes.Contains(buf, []byte("\n: ping\n\n")) {
		n, err := resp.Body.Read(chunk)
		if err != nil {
			t.Fatalf("the stream ended without a ping: %v\n%s", err, buf)
		}
		buf = append(buf, chunk[:n]...)
	}
	b.release()
	rest, _ := io.ReadAll(resp.Body)
	if !bytes.Contains(rest, []byte(`"type":"RUN_FINISHED"`)) {
		t.Errorf("the stream after the pings: %s", rest)
	}
}

// FuzzRunRequest sends arbitrary bodies to a run route and to /history:
// the answer is a 4xx problem or a well-formed event stream, never a
// server error.
func FuzzRunRequest(f *testing.F) {
	for _, body := range []string{
		`{"threadId": "t", "messages": [{"id": "m", "role": "user", "content": "hi"}]}`,
		`{"threadId": "t", "messages": [{"id": "m", "role": "user", "content": [{"type": "text", "text": "x"}]}], "state": null}`,
		`{"threadId": "t", "messages": [{"role": "tool", "toolCallId": "c", "content": "{}"}], "tools": [{"name": "x"}], "context": [{"description": "d", "value": "v"}]}`,
		`{"threadId": "t", "messages": [{"role": "assistant", "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}]}]}`,
		`{"threadId": "t", "workflowId": "counter", "maxMessages": 3}`,
		`{"threadId": `,
		`[]`,
		``,
	} {
		f.Add(body)
	}
	srv, _ := newServer(f, nil)
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/agui/workflows/echo", "/agui/history"} {
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			switch ct := w.Header().Get("Content-Type"); {
			case w.Code >= 400 && w.Code < 500:
				if ct != "application/problem+json" {
					t.Fatalf("%s: %d with %s", path, w.Code, ct)
				}
			case w.Code == 200 && ct == "text/event-stream":
				var types []string
				for fr, err := range agui.ReadSSE(w.Body) {
					if err != nil {
						t.Fatalf("%s: %v", path, err)
					}
					ev, err := aguitest.DecodeEvent(fr.Data)
					if err != nil {
						t.Fatalf("%s: frame %s: %v", path, fr.Data, err)
					}
					types = append(types, ev.EventType())
				}
				if len(types) == 0 || types[len(types)-1] != "RUN_FINISHED" && types[len(types)-1] != "RUN_ERROR" {
					t.Fatalf("%s: events %v", path, types)
				}
			case w.Code == 200 && path == "/agui/history" && ct == "application/json":
			default:
				t.Fatalf("%s: %d %s: %s", path, w.Code, ct, w.Body)
			}
		}
	})
}

func TestUsage(t *testing.T) {
	e := newEnv(t, nil)
	evs := e.stream(e.post("/agui/workflows/usage", `{"threadId": "u1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "go"}]}`))
	end := last(evs)
	if end["type"] != "RUN_FINISHED" {
		t.Fatalf("terminal event %v", end)
	}
	want := []any{
		map[string]any{"provider": "script", "model": "small", "inputTokens": 30.0, "outputTokens": 3.0, "totalTokens": 33.0},
		map[string]any{"provider": "other", "model": "large", "inputTokens": 300.0, "outputTokens": 30.0, "totalTokens": 330.0},
	}
	if !reflect.DeepEqual(end["usage"], want) {
		t.Errorf("RUN_FINISHED usage %v, want %v", end["usage"], want)
	}

	// A run that fails still reports what its earlier calls used.
	evs = e.stream(e.post("/agui/workflows/usage", `{"threadId": "u2", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "fail"}]}`))
	end = last(evs)
	if end["type"] != "RUN_ERROR" || !strings.Contains(str(end["message"]), "the model refuses") {
		t.Fatalf("terminal event %v, want RUN_ERROR with the model's message", end)
	}
	if !reflect.DeepEqual(end["usage"], want[:1]) {
		t.Errorf("RUN_ERROR usage %v, want %v", end["usage"], want[:1])
	}
}
