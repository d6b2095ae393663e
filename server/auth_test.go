package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// authTokens is the tokens file of the tests: two users.
const authTokens = `
# users of the tests
ada  ada-secret-token
bob:bob-secret-token
`

func withTokens(t *testing.T) func(*server.Config) {
	t.Helper()
	toks, err := server.ParseTokens("tokens", []byte(authTokens))
	if err != nil {
		t.Fatal(err)
	}
	return func(c *server.Config) { c.Auth = toks.Auth }
}

// send sends a request with the headers given as name, value pairs.
func (e *env) send(method, path, body string, header ...string) *http.Response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.http.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.http.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// drain reads and closes the body of resp and returns its status.
func drain(resp *http.Response) int {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestAuth(t *testing.T) {
	e := newEnv(t, withTokens(t))
	run := `{"threadId": "t1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}`
	outer := t
	for _, tc := range []struct {
		name   string
		header []string
		detail string
	}{
		{"no header", nil, "needs a bearer token"},
		{"another scheme", []string{"Authorization", "Basic YWRhOnNlY3JldA=="}, "needs a bearer token"},
		{"empty token", []string{"Authorization", "Bearer "}, "needs a bearer token"},
		{"wrong token", bearer("ada-secret-tokeN"), "not valid"},
		{"a token's prefix", bearer("ada-secret"), "not valid"},
		{"a name", bearer("ada"), "not valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			defer func() { e.t = outer }()
			resp := e.send(http.MethodPost, "/agui/workflows/echo", run, tc.header...)
			// A missing token is only challenged; a wrong one is
			// invalid_token (RFC 6750).
			want := `Bearer realm="aguic"`
			if tc.detail == "not valid" {
				want += `, error="invalid_token", error_description="the bearer token is not valid"`
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != want {
				t.Errorf("WWW-Authenticate %q, want %q", got, want)
			}
			p := e.problem(resp, http.StatusUnauthorized)
			if !strings.Contains(str(p["detail"]), tc.detail) {
				t.Errorf("detail %q, want %q", p["detail"], tc.detail)
			}
		})
	}
	// Refused before anything else: nothing ran, and the body was not
	// even read (a malformed one is 401 too).
	if _, err := e.store.Thread(context.Background(), store.Key{Scope: "default", Workflow: "echo", Thread: "t1"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused request left a thread: %v", err)
	}
	e.problem(e.send(http.MethodPost, "/agui/workflows/echo", `{`), http.StatusUnauthorized)
	// Every other route is closed too.
	for _, path := range []string{"/agui/workflows", "/agui/workflows/echo", "/agui/threads/t1/messages", "/agui/threads/t1/replay"} {
		e.problem(e.send(http.MethodGet, path, ""), http.StatusUnauthorized)
	}

	// The token's name is the scope of the thread.
	evs := e.stream(e.send(http.MethodPost, "/agui/workflows/echo", run, bearer("ada-secret-token")...))
	if got := text(evs); got != "You said hi (1 messages)\n" {
		t.Errorf("text %q", got)
	}
	if _, err := e.store.Thread(context.Background(), store.Key{Scope: "ada", Workflow: "echo", Thread: "t1"}); err != nil {
		t.Errorf("the thread is not in scope ada: %v", err)
	}
	// The scheme is case-insensitive.
	e.stream(e.send(http.MethodPost, "/agui/workflows/echo", run, "Authorization", "bearer bob-secret-token"))

	// The health check, the OpenAPI document and the API browser stay open.
	for _, path := range []string{"/healthz", "/openapi.json", "/openapi.yaml", "/docs", "/docs/index.css"} {
		if got := drain(e.send(http.MethodGet, path, "")); got == http.StatusUnauthorized {
			t.Errorf("GET %s: 401, want it open", path)
		}
	}
	if got := drain(e.send(http.MethodGet, "/healthz", "")); got != http.StatusOK {
		t.Errorf("GET /healthz: %d", got)
	}
	// A public prefix does not open what lies behind it.
	for _, path := range []string{"/docs/../agui/workflows", "/docs/%2e%2e/agui/workflows", "/docs/..%2Fagui/workflows", "/healthz/../agui/workflows", "/openapi.json/../../agui/workflows"} {
		req, _ := http.NewRequest(http.MethodGet, e.http.URL+path, nil)
		req.URL.RawPath, req.URL.Path = "", "" // keep the path as written
		req.URL.Opaque = "//" + req.URL.Host + path
		resp, err := e.http.Client().Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := drain(resp); got != http.StatusUnauthorized {
			t.Errorf("GET %s: %d, want 401", path, got)
		}
	}

	// The OpenAPI document says so.
	var doc struct {
		Components struct {
			SecuritySchemes map[string]map[string]any `json:"securitySchemes"`
		} `json:"components"`
		Paths map[string]map[string]struct {
			Security  []map[string][]string `json:"security"`
			Responses map[string]any        `json:"responses"`
		} `json:"paths"`
	}
	decode(t, e.send(http.MethodGet, "/openapi.json", ""), &doc)
	if s := doc.Components.SecuritySchemes["bearer"]; s["type"] != "http" || s["scheme"] != "bearer" {
		t.Errorf("securitySchemes %v", doc.Components.SecuritySchemes)
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			secured := len(op.Security) == 1 && op.Security[0]["bearer"] != nil && op.Responses["401"] != nil
			if want := path != "/healthz"; want != secured {
				t.Errorf("%s %s: security %v, 401 %v", method, path, op.Security, op.Responses["401"] != nil)
			}
		}
	}
}

func TestAuthOff(t *testing.T) {
	// Without Auth the document declares no security, and requests need
	// no token.
	e := newEnv(t, nil)
	body, _ := io.ReadAll(e.send(http.MethodGet, "/openapi.json", "").Body)
	if bytes.Contains(body, []byte("securitySchemes")) || bytes.Contains(body, []byte(`"401"`)) {
		t.Errorf("the document mentions security without Auth")
	}
	e.stream(e.send(http.MethodPost, "/agui/workflows/echo", `{"threadId": "t1"}`))
}

func TestAuthStatus(t *testing.T) {
	// An Auth error that wraps a huma.StatusError chooses the status.
	e := newEnv(t, func(c *server.Config) {
		c.Auth = func(r *http.Request) (server.Identity, error) {
			if r.Header.Get("X-User") == "" {
				return server.Identity{}, errors.New("who are you")
			}
			return server.Identity{}, huma.Error403Forbidden("the account is locked")
		}
	})
	resp := e.send(http.MethodGet, "/agui/workflows", "", "X-User", "eve")
	if resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("a 403 with a challenge")
	}
	if p := e.problem(resp, http.StatusForbidden); p["detail"] != "the account is locked" {
		t.Errorf("detail %v", p["detail"])
	}
	if p := e.problem(e.send(http.MethodGet, "/agui/workflows", ""), http.StatusUnauthorized); p["detail"] != "who are you" {
		t.Errorf("detail %v", p["detail"])
	}
}

