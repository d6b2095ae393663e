package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/internal/aimock"
	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/metrics"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/telemetry"
	"github.com/aguic/aguic/vm/store/badger"
)

// benchModelChat is the conversation of BenchmarkServeTurnObserved whose
// turn asks a model: the OpenAI provider streams the answer from aimock,
// an OpenAI-compatible API in another process, and the run suspends for
// the next message.
const benchModelChat = `wf 1

workflow chat {
  title        = "Chat"
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

// sinkEnv, set in the environment of the test binary, makes it an OTLP
// receiver that reads and drops what it gets (see TestMain): the
// collector of BenchmarkServeTurnObserved, in a process of its own as a
// collector is, so that its CPU is not counted as the server's.
const sinkEnv = "AGUIC_BENCH_OTLP_SINK"

func TestMain(m *testing.M) {
	if os.Getenv(sinkEnv) == "1" {
		serveSink()
		return
	}
	os.Exit(m.Run())
}

// serveSink serves OTLP/HTTP on a loopback port it prints, until its
// standard input closes.
func serveSink() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	io.Copy(io.Discard, os.Stdin)
}

// startSink starts the test binary as an OTLP receiver in its own process
// and returns its URL; it stops when b ends.
func startSink(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), sinkEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("the OTLP receiver did not start: %v", err)
	}
	return strings.TrimSpace(url)
}

// BenchmarkServeTurnObserved measures what observing a served turn costs:
// the same conversation served to 16 clients on an in-memory store, by
// servers that differ only in what they observe:
//
//   - off: neither metrics nor tracing;
//   - metrics: /metrics as aguic serve wires it (scraped after each round);
//   - metrics+tracing: and every run traced (its span and its nodes'),
//     exported over OTLP/HTTP to a receiver in another process;
//   - metrics+tracing-10%: one run in ten traced
//     (OTEL_TRACES_SAMPLER=parentbased_traceidratio, 0.1).
//
// Two conversations: "say", whose turn says one line and suspends (the
// cheapest turn there is, so an overhead shows most), and "model", whose
// turn asks a model through aimock (see benchModelChat). The servers take
// turns, three rounds each, so the machine's drift touches all alike;
// compare cpu-µs/turn, the process's CPU time per turn (the aimock and the
// receiver processes not counted).
func BenchmarkServeTurnObserved(b *testing.B) {
	mock := aimock.Start(b, aimock.Fixture{
		Response: aimock.Response{
			Content: "Green tea likes water at about 80 °C and a short steep: two minutes for most leaves, a little less for Japanese ones.",
			Usage:   &aimock.Usage{PromptTokens: 24, CompletionTokens: 30},
		},
	})
	sink := startSink(b)
	openai := llm.NewOpenAI(llm.OpenAIOptions{APIKey: "sk-bench", BaseURL: mock.OpenAIBaseURL()})
	flows := []struct {
		name string
		src  string
		lib  stdlib.Options
	}{
		{"say", benchChat, stdlib.Options{}},
		{"model", benchModelChat, stdlib.Options{Models: llm.Resolver(map[string]llm.Provider{"openai": openai})}},
	}
	modes := []string{"off", "metrics", "metrics+tracing", "metrics+tracing-10%"}
	for _, fl := range flows {
		src := compiler.Source{Name: "chat.wf", Text: lang.Clean([]byte(fl.src))}
		urls := map[string]string{}
		for _, mode := range modes {
			var m *metrics.Metrics
			var tr *telemetry.Tracing
			if mode != "off" {
				m = metrics.New()
			}
			lib := fl.lib
			if strings.HasPrefix(mode, "metrics+tracing") {
				// The exporter and the sampler read the process's environment.
				b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink)
				sampler, arg := "", ""
				if strings.HasSuffix(mode, "-10%") {
					sampler, arg = "parentbased_traceidratio", "0.1"
				}
				b.Setenv("OTEL_TRACES_SAMPLER", sampler)
				b.Setenv("OTEL_TRACES_SAMPLER_ARG", arg)
				var err error
				tr, err = telemetry.Setup(context.Background(), telemetry.Options{})
				if err != nil || tr == nil {
					b.Fatalf("tracing: %v, %v", tr, err)
				}
				b.Cleanup(func() { tr.Shutdown(context.Background()) })
				tr.Instrument(&lib)
			}
			urls[mode] = benchServerWith(b, badger.Options{InMemory: true}, src, lib, m, func(c *server.Config) { c.Tracing = tr })
		}
		for range 3 {
			for _, mode := range modes {
				b.Run(fl.name+"/"+mode, func(b *testing.B) {
					benchTurns(b, urls[mode]+"/agui/workflows/chat", 16)
					if mode == "off" {
						return
					}
					resp, err := http.Get(urls[mode] + "/metrics")
					if err != nil {
						b.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Fatalf("GET /metrics: %s", resp.Status)
					}
				})
			}
		}
	}
}
