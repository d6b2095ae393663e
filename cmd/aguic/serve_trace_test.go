package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aguic/aguic/internal/otlptest"
)

// TestServeTracedWithMetrics serves with tracing and metrics both on, as
// an operator runs it: a model's backend tool call is an execute_tool
// span, with the tool's request under it, and /metrics counts the call.
func TestServeTracedWithMetrics(t *testing.T) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_TRACES_SAMPLER",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(v, "")
	}
	recv := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id": "A-1", "status": "shipped"}`)
	}))
	defer service.Close()
	t.Setenv("SERVICE_URL", service.URL)

	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "orders.wf", `wf 1

workflow orders {
  tool lookup {
    description = "Looks an order up by its id."
    parameters  = {type: "object", properties: {id: {type: "string"}}, required: ["id"]}
    http GET "<<env('SERVICE_URL')>>/orders/<<$args.id>>"
  }

  flow {
    model {
      prompt = "<<$agent.latestUserMessage.content>>"
      tools  = [lookup]
    } -> $reply
    say "<<$reply.text>>"
  }
}
`)
	script := filepath.Join(dir, "answers.script")
	if err := os.WriteFile(script, []byte("reply after user\ntool: lookup call_1 {\"id\": \"A-1\"}\n\nreply repeat after tool\ntext: It has shipped.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, serveOptions{dir: wfDir, where: where{data: filepath.Join(dir, "data")}, basePath: "/agui", deadline: -1, script: script, metrics: true, metricsPublic: true})
	resp, err := http.Post(srv.url+"/agui/workflows/orders", "application/json", strings.NewReader(`{"threadId": "t1", "messages": [{"id": "m1", "role": "user", "content": "Where is A-1?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "It has shipped.") {
		t.Fatalf("the run's stream:\n%s", body)
	}
	resp, err = http.Get(srv.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), `aguic_tool_call_duration_seconds_count{kind="http",tool="lookup"} 1`) {
		t.Errorf("/metrics does not count the tool call:\n%s", m)
	}
	if c := srv.stop(); c != exitOK {
		t.Fatalf("serve exited with %d: %s", c, srv.stderr.String())
	}
	// The log says where the spans go.
	if want := "traces=" + recv.URL + "/v1/traces sampler=parentbased_always_on"; !strings.Contains(srv.stderr.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, srv.stderr.String())
	}

	var tool, get *otlptest.Span
	spans := recv.Spans()
	for i, sp := range spans {
		switch sp.Name {
		case "execute_tool lookup":
			tool = &spans[i]
		case "GET":
			get = &spans[i]
		}
	}
	if tool == nil {
		names := make([]string, len(spans))
		for i, sp := range spans {
			names[i] = sp.Name
		}
		t.Fatalf("no execute_tool span among %q", names)
	}
	if get == nil || get.Parent() != tool.ID() {
		t.Errorf("the tool's request is not under its execute_tool span: %+v", get)
	}
}
