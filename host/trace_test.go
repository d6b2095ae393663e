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
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/telemetry"
	"github.com/aguic/aguic/vm/store"
)

// TestRecoveredRunIsTraced: a run a crash cut, resumed by the next
// process, is traced there as a run of trigger "recovery", with the spans
// of the nodes it runs again under it, and the completion webhook's
// observer (Config.Server.OnRunEnd) learns that it ended, and how.
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
	next := startProcessWith(t, dir, m, bundle, func(c *host.Config) {
		c.Server.Tracing = tracing
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
