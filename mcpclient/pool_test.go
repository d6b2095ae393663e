package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aguic/aguic/internal/mcptest"
	"github.com/aguic/aguic/mcpclient"
	"github.com/aguic/aguic/mcplock"
	"github.com/aguic/aguic/vm"
)

// transports declares the reference server over each transport.
func transports(t *testing.T) map[string]*vm.Server {
	h := mcptest.EverythingHTTP(t)
	return map[string]*vm.Server{
		"stdio": everything(t),
		"http":  mcptest.HTTP("everything", h.URL, nil),
	}
}

func TestTools(t *testing.T) {
	for name, s := range transports(t) {
		t.Run(name, func(t *testing.T) {
			p, _ := newPool(t)
			tools, err := p.Tools(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools {
				names = append(names, tool.Name)
			}
			for i := 1; i < len(names); i++ {
				if names[i-1] >= names[i] {
					t.Errorf("tools not sorted by name: %v", names)
				}
			}
			sum := (&mcplock.Server{Tools: tools}).Tool("get-sum")
			if sum == nil {
				t.Fatalf("no get-sum among %v", names)
			}
			if sum.Description != "Returns the sum of two numbers" || sum.Title != "Get Sum Tool" {
				t.Errorf("get-sum: title %q, description %q", sum.Title, sum.Description)
			}
			schema, _ := json.Marshal(sum.InputSchema)
			for _, want := range []string{`"required":["a","b"]`, `"a":{"type":"number"}`} {
				if !strings.Contains(string(schema), want) {
					t.Errorf("get-sum's input schema %s lacks %s", schema, want)
				}
			}
		})
	}
}

func TestLock(t *testing.T) {
	for name, s := range transports(t) {
		t.Run(name, func(t *testing.T) {
			p, _ := newPool(t)
			l, err := p.Lock(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if l.Info.Name != "mcp-servers/everything" || l.Info.Version == "" || l.Protocol == "" {
				t.Errorf("server info %+v, protocol %q", l.Info, l.Protocol)
			}
			if want := s.Origin(); l.From != want || (want.Command == "" && want.URL == "") {
				t.Errorf("from %+v, want %+v", l.From, want)
			}
			if l.Tool("echo") == nil || l.Tool("trigger-long-running-operation") == nil {
				t.Errorf("tools %v lack echo or trigger-long-running-operation", l.ToolNames())
			}
			// What Lock reports is what a lock file keeps: written and
			// read back, it compares equal to the server.
			data, err := (&mcplock.File{Servers: map[string]*mcplock.Server{"everything": l}}).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			f, err := mcplock.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if d := mcplock.Diff(f.Servers["everything"], l); d != nil {
				t.Errorf("a lock read back differs from the server: %v", d)
			}
		})
	}
}

func TestCall(t *testing.T) {
	for name, s := range transports(t) {
		t.Run(name, func(t *testing.T) {
			p, _ := newPool(t)
			ctx := context.Background()
			tests := []struct {
				tool       string
				args       map[string]any
				text       string // the whole text, or with a trailing … its start
				value      any
				structured bool
				isError    bool
			}{
				{tool: "echo", args: map[string]any{"message": "hi"}, text: "Echo: hi"},
				{tool: "get-sum", args: map[string]any{"a": 2, "b": 40}, text: "The sum of 2 and 40 is 42."},
				{tool: "get-structured-content", args: map[string]any{"location": "Chicago"},
					text:       `{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}`,
					value:      map[string]any{"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82},
					structured: true},
				{tool: "get-sum", args: map[string]any{"a": "two"}, text: "MCP error -32602: Input validation error…", isError: true},
				{tool: "no-such-tool", text: "MCP error -32602: Tool no-such-tool not found", isError: true},
			}
			for _, tt := range tests {
				r, err := p.Call(ctx, s, tt.tool, tt.args)
				if err != nil {
					t.Errorf("%s: %v", tt.tool, err)
					continue
				}
				text := r.Text()
				if prefix, ok := strings.CutSuffix(tt.text, "…"); ok {
					if !strings.HasPrefix(text, prefix) {
						t.Errorf("%s: text %q, want it to start with %q", tt.tool, text, prefix)
					}
				} else if text != tt.text {
					t.Errorf("%s: text %q, want %q", tt.tool, text, tt.text)
				}
				if r.IsError != tt.isError {
					t.Errorf("%s: isError %v, want %v", tt.tool, r.IsError, tt.isError)
				}
				if got := r.Value(); !vm.Same(got, tt.value) {
					t.Errorf("%s: value %#v, want %#v", tt.tool, got, tt.value)
				}
				if (r.Structured != nil) != tt.structured {
					t.Errorf("%s: structured content %#v", tt.tool, r.Structured)
				}
				if len(r.Content) == 0 || r.Content[0]["type"] != "text" {
					t.Errorf("%s: content %#v", tt.tool, r.Content)
				}
			}
		})
	}
}

func TestCallNotAllowed(t *testing.T) {
	p, _ := newPool(t)
	s := mcptest.Stdio("everything", "aguic-never-started")
	s.Tools = []string{"echo", "get-sum"}
	_, err := p.Call(context.Background(), s, "get-env", nil)
	want := `mcp server everything: tool "get-env" is not among its tools "echo" or "get-sum"`
	if err == nil || err.Error() != want {
		t.Errorf("err %v, want %s", err, want)
	}
}

func TestTimeout(t *testing.T) {
	p, _ := newPool(t)
	s := everything(t)
	s.Timeout = 300 * time.Millisecond // far shorter than the operation
	_, err := p.Call(context.Background(), s, "trigger-long-running-operation", map[string]any{"duration": 30, "steps": 1})
	want := `mcp server everything: tool "trigger-long-running-operation": no answer within 300ms`
	if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want %s, a context.DeadlineExceeded", err, want)
	}
	// The session outlives the call it gave up on. (A copy of s with
	// another timeout shares its connection.)
	quick := *s
	quick.Timeout = 0
	if got := sum(t, p, &quick, 1, 2); got != "The sum of 1 and 2 is 3." {
		t.Errorf("after the timeout: %q", got)
	}
}

func TestCancel(t *testing.T) {
	p, _ := newPool(t)
	s := everything(t)
	ctx, cancel := context.WithCancel(context.Background())
	p.OnCall(func(_, tool string) {
		if tool == "trigger-long-running-operation" {
			cancel()
		}
	})
	_, err := p.Call(ctx, s, "trigger-long-running-operation", map[string]any{"duration": 30, "steps": 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if want := `mcp server everything: tool "trigger-long-running-operation": context canceled`; err.Error() != want {
		t.Errorf("err %q, want %q", err, want)
	}
	if got := sum(t, p, s, 3, 4); got != "The sum of 3 and 4 is 7." {
		t.Errorf("after the cancellation: %q", got)
	}
}

// killOnCall makes p kill the server (the last pid of pidfile) when it
// sends a call of tool, the first n times.
func killOnCall(t *testing.T, p *mcpclient.Pool, pidfile, tool string, n int) {
	var mu sync.Mutex
	p.OnCall(func(_, name string) {
		mu.Lock()
		defer mu.Unlock()
		if name != tool || n == 0 {
			return
		}
		n--
		ps := pids(t, pidfile)
		if err := syscall.Kill(ps[len(ps)-1], syscall.SIGKILL); err != nil {
			t.Errorf("kill: %v", err)
		}
	})
}

func TestServerKilledDuringCall(t *testing.T) {
	p, _ := newPool(t)
	s, pidfile := wrapped(t, "")
	if got := sum(t, p, s, 1, 1); got != "The sum of 1 and 1 is 2." {
		t.Fatalf("first call: %q", got)
	}
	killOnCall(t, p, pidfile, "trigger-long-running-operation", 1)
	_, err := p.Call(context.Background(), s, "trigger-long-running-operation", map[string]any{"duration": 600, "steps": 1})
	if want := "mcp server everything exited: signal: killed"; err == nil || err.Error() != want {
		t.Fatalf("err %v, want %s", err, want)
	}
	// The next call starts the server again.
	if got := sum(t, p, s, 2, 2); got != "The sum of 2 and 2 is 4." {
		t.Errorf("after the restart: %q", got)
	}
	if ps := pids(t, pidfile); len(ps) != 2 {
		t.Errorf("the server was started %d times, want 2", len(ps))
	}
}

func TestRetryAfterKill(t *testing.T) {
	p, l := newPool(t)
	s, pidfile := wrapped(t, "")
	s.Retry, s.Backoff = 1, "10ms..10ms"
	killOnCall(t, p, pidfile, "echo", 1)
	r, err := p.Call(context.Background(), s, "echo", map[string]any{"message": "again"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Text() != "Echo: again" {
		t.Errorf("text %q", r.Text())
	}
	if ps := pids(t, pidfile); len(ps) != 2 {
		t.Errorf("the server was started %d times, want 2", len(ps))
	}
	warns := l.find("mcp server unreachable; trying again")
	if len(warns) != 1 || warns[0].Attrs["err"] != "mcp server everything exited: signal: killed" || warns[0].Attrs["mcp_server"] != "everything" {
		t.Errorf("retry logs %+v", warns)
	}
}

func TestRetryExhausted(t *testing.T) {
	p, _ := newPool(t)
	s := mcptest.Stdio("broken", "sh", "-c", "echo 'broken: no config' >&2; exit 3")
	s.Retry, s.Backoff = 2, "1ms..2ms"
	_, err := p.Call(context.Background(), s, "echo", nil)
	if want := "mcp server broken exited: exit status 3 (tried 3 times)"; err == nil || err.Error() != want {
		t.Errorf("err %v, want %s", err, want)
	}
}

func TestIsErrorNotRetried(t *testing.T) {
	p, _ := newPool(t)
	s, pidfile := wrapped(t, "")
	s.Retry, s.Backoff = 3, "1ms..1ms"
	calls := 0
	p.OnCall(func(string, string) { calls++ })
	r, err := p.Call(context.Background(), s, "get-sum", map[string]any{"a": 1})
	if err != nil || !r.IsError {
		t.Fatalf("result %+v, err %v; want isError", r, err)
	}
	if calls != 1 || len(pids(t, pidfile)) != 1 {
		t.Errorf("%d calls, %d starts; want one of each", calls, len(pids(t, pidfile)))
	}
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		name string
		s    *vm.Server
		want string
	}{
		{"missing", mcptest.Stdio("missing", "aguic-no-such-command", "stdio"),
			`mcp server missing: start aguic-no-such-command: exec: "aguic-no-such-command": executable file not found in $PATH`},
		{"exits", mcptest.Stdio("exits", "sh", "-c", "exit 7"),
			"mcp server exits exited: exit status 7"},
		{"not mcp", mcptest.Stdio("chatty", "sh", "-c", "echo hello; cat >/dev/null"),
			"mcp server chatty: initialize: …"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newPool(t)
			_, err := p.Call(context.Background(), tt.s, "echo", nil)
			if err == nil {
				t.Fatal("no error")
			}
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("err %q, want it to start with %q", err, prefix)
				}
			} else if err.Error() != tt.want {
				t.Errorf("err %q\nwant %q", err, tt.want)
			}
		})
	}
}

func TestStderrLogged(t *testing.T) {
	p, l := newPool(t)
	s := everything(t)
	sum(t, p, s, 1, 2)
	for _, r := range l.find("mcp server stderr") {
		if r.Attrs["mcp_server"] == "everything" && r.Attrs["line"] == "Starting default (STDIO) server..." {
			return
		}
	}
	t.Errorf("the server's stderr line is not in the log: %+v", l.find("mcp server stderr"))
}

func TestHTTPDown(t *testing.T) {
	p, l := newPool(t)
	h := mcptest.EverythingHTTP(t)
	s := mcptest.HTTP("remote", h.URL, nil)
	sum(t, p, s, 1, 2)

	h.Stop()
	_, err := p.Call(context.Background(), s, "get-sum", map[string]any{"a": 1, "b": 2})
	if err == nil {
		t.Fatal("a call to a stopped server succeeded")
	}
	if prefix := "mcp server remote: " + h.URL + ": "; !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err %q, want it to start with %q and say the connection was refused", err, prefix)
	}

	// A call with a retry succeeds when the server is back before it
	// tries again: the server starts when the pool says it will retry.
	h2 := mcptest.HTTP("remote", h.URL, nil)
	h2.Retry, h2.Backoff = 2, "1ms..1ms"
	l.setOn(func(r record) {
		if r.Msg == "mcp server unreachable; trying again" {
			h.Start()
		}
	})
	if got := sum(t, p, h2, 5, 6); got != "The sum of 5 and 6 is 11." {
		t.Errorf("after the restart: %q", got)
	}
	if n := len(l.find("mcp server unreachable; trying again")); n != 1 {
		t.Errorf("%d retries, want 1", n)
	}
}

func TestConcurrentCalls(t *testing.T) {
	p, _ := newPool(t)
	s, pidfile := wrapped(t, "")
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			r, err := p.Call(context.Background(), s, "get-sum", map[string]any{"a": i, "b": 1000})
			switch {
			case err != nil:
				errs <- err
			case r.Text() != fmt.Sprintf("The sum of %d and 1000 is %d.", i, i+1000):
				errs <- fmt.Errorf("call %d: %q", i, r.Text())
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ps := pids(t, pidfile); len(ps) != 1 {
		t.Errorf("the server was started %d times, want once for all the calls", len(ps))
	}
}

func TestCloseStopsEveryProcess(t *testing.T) {
	// The server starts a child that ignores SIGTERM and would outlive
	// it: closing the pool leaves neither.
	s, pidfile := wrapped(t, "(trap '' TERM; exec sleep 1000) &")
	l := &logs{}
	p := mcpclient.NewPool(mcpclient.Options{Logger: slog.New(l)})
	sum(t, p, s, 1, 2)
	pgid := pids(t, pidfile)[0]
	if members := groupMembers(t, pgid); len(members) != 2 {
		t.Fatalf("process group %d has %v, want the server and sleep", pgid, members)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// Close has killed the group; the kernel ends its processes at once
	// but not synchronously, so this waits for it (10s at most).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		members := groupMembers(t, pgid)
		if len(members) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Close, process group %d still has %v", pgid, members)
		}
	}
	if _, err := p.Call(context.Background(), s, "echo", nil); !errors.Is(err, mcpclient.ErrClosed) {
		t.Errorf("a call after Close: %v", err)
	}
}

func TestLockChangesLogged(t *testing.T) {
	p, l := newPool(t)
	s := everything(t)
	other, _ := newPool(t)
	live, err := other.Lock(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	// The lock knows a tool the server lacks, not get-env, and an older
	// description of echo.
	locked := *live
	locked.Tools = nil
	for _, tool := range live.Tools {
		switch tool.Name {
		case "get-env":
			continue
		case "echo":
			tool.Description = "Echoes"
		}
		locked.Tools = append(locked.Tools, tool)
	}
	locked.Tools = append(locked.Tools, mcplock.Tool{Name: "zap"})
	s.Locked = &locked
	sum(t, p, s, 1, 2)
	var got []string
	for _, r := range l.find("mcp server's tools differ from mcp.lock.json; run `aguic mcp lock`") {
		if r.Level != slog.LevelWarn || r.Attrs["mcp_server"] != "everything" {
			t.Errorf("record %+v", r)
		}
		got = append(got, r.Attrs["change"])
	}
	want := []string{`tool "echo": description changed`, `tool "get-env": added`, `tool "zap": removed`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// goServer serves an MCP server of the Go SDK over streamable HTTP, and
// records the Authorization header of every request it receives.
func goServer(t *testing.T) (*mcp.Server, string, func() []string) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "go-server", Version: "1.0.0"}, nil)
	addTool(srv, "first")
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	var auth []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return srv, hs.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(auth)
	}
}

