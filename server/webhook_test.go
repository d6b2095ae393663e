package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/aguic/aguic/internal/syncbuf"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/vm/store"
)

// hookSecret is the Standard Webhooks secret of the tests' webhooks.
const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// logTo is a logger that writes to b.
func logTo(b *syncbuf.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// hookServer is a run hook for the tests: it checks every call's
// signature and answers as the call's forwardedProps.case says.
type hookServer struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	calls []server.WebhookMessage[server.HookCall]
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{t: t}
	wh, err := standardwebhooks.NewWebhook(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("the hook's call does not verify: %v", err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var m server.WebhookMessage[server.HookCall]
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("the hook's call %s: %v", body, err)
		}
		h.mu.Lock()
		h.calls = append(h.calls, m)
		h.mu.Unlock()
		props, _ := m.Data.ForwardedProps.(map[string]any)
		w.Header().Set("Content-Type", "application/json")
		switch props["case"] {
		case "allow":
			io.WriteString(w, `{"allow": true}`)
		case "refuse":
			io.WriteString(w, `{"allow": false, "reason": "your plan does not include this workflow"}`)
		case "forbid":
			io.WriteString(w, `{"allow": false, "reason": "not in this tenant", "status": 403}`)
		case "enrich":
			io.WriteString(w, `{"allow": true, "context": {"tenant": {"id": "acme", "tier": 2}}, "agent": {"role": "`+m.Data.Headers["x-role"]+`"}, "scope": "acme"}`)
		case "slow":
			<-r.Context().Done() // the hook's timeout ends the call
		case "garbage":
			io.WriteString(w, `<html>oops</html>`)
		case "typo":
			io.WriteString(w, `{"alow": true}`)
		case "hidden":
			io.WriteString(w, `{"allow": true, "agent": {"_hidden": {"model": "other/large"}}}`)
		case "down":
			http.Error(w, "the hook is down", http.StatusBadGateway)
		default:
			t.Errorf("the hook got an unknown case %v", props["case"])
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func TestWebhookHook(t *testing.T) {
	hs := newHookServer(t)
	var logs syncbuf.Buffer
	hook, err := server.WebhookHook(hs.srv.URL, server.WebhookOptions{
		Timeout: 100e6, // 100ms: the slow case waits for it
		Headers: []string{"X-Role"},
		Secret:  hookSecret,
		Logger:  logTo(&logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOf(t, filepath.Join("testdata", "hooks", "*.wf"), func(c *server.Config) { c.Hook = hook })
	body := func(wf, thread, c string) string {
		return `{"threadId": "` + thread + `", "runId": "r-` + thread + `", "messages": [{"id": "m1", "role": "user", "content": "hi"}], "forwardedProps": {"case": "` + c + `", "userId": "u-7"}}`
	}
	roleHeader := []string{"X-Role", "auditor", "X-Other", "not sent"}

	// Enrich: the context, $agent and the scope the hook set.
	evs := e.stream(e.send(http.MethodPost, "/agui/workflows/hooked", body("hooked", "h1", "enrich"), roleHeader...))
	want := map[string]any{
		"tenant": map[string]any{"id": "acme", "tier": 2.0},
		"role":   "auditor",
		"props":  map[string]any{"case": "enrich", "userId": "u-7"},
	}
	if end := last(evs); !reflect.DeepEqual(end["result"], want) {
		t.Errorf("result %v, want %v", end["result"], want)
	}
	e.stream(e.send(http.MethodPost, "/agui/workflows/notes", body("notes", "n1", "enrich")))
	if _, err := e.store.Thread(context.Background(), store.Key{Scope: "acme", Workflow: "notes", Thread: "n1"}); err != nil {
		t.Errorf("the thread is not in the hook's scope: %v", err)
	}
	if _, err := e.store.Thread(context.Background(), store.Key{Scope: "default", Workflow: "notes", Thread: "n1"}); err == nil {
		t.Errorf("the thread is in the request's scope too")
	}

	// What the hook was called with: the named headers only.
	hs.mu.Lock()
	first := hs.calls[0]
	hs.mu.Unlock()
	if first.Type != server.TypeRunRequested || first.Data.ThreadID != "h1" || first.Data.RunID != "r-h1" || first.Data.WorkflowID != "hooked" ||
		first.Data.Conversation || first.Data.Scope != "default" || first.Data.User != nil ||
		!reflect.DeepEqual(first.Data.Headers, map[string]string{"x-role": "auditor"}) {
		t.Errorf("the hook was called with %+v", first)
	}

	// Refusals: RUN_ERROR rejected with the reason, or the hook's status.
	evs = e.stream(e.post("/agui/workflows/hooked", body("hooked", "h2", "refuse")))
	if end := last(evs); end["type"] != "RUN_ERROR" || end["code"] != "rejected" || end["message"] != "your plan does not include this workflow" {
		t.Errorf("refused: %v", end)
	}
	if p := e.problem(e.post("/agui/workflows/hooked", body("hooked", "h3", "forbid")), http.StatusForbidden); p["detail"] != "not in this tenant" {
		t.Errorf("forbidden: %v", p)
	}

	// Failures refuse the run, and the log says why.
	for _, tc := range []struct{ c, log string }{
		{"slow", "no answer within the hook's timeout"},
		{"garbage", "the answer is not a hook answer"},
		{"typo", `unknown field \"alow\"`},
		{"hidden", "sets _hidden"},
		{"down", "status 502"},
	} {
		evs := e.stream(e.post("/agui/workflows/hooked", body("hooked", "f-"+tc.c, tc.c)))
		if end := last(evs); end["type"] != "RUN_ERROR" || end["code"] != "rejected" || !strings.Contains(str(end["message"]), "the run hook did not answer") {
			t.Errorf("%s: %v", tc.c, end)
		}
		if !strings.Contains(logs.String(), tc.log) {
			t.Errorf("%s: the log does not say %q:\n%s", tc.c, tc.log, logs.String())
		}
		if _, err := e.store.Thread(context.Background(), store.Key{Scope: "default", Workflow: "hooked", Thread: "f-" + tc.c}); err == nil {
			t.Errorf("%s: a refused run stored its thread", tc.c)
		}
	}
}

func TestWebhookHookOptions(t *testing.T) {
	for _, tc := range []struct {
		url  string
		opts server.WebhookOptions
		want string
	}{
		{"ftp://hooks.example.com", server.WebhookOptions{}, "not an http or https URL"},
		{"https://hooks.example.com", server.WebhookOptions{Secret: "not base64!"}, "not base64"},
		{"https://hooks.example.com", server.WebhookOptions{Secret: "whsec_c2hvcnQ="}, "too short"},
		{"https://hooks.example.com", server.WebhookOptions{Headers: []string{"X Bad"}}, "not a header name"},
	} {
		if _, err := server.WebhookHook(tc.url, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WebhookHook(%q, %+v): %v, want %q", tc.url, tc.opts, err, tc.want)
		}
	}
}

func TestCheckWebhookSecret(t *testing.T) {
	for _, tc := range []struct {
		secret, want string // want "": accepted
	}{
		{"", ""},
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", ""},
		{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", ""},
		{"not base64!", `not base64, with or without the "whsec_" prefix`},
		{"whsec_c2hvcnQ=", "too short: give at least 16 bytes, base64"},
	} {
		err := server.CheckWebhookSecret(tc.secret)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("CheckWebhookSecret(%q): %v, want %q", tc.secret, err, tc.want)
		}
	}
}

// completionServer is a completion webhook that fails its first calls.
type completionServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	fails int // the calls still to fail
	calls []delivery
	ok    chan delivery // each call answered 2xx
}

// delivery is one call a webhook received.
type delivery struct {
	header http.Header
	body   []byte
}

func newCompletionServer(t *testing.T, fails int) *completionServer {
	c := &completionServer{fails: fails, ok: make(chan delivery, 10)}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivery{r.Header.Clone(), body}
		c.mu.Lock()
		c.calls = append(c.calls, d)
		fail := c.fails > 0
		c.fails--
		c.mu.Unlock()
		if fail {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		c.ok <- d
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func TestNotifier(t *testing.T) {
	cs := newCompletionServer(t, 2)
	n, err := server.NewNotifier(cs.srv.URL, server.NotifierOptions{Secret: hookSecret, Backoff: 1e6, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *server.Config) { c.OnRunEnd = n.RunEnded })
	evs := e.stream(e.post("/agui/workflows/usage", `{"threadId": "u1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "go"}]}`))
	if last(evs)["type"] != "RUN_FINISHED" {
		t.Fatalf("the run ended with %v", last(evs))
	}
	got := <-cs.ok
	if err := n.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// Three calls, the same message: two failed, the third delivered.
	cs.mu.Lock()
	calls := cs.calls
	cs.mu.Unlock()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3", len(calls))
	}
	id := calls[0].header.Get("webhook-id")
	for i, c := range calls {
		if c.header.Get("webhook-id") != id || !bytes.Equal(c.body, calls[0].body) {
			t.Errorf("call %d is another message: id %q, want %q", i+1, c.header.Get("webhook-id"), id)
		}
	}
	wh, _ := standardwebhooks.NewWebhook(hookSecret)
	if err := wh.Verify(got.body, got.header); err != nil {
		t.Errorf("the delivery does not verify: %v", err)
	}
	wrong, _ := standardwebhooks.NewWebhook("whsec_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	if err := wrong.Verify(got.body, got.header); err == nil {
		t.Errorf("the delivery verifies with another secret")
	}

	var m server.WebhookMessage[server.RunEnd]
	if err := json.Unmarshal(got.body, &m); err != nil {
		t.Fatal(err)
	}
	d := m.Data
	if m.Type != server.TypeRunEnded || d.ThreadID != "u1" || d.RunID != "r1" || d.WorkflowID != "usage" || d.Scope != "default" ||
		d.Outcome != "finished" || d.Error != nil || d.Trigger != server.TriggerRequest || d.EndedAt.Before(d.StartedAt) || d.DurationMs < 0 {
		t.Errorf("the message %s", got.body)
	}
	if len(d.Usage) != 2 || d.Usage[0].Model != "small" || d.Usage[0].InputTokens != 30 || d.Usage[1].Model != "large" {
		t.Errorf("usage %+v", d.Usage)
	}

	// Once closed, a run's end is not delivered.
	e.stream(e.post("/agui/workflows/echo", `{"threadId": "e1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}`))
	cs.mu.Lock()
	after := len(cs.calls)
	cs.mu.Unlock()
	if after != 3 {
		t.Errorf("%d calls after Close, want 3", after)
	}
}

// TestNotifierFails: a run that fails is delivered with its error, and
// Close stops the deliveries still retrying when its context ends.
func TestNotifierFails(t *testing.T) {
	cs := newCompletionServer(t, 1)
	n, err := server.NewNotifier(cs.srv.URL, server.NotifierOptions{Backoff: 1e6, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *server.Config) { c.OnRunEnd = n.RunEnded })
	e.stream(e.post("/agui/workflows/usage", `{"threadId": "u2", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "fail"}]}`))
	got := <-cs.ok
	if got.header.Get("webhook-signature") != "" {
		t.Errorf("an unsigned notifier signed: %q", got.header.Get("webhook-signature"))
	}
	var m server.WebhookMessage[server.RunEnd]
	if err := json.Unmarshal(got.body, &m); err != nil {
		t.Fatal(err)
	}
	if m.Data.Outcome != "failed" || m.Data.Error == nil || !strings.Contains(m.Data.Error.Message, "the model refuses") || len(m.Data.Usage) != 1 {
		t.Errorf("the message %s", got.body)
	}

	// A receiver that never answers 2xx: Close gives up when told.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer down.Close()
	var logs syncbuf.Buffer
	n2, err := server.NewNotifier(down.URL, server.NotifierOptions{Backoff: 1 << 40, Logger: logTo(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	n2.RunEnded(server.RunEnd{ThreadID: "t", RunID: "r", WorkflowID: "w"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := n2.Close(ctx); err != context.Canceled {
		t.Errorf("Close: %v, want context.Canceled", err)
	}
	if !strings.Contains(logs.String(), "not delivered before the shutdown") {
		t.Errorf("the log does not say the message was dropped:\n%s", logs.String())
	}
}

func TestRequestModels(t *testing.T) {
	e := newEnvOf(t, filepath.Join("testdata", "hooks", "*.wf"), func(c *server.Config) { c.RequestModels = []string{"other/large", "script/tiny"} })
	body := func(thread, props string) string {
		return `{"threadId": "` + thread + `", "messages": [{"id": "m1", "role": "user", "content": "hi"}], "forwardedProps": ` + props + `}`
	}
	// The node that names no model runs the request's; the other keeps
	// its own.
	evs := e.stream(e.post("/agui/workflows/pick", body("p1", `{"aguic": {"model": "other/large"}}`)))
	end := last(evs)
	want := []any{
		map[string]any{"provider": "other", "model": "large", "inputTokens": 10.0, "outputTokens": 1.0, "totalTokens": 11.0},
		map[string]any{"provider": "script", "model": "small", "inputTokens": 20.0, "outputTokens": 2.0, "totalTokens": 22.0},
	}
	if end["type"] != "RUN_FINISHED" || !reflect.DeepEqual(end["usage"], want) {
		t.Errorf("terminal event %v, want RUN_FINISHED with usage %v", end, want)
	}
	// Without a choice and without a default model, the node has none.
	evs = e.stream(e.post("/agui/workflows/pick", body("p2", `{}`)))
	if end := last(evs); end["type"] != "RUN_ERROR" || !strings.Contains(str(end["message"]), "names no model") {
		t.Errorf("no model: %v", end)
	}
	for _, tc := range []struct{ props, want string }{
		{`{"aguic": {"model": "openai/gpt-4o"}}`, `"openai/gpt-4o" is not a model a request may choose; allowed: other/large, script/tiny`},
		{`{"aguic": {"model": 4}}`, "must be a string"},
	} {
		p := e.problem(e.post("/agui/workflows/pick", body("p3", tc.props)), http.StatusBadRequest)
		if !strings.Contains(str(p["detail"]), tc.want) {
			t.Errorf("%s: %v, want %q", tc.props, p["detail"], tc.want)
		}
	}

	// A server that lets no request choose refuses every choice.
	e = newEnvOf(t, filepath.Join("testdata", "hooks", "*.wf"), nil)
	p := e.problem(e.post("/agui/workflows/pick", body("p4", `{"aguic": {"model": "other/large"}}`)), http.StatusBadRequest)
	if !strings.Contains(str(p["detail"]), "does not let a request choose the model") {
		t.Errorf("no request models: %v", p["detail"])
	}
}
