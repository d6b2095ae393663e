package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aguic/aguic/server"
)

// The protocol versions a client may speak: the latest (stateless, with
// multi round-trip requests) and the last one with sessions.
var mcpVersions = []string{"2026-07-28", "2025-11-25"}

// newMCPEnv serves the workflows of testdata/mcp with the MCP route on.
func newMCPEnv(t *testing.T, edit func(*server.Config)) *env {
	t.Helper()
	return newEnvOf(t, filepath.Join("testdata", "mcp", "*.wf"), func(c *server.Config) {
		c.MCP = true
		if edit != nil {
			edit(c)
		}
	})
}

// mcpClient is how a test connects: the protocol version, the bearer
// token, the client's options.
type mcpClient struct {
	version string
	token   string
	opts    *mcp.ClientOptions
}

// connect opens an MCP session with the server's /agui/mcp for test t.
func (e *env) connect(t *testing.T, c mcpClient) *mcp.ClientSession {
	t.Helper()
	hc := e.http.Client()
	if c.token != "" {
		hc = &http.Client{Transport: withToken{token: c.token, next: e.http.Client().Transport}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "aguic-test", Version: "1"}, c.opts)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.http.URL + "/agui/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: c.version})
	if err != nil {
		t.Fatalf("connect (%s): %v", c.version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// eachProtocol runs f in a subtest for each protocol version, with a
// client of that version.
func (e *env) eachProtocol(t *testing.T, f func(t *testing.T, cs *mcp.ClientSession)) {
	for _, v := range mcpVersions {
		t.Run(v, func(t *testing.T) { f(t, e.connect(t, mcpClient{version: v})) })
	}
}

// withToken adds a bearer token to every request.
type withToken struct {
	token string
	next  http.RoundTripper
}

func (b withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// toolOutcome is a tool result as a test reads it.
type toolOutcome struct {
	text    string
	isError bool
	sc      map[string]any // structuredContent
}

// call calls a tool and reads its result; a protocol error fails the test.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) toolOutcome {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s %v: %v", tool, args, err)
	}
	return outcomeOf(t, res)
}

func outcomeOf(t *testing.T, res *mcp.CallToolResult) toolOutcome {
	t.Helper()
	out := toolOutcome{isError: res.IsError}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out.text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &out.sc); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// want checks the status and text of a result.
func (o toolOutcome) want(t *testing.T, status, text string) {
	t.Helper()
	if o.sc["status"] != status || o.text != text {
		t.Fatalf("got status %v, text %q; want %s, %q (%v)", o.sc["status"], o.text, status, text, o.sc)
	}
	if o.isError != (status == "error" || status == "cancelled") {
		t.Fatalf("status %s with isError %v", status, o.isError)
	}
}

func (o toolOutcome) thread() string { s, _ := o.sc["threadId"].(string); return s }

// interruptIDs are the ids of the interrupts a result waits for.
func (o toolOutcome) interruptIDs() []string {
	var ids []string
	list, _ := o.sc["interrupts"].([]any)
	for _, in := range list {
		ids = append(ids, in.(map[string]any)["id"].(string))
	}
	return ids
}

func TestMCPListsTheWorkflowsAsTools(t *testing.T) {
	e := newMCPEnv(t, nil)
	e.eachProtocol(t, func(t *testing.T, cs *mcp.ClientSession) {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		tools := map[string]*mcp.Tool{}
		var names []string
		for _, tool := range res.Tools {
			tools[tool.Name] = tool
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		if want := []string{"address", "approve", "broken", "counter", "hello", "refund", "slow"}; !reflect.DeepEqual(names, want) {
			t.Fatalf("tools %v, want %v", names, want)
		}
		hello := tools["hello"]
		if hello.Title != "Hello" || hello.Description != "Greets the user." {
			t.Errorf("hello: title %q, description %q", hello.Title, hello.Description)
		}
		if tools["broken"].Description != "Runs the workflow broken." {
			t.Errorf("broken: description %q", tools["broken"].Description)
		}
		props := func(tool *mcp.Tool) []string {
			m := tool.InputSchema.(map[string]any)["properties"].(map[string]any)
			return slices.Sorted(func(yield func(string) bool) {
				for k := range m {
					if !yield(k) {
						return
					}
				}
			})
		}
		if got := props(hello); !reflect.DeepEqual(got, []string{"message", "state", "threadId"}) {
			t.Errorf("hello takes %v", got)
		}
		if got := props(tools["counter"]); !reflect.DeepEqual(got, []string{"message", "resume", "state", "threadId", "toolResults"}) {
			t.Errorf("counter takes %v", got)
		}
		out, _ := hello.OutputSchema.(map[string]any)
		if out["type"] != "object" || out["properties"].(map[string]any)["status"] == nil {
			t.Errorf("output schema %v", hello.OutputSchema)
		}
	})
}

func TestMCPCallsAStatelessWorkflowAndContinuesItsThread(t *testing.T) {
	e := newMCPEnv(t, nil)
	e.eachProtocol(t, func(t *testing.T, cs *mcp.ClientSession) {
		first := call(t, cs, "hello", map[string]any{"message": "Ada"})
		first.want(t, "finished", "Hello Ada (1 messages)")
		if !reflect.DeepEqual(first.sc["output"], map[string]any{"said": "Ada", "messages": 1.0}) {
			t.Errorf("output %v", first.sc["output"])
		}
		if first.thread() == "" || first.sc["runId"] == "" {
			t.Fatalf("no thread or run: %v", first.sc)
		}
		// The server sends the thread's history with the new message.
		second := call(t, cs, "hello", map[string]any{"message": "Bob", "threadId": first.thread()})
		second.want(t, "finished", "Hello Bob (2 messages)")
		if second.thread() != first.thread() {
			t.Errorf("thread %s, then %s", first.thread(), second.thread())
		}
		// The thread is the AG-UI routes' too.
		resp := e.get("/agui/threads/" + first.thread() + "/runs")
		var runs struct {
			Runs []struct{ RunID, Status string }
		}
		json.NewDecoder(resp.Body).Decode(&runs)
		resp.Body.Close()
		if len(runs.Runs) != 2 || runs.Runs[0].RunID != second.sc["runId"] || runs.Runs[0].Status != "finished" {
			t.Errorf("runs of the thread: %+v", runs.Runs)
		}
	})
}

func TestMCPContinuesAConversation(t *testing.T) {
	e := newMCPEnv(t, nil)
	e.eachProtocol(t, func(t *testing.T, cs *mcp.ClientSession) {
		first := call(t, cs, "counter", map[string]any{"message": "hi", "state": map[string]any{"mode": "plan"}})
		first.want(t, "finished", "Turn 1: hi")
		// Without state, the turn has the state the thread holds.
		second := call(t, cs, "counter", map[string]any{"message": "again", "threadId": first.thread()})
		second.want(t, "finished", "Turn 2: again")
		if !reflect.DeepEqual(second.sc["state"], map[string]any{"mode": "plan", "turns": 2.0}) {
			t.Errorf("state %v", second.sc["state"])
		}
		// A call with nothing new says where the conversation stands.
		call(t, cs, "counter", map[string]any{"threadId": first.thread()}).want(t, "finished", "The workflow finished.")
	})
}

func TestMCPAnswersInterruptsByElicitation(t *testing.T) {
	e := newMCPEnv(t, nil)
	for _, v := range mcpVersions {
		for _, approval := range []string{"accept", "decline"} {
			t.Run(v+"/"+approval, func(t *testing.T) {
				var asked []string
				cs := e.connect(t, mcpClient{version: v, opts: &mcp.ClientOptions{
					ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked = append(asked, req.Params.Message)
						if req.Params.Message == "How much?" {
							return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"amount": 5}}, nil
						}
						return &mcp.ElicitResult{Action: approval}, nil
					},
				}})
				res := call(t, cs, "approve", map[string]any{"message": "A-1"})
				status := map[string]string{"accept": "resolved", "decline": "cancelled"}[approval]
				res.want(t, "finished", "Checking A-1.\n\nApproval "+status+", amount 5.")
				if !reflect.DeepEqual(asked, []string{"Refund A-1?", "How much?"}) {
					t.Errorf("asked %q", asked)
				}
				if !reflect.DeepEqual(res.sc["output"], map[string]any{"ok": status, "form": "resolved"}) {
					t.Errorf("output %v", res.sc["output"])
				}
			})
		}
	}
}

