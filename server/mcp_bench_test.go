package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm/store/badger"
)

// benchHello is the stateless workflow of BenchmarkMCPServeCall.
const benchHello = `wf 1

workflow hello {
  flow {
    say "ok <<$agent.latestUserMessage.content>>"
    output {said: $agent.latestUserMessage.content}
  }
}
`

// BenchmarkMCPServeCall measures one run of a stateless workflow as one
// client calls it, back to back, over loopback on an in-memory store:
// through the AG-UI route (route=agui: the request, the run, the SSE
// stream read to its end), and as a tool call through /mcp (the client of
// the official Go SDK, in each protocol: 2026-07-28 stateless, 2025-11-25
// on a session). Each run has a thread of its own. The CPU time is the
// process's: the server's and the client's.
func BenchmarkMCPServeCall(b *testing.B) {
	src := compiler.Source{Name: "hello.wf", Text: lang.Clean([]byte(benchHello))}
	url := benchServerOf(b, badger.Options{InMemory: true}, src, stdlib.Options{})
	b.Run("route=agui", func(b *testing.B) {
		c := newBenchClient(url+"/agui/workflows/hello", "", nil)
		defer c.close()
		benchCalls(b, func() bool {
			c.thread = fmt.Sprintf("bench-%d", benchThreads.Add(1))
			return c.turn(b)
		})
	})
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		b.Run("route=mcp/protocol="+v, func(b *testing.B) {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/agui/mcp", HTTPClient: &http.Client{Transport: tr}}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			n := 0
			benchCalls(b, func() bool {
				n++
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"message": fmt.Sprint("hello ", n)}})
				switch {
				case err != nil:
					b.Fatal(err)
				case res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != fmt.Sprint("ok hello ", n):
					b.Fatalf("call %d: %+v", n, res)
				}
				return true
			})
		})
	}
}

// benchCalls runs call b.N times and reports the CPU time of the process
// per call.
func benchCalls(b *testing.B, call func() bool) {
	b.ReportAllocs()
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		if !call() {
			return
		}
		n++
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n)/float64(time.Microsecond), "cpu-µs/call")
}