// TestTenancy proves that one scope never reads, replays, resumes or
// cancels the thread of another: every such request answers 404, and a
// run on the same thread id starts a thread of its own.
func TestTenancy(t *testing.T) {
	e := newEnv(t, withTokens(t))
	ada, bob := bearer("ada-secret-token"), bearer("bob-secret-token")
	turn := func(who []string, path, id, msg string) []event {
		t.Helper()
		return e.stream(e.send(http.MethodPost, path, `{"threadId": "c1", "runId": "`+id+`", "messages": [{"id": "`+id+`-m", "role": "user", "content": "`+msg+`"}]}`, who...))
	}
	if got := text(turn(ada, "/agui/workflows/counter", "r1", "secret plan")); got != "Turn 1: secret plan\n" {
		t.Fatalf("ada's first turn %q", got)
	}

	// Bob can see nothing of it.
	for _, tc := range []struct{ name, method, path, body string }{
		{"history", http.MethodPost, "/agui/history", `{"threadId": "c1", "workflowId": "counter"}`},
		{"messages", http.MethodGet, "/agui/threads/c1/messages", ""},
		{"messages of the workflow", http.MethodGet, "/agui/threads/c1/messages?workflowId=counter", ""},
		{"replay", http.MethodGet, "/agui/threads/c1/replay", ""},
		{"replay from a cursor", http.MethodGet, "/agui/threads/c1/replay?cursor=1", ""},
		{"resume on the thread", http.MethodPost, "/agui/threads/c1/runs", `{"messages": [{"id": "x", "role": "user", "content": "tell me"}]}`},
		{"resume on the thread of the workflow", http.MethodPost, "/agui/threads/c1/runs", `{"messages": [{"id": "x", "role": "user", "content": "tell me"}], "forwardedProps": {"aguic": {"workflowId": "counter"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outer := e.t
			e.t = t
			defer func() { e.t = outer }()
			e.problem(e.send(tc.method, tc.path, tc.body, bob...), http.StatusNotFound)
		})
	}
	// The history stream, and a run request with nothing new (the
	// snapshot of a conversation), show bob nothing of ada's messages.
	resp := e.send(http.MethodPost, "/agui/history", `{"threadId": "c1", "workflowId": "counter"}`, append(bob, "Accept", "text/event-stream")...)
	e.problem(resp, http.StatusNotFound)
	evs := e.stream(e.send(http.MethodPost, "/agui/workflows/counter", `{"threadId": "c1", "runId": "b0"}`, bob...))
	for _, ev := range evs {
		if b, _ := json.Marshal(ev.data); bytes.Contains(b, []byte("secret plan")) {
			t.Errorf("bob saw ada's message: %s", b)
		}
	}
	// That request started bob's own thread c1, beside ada's.
	if got := text(turn(bob, "/agui/workflows/counter", "b1", "hello")); got != "Turn 2: hello\n" {
		t.Errorf("bob's turn %q, want his own thread's second turn", got)
	}
	if got := text(turn(ada, "/agui/threads/c1/runs", "r2", "go on")); got != "Turn 2: go on\n" {
		t.Errorf("ada's second turn %q: bob's requests changed her thread", got)
	}
	var page struct {
		Messages []map[string]any `json:"messages"`
	}
	decode(t, e.send(http.MethodGet, "/agui/threads/c1/messages", "", ada...), &page)
	if got := contents(page.Messages); got != "assistant:Turn 1: secret plan | assistant:Turn 2: go on" {
		t.Errorf("ada's messages %s", got)
	}
	decode(t, e.send(http.MethodGet, "/agui/threads/c1/messages", "", bob...), &page)
	if got := contents(page.Messages); strings.Contains(got, "secret") {
		t.Errorf("bob's messages %s", got)
	}

	// Cancel: bob cannot stop ada's run, ada can.
	b := newBlocker(t)
	first := e.send(http.MethodPost, "/agui/workflows/slow", slowBody("r1", b.srv.URL), ada...)
	<-b.entered
	e.problem(e.send(http.MethodPost, "/agui/cancel", `{"threadId": "busy", "forwardedProps": {"aguic": {"workflowId": "slow"}}}`, bob...), http.StatusNotFound)
	e.problem(e.send(http.MethodPost, "/agui/cancel", `{"threadId": "busy"}`, bob...), http.StatusNotFound)
	e.problem(e.send(http.MethodPost, "/agui/threads/busy/interrupt", "", bob...), http.StatusNotFound)
	var c map[string]any
	decode(t, e.send(http.MethodPost, "/agui/threads/busy/interrupt", "", ada...), &c)
	if c["status"] != "cancelled" || c["runId"] != "r1" {
		t.Errorf("ada's cancel answered %v", c)
	}
	if o := outcome(t, e.stream(first)); o["type"] != "cancelled" {
		t.Errorf("outcome %v", o)
	}

	// The store has a thread c1 in each scope, and none in "default".
	for scope, want := range map[string]error{"ada": nil, "bob": nil, "default": store.ErrNotFound} {
		if _, err := e.store.Thread(context.Background(), store.Key{Scope: scope, Workflow: "counter", Thread: "c1"}); !errors.Is(err, want) {
			t.Errorf("scope %s: %v, want %v", scope, err, want)
		}
	}
}

func TestScopeHeader(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.ScopeHeader = "X-Tenant" })
	acme := []string{"X-Tenant", "acme"}
	e.stream(e.send(http.MethodPost, "/agui/workflows/counter", `{"threadId": "h1", "messages": [{"id": "m", "role": "user", "content": "hi"}]}`, acme...))
	if _, err := e.store.Thread(context.Background(), store.Key{Scope: "acme", Workflow: "counter", Thread: "h1"}); err != nil {
		t.Errorf("the thread is not in scope acme: %v", err)
	}
	status := func(header ...string) int {
		return drain(e.send(http.MethodGet, "/agui/threads/h1/messages", "", header...))
	}
	for _, tc := range []struct {
		name   string
		header []string
		want   int
	}{
		{"its scope", acme, http.StatusOK},
		{"padded", []string{"X-Tenant", " acme "}, http.StatusOK},
		{"no header: the scope default", nil, http.StatusNotFound},
		{"another scope", []string{"X-Tenant", "globex"}, http.StatusNotFound},
		{"case matters", []string{"X-Tenant", "ACME"}, http.StatusNotFound},
		{"not printable", []string{"X-Tenant", "ac\u00e9me"}, http.StatusBadRequest},
		{"too long", []string{"X-Tenant", strings.Repeat("a", 257)}, http.StatusBadRequest},
	} {
		if got := status(tc.header...); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	toks, _ := server.ParseTokens("tokens", []byte(authTokens))
	for _, tc := range []struct {
		name string
		edit func(*server.Config)
		want string
	}{
		{"auth and scope header", func(c *server.Config) { c.Auth, c.ScopeHeader = toks.Auth, "X-Tenant" }, "exclude each other"},
		{"bad scope header", func(c *server.Config) { c.ScopeHeader = "X Tenant" }, "not a header name"},
		{"origin with a path", func(c *server.Config) { c.CORSOrigins = []string{"https://a.example/app"} }, `CORS origin "https://a.example/app"`},
		{"origin without a scheme", func(c *server.Config) { c.CORSOrigins = []string{"a.example"} }, `CORS origin "a.example"`},
		{"a public base path", func(c *server.Config) { c.BasePath = "/docs" }, "public route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := server.Config{Machine: &vm.Machine{Program: &vm.Program{}}, Store: nopStore{}}
			tc.edit(&cfg)
			_, err := server.New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// nopStore is a store New accepts; the config tests never use it.
type nopStore struct{ store.Store }

func TestHook(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []server.HookRequest
	)
	e := newEnv(t, func(c *server.Config) {
		c.Auth = func(r *http.Request) (server.Identity, error) { return server.Identity{ID: "acme"}, nil }
		c.Hook = func(ctx context.Context, r *server.HookRequest) error {
			mu.Lock()
			seen = append(seen, *r)
			mu.Unlock()
			tok, _ := strings.CutPrefix(r.Headers.Get("Authorization"), "Bearer ")
			r.Headers.Del("Authorization") // a copy: the request keeps its own
			switch tok {
			case "":
				return errors.New("sign in first")
			case "expired":
				return errors.New("the token expired")
			}
			// Derived claims only: a user and roles, never the token.
			r.Context["auth"] = map[string]any{"user": "ada", "roles": []string{"agent"}}
			r.Agent["caller"] = "ada"
			if r.Conversation {
				r.Context["input"] = map[string]any{"count": 41}
			} else {
				r.Agent["latestUserMessage"] = map[string]any{"role": "user", "content": "from the hook"}
			}
			return nil
		}
	})
	valid := bearer("valid-token")
	msg := `"messages": [{"id": "m1", "role": "user", "content": "hi"}]`

	// Stateless: the hook's context is the root context, $agent holds
	// what it added.
	evs := e.stream(e.send(http.MethodPost, "/agui/workflows/echo", `{"threadId": "s1", "runId": "r1", `+msg+`}`, valid...))
	if got := text(evs); got != "You said from the hook (1 messages)\n" {
		t.Errorf("stateless text %q", got)
	}
	frame := func(key store.Key) *vm.Frame {
		t.Helper()
		th, err := e.store.Thread(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(th.Frame, []byte("valid-token")) || bytes.Contains(bytes.Join(th.Deltas, nil), []byte("valid-token")) {
			t.Errorf("the stored frame holds the token")
		}
		f, err := store.LoadFrame(th)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := frame(store.Key{Scope: "acme", Workflow: "echo", Thread: "s1"})
	if auth, _ := f.Context["auth"].(map[string]any); auth["user"] != "ada" || len(auth["roles"].([]any)) != 1 {
		t.Errorf("context auth %v", f.Context["auth"])
	}
	if agent, _ := f.Context["agent"].(map[string]any); agent["caller"] != "ada" {
		t.Errorf("$agent %v", f.Context["agent"])
	}

	// A conversation: the context is merged into the thread's, $agent is
	// the turn's. Every run route calls the hook.
	evs = e.stream(e.send(http.MethodPost, "/agui", `{"threadId": "c1", `+msg+`, "forwardedProps": {"aguic": {"workflowId": "counter"}}}`, valid...))
	if got := text(evs); got != "Turn 42: hi\n" {
		t.Errorf("conversation text %q", got)
	}
	evs = e.stream(e.send(http.MethodPost, "/agui/threads/c1/runs", `{`+msg+`}`, valid...))
	if got := text(evs); got != "Turn 42: hi\n" {
		t.Errorf("thread run text %q", got)
	}
	f = frame(store.Key{Scope: "acme", Workflow: "counter", Thread: "c1"})
	if auth, _ := f.Context["auth"].(map[string]any); auth["user"] != "ada" {
		t.Errorf("conversation context auth %v", f.Context["auth"])
	}

	mu.Lock()
	got := seen
	seen = nil
	mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("the hook saw %d requests, want 3", len(got))
	}
	for i, want := range []struct {
		thread, workflow string
		conversation     bool
	}{{"s1", "echo", false}, {"c1", "counter", true}, {"c1", "counter", true}} {
		r := got[i]
		if r.ThreadID != want.thread || r.WorkflowID != want.workflow || r.Conversation != want.conversation || r.Scope != "acme" || r.Request == nil || r.Request.ThreadID != want.thread {
			t.Errorf("request %d: thread %q workflow %q conversation %v scope %q", i, r.ThreadID, r.WorkflowID, r.Conversation, r.Scope)
		}
		if r.Headers.Get("Content-Type") != "application/json" {
			t.Errorf("request %d: headers %v", i, r.Headers)
		}
	}

	// An error refuses the run: RUN_STARTED, RUN_ERROR with the hook's
	// message, nothing stored, and the thread is free at once.
	for _, tc := range []struct {
		name, path, body string
		header           []string
		message          string
	}{
		{"no token", "/agui/workflows/echo", `{"threadId": "s2", "runId": "x1", ` + msg + `}`, nil, "sign in first"},
		{"expired", "/agui/workflows/counter", `{"threadId": "c2", "runId": "x2", ` + msg + `}`, bearer("expired"), "the token expired"},
		{"snapshot request", "/agui/workflows/counter", `{"threadId": "c1", "runId": "x3"}`, bearer("expired"), "the token expired"},
		{"thread run", "/agui/threads/c1/runs", `{"runId": "x4", ` + msg + `}`, nil, "sign in first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outer := e.t
			e.t = t
			defer func() { e.t = outer }()
			evs := e.stream(e.send(http.MethodPost, tc.path, tc.body, tc.header...))
			if len(evs) != 2 || evs[0].typ() != "RUN_STARTED" || evs[1].typ() != "RUN_ERROR" {
				t.Fatalf("events %v, want RUN_STARTED, RUN_ERROR", evs)
			}
			if evs[1].data["message"] != tc.message || evs[1].data["code"] != "rejected" {
				t.Errorf("RUN_ERROR %v", evs[1].data)
			}
		})
	}
	for _, thread := range []string{"s2", "c2"} {
		for _, wf := range []string{"echo", "counter"} {
			if _, err := e.store.Thread(context.Background(), store.Key{Scope: "acme", Workflow: wf, Thread: thread}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a refused request left thread %s of %s: %v", thread, wf, err)
			}
		}
	}
	// Refusals took nothing from c1: its history is unchanged, and the
	// next turn runs.
	var h history
	e.t = t
	e.postJSON("/agui/history", `{"threadId": "c1", "workflowId": "counter"}`, &h)
	if len(h.Messages) != 2 {
		t.Errorf("history %s", contents(h.Messages))
	}
	e.stream(e.send(http.MethodPost, "/agui/threads/c1/runs", `{`+msg+`}`, valid...))
}

func TestCORS(t *testing.T) {
	const app = "https://app.example"
	preflight := func(e *env, origin string, header ...string) *http.Response {
		return e.send(http.MethodOptions, "/agui/workflows/echo", "", append([]string{"Origin", origin, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type,authorization"}, header...)...)
	}
	run := `{"threadId": "t1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}`

	t.Run("listed origins", func(t *testing.T) {
		e := newEnv(t, func(c *server.Config) {
			c.CORSOrigins = []string{app + "/", "http://localhost:3000"}
			c.ScopeHeader = "x-tenant"
		})
		resp := preflight(e, app)
		if drain(resp) != http.StatusNoContent {
			t.Errorf("preflight: status %d", resp.StatusCode)
		}
		for k, want := range map[string]string{
			"Access-Control-Allow-Origin":  app,
			"Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
			"Access-Control-Allow-Headers": "Content-Type, Authorization, Accept, Last-Event-ID, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, X-Tenant",
			"Access-Control-Max-Age":       "600",
			"Vary":                         "Origin",
		} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("preflight %s: %q, want %q", k, got, want)
			}
		}
		// A refused origin: 403, and no permission.
		resp = preflight(e, "https://evil.example")
		if resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Methods") != "" {
			t.Errorf("a refused preflight allows: %v", resp.Header)
		}
		e.problem(resp, http.StatusForbidden)

		// The event stream of an allowed origin carries the header.
		resp = e.send(http.MethodPost, "/agui/workflows/echo", run, "Origin", "HTTP://LOCALHOST:3000")
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "HTTP://LOCALHOST:3000" {
			t.Errorf("stream: Access-Control-Allow-Origin %q", got)
		}
		if got := resp.Header.Values("Vary"); len(got) != 1 || got[0] != "Origin" {
			t.Errorf("stream: Vary %q", got)
		}
		e.stream(resp)
		// A JSON answer too.
		resp = e.send(http.MethodGet, "/agui/workflows", "", "Origin", app)
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != app || drain(resp) != http.StatusOK {
			t.Errorf("list: status %d, Access-Control-Allow-Origin %q", resp.StatusCode, got)
		}
		// Another origin is served (a browser will not show it the
		// answer), without the header; so is a request without Origin.
		for _, origin := range []string{"https://evil.example", "https://app.example:8443", ""} {
			var h []string
			if origin != "" {
				h = []string{"Origin", origin}
			}
			resp = e.send(http.MethodPost, "/agui/workflows/echo", run, h...)
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
				t.Errorf("origin %q: Access-Control-Allow-Origin %q", origin, got)
			}
			if resp.Header.Get("Vary") != "Origin" {
				t.Errorf("origin %q: no Vary: Origin", origin)
			}
			e.stream(resp)
		}
	})

	t.Run("any origin, with tokens", func(t *testing.T) {
		edit := withTokens(t)
		e := newEnv(t, func(c *server.Config) {
			edit(c)
			c.CORSOrigins = []string{"*"}
		})
		// The preflight carries no token, and is not refused for it.
		resp := preflight(e, "https://anywhere.example")
		if drain(resp) != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("preflight: status %d, Access-Control-Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
		// A browser may read a 401, so the client can tell.
		resp = e.send(http.MethodPost, "/agui/workflows/echo", run, "Origin", "https://anywhere.example")
		if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("401 without Access-Control-Allow-Origin")
		}
		e.problem(resp, http.StatusUnauthorized)
		resp = e.send(http.MethodPost, "/agui/workflows/echo", run, append(bearer("ada-secret-token"), "Origin", "https://anywhere.example")...)
		if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("stream without Access-Control-Allow-Origin")
		}
		e.stream(resp)
	})

	t.Run("off", func(t *testing.T) {
		e := newEnv(t, nil)
		resp := preflight(e, app)
		if drain(resp) == http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("CORS is off, the preflight: %d %v", resp.StatusCode, resp.Header)
		}
		resp = e.send(http.MethodPost, "/agui/workflows/echo", run, "Origin", app)
		if resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Vary") != "" {
			t.Errorf("CORS is off: %v", resp.Header)
		}
		e.stream(resp)
	})
}

