package server_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/internal/otlptest"
	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/telemetry"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store/badger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tracedEnv serves testdata/traced/traced.wf with tracing exported to a
// real OTLP/HTTP receiver on loopback; its HTTP calls go to a service that
// records the traceparent of each request.
type tracedEnv struct {
	*env
	tracing *telemetry.Tracing
	recv    *otlptest.Receiver
	cfg     server.Config

	mu      sync.Mutex
	parents map[string][]string // the traceparent headers of the requests for each path the service served
}

func newTracedEnv(t *testing.T, vars map[string]string) *tracedEnv {
	t.Helper()
	te := &tracedEnv{recv: otlptest.New(t), parents: map[string][]string{}}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", telemetry.CaptureContentVar} {
		t.Setenv(v, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", te.recv.URL)
	for k, v := range vars {
		t.Setenv(k, v)
	}
	tr, err := telemetry.Setup(context.Background(), telemetry.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	te.tracing = tr

	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		te.mu.Lock()
		te.parents[r.URL.Path] = append(te.parents[r.URL.Path], r.Header.Get("traceparent"))
		te.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path": %q, "ok": true}`, r.URL.Path)
	}))
	t.Cleanup(service.Close)

	path := filepath.Join("testdata", "traced", "traced.wf")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	scripted, err := llm.LoadScript(filepath.Join("testdata", "traced", "traced.script"))
	if err != nil {
		t.Fatal(err)
	}
	opts := stdlib.Options{
		Getenv: func(name string) string { return map[string]string{"SERVICE_URL": service.URL}[name] },
		Models: llm.Resolver(map[string]llm.Provider{"script": scripted}),
	}
	tr.Instrument(&opts)
	reg := vm.NewRegistry()
	stdlib.RegisterWith(reg, opts)
	srcs := []compiler.Source{{Name: path, Text: lang.Clean(text)}}
	prog, diags := compiler.Compile(reg, srcs...)
	if diags.HasErrors() {
		t.Fatalf("compile: %v", diags.Err())
	}
	bundle, _ := compiler.Bundle(srcs)
	st, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	te.cfg = server.Config{
		Machine: &vm.Machine{Program: prog, Registry: reg},
		Bundle:  bundle,
		Store:   st,
		Logger:  discardLogger(),
		Tracing: tr,
	}
	te.env = &env{t: t, store: st, served: make(chan string, 100)}
	te.restart()
	return te
}

// restart stops the server, if one runs, and serves the same store with
// a new one, which knows nothing of the threads but what the store keeps.
func (te *tracedEnv) restart() {
	te.t.Helper()
	if te.srv != nil {
		te.http.Close()
		if err := te.srv.Shutdown(context.Background()); err != nil {
			te.t.Fatal(err)
		}
	}
	srv, err := server.New(te.cfg)
	if err != nil {
		te.t.Fatal(err)
	}
	te.t.Cleanup(func() { srv.Shutdown(context.Background()) })
	te.srv = srv
	te.http = httptest.NewServer(srv.Handler())
	te.t.Cleanup(te.http.Close)
}

// turn posts one user message to the conversation, with the headers
// given, and reads the whole stream.
func (te *tracedEnv) turn(runID, text string, header map[string]string) []event {
	te.t.Helper()
	body := fmt.Sprintf(`{"threadId": "c1", "runId": %q, "messages": [{"id": %q, "role": "user", "content": %q}]}`, runID, "m-"+runID, text)
	req, err := http.NewRequest(http.MethodPost, te.http.URL+"/agui/workflows/traced", strings.NewReader(body))
	if err != nil {
		te.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := te.http.Client().Do(req)
	if err != nil {
		te.t.Fatal(err)
	}
	evs := te.stream(resp)
	if last := evs[len(evs)-1]; last.typ() != "RUN_FINISHED" {
		te.t.Fatalf("run %s ended with %v", runID, last.data)
	}
	return evs
}

// spans flushes the exporter and returns what the receiver got.
func (te *tracedEnv) spans() spanSet {
	te.t.Helper()
	if err := te.tracing.Flush(context.Background()); err != nil {
		te.t.Fatal(err)
	}
	return spanSet{t: te.t, all: te.recv.Spans()}
}

// spanSet is the spans a test received.
type spanSet struct {
	t   *testing.T
	all []otlptest.Span
}

// one returns the only span named name under parent (any parent when
// parent is nil).
func (s spanSet) one(name string, parent *otlptest.Span) otlptest.Span {
	s.t.Helper()
	got := s.named(name, parent)
	if len(got) != 1 {
		s.t.Fatalf("%d spans %q under %v, want 1; all: %s", len(got), name, parent, s)
	}
	return got[0]
}

// named returns the spans named name under parent, in the order they
// started.
func (s spanSet) named(name string, parent *otlptest.Span) []otlptest.Span {
	var got []otlptest.Span
	for _, sp := range s.all {
		if sp.Name == name && (parent == nil || sp.Parent() == parent.ID() && sp.Trace() == parent.Trace()) {
			got = append(got, sp)
		}
	}
	slices.SortFunc(got, func(a, b otlptest.Span) int { return int(a.StartTimeUnixNano - b.StartTimeUnixNano) })
	return got
}

// children returns the names of parent's children, in the order they
// started.
func (s spanSet) children(parent otlptest.Span) []string {
	var kids []otlptest.Span
	for _, sp := range s.all {
		if sp.Parent() == parent.ID() {
			kids = append(kids, sp)
		}
	}
	slices.SortFunc(kids, func(a, b otlptest.Span) int { return int(a.StartTimeUnixNano - b.StartTimeUnixNano) })
	names := make([]string, len(kids))
	for i, k := range kids {
		names[i] = k.Name
	}
	return names
}

func (s spanSet) String() string {
	var b strings.Builder
	for _, sp := range s.all {
		fmt.Fprintf(&b, "\n  %s %s parent %s %v", sp.ID(), sp.Name, sp.Parent(), sp.Attrs)
	}
	return b.String()
}

// checkSpan checks that sp has the attributes want.
func checkSpan(t *testing.T, sp otlptest.Span, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if got := fmt.Sprintf("%T %v", sp.Attrs[k], sp.Attrs[k]); got != fmt.Sprintf("%T %v", v, v) {
			t.Errorf("span %q: %s = %s, want %T %v", sp.Name, k, got, v, v)
		}
	}
}

