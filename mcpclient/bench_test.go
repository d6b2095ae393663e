package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aguic/aguic/internal/mcptest"
	"github.com/aguic/aguic/mcpclient"
	"github.com/aguic/aguic/vm"
)

// benchCall calls get-sum of s in a loop, on a connection made before.
func benchCall(b *testing.B, s *vm.Server) {
	p := mcpclient.NewPool(mcpclient.Options{})
	defer p.Close()
	ctx := context.Background()
	args := map[string]any{"a": 20, "b": 22}
	if _, err := p.Call(ctx, s, "get-sum", args); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := p.Call(ctx, s, "get-sum", args)
		if err != nil || r.IsError {
			b.Fatalf("%+v %v", r, err)
		}
	}
}

// BenchmarkCallStdio is one tool call of the reference server over stdio.
func BenchmarkCallStdio(b *testing.B) {
	cmd, args := mcptest.Everything(b)
	benchCall(b, mcptest.Stdio("everything", cmd, args...))
}

// BenchmarkCallHTTP is one tool call of the reference server over
// streamable HTTP on the loopback interface.
func BenchmarkCallHTTP(b *testing.B) {
	h := mcptest.EverythingHTTP(b)
	benchCall(b, mcptest.HTTP("everything", h.URL, nil))
}

// BenchmarkHTTPBaseline is what BenchmarkCallHTTP compares with: the same
// addition as a JSON POST to a Go handler on the loopback interface, what
// an http node costs.
func BenchmarkHTTPBaseline(b *testing.B) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ A, B float64 }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]float64{"sum": in.A + in.B})
	}))
	defer hs.Close()
	client := hs.Client()
	body := []byte(`{"a": 20, "b": 22}`)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := client.Post(hs.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		var out struct{ Sum float64 }
		err = json.NewDecoder(resp.Body).Decode(&out)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || out.Sum != 42 {
			b.Fatalf("%v %v", out, err)
		}
	}
}