func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       string // the error; "" for none
	}{
		{"both forms", "ada tok-a\nbob:tok-b\n# comment\n\n  carol:  tok-c  \r\n", ""},
		{"a name with two tokens", "ada old\nada new\n", ""},
		{"a token with a colon", "ada a:b:c\n", ""},
		{"empty", "# nobody\n\n", "tokens: no tokens"},
		{"one word", "ada\n", `tokens:1: expected "name token" or "name:token", found one word`},
		{"three words", "\nada SECRET extra\n", `tokens:2: expected "name token" or "name:token", found 3 words`},
		{"no name", ":SECRET\n", "tokens:1: a token has no name"},
		{"no token", "ada:\n", `tokens:1: the name "ada" has an empty token`},
		{"a shared token", "ada SECRET\nbob SECRET\n", `tokens:2: the token of "bob" is already the token of "ada"`},
		{"every error", "ada\nbob\n", "tokens:1: expected \"name token\" or \"name:token\", found one word\ntokens:2: expected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			toks, err := server.ParseTokens("tokens", []byte(tc.text))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "SECRET"):
				t.Errorf("the error quotes a token: %v", err)
			case err == nil && toks.Len() == 0:
				t.Errorf("no tokens")
			}
		})
	}
	many := strings.Repeat("x\n", 20)
	if _, err := server.ParseTokens("tokens", []byte(many)); err == nil || strings.Count(err.Error(), "\n") != 10 || !strings.HasSuffix(err.Error(), "(and more errors)") {
		t.Errorf("20 bad lines: %v", err)
	}

	toks, err := server.TokenList("AGUIC_TOKENS", " ada:tok-a, bob:tok-b,, ada:tok-a2 ")
	if err != nil || toks.Len() != 3 {
		t.Fatalf("TokenList: %v", err)
	}
	if _, err := server.TokenList("AGUIC_TOKENS", "ada:tok-a,bob"); err == nil || err.Error() != `AGUIC_TOKENS: pair 2: expected "name token" or "name:token", found one word` {
		t.Errorf("TokenList error %v", err)
	}
	for _, tc := range []struct{ header, scope string }{
		{"Bearer tok-a", "ada"},
		{"Bearer tok-a2", "ada"},
		{"BEARER  tok-b ", "bob"},
		{"Bearer tok-c", ""},
		{"Bearer", ""},
		{"tok-a", ""},
		{"", ""},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		id, err := toks.Auth(r)
		if scope := id.ID; scope != tc.scope || (err == nil) != (tc.scope != "") {
			t.Errorf("Authorization %q: scope %q, %v; want %q", tc.header, scope, err, tc.scope)
		}
	}
}