// addTool adds a tool that answers its own name.
func addTool(srv *mcp.Server, name string) {
	mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "Says " + name},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
		})
}

func TestToolsListChanged(t *testing.T) {
	srv, url, _ := goServer(t)
	p, l := newPool(t)
	changed := make(chan struct{}, 1)
	l.setOn(func(r record) {
		if r.Msg == "mcp server's tools changed" {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	s := mcptest.HTTP("go", url, nil)
	names := func() string {
		tools, err := p.Tools(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join((&mcplock.Server{Tools: tools}).ToolNames(), " ")
	}
	if got := names(); got != "first" {
		t.Fatalf("tools %q, want first", got)
	}
	addTool(srv, "second")
	<-changed
	if got := names(); got != "first second" {
		t.Errorf("after the server said its tools changed: %q, want first second", got)
	}
}

func TestHTTPHeaders(t *testing.T) {
	_, url, auth := goServer(t)
	p, _ := newPool(t)
	s := mcptest.HTTP("go", url, map[string]string{"Authorization": "Bearer sesame"})
	r, err := p.Call(context.Background(), s, "first", nil)
	if err != nil || r.Text() != "first" {
		t.Fatalf("result %+v, err %v", r, err)
	}
	got := auth()
	if len(got) < 2 {
		t.Fatalf("%d requests, want the initialization and the call", len(got))
	}
	for i, a := range got {
		if a != "Bearer sesame" {
			t.Errorf("request %d: Authorization %q", i, a)
		}
	}
}
