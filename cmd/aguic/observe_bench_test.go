package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/aimock"
)

// observeModelChat is the conversation of BenchmarkServeObserved whose
// turn asks a model: the OpenAI provider streams the answer from aimock,
// an OpenAI-compatible API in a process of its own.
const observeModelChat = `wf 1

workflow ask {
  title        = "Ask"
  conversation = true

  flow {
    top: model {
      model  = "openai/gpt-4o-mini"
      system = "You are a concise, friendly assistant."
      prompt = "<<$agent.latestUserMessage.content>>"
    } -> $reply
    wait: suspend
    goto top
  }
}
`

// observeModes are the aguic serve processes BenchmarkServeObserved
// compares: the same binary, workflows and store, observed differently.
var observeModes = []struct {
	name    string
	args    []string
	tracing bool
	sampled bool // one run in ten traced
}{
	{name: "off", args: []string{"--metrics=false"}},
	{name: "metrics"},
	{name: "metrics+tracing", tracing: true},
	{name: "metrics+tracing-10%", tracing: true, sampled: true},
}

// BenchmarkServeObserved measures what observing costs a served turn, as
// an operator turns it on: four aguic serve processes of the same binary,
// each with its own Badger data directory on disk, serving the same
// workflows, and differing only in what they observe (observeModes):
// nothing; /metrics (on by default); and every run traced, or one in ten
// (OTEL_TRACES_SAMPLER=parentbased_traceidratio, 0.1), exported over
// OTLP/HTTP to a receiver in the benchmark's process. Two conversations:
// chat, whose turn says one line and suspends (the cheapest turn there
// is, so an overhead shows most), and ask, whose turn asks a model
// through aimock (observeModelChat).
//
// The four processes serve at the same time, each b.N turns from 4
// clients playing conversations of 10 turns, so that what the machine
// does meanwhile (the clients, aimock, the other processes, the disk)
// touches them alike. Each reports the CPU time of its process per turn
// (read from /proc: the clients, aimock and the receiver are not
// counted), MODE-µs/turn, and what it costs more than off, MODE-%. Five
// rounds; compare their medians.
//
//	go test ./cmd/aguic -run '^$' -bench ServeObserved -benchtime 2000x
func BenchmarkServeObserved(b *testing.B) {
	mock := aimock.Start(b, aimock.Fixture{
		Response: aimock.Response{
			Content: "Green tea likes water at about 80 °C and a short steep: two minutes for most leaves, a little less for Japanese ones.",
			Usage:   &aimock.Usage{PromptTokens: 24, CompletionTokens: 30},
		},
	})
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(sink.Close)

	dir := b.TempDir()
	bin := buildBench(b, dir)
	wfDir := filepath.Join(dir, "workflows")
	writeFiles(b, wfDir, map[string]string{"chat.wf": replicaChat, "ask.wf": observeModelChat})
	base := []string{"OPENAI_API_KEY=sk-bench", "OPENAI_BASE_URL=" + mock.OpenAIBaseURL()}
	for _, v := range os.Environ() {
		if !strings.HasPrefix(v, "OTEL_") {
			base = append(base, v)
		}
	}
	procs := make([]*crashProc, len(observeModes))
	for i, m := range observeModes {
		env := append([]string(nil), base...)
		if m.tracing {
			env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+sink.URL)
		}
		if m.sampled {
			env = append(env, "OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.1")
		}
		args := append([]string{"--data", filepath.Join(b.TempDir(), "data")}, m.args...)
		p, err := startCrashProc(bin, append(append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), wfDir), env)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { stopReplica(b, p) })
		procs[i] = p
	}
	for _, wf := range []string{"chat", "ask"} {
		b.Run(wf, func(b *testing.B) {
			measureTogether(b, procs, wf, "How long should green tea steep?", 4)
		})
	}
}

// measureTogether plays b.N turns of workflow wf on each of procs at the
// same time, from clients clients each, and reports the CPU time of each
// process per turn, under the name of its mode (observeModes), and how
// much more than the first's it is.
func measureTogether(b *testing.B, procs []*crashProc, wf, message string, clients int) {
	benchers := make([]*bencher, len(procs))
	pids := make([]int, len(procs))
	for i, p := range procs {
		bn, done := newBencher([]string{p.log.url + "/workflows/" + wf}, clients, message, false)
		defer done()
		benchers[i] = bn
		pids[i] = p.cmd.Process.Pid
	}
	together := func(turns int) error {
		errs := make([]error, len(benchers))
		var wg sync.WaitGroup
		for i, bn := range benchers {
			wg.Go(func() { _, errs[i] = drive(bn, clients, turns, false) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := together(3 * clients); err != nil {
		b.Fatalf("warm-up: %v", err)
	}
	before := procsCPU(pids)
	b.ResetTimer()
	err := together(b.N)
	b.StopTimer()
	after := procsCPU(pids)
	if err != nil {
		b.Fatal(err)
	}
	perTurn := make([]float64, len(procs))
	for i, pid := range pids {
		a, ok := after[pid]
		if !ok {
			b.Fatalf("the %s process died", observeModes[i].name)
		}
		perTurn[i] = float64(a-before[pid]) / float64(time.Microsecond) / float64(b.N)
		b.ReportMetric(perTurn[i], observeModes[i].name+"-µs/turn")
		if i > 0 {
			b.ReportMetric(100*(perTurn[i]/perTurn[0]-1), observeModes[i].name+"-%")
		}
	}
}