// TestTraceServedRun follows two turns of a conversation into the spans
// a real OTLP receiver got: the first continues the caller's trace, and
// its model calls a backend tool that makes an HTTP request; the second,
// served by a server started anew, links to the first, across the suspend
// between them.
func TestTraceServedRun(t *testing.T) {
	te := newTracedEnv(t, map[string]string{"OTEL_SERVICE_NAME": "aguic-test"})
	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	te.turn("r1", "Where is my order A-1? SECRET-PROMPT", map[string]string{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"})
	te.restart() // the link to the first run is kept in the store
	te.turn("r2", "hello again", nil)
	spans := te.spans()

	runs := spans.named("invoke_agent traced", nil)
	if len(runs) != 2 {
		t.Fatalf("%d run spans, want 2:%s", len(runs), spans)
	}
	run1, run2 := runs[0], runs[1]
	if run1.Trace() != callerTrace || run1.Parent() != callerSpan {
		t.Errorf("the first run is in trace %s under %s, want the caller's %s under %s", run1.Trace(), run1.Parent(), callerTrace, callerSpan)
	}
	checkSpan(t, run1, map[string]any{
		"gen_ai.operation.name":  "invoke_agent",
		"gen_ai.agent.name":      "traced",
		"gen_ai.conversation.id": "c1",
		"aguic.run.id":           "r1",
		"aguic.run.trigger":      "request",
		"aguic.run.outcome":      "suspended",
		"aguic.run.wait":         "user",
	})
	if run1.Resource["service.name"] != "aguic-test" {
		t.Errorf("service.name %v, want aguic-test", run1.Resource["service.name"])
	}

	// The nodes of the main flow, in the order they ran, with where they
	// are written (a labelled node's place is its label's).
	if got, want := spans.children(run1), []string{"http top", "model ask", "say 3", "suspend wait"}; !slices.Equal(got, want) {
		t.Errorf("the first run's children %q, want %q", got, want)
	}
	file := filepath.Join("testdata", "traced", "traced.wf")
	for _, n := range []struct {
		name, kind   string
		line, column int64
	}{
		{"http top", "http", 16, 5},
		{"model ask", "model", 17, 5},
		{"suspend wait", "suspend", 23, 5},
	} {
		sp := spans.one(n.name, &run1)
		checkSpan(t, sp, map[string]any{"aguic.node.kind": n.kind, "code.file.path": file, "code.line.number": n.line, "code.column.number": n.column})
	}
	if sp := spans.one("suspend wait", &run1); sp.Attrs["aguic.node.suspended"] != true {
		t.Errorf("the suspend node's span does not say the run suspended there: %v", sp.Attrs)
	}

	// The http node's request, with its trace context sent along.
	top := spans.one("http top", &run1)
	get := spans.one("GET", &top)
	checkSpan(t, get, map[string]any{"http.request.method": "GET", "http.response.status_code": int64(200)})
	if !strings.HasSuffix(fmt.Sprint(get.Attrs["url.full"]), "/status") {
		t.Errorf("url.full = %v", get.Attrs["url.full"])
	}
	te.mu.Lock()
	if got, want := te.parents["/status"][0], "00-"+callerTrace+"-"+get.ID()+"-01"; got != want {
		t.Errorf("the service got traceparent %q, want %q", got, want)
	}
	te.mu.Unlock()

	// The model node: two model calls around a backend tool call, whose
	// HTTP request is under it.
	ask := spans.one("model ask", &run1)
	if got, want := spans.children(ask), []string{"chat small", "execute_tool lookup", "chat small"}; !slices.Equal(got, want) {
		t.Errorf("the model node's children %q, want %q", got, want)
	}
	chats := spans.named("chat small", &ask)
	checkSpan(t, chats[0], map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "script", "gen_ai.request.model": "small", "gen_ai.response.model": "small",
		"gen_ai.usage.input_tokens": int64(12), "gen_ai.usage.output_tokens": int64(3), "gen_ai.response.finish_reasons": []any{"tool_calls"},
	})
	checkSpan(t, chats[1], map[string]any{
		"gen_ai.usage.input_tokens": int64(30), "gen_ai.usage.output_tokens": int64(6), "gen_ai.response.finish_reasons": []any{"stop"},
	})
	for _, c := range chats {
		if c.Kind.String() != "SPAN_KIND_CLIENT" {
			t.Errorf("a model call's span is of kind %s, want client", c.Kind)
		}
	}
	tool := spans.one("execute_tool lookup", &ask)
	checkSpan(t, tool, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "call_1", "gen_ai.tool.type": "function"})
	toolGet := spans.one("GET", &tool)
	if !strings.HasSuffix(fmt.Sprint(toolGet.Attrs["url.full"]), "/orders/A-1") {
		t.Errorf("the tool's url.full = %v", toolGet.Attrs["url.full"])
	}

	// The next turn: a new trace, linked to the run that suspended. The
	// suspend node it goes on from starts again.
	if run2.Trace() == callerTrace || run2.Parent() != "" {
		t.Errorf("the second run is in trace %s under %q, want a trace of its own", run2.Trace(), run2.Parent())
	}
	checkSpan(t, run2, map[string]any{"aguic.run.id": "r2", "aguic.run.outcome": "suspended"})
	if len(run2.Links) != 1 || hex.EncodeToString(run2.Links[0].TraceId) != run1.Trace() || hex.EncodeToString(run2.Links[0].SpanId) != run1.ID() {
		t.Errorf("the second run's links %v, want one to the first run %s/%s", run2.Links, run1.Trace(), run1.ID())
	}
	if got, want := spans.children(run2), []string{"suspend wait", "http top", "model ask", "say 3", "suspend wait"}; !slices.Equal(got, want) {
		t.Errorf("the second run's children %q, want %q", got, want)
	}

	// Nothing of the conversation is on a span unless asked.
	for _, sp := range spans.all {
		for k, v := range sp.Attrs {
			if strings.Contains(fmt.Sprint(v), "SECRET") {
				t.Errorf("span %q: attribute %s holds the conversation", sp.Name, k)
			}
		}
	}
}

