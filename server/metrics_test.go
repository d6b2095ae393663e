package server_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/aguic/aguic/metrics"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm/store"
)

// newMetricsEnv serves the workflows of testdata/metrics, answered by
// metrics.script, with every seam of m wired as aguic serve wires it:
// the model resolver, the tool calls, the store, the threads' count and
// the server; edit, when not nil, edits the server's Config after.
func newMetricsEnv(t *testing.T, m *metrics.Metrics, edit func(*server.Config)) *env {
	t.Helper()
	dir := filepath.Join("testdata", "metrics")
	srv, st := newServerWith(t, filepath.Join(dir, "*.wf"), filepath.Join(dir, "metrics.script"), func(o *stdlib.Options) {
		o.Models = m.Models(o.Models)
		o.ToolCall = m.ToolCall()
	}, func(c *server.Config) {
		// Every scrape counts the threads again: the test reads them
		// after runs.
		m.CountThreads(c.Store.(store.ThreadCounter), time.Nanosecond, discardLogger())
		c.Store = m.Store(c.Store)
		c.Metrics = m
		c.MCP = true
		c.Hook = func(_ context.Context, r *server.HookRequest) error {
			if r.ThreadID == "refused" {
				return errors.New("not this thread")
			}
			return nil
		}
		if edit != nil {
			edit(c)
		}
	})
	return envOf(t, srv, st)
}

