package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// busyWorkflows are conversations whose turns wait on an HTTP server, one
// per busy policy, and one ("keeping") that also keeps the user's words in
// the history, silently, as the client's message.
func busyWorkflows() string {
	var b strings.Builder
	b.WriteString("wf 1\n")
	for _, w := range []struct{ id, busy string }{{"rejecting", ""}, {"queueing", "enqueue"}, {"interrupting", "interrupt"}, {"keeping", ""}} {
		policy := ""
		if w.busy != "" {
			policy = fmt.Sprintf("  busy = %q\n", w.busy)
		}
		keep, label := "", "top: "
		if w.id == "keeping" {
			label = ""
			keep = `    top: say "<<$agent.latestUserMessage.content>>" {
      role   = "user"
      silent = true
      id     = $agent.latestUserMessage.id
    }
`
		}
		fmt.Fprintf(&b, `
workflow %s {
  conversation = true
%s  flow {
%s    %ssay "start <<$agent.latestUserMessage.content>>"
    http GET "<<$agent.state.url>>" -> $r
    say "done <<$agent.latestUserMessage.content>>"
    w: suspend
    goto top
  }
}
`, w.id, policy, keep, label)
	}
	return b.String()
}

// busyEnv serves busyWorkflows and an HTTP server whose /block path waits
// until release is closed and whose other paths answer at once.
func busyEnv(t *testing.T) (e *env, url string, entered chan string, release func()) {
	t.Helper()
	m, bundle := busyMachine(t)
	e = newEnv(t, func(c *server.Config) {
		c.Machine = m
		c.Bundle = bundle
	})
	entered = make(chan string, 10)
	gate := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- r.URL.Path
		if r.URL.Path == "/block" {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, "ok")
	}))
	released := false
	release = func() {
		if !released {
			released = true
			close(gate)
		}
	}
	t.Cleanup(func() {
		release()
		srv.Close()
	})
	return e, srv.URL, entered, release
}

// busyMachine compiles busyWorkflows.
func busyMachine(t *testing.T) (*vm.Machine, []byte) {
	t.Helper()
	reg := vm.NewRegistry()
	stdlib.RegisterWith(reg, stdlib.Options{Getenv: func(string) string { return "" }})
	srcs := []compiler.Source{{Name: "busy.wf", Text: []byte(busyWorkflows())}}
	prog, diags := compiler.Compile(reg, srcs...)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	bundle, _ := compiler.Bundle(srcs)
	return &vm.Machine{Program: prog, Registry: reg}, bundle
}

func turnBody(runID, msg, url string) string {
	return fmt.Sprintf(`{"threadId": "t", "runId": %q, "protocolVersion": "1.0", "messages": [{"id": %q, "role": "user", "content": %q}], "state": {"url": %q}}`, runID, "m-"+runID, msg, url)
}

// TestBusyEnqueue: turns sent while a run is in progress start their
// streams at once (RUN_STARTED: they are written ahead), then run one
// after the other, in the order they came.
func TestBusyEnqueue(t *testing.T) {
	e, url, entered, release := busyEnv(t)
	first := e.post("/agui/workflows/queueing", turnBody("r1", "one", url+"/block"))
	<-entered
	second := e.post("/agui/workflows/queueing", turnBody("r2", "two", url+"/fast"))
	third := e.post("/agui/workflows/queueing", turnBody("r3", "three", url+"/fast"))
	for _, resp := range []*http.Response{second, third} {
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a queued turn answered %d", resp.StatusCode)
		}
	}
	k := store.Key{Scope: "default", Workflow: "queueing", Thread: "t"}
	queued, _, err := e.store.Runs(context.Background(), store.Queued, store.Page{})
	if err != nil || len(queued) != 2 {
		t.Fatalf("queued runs in the store: %+v, %v; want r2 and r3", queued, err)
	}
	release()
	for i, resp := range []*http.Response{first, second, third} {
		evs := e.stream(resp)
		want := fmt.Sprintf("start %s\ndone %s\n", []string{"one", "two", "three"}[i], []string{"one", "two", "three"}[i])
		if got := text(evs); got != want {
			t.Errorf("turn %d streamed %q, want %q", i+1, got, want)
		}
		if o := outcome(t, evs); o["type"] != "interrupt" && o["type"] != "success" {
			t.Errorf("turn %d: outcome %v", i+1, o)
		}
	}
	if order := doneOrder(t, e, k.Workflow); order != "[one two three]" {
		t.Errorf("the thread's turns ran in the order %s", order)
	}
	if queued, _, _ := e.store.Runs(context.Background(), store.Queued, store.Page{}); len(queued) != 0 {
		t.Errorf("runs still queued: %+v", queued)
	}
}

// TestBusyInterrupt: a turn sent while a run is in progress cancels it;
// the cancelled run's stream ends with RUN_FINISHED, cancelled, and the
// new turn runs.
func TestBusyInterrupt(t *testing.T) {
	e, url, entered, _ := busyEnv(t)
	first := e.post("/agui/workflows/interrupting", turnBody("r1", "one", url+"/block"))
	<-entered
	second := e.post("/agui/workflows/interrupting", turnBody("r2", "two", url+"/fast"))
	evs := e.stream(first)
	if o := outcome(t, evs); o["type"] != "cancelled" {
		t.Errorf("the interrupted run: outcome %v, want cancelled", o)
	}
	evs = e.stream(second)
	if got := text(evs); got != "start two\ndone two\n" {
		t.Errorf("the interrupting turn streamed %q", got)
	}
}

// TestBusyReject: the default answers 409 with Retry-After.
func TestBusyReject(t *testing.T) {
	e, url, entered, release := busyEnv(t)
	first := e.post("/agui/workflows/rejecting", turnBody("r1", "one", url+"/block"))
	<-entered
	resp := e.post("/agui/workflows/rejecting", turnBody("r2", "two", url+"/fast"))
	if resp.StatusCode != http.StatusConflict || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a turn on a busy thread answered %d, Retry-After %q; want 409 and when to try again", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp.Body.Close()
	release()
	e.stream(first)
}