func TestMCPInterruptsWithoutElicitation(t *testing.T) {
	e := newMCPEnv(t, nil)
	e.eachProtocol(t, func(t *testing.T, cs *mcp.ClientSession) {
		first := call(t, cs, "approve", map[string]any{"message": "A-1"})
		ids := first.interruptIDs()
		if len(ids) != 1 {
			t.Fatalf("interrupts %v", first.sc)
		}
		first.want(t, "interrupted", fmt.Sprintf("Checking A-1.\n\nThe workflow waits for an answer to each of its interrupts; call the tool again with threadId %q and resume, one entry per interrupt:\n- %s (approval): Refund A-1?", first.thread(), ids[0]))
		// An answer to an interrupt the thread does not wait for.
		wrong := call(t, cs, "approve", map[string]any{"threadId": first.thread(), "resume": []any{map[string]any{"interruptId": "int-x", "status": "resolved"}}})
		if !wrong.isError || wrong.sc["status"] != "error" || !strings.Contains(wrong.text, "invalid_resume") {
			t.Fatalf("a wrong resume: %+v", wrong)
		}
		second := call(t, cs, "approve", map[string]any{"threadId": first.thread(), "resume": []any{map[string]any{"interruptId": ids[0], "status": "resolved"}}})
		form := second.sc["interrupts"].([]any)[0].(map[string]any)
		if second.sc["status"] != "interrupted" || form["reason"] != "details" || form["responseSchema"] == nil {
			t.Fatalf("second: %v", second.sc)
		}
		third := call(t, cs, "approve", map[string]any{"threadId": first.thread(), "resume": []any{map[string]any{"interruptId": form["id"], "status": "resolved", "payload": map[string]any{"amount": 7}}}})
		third.want(t, "finished", "Approval resolved, amount 7.")
	})
}

