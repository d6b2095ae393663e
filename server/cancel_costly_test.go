package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store/badger"
)

// costlyWorkflow spends a good part of a second in one expression over
// the user's message: expr's VM cannot be stopped inside it.
const costlyWorkflow = `wf 1

workflow costly {
  title = "Costly"
  flow {
    say "Working."
    set $all = reduce(1..500, #acc + $agent.latestUserMessage.content, "")
    say "Done: <<len($all)>> bytes."
  }
}
`

// sourceServer serves the workflows of src, with node lifecycle events,
// from an in-memory store.
func sourceServer(t *testing.T, src string) *httptest.Server {
	t.Helper()
	reg := vm.NewRegistry()
	stdlib.RegisterWith(reg, stdlib.Options{Getenv: func(string) string { return "" }, HTTPClient: &http.Client{Transport: noNetwork{}}})
	prog, diags := compiler.Compile(reg, compiler.Source{Name: "costly.wf", Text: lang.Clean([]byte(src))})
	if diags.HasErrors() {
		t.Fatalf("compile: %v", diags.Err())
	}
	st, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Machine: &vm.Machine{Program: prog, Registry: reg}, Store: st, Logger: discardLogger(), NodeLifecycle: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		st.Close()
	})
	return hs
}

// TestCancelCostlyRun cancels a run while one node evaluates: the cancel
// route answers once the run ended, cancelled, at that node, which
// reports the cancellation, and the flow goes no further.
func TestCancelCostlyRun(t *testing.T) {
	hs := sourceServer(t, costlyWorkflow)
	body, _ := json.Marshal(map[string]any{"threadId": "c1", "runId": "r1", "protocolVersion": "1.0", "messages": []any{
		map[string]any{"id": "m1", "role": "user", "content": strings.Repeat("x", 10_000)},
	}})
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/agui/workflows/costly", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var (
		texts     []string
		last      map[string]any // the last state of the node lifecycle
		cancelled map[string]any // the answer of the cancel route
		end       map[string]any // the terminal event
	)
	for f, err := range agui.ReadSSE(resp.Body) {
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		var ev map[string]any
		if err := json.Unmarshal(f.Data, &ev); err != nil {
			t.Fatal(err)
		}
		switch ev["type"] {
		case "TEXT_MESSAGE_CONTENT":
			texts = append(texts, str(ev["delta"]))
		case "ACTIVITY_DELTA":
			op := ev["patch"].([]any)[0].(map[string]any)
			last = op["value"].(map[string]any)
			if last["kind"] != "set" || last["phase"] != "start" || cancelled != nil {
				continue
			}
			time.Sleep(20 * time.Millisecond) // into the evaluation
			start := time.Now()
			cr, err := hs.Client().Post(hs.URL+"/agui/cancel", "application/json", strings.NewReader(`{"threadId": "c1"}`))
			if err != nil {
				t.Fatal(err)
			}
			decode(t, cr, &cancelled)
			t.Logf("the cancel route answered in %v", time.Since(start))
		case "RUN_FINISHED", "RUN_ERROR":
			end = ev
		}
	}
	if cancelled["status"] != "cancelled" {
		t.Errorf("the cancel route answered %v, want status cancelled", cancelled)
	}
	if o, _ := end["outcome"].(map[string]any); o["type"] != "cancelled" {
		t.Errorf("the run ended with %v, want outcome cancelled", end)
	}
	if last["kind"] != "set" || last["phase"] != "error" || last["code"] != vm.ErrCancelled {
		t.Errorf("the last node lifecycle is %v, want the set node's error %s", last, vm.ErrCancelled)
	}
	if got := strings.Join(texts, ""); got != "Working." {
		t.Errorf("the run said %q: it went on after it was cancelled", got)
	}
}