// TestTraceSampledOut: runs the sampler leaves out make their model,
// tool and HTTP calls as any other, with no span and no trace context
// kept in the thread; the caller's sampled-out traceparent still reaches
// the services.
func TestTraceSampledOut(t *testing.T) {
	te := newTracedEnv(t, map[string]string{"OTEL_TRACES_SAMPLER": "always_off"})
	te.turn("r1", "Where is my order A-1?", nil)
	te.turn("r2", "hello again", map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"})
	if spans := te.spans(); len(spans.all) != 0 {
		t.Errorf("%d spans of runs the sampler left out:%s", len(spans.all), spans)
	}
	te.mu.Lock()
	defer te.mu.Unlock()
	if got := len(te.parents["/orders/A-1"]); got != 1 {
		t.Errorf("the tool's request was made %d times, want 1", got)
	}
	if got := te.parents["/status"]; len(got) != 2 || !strings.HasSuffix(got[1], "-00") {
		t.Errorf("the status requests carried %q, want two, the second in the caller's unsampled trace", got)
	}
}

// withHeader adds a header to every request.
type withHeader struct {
	name, value string
	next        http.RoundTripper
}

func (h withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.next.RoundTrip(r)
}

// TestTraceMCPCall: a workflow called as an MCP tool with a traceparent
// header is traced as a run under the caller's span, in the caller's
// trace, as over AG-UI.
func TestTraceMCPCall(t *testing.T) {
	te := newTracedEnv(t, nil)
	te.cfg.MCP = true
	te.restart()
	const callerTrace, callerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	hc := &http.Client{Transport: withHeader{name: "traceparent", value: "00-" + callerTrace + "-" + callerSpan + "-01", next: te.http.Client().Transport}}
	client := mcp.NewClient(&mcp.Implementation{Name: "aguic-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: te.http.URL + "/agui/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "traced", Arguments: map[string]any{"message": "Where is my order A-1?"}})
	if err != nil || res.IsError {
		t.Fatalf("the call: %v %+v", err, res)
	}
	spans := te.spans()
	runs := spans.named("invoke_agent traced", nil)
	if len(runs) != 1 {
		t.Fatalf("%d run spans, want 1:%s", len(runs), spans)
	}
	if run := runs[0]; run.Trace() != callerTrace || run.Parent() != callerSpan {
		t.Errorf("the run is in trace %s under %s, want the caller's %s under %s", run.Trace(), run.Parent(), callerTrace, callerSpan)
	}
}