func TestMCPInterruptElicitationCannotAsk(t *testing.T) {
	e := newMCPEnv(t, nil)
	for _, v := range mcpVersions {
		t.Run(v, func(t *testing.T) {
			cs := e.connect(t, mcpClient{version: v, opts: &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return nil, errors.New("a nested schema was elicited")
				},
			}})
			res := call(t, cs, "address", nil)
			if res.sc["status"] != "interrupted" || len(res.interruptIDs()) != 1 {
				t.Fatalf("got %v", res.sc)
			}
		})
	}
}

func TestMCPFrontendTool(t *testing.T) {
	e := newMCPEnv(t, nil)
	e.eachProtocol(t, func(t *testing.T, cs *mcp.ClientSession) {
		first := call(t, cs, "refund", nil)
		calls, _ := first.sc["toolCalls"].([]any)
		if first.sc["status"] != "waiting_for_tools" || len(calls) != 1 {
			t.Fatalf("got %v", first.sc)
		}
		tc := calls[0].(map[string]any)
		if tc["name"] != "confirm_refund" || !reflect.DeepEqual(tc["arguments"], map[string]any{"orderId": "A-1"}) {
			t.Fatalf("tool call %v", tc)
		}
		if !strings.Contains(first.text, `confirm_refund({"orderId":"A-1"})`) {
			t.Errorf("text %q", first.text)
		}
		second := call(t, cs, "refund", map[string]any{"threadId": first.thread(), "toolResults": []any{map[string]any{"toolCallId": tc["id"], "content": `{"approved":true}`}}})
		second.want(t, "finished", "Approved: true")
	})
}

func TestMCPRunErrorsAndBadArguments(t *testing.T) {
	e := newMCPEnv(t, nil)
	cs := e.connect(t, mcpClient{})
	broken := call(t, cs, "broken", map[string]any{"message": "A-9"})
	broken.want(t, "error", "The run failed: order A-9 is unknown (fail)")
	if !reflect.DeepEqual(broken.sc["error"], map[string]any{"message": "order A-9 is unknown", "code": "fail"}) {
		t.Errorf("error %v", broken.sc["error"])
	}
	waiting := call(t, cs, "counter", map[string]any{"message": "hi"})
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"hello", map[string]any{"mesage": "hi"}, `unknown argument "mesage": the tool hello takes message, threadId, state`},
		{"hello", map[string]any{"message": 3}, "message must be a string, found a number"},
		{"hello", map[string]any{"threadId": ""}, "threadId is empty"},
		{"hello", map[string]any{"state": []any{1}}, "state must be an object, found a list"},
		{"hello", map[string]any{"resume": []any{}}, `unknown argument "resume": the tool hello takes message, threadId, state`},
		{"hello", map[string]any{"threadId": "nope", "message": "x"}, `workflow "hello" has no thread "nope": leave threadId out to start a new one`},
		{"counter", map[string]any{"threadId": "t", "resume": []any{map[string]any{"interruptId": "i", "status": "ok"}}}, `resume[0].status must be "resolved" or "cancelled", found "ok"`},
		{"counter", map[string]any{"threadId": "t", "resume": []any{map[string]any{"status": "resolved"}}}, "resume[0] has no interruptId"},
		{"counter", map[string]any{"threadId": "t", "toolResults": []any{map[string]any{"toolCallId": "c", "content": "x", "extra": 1}}}, `toolResults[0]: unknown key "extra"; the keys are toolCallId, content`},
		{"counter", map[string]any{"resume": []any{map[string]any{"interruptId": "i", "status": "resolved"}}}, "resume and toolResults answer what a thread waits for: give its threadId too"},
		{"counter", map[string]any{"threadId": waiting.thread(), "resume": []any{map[string]any{"interruptId": "i", "status": "resolved"}}}, fmt.Sprintf("thread %q of workflow \"counter\" waits for the next user message, not for interrupt answers: send it in messages, without resume", waiting.thread())},
	} {
		got := call(t, cs, c.tool, c.args)
		if !got.isError || got.text != c.want || got.sc != nil {
			t.Errorf("%s %v: got %+v, want the error %q", c.tool, c.args, got, c.want)
		}
	}
	// A tool no workflow has is the protocol's error.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope"}); err == nil || !strings.Contains(err.Error(), `unknown tool "nope"`) {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestMCPAuthAndScopes(t *testing.T) {
	tokens, err := server.TokenList("AGUIC_TOKENS", "alice:tok-a,bob:tok-b")
	if err != nil {
		t.Fatal(err)
	}
	e := newMCPEnv(t, func(c *server.Config) { c.Auth = tokens.Auth })
	resp := e.post("/agui/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
		t.Fatalf("without a token: %d %s %s", resp.StatusCode, resp.Header, body)
	}
	for _, v := range mcpVersions {
		t.Run(v, func(t *testing.T) {
			alice := e.connect(t, mcpClient{version: v, token: "tok-a"})
			bob := e.connect(t, mcpClient{version: v, token: "tok-b"})
			first := call(t, alice, "counter", map[string]any{"message": "hi"})
			first.want(t, "finished", "Turn 1: hi")
			stolen := call(t, bob, "counter", map[string]any{"message": "mine", "threadId": first.thread()})
			if !stolen.isError || stolen.text != fmt.Sprintf("workflow \"counter\" has no thread %q: leave threadId out to start a new one", first.thread()) {
				t.Fatalf("bob continued alice's thread: %+v", stolen)
			}
			call(t, alice, "counter", map[string]any{"message": "again", "threadId": first.thread()}).want(t, "finished", "Turn 2: again")
		})
	}
}

