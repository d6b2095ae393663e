package host_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aguic/aguic/host"
	"github.com/aguic/aguic/internal/otlptest"
	"github.com/aguic/aguic/metrics"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/telemetry"
	"github.com/aguic/aguic/vm/store"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestRecoveredRunIsTraced: a run a crash cut, resumed by the next
// process, is traced there as a run of trigger "recovery", with the spans
// of the nodes it runs again under it; the completion webhook's observer
// (Config.Server.OnRunEnd) learns that it ended, and how; and the metrics
// count the claim and the recovered turn.
func TestRecoveredRunIsTraced(t *testing.T) {
	hang := make(chan struct{})
	var calls atomic.Int32
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-hang // the process dies while it waits
		}
		fmt.Fprint(w, "ok")
	}))
	defer service.Close()
	var unhangOnce sync.Once
	unhang := func() { unhangOnce.Do(func() { close(hang) }) }
	defer unhang()
	t.Setenv("SERVICE_URL", service.URL)
	m, bundle := compile(`wf 1
workflow wait {
  conversation = true
  flow {
    top: say "tea"
    ask: http GET "<<env('SERVICE_URL')>>"
    done: say "ready"
  }
}
`)
	dir := t.TempDir()
	k := store.Key{Scope: "default", Workflow: "wait", Thread: "t1"}

	// The first process starts the run and dies before it ends.
	first := startProcess(t, dir, m, bundle)
	first.post("wait", `{"threadId":"t1","runId":"r1","messages":[{"id":"m1","role":"user","content":"go"}]}`)
	waitFor(t, "the run to be running", func() bool {
		th, err := first.st.Thread(context.Background(), k)
		return err == nil && th.Status == store.Running
	})
	first.crash()

	recv := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	tracing, err := telemetry.Setup(context.Background(), telemetry.Options{})
	if err != nil || tracing == nil {
		t.Fatalf("tracing: %v, %v", tracing, err)
	}
	var endsMu sync.Mutex
	var ends []server.RunEnd
	mets := metrics.New()
	next := startProcessWith(t, dir, m, bundle, func(c *host.Config) {
		c.Server.Tracing = tracing
		c.Server.Metrics = mets
		c.Server.OnRunEnd = func(e server.RunEnd) {
			endsMu.Lock()
			ends = append(ends, e)
			endsMu.Unlock()
		}
	})
	waitFor(t, "the run to be resumed", func() bool {
		r, err := next.st.Run(context.Background(), k, "r1")
		return err == nil && r.Status == store.Finished
	})
	next.stop()
	if err := tracing.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	endsMu.Lock()
	if len(ends) != 1 || ends[0].RunID != "r1" || ends[0].Trigger != "recovery" || ends[0].Outcome != "finished" || ends[0].WorkflowID != "wait" || ends[0].ThreadID != "t1" {
		t.Errorf("the runs that ended: %+v, want r1 recovered and finished", ends)
	}
	endsMu.Unlock()

	rec := httptest.NewRecorder()
	mets.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse the metrics: %v", err)
	}
	if got := counter(fams, "aguic_stranded_runs_claimed_total", nil); got != 1 {
		t.Errorf("aguic_stranded_runs_claimed_total %v, want 1", got)
	}
	if got := counter(fams, "aguic_turns_total", map[string]string{"workflow": "wait", "outcome": "finished", "origin": "recovery"}); got != 1 {
		t.Errorf("aguic_turns_total of the recovered turn %v, want 1", got)
	}

	var run otlptest.Span
	for _, sp := range recv.Spans() {
		if sp.Name == "invoke_agent wait" {
			run = sp
		}
	}
	if run.Span == nil {
		t.Fatalf("no span of the recovered run among %d", len(recv.Spans()))
	}
	if run.Attrs["aguic.run.trigger"] != "recovery" || run.Attrs["aguic.run.id"] != "r1" || run.Attrs["aguic.run.outcome"] != "finished" {
		t.Errorf("the run's span: %v", run.Attrs)
	}
	var nodes []string
	for _, sp := range recv.Spans() {
		if sp.Parent() == run.ID() {
			nodes = append(nodes, sp.Name)
		}
	}
	if len(nodes) == 0 || nodes[len(nodes)-1] != "say done" {
		t.Errorf("the recovered run's node spans %v, want those it ran again, ending with say done", nodes)
	}
	// The first host's run is still blocked in the call: let it fail on
	// its closed store, and stop the first host.
	unhang()
	first.h.Shutdown(context.Background())
}

// counter is the sum of the counters of family name whose labels include
// those given.
func counter(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	var sum float64
	for _, m := range fams[name].GetMetric() {
		has := map[string]string{}
		for _, l := range m.GetLabel() {
			has[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && has[k] == v
		}
		if match {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
