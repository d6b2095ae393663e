package telemetry_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/aguic/aguic/internal/otlptest"
	"github.com/aguic/aguic/internal/syncbuf"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/telemetry"
	"github.com/aguic/aguic/vm"
)

// traced sets tracing up to export to a new receiver, as the environment
// says, with the variables in vars set besides the endpoint.
func traced(t *testing.T, vars map[string]string) (*telemetry.Tracing, *otlptest.Receiver) {
	t.Helper()
	recv := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	for k, v := range vars {
		t.Setenv(k, v)
	}
	tr, err := telemetry.Setup(context.Background(), telemetry.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.On() {
		t.Fatal("an OTLP endpoint is set, and tracing is off")
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr, recv
}

// flush exports what ended and returns every span received.
func flush(t *testing.T, tr *telemetry.Tracing, recv *otlptest.Receiver) []otlptest.Span {
	t.Helper()
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return recv.Spans()
}

// clearOTEL unsets the variables that would turn tracing on.
func clearOTEL(t testing.TB) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER",
		"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", telemetry.CaptureContentVar} {
		t.Setenv(v, "")
	}
}

func TestSetup(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		on   bool
		err  string
	}{
		{name: "nothing set"},
		{name: "endpoint", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		{name: "traces endpoint", vars: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true},
		{name: "http/protobuf", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, on: true},
		{name: "sdk disabled", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}},
		{name: "exporter none", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{name: "grpc", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			err: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: aguic exports traces over http/protobuf only"},
		{name: "traces protocol first", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, on: true},
		{name: "zipkin", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "zipkin"},
			err: "OTEL_TRACES_EXPORTER=zipkin: aguic exports traces over OTLP only (otlp, or none)"},
		{name: "console without an endpoint", vars: map[string]string{"OTEL_TRACES_EXPORTER": "console"},
			err: "OTEL_TRACES_EXPORTER=console: aguic exports traces over OTLP only (otlp, or none)"},
		{name: "endpoint without a scheme", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"},
			err: "OTEL_EXPORTER_OTLP_ENDPOINT=127.0.0.1:4318: want the URL of an OTLP/HTTP receiver, such as http://localhost:4318"},
		{name: "traces endpoint first", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "nonsense", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true},
		{name: "ratio sampler", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}, on: true},
		{name: "unknown sampler", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "bogus"},
			err: "OTEL_TRACES_SAMPLER=bogus: not a sampler; want one of always_off, always_on, parentbased_always_off, parentbased_always_on, parentbased_traceidratio, traceidratio"},
		{name: "ratio not a number", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "abc"},
			err: "OTEL_TRACES_SAMPLER_ARG=abc: the ratio of traceidratio is a number from 0 to 1, such as 0.1"},
		{name: "ratio above one", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "5"},
			err: "OTEL_TRACES_SAMPLER_ARG=5: the ratio of parentbased_traceidratio is a number from 0 to 1, such as 0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTEL(t)
			for k, v := range tc.vars {
				t.Setenv(k, v)
			}
			tr, err := telemetry.Setup(context.Background(), telemetry.Options{})
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Shutdown(context.Background())
			if tr.On() != tc.on {
				t.Fatalf("On() = %v, want %v", tr.On(), tc.on)
			}
		})
	}
}