// scrape reads /metrics, with the header pairs given, and parses it with
// the Prometheus text parser.
func (e *env) scrape(header ...string) map[string]*dto.MetricFamily {
	e.t.Helper()
	resp := e.send(http.MethodGet, "/metrics", "", header...)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		e.t.Errorf("GET /metrics: Content-Type %q, want the Prometheus text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// sample is one value to find in a scrape: the family, the labels the
// metric has (others may be there too) and the value, a histogram's count.
type sample struct {
	name   string
	labels map[string]string
	want   float64
}

// value returns the value of the metric of fams that s names, and
// whether there is one.
func (s sample) value(fams map[string]*dto.MetricFamily) (float64, bool) {
	fam := fams[s.name]
	if fam == nil {
		return 0, false
	}
next:
	for _, m := range fam.Metric {
		for name, v := range s.labels {
			found := false
			for _, l := range m.Label {
				if l.GetName() == name {
					found = l.GetValue() == v
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func labels(pairs ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

// TestMetricsAfterRuns: after known runs, /metrics, as the Prometheus text
// parser reads it, counts each: a finished model run with a tool call
// and tokens, a run whose model fails, a conversation that stops at an
// interrupt, a run the hook refuses, an MCP tool call; the store's
// commits and threads, and nothing in flight.
func TestMetricsAfterRuns(t *testing.T) {
	e := newMetricsEnv(t, metrics.New(), nil)
	run := func(wf, thread, msg, want string) {
		t.Helper()
		evs := e.stream(e.post("/agui/workflows/"+wf, `{"threadId": "`+thread+`", "messages": [{"id": "m1", "role": "user", "content": "`+msg+`"}]}`))
		if got := last(evs)["type"]; got != want {
			t.Fatalf("run of %s on %s ended with %v, want %s: %v", wf, thread, got, want, evs)
		}
	}
	run("tools", "t1", "add them", "RUN_FINISHED")
	run("tools", "t2", "fail now", "RUN_ERROR")
	run("ask", "a1", "may I?", "RUN_FINISHED") // stops at the interrupt
	run("tools", "refused", "add them", "RUN_ERROR")
	cs := e.connect(t, mcpClient{version: mcpVersions[0]})
	if o := call(t, cs, "ask", map[string]any{"message": "may I?"}); o.isError {
		t.Fatalf("MCP call of ask failed: %s", o.text)
	}

	fams := e.scrape()
	for _, s := range []sample{
		{"aguic_runs_total", labels("workflow", "tools", "outcome", "finished"), 1},
		{"aguic_runs_total", labels("workflow", "tools", "outcome", "failed"), 1},
		{"aguic_runs_total", labels("workflow", "tools", "outcome", "rejected"), 1},
		{"aguic_runs_total", labels("workflow", "ask", "outcome", "suspended"), 2},
		{"aguic_turns_total", labels("workflow", "tools", "outcome", "finished", "origin", "request"), 1},
		{"aguic_turns_total", labels("workflow", "ask", "outcome", "suspended", "origin", "request"), 2},
		{"aguic_turn_duration_seconds", labels("workflow", "tools"), 2},
		{"aguic_first_event_seconds", labels("workflow", "tools"), 1}, // ask's interrupt and the failed model emit no event
		{"aguic_runs_in_flight", nil, 0},
		{"aguic_model_calls_total", labels("model", "script/m"), 3},
		{"aguic_model_errors_total", labels("model", "script/m"), 1},
		{"aguic_model_call_duration_seconds", labels("model", "script/m"), 3},
		{"aguic_model_tokens_total", labels("model", "script/m", "type", "input"), 7 + 11},
		{"aguic_model_tokens_total", labels("model", "script/m", "type", "output"), 3 + 4},
		{"aguic_tool_call_duration_seconds", labels("kind", "expr", "tool", "add"), 1},
		{"aguic_mcp_tool_calls_total", labels("tool", "ask", "outcome", "ok"), 1},
		{"aguic_threads", labels("status", "finished"), 1},
		{"aguic_threads", labels("status", "failed"), 1},
		{"aguic_threads", labels("status", "suspended"), 2},
		{"aguic_threads", labels("status", "running"), 0},
	} {
		got, ok := s.value(fams)
		if !ok || got != s.want {
			t.Errorf("%s%v = %v (found: %v), want %v", s.name, s.labels, got, ok, s.want)
		}
	}
	if commits, _ := (sample{name: "aguic_store_commit_duration_seconds"}).value(fams); commits == 0 {
		t.Errorf("aguic_store_commit_duration_seconds counts no commit after runs that stored their turns")
	}
	for _, name := range []string{"go_goroutines", "go_memory_classes_heap_objects_bytes", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("no %s in /metrics", name)
		}
	}
	if _, ok := (sample{name: "aguic_tool_call_errors_total"}).value(fams); ok {
		t.Errorf("aguic_tool_call_errors_total counts a failure; the one tool call succeeded")
	}
	for name, fam := range fams {
		if strings.HasPrefix(name, "aguic_") && fam.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
	}
}

// TestMetricsExposition: the exposition is valid in both formats: the
// text format parses (TestMetricsAfterRuns), and OpenMetrics, asked for
// with Accept, is served as such and parses with its own parser.
func TestMetricsExposition(t *testing.T) {
	e := newMetricsEnv(t, metrics.New(), nil)
	e.stream(e.post("/agui/workflows/ask", `{"threadId": "a1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}`))
	resp := e.send(http.MethodGet, "/metrics", "", "Accept", "application/openmetrics-text; version=1.0.0")
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("Content-Type %q, want OpenMetrics", ct)
	}
	if !strings.HasSuffix(string(body), "# EOF\n") {
		t.Errorf("the OpenMetrics exposition does not end with # EOF")
	}
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.ResponseFormat(resp.Header))
	fams := map[string]*dto.MetricFamily{}
	for {
		var fam dto.MetricFamily
		err := dec.Decode(&fam)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parse OpenMetrics: %v", err)
		}
		fams[strings.TrimSuffix(fam.GetName(), "_total")] = &fam
	}
	if v, ok := (sample{"aguic_runs", labels("workflow", "ask", "outcome", "suspended"), 1}).value(fams); !ok || v != 1 {
		t.Errorf("aguic_runs{ask,suspended} = %v (found: %v) in OpenMetrics, want 1", v, ok)
	}
}

// TestMetricsAuth: /metrics needs a token like every route, unless it is
// public; without Metrics there is no /metrics.
func TestMetricsAuth(t *testing.T) {
	t.Run("Token", func(t *testing.T) {
		e := newMetricsEnv(t, metrics.New(), withTokens(t))
		resp := e.get("/metrics")
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /metrics without a token: %d, want 401", resp.StatusCode)
		}
		if fams := e.scrape("Authorization", "Bearer ada-secret-token"); fams["aguic_runs_in_flight"] == nil {
			t.Errorf("GET /metrics with a token has no aguic_runs_in_flight")
		}
	})
	t.Run("Public", func(t *testing.T) {
		e := newMetricsEnv(t, metrics.New(), func(c *server.Config) {
			withTokens(t)(c)
			c.MetricsPublic = true
		})
		if fams := e.scrape(); fams["aguic_runs_in_flight"] == nil {
			t.Errorf("public /metrics has no aguic_runs_in_flight")
		}
		resp := e.get("/agui/workflows")
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /agui/workflows without a token beside public metrics: %d, want 401", resp.StatusCode)
		}
	})
	t.Run("Off", func(t *testing.T) {
		e := newEnv(t, nil)
		resp := e.get("/metrics")
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /metrics without Metrics: %d, want 404", resp.StatusCode)
		}
	})
}
