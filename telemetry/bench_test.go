package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/telemetry"
	"github.com/aguic/aguic/vm"
)

// BenchmarkTraceTurn measures what tracing adds to a conversation's turn,
// the turn of the chat workflow of BenchmarkServeObserved (cmd/aguic):
// the run's span, linked to the turn before, and the spans of the three
// nodes it visits (the suspend it resumes at, a say, the suspend it stops
// at). cpu-µs/turn is the process's CPU time per turn, the exporter's
// included (spans are flushed every 100 turns, so none is dropped).
//
//   - traced: exported over OTLP/HTTP to a server on loopback that
//     discards them;
//   - traced-not-exported: given to an exporter that drops them, what the
//     OpenTelemetry SDK costs by itself;
//   - sampled-out: the sampler leaves the run out.
func BenchmarkTraceTurn(b *testing.B) {
	for _, mode := range []string{"traced", "traced-not-exported", "sampled-out"} {
		b.Run(mode, func(b *testing.B) {
			sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/x-protobuf")
			}))
			defer sink.Close()
			clearOTEL(b)
			b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
			opts := telemetry.Options{Version: "bench"}
			switch mode {
			case "traced-not-exported":
				opts.Exporter = dropSpans{}
			case "sampled-out":
				b.Setenv("OTEL_TRACES_SAMPLER", "always_off")
			}
			tr, err := telemetry.Setup(context.Background(), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Shutdown(context.Background())

			at := func(line int) diag.Span {
				return diag.Span{File: "workflows/chat.wf", Start: diag.Pos{Line: line, Col: 5}}
			}
			wait := &vm.Node{ID: "wait", Kind: "suspend", Label: "wait", Span: at(9), Suspends: true, Edges: []vm.Edge{{Label: "next", To: "top"}}}
			top := &vm.Node{ID: "top", Kind: "say", Label: "top", Span: at(8), Edges: []vm.Edge{{Label: "next", To: "wait"}}}
			frame := vm.NewFrame(&vm.Workflow{ID: "chat"}, "f1", nil)

			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				run := tr.StartRun(context.Background(), telemetry.RunInfo{Workflow: "chat", Thread: "t1", RunID: "r1"})
				run.Chain(frame)
				nodes := run.Nodes(nil)
				nodes.NodeStarted(wait)
				nodes.NodeFinished(wait, vm.NodeEnd{Next: "top"})
				nodes.NodeStarted(top)
				nodes.NodeFinished(top, vm.NodeEnd{Next: "wait"})
				nodes.NodeStarted(wait)
				run.End(vm.Outcome{Status: vm.Suspended, Wait: &vm.Wait{Kind: vm.WaitUser}}, nil)
				if i%100 == 99 {
					tr.Flush(context.Background())
				}
			}
			tr.Flush(context.Background())
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/turn")
		})
	}
}

// dropSpans is an exporter that drops what it is given.
type dropSpans struct{}

func (dropSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropSpans) Shutdown(context.Context) error                             { return nil }

// cpuTime is the CPU time the process has used, in user and system mode.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