// blocking is an HTTP server whose answers wait until their request is
// cancelled: arrived receives each request's path, aborted the path once
// its request ended.
type blocking struct {
	*httptest.Server
	arrived, aborted chan string
}

func newBlocking(t *testing.T) *blocking {
	b := &blocking{arrived: make(chan string, 10), aborted: make(chan string, 10)}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/quick" {
			io.WriteString(w, "quick")
			return
		}
		b.arrived <- r.URL.Path
		<-r.Context().Done()
		b.aborted <- r.URL.Path
	}))
	t.Cleanup(b.Close)
	return b
}

func TestMCPCancellingTheCallCancelsTheRun(t *testing.T) {
	e := newMCPEnv(t, nil)
	b := newBlocking(t)
	e.eachProtocol(t, func(t *testing.T, cs *mcp.ClientSession) {
		v := t.Name() // the run's URL names its test
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errs := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"state": map[string]any{"url": b.URL + "/" + v}}})
			errs <- err
		}()
		if got := <-b.arrived; got != "/"+v {
			t.Fatalf("arrived %s", got)
		}
		cancel()
		if err := <-errs; err == nil {
			t.Fatal("the cancelled call returned a result")
		}
		// The run's HTTP request is given up: the run was cancelled.
		if got := <-b.aborted; got != "/"+v {
			t.Fatalf("aborted %s", got)
		}
	})
}

func TestMCPBusyThreadAndProgress(t *testing.T) {
	e := newMCPEnv(t, nil)
	b := newBlocking(t)
	progress := make(chan string, 100)
	cs := e.connect(t, mcpClient{opts: &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params.Message
		},
	}})
	first := call(t, cs, "slow", map[string]any{"state": map[string]any{"url": b.URL + "/quick"}})
	first.want(t, "finished", "Fetching.\n\nFetched quick.")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"threadId": first.thread(), "state": map[string]any{"url": b.URL + "/hold"}}}
		params.SetProgressToken("p1")
		_, err := cs.CallTool(ctx, params)
		errs <- err
	}()
	<-b.arrived
	// The run reported its text and its nodes while it ran.
	for _, want := range []string{"node 1: say", "Fetching.", "node 2: http GET"} {
		if got := <-progress; !strings.HasPrefix(got, want) {
			t.Errorf("progress %q, want %q", got, want)
		}
	}
	busy := call(t, cs, "slow", map[string]any{"threadId": first.thread(), "state": map[string]any{"url": b.URL + "/quick"}})
	if !busy.isError || busy.text != fmt.Sprintf("a run is in progress on thread %q of workflow \"slow\"; send the next request when it has finished", first.thread()) {
		t.Errorf("a busy thread: %+v", busy)
	}
	cancel()
	<-errs
	<-b.aborted
}

func TestMCPShutdownEndsTheSessions(t *testing.T) {
	e := newMCPEnv(t, nil)
	cs := e.connect(t, mcpClient{version: "2025-11-25"})
	call(t, cs, "hello", map[string]any{"message": "Ada"}).want(t, "finished", "Hello Ada (1 messages)")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// The session is gone, and with it the stream the client held open:
	// the HTTP server closes, which waits for every request to end.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": "Bob"}}); err == nil {
		t.Error("a call on the session of a server that shut down answered")
	}
	e.http.Close()
}