// TestOff checks that without tracing nothing is wrapped, nothing is sent
// and the run's hooks allocate nothing.
func TestOff(t *testing.T) {
	clearOTEL(t)
	tr, err := telemetry.Setup(context.Background(), telemetry.Options{})
	if err != nil || tr != nil {
		t.Fatalf("Setup = %v, %v; want nil, nil", tr, err)
	}
	scripted, err := llm.ParseScript([]byte("reply repeat\ntext: hi\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := tr.Models(llm.Resolver(map[string]llm.Provider{"script": scripted}))("script/small")
	if err != nil || p != llm.Provider(scripted) {
		t.Errorf("Models wrapped the provider without tracing: %T, %v", p, err)
	}
	base := &http.Transport{}
	if got := tr.Transport(base); got != http.RoundTripper(base) {
		t.Errorf("Transport wrapped the transport without tracing: %T", got)
	}
	mux := http.NewServeMux()
	if got := tr.Handler(mux); got != http.Handler(mux) {
		t.Errorf("Handler wrapped the handler without tracing: %T", got)
	}
	ctx := context.Background()
	n := &vm.Node{ID: "a", Kind: "say"}
	allocs := testing.AllocsPerRun(100, func() {
		r := tr.StartRun(ctx, telemetry.RunInfo{Workflow: "w", Thread: "t", RunID: "r"})
		rctx := r.Context(ctx)
		if nodes := r.Nodes(nil); nodes != nil {
			nodes.NodeStarted(n)
		}
		r.Chain(nil)
		_, end := tr.Tool(rctx, "lookup", "call_1")
		end(nil)
		r.End(vm.Outcome{Status: vm.Finished}, nil)
	})
	if allocs != 0 {
		t.Errorf("a run without tracing allocates %v times, want 0", allocs)
	}
}

// TestExporter: a program that embeds aguic gives its own exporter, and
// tracing is on without an OTLP endpoint, unless the environment turns the
// SDK off.
func TestExporter(t *testing.T) {
	clearOTEL(t)
	exp := tracetest.NewInMemoryExporter()
	tr, err := telemetry.Setup(context.Background(), telemetry.Options{Exporter: exp})
	if err != nil || !tr.On() {
		t.Fatalf("Setup with an exporter = %v, %v; want tracing on", tr, err)
	}
	r := tr.StartRun(context.Background(), telemetry.RunInfo{Workflow: "w", Thread: "t", RunID: "r"})
	r.End(vm.Outcome{Status: vm.Finished}, nil)
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if spans := exp.GetSpans(); len(spans) != 1 || spans[0].Name != "invoke_agent w" {
		t.Errorf("the exporter got %v, want the run's span", spans)
	}
	tr.Shutdown(context.Background())

	t.Setenv("OTEL_SDK_DISABLED", "true")
	if tr, err := telemetry.Setup(context.Background(), telemetry.Options{Exporter: exp}); tr != nil || err != nil {
		t.Errorf("Setup with an exporter and OTEL_SDK_DISABLED=true = %v, %v; want nil, nil", tr, err)
	}
}

// TestLog: what the SDK reports of itself, a failed export, goes to the
// logger given, and Describe says where the spans go.
func TestLog(t *testing.T) {
	clearOTEL(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", dead.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
	t.Setenv("OTEL_TRACES_SAMPLER_ARG", "1")
	var buf syncbuf.Buffer
	tr, err := telemetry.Setup(context.Background(), telemetry.Options{Log: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	if got, want := fmt.Sprint(tr.Describe()), "[traces "+dead.URL+"/v1/traces sampler parentbased_traceidratio 1]"; got != want {
		t.Errorf("Describe() = %s, want %s", got, want)
	}
	r := tr.StartRun(context.Background(), telemetry.RunInfo{Workflow: "w", Thread: "t", RunID: "r"})
	r.End(vm.Outcome{Status: vm.Finished}, nil)
	tr.Shutdown(context.Background())
	if out := buf.String(); !strings.Contains(out, "level=WARN msg=tracing error=") || !strings.Contains(out, "/v1/traces") {
		t.Errorf("the log has no warning of the failed export:\n%s", out)
	}
}

// TestModelSpan checks a model call's GenAI span, and that the messages
// go on it only when CaptureContentVar asks.
func TestModelSpan(t *testing.T) {
	for _, capture := range []bool{false, true} {
		t.Run(map[bool]string{false: "content left out", true: "content captured"}[capture], func(t *testing.T) {
			clearOTEL(t)
			vars := map[string]string{"OTEL_SERVICE_NAME": "orders-agent"}
			if capture {
				vars[telemetry.CaptureContentVar] = "true"
			}
			tr, recv := traced(t, vars)
			scripted, err := llm.ParseScript([]byte("reply repeat\ntext: The answer is SECRET-ANSWER.\nusage: 11 4\n"))
			if err != nil {
				t.Fatal(err)
			}
			p, err := tr.Models(llm.Resolver(map[string]llm.Provider{"script": scripted}))("script/small")
			if err != nil {
				t.Fatal(err)
			}
			temp := 0.5
			req := &llm.Request{Model: "small", MaxTokens: 100, Temperature: &temp,
				Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Be brief."}, {Role: llm.RoleUser, Content: "SECRET-PROMPT"}}}
			if _, err := p.Stream(context.Background(), req, func(llm.Chunk) error { return nil }); err != nil {
				t.Fatal(err)
			}
			spans := flush(t, tr, recv)
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			s := spans[0]
			if s.Name != "chat small" || s.Kind.String() != "SPAN_KIND_CLIENT" {
				t.Errorf("span %q of kind %s, want chat small, a client span", s.Name, s.Kind)
			}
			want := map[string]any{
				"gen_ai.operation.name":          "chat",
				"gen_ai.provider.name":           "script",
				"gen_ai.request.model":           "small",
				"gen_ai.response.model":          "small",
				"gen_ai.request.max_tokens":      int64(100),
				"gen_ai.request.temperature":     0.5,
				"gen_ai.usage.input_tokens":      int64(11),
				"gen_ai.usage.output_tokens":     int64(4),
				"gen_ai.response.finish_reasons": []any{"stop"},
			}
			checkAttrs(t, s, want)
			if s.Resource["service.name"] != "orders-agent" || s.Scope != "github.com/aguic/aguic" {
				t.Errorf("resource %v, scope %q", s.Resource, s.Scope)
			}
			in, _ := s.Attrs["gen_ai.input.messages"].(string)
			out, _ := s.Attrs["gen_ai.output.messages"].(string)
			if capture {
				if !strings.Contains(in, `{"role":"user","parts":[{"type":"text","content":"SECRET-PROMPT"}]}`) {
					t.Errorf("gen_ai.input.messages = %s", in)
				}
				if out != `[{"role":"assistant","parts":[{"type":"text","content":"The answer is SECRET-ANSWER."}],"finish_reason":"stop"}]` {
					t.Errorf("gen_ai.output.messages = %s", out)
				}
				return
			}
			for k, v := range s.Attrs {
				if str, ok := v.(string); ok && strings.Contains(str, "SECRET") {
					t.Errorf("attribute %s holds the conversation: %s", k, str)
				}
			}
		})
	}
}

// checkAttrs checks that span s has the attributes want.
func checkAttrs(t *testing.T, s otlptest.Span, want map[string]any) {
	t.Helper()
	for k, v := range want {
		got, ok := s.Attrs[k]
		if !ok {
			t.Errorf("span %q: no attribute %s", s.Name, k)
			continue
		}
		if gs, ws := fmtAny(got), fmtAny(v); gs != ws {
			t.Errorf("span %q: %s = %s, want %s", s.Name, k, gs, ws)
		}
	}
}

// fmtAny renders an attribute value with its Go type, so that 4 and "4"
// differ.
func fmtAny(v any) string { return fmt.Sprintf("%T %v", v, v) }
