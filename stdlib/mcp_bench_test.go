package stdlib_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aguic/aguic/internal/mcptest"
	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/mcpclient"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

// The benchmarks of this file run one node that adds 2 and 3 on another
// process: an mcp node calling the reference server's get-sum over stdio
// or over streamable HTTP, and beside them, as the baseline, an http node
// POSTing to a Go handler that adds. Each runs a whole flow of one node
// through the VM, on a connection made before the loop.

// benchSum runs the workflow "w" of src over and over.
func benchSum(b *testing.B, src string) {
	pool := mcpclient.NewPool(mcpclient.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	b.Cleanup(func() { pool.Close() })
	m := vmtest.Machine(b, src, stdlib.Options{MCP: pool, Getenv: func(string) string { return "" }})
	f, err := m.NewFrame("w", nil)
	if err != nil {
		b.Fatal(err)
	}
	run := func() {
		if o := m.Run(context.Background(), f, nil, vm.Observer{}); o.Status != vm.Finished {
			b.Fatalf("%+v %v", o, o.Err)
		}
	}
	run() // connects
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		run()
	}
}

// sumFlow declares the server decl and a workflow w whose flow is node.
func sumFlow(decl, node string) string {
	return "wf 1\n\n" + decl + "\nworkflow w {\n  flow {\n    " + node + "\n  }\n}\n"
}

const mcpSumNode = `mcp everything "get-sum" {
      args   = {a: 2, b: 3}
      stream = false
    } -> $sum`

func BenchmarkMCPNodeStdio(b *testing.B) {
	command, args := mcptest.Everything(b)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	decl := fmt.Sprintf("mcp everything {\n  command = %q\n  args = [%s]\n}\n", command, strings.Join(quoted, ", "))
	benchSum(b, sumFlow(decl, mcpSumNode))
}

func BenchmarkMCPNodeHTTP(b *testing.B) {
	srv := mcptest.EverythingHTTP(b)
	benchSum(b, sumFlow(fmt.Sprintf("mcp everything {\n  url = %q\n}\n", srv.URL), mcpSumNode))
}

func BenchmarkHTTPNodeSum(b *testing.B) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if string(body) != `{"a":2,"b":3}` {
			http.Error(w, "bad body "+string(body), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"sum": 5}`)
	}))
	b.Cleanup(s.Close)
	benchSum(b, sumFlow("", fmt.Sprintf(`http POST %q {
      body = {a: 2, b: 3}
    } -> $sum`, s.URL)))
}
