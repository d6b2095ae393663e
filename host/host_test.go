package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/host"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// TestRecoveryWhenEmbedded: a program that embeds aguic dies while a turn
// waits for an HTTP service; started again on the same data, its host
// resumes the turn, which calls the service again and ends the turn as it
// would have.
func TestRecoveryWhenEmbedded(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	hang := make(chan struct{})
	var unhangOnce sync.Once
	unhang := func() { unhangOnce.Do(func() { close(hang) }) }
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			<-hang // the process dies while it waits
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "%q", "answer to "+r.URL.Query().Get("q"))
	}))
	defer service.Close()
	defer unhang()
	t.Setenv("SERVICE_URL", service.URL)

	m, bundle := compile(`wf 1
workflow fetch {
  conversation = true
  flow {
    top: http GET "<<env('SERVICE_URL')>>/?q=<<$agent.latestUserMessage.content>>" -> $got
    say "<<$got.body>>"
    wait: suspend
    goto top
  }
}
`)
	dir := t.TempDir()
	k := store.Key{Scope: "default", Workflow: "fetch", Thread: "t1"}

	// The first process: the turn starts, calls the service and hangs.
	first := startProcess(t, dir, m, bundle)
	first.post("fetch", `{"threadId":"t1","runId":"r1","messages":[{"id":"m1","role":"user","content":"tea"}]}`)
	waitFor(t, "the turn to be running", func() bool {
		th, err := first.st.Thread(context.Background(), k)
		return err == nil && th.Status == store.Running
	})
	first.crash()

	// The next process on the same data resumes the turn.
	next := startProcess(t, dir, m, bundle)
	defer next.stop()
	st2 := next.st
	waitFor(t, "the turn to be resumed", func() bool {
		th, err := st2.Thread(context.Background(), k)
		return err == nil && th.Status == store.Suspended
	})
	r, err := st2.Run(context.Background(), k, "r1")
	if err != nil || r.Status != store.Suspended {
		t.Fatalf("run r1 after recovery: %+v, %v", r, err)
	}
	if said := said(t, st2, k); said != "answer to tea;" {
		t.Errorf("the resumed turn said %q, want %q", said, "answer to tea;")
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 {
		t.Errorf("the service was called %d times, want 2 (the call the crash cut, then the resumed one)", calls)
	}
	// The first host's run is still blocked in the call: let it fail on
	// its closed store, and stop the first host.
	unhang()
	first.h.Shutdown(context.Background())
}

// process is one start of a program that embeds aguic on a data
// directory.
type process struct {
	st  *badger.Store
	h   *host.Host
	srv *httptest.Server
}

// startProcess opens the store in dir and starts a host on it, serving m
// over HTTP.
func startProcess(t *testing.T, dir string, m *vm.Machine, bundle []byte) *process {
	t.Helper()
	return startProcessWith(t, dir, m, bundle, nil)
}

// startProcessWith is startProcess with the host's Config as edit leaves
// it.
func startProcessWith(t *testing.T, dir string, m *vm.Machine, bundle []byte, edit func(*host.Config)) *process {
	t.Helper()
	st, err := badger.Open(badger.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cfg := host.Config{Machine: m, Bundle: bundle, Store: st, Logger: slog.New(slog.DiscardHandler)}
	if edit != nil {
		edit(&cfg)
	}
	h, err := host.Start(cfg)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return &process{st: st, h: h, srv: httptest.NewServer(h.Handler())}
}

// post sends a run request to the workflow in the background; its stream
// is read and dropped.
func (p *process) post(workflow, body string) {
	go func() {
		resp, err := http.Post(p.srv.URL+"/agui/workflows/"+workflow, "application/json", strings.NewReader(body))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
}

// stop stops the process gracefully.
func (p *process) stop() {
	p.srv.Close()
	p.h.Shutdown(context.Background())
	p.st.Close()
}

// crash stops the process as a kill would: the store goes, its connections
// with it, and nothing shuts down.
func (p *process) crash() {
	p.st.Close()
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// said is the text a thread's stored events say, each text message's
// deltas followed by ";".
func said(t *testing.T, st store.Store, k store.Key) string {
	t.Helper()
	evs, err := st.Events(context.Background(), k, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range evs {
		if ve, err := e.Decode(); err == nil && ve.Delta != "" {
			b.WriteString(ve.Delta + ";")
		}
	}
	return b.String()
}

// waitFor waits, up to a minute, until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}

// TestSleepWakesAfterRestart: a conversation parked at a sleep node wakes
// when its time comes, though the program stopped and started again in
// between; a turn sent before then is refused, and the conversation keeps
// sleeping.
func TestSleepWakesAfterRestart(t *testing.T) {
	m, bundle := compile(`wf 1
workflow nap {
  conversation = true
  flow {
    top: say "sleeping"
    zz: sleep "2s"
    say "awake"
    wait: suspend
    goto top
  }
}
`)
	dir := t.TempDir()
	k := store.Key{Scope: "default", Workflow: "nap", Thread: "t1"}
	p := startProcess(t, dir, m, bundle)
	srv := p.srv
	if got := turn(srv.URL+"/agui/workflows/nap", "t1", "hi"); got != "sleeping" {
		t.Fatalf("the first turn said %q", got)
	}
	resp, err := http.Post(srv.URL+"/agui/workflows/nap", "application/json",
		strings.NewReader(`{"threadId":"t1","messages":[{"id":"m2","role":"user","content":"wake up"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "RUN_ERROR") || !strings.Contains(string(body), "sleeps until") {
		t.Errorf("a turn sent while the conversation sleeps: %s", body)
	}
	p.stop()

	p = startProcess(t, dir, m, bundle)
	defer p.stop()
	waitFor(t, "the thread to wake", func() bool {
		th, err := p.st.Thread(context.Background(), k)
		return err == nil && th.Status == store.Suspended && th.WakeAt.IsZero()
	})
	if said := said(t, p.st, k); said != "sleeping;awake;" {
		t.Errorf("the conversation said %q, want sleeping then awake", said)
	}
}

// TestFailedWakeIsNotRepeated: a wake whose run fails leaves the thread
// waiting, but not woken again every second: its next request goes on.
func TestFailedWakeIsNotRepeated(t *testing.T) {
	m, bundle := compile(`wf 1
workflow nap {
  conversation = true
  flow {
    top: say "sleeping"
    zz: sleep "1s"
    if $agent.latestUserMessage.content == "hi" {
      fail "nobody to wake"
    }
    say "awake"
    wait: suspend
    goto top
  }
}
`)
	p := startProcess(t, t.TempDir(), m, bundle)
	defer p.stop()
	st, url := p.st, p.srv.URL+"/agui/workflows/nap"
	if got := turn(url, "t1", "hi"); got != "sleeping" {
		t.Fatalf("the first turn said %q", got)
	}
	k := store.Key{Scope: "default", Workflow: "nap", Thread: "t1"}
	waitFor(t, "the wake to fail", func() bool {
		runs, _, err := st.Runs(context.Background(), store.Failed, store.Page{})
		return err == nil && len(runs) == 1
	})
	th, err := st.Thread(context.Background(), k)
	if err != nil || th.Status != store.Suspended || !th.WakeAt.IsZero() {
		t.Fatalf("after the failed wake: %+v, %v; want suspended, no wake time", th, err)
	}
	time.Sleep(2 * wakeLooks)
	if runs, _, err := st.Runs(context.Background(), store.Failed, store.Page{}); err != nil || len(runs) != 1 {
		t.Errorf("failed runs after more looks: %d, %v; want the one wake", len(runs), err)
	}
	if got := turn(url, "t1", "wake up"); got != "awake" {
		t.Errorf("the next turn said %q, want awake", got)
	}
}

// wakeLooks is how often the host looks for threads to wake.
const wakeLooks = time.Second

// TestCancelResumedRun: a run that the host resumes after a crash is
// cancelled by a cancel request, like any run: it ends cancelled, not
// where recovery would have taken it.
func TestCancelResumedRun(t *testing.T) {
	entered := make(chan struct{}, 4)
	hang := make(chan struct{})
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer service.Close()
	var unhang sync.Once
	defer unhang.Do(func() { close(hang) })
	t.Setenv("SERVICE_URL", service.URL)
	m, bundle := compile(`wf 1
workflow fetch {
  conversation = true
  flow {
    top: http GET "<<env('SERVICE_URL')>>" -> $got
    say "fetched"
    wait: suspend
    goto top
  }
}
`)
	dir := t.TempDir()
	k := store.Key{Scope: "default", Workflow: "fetch", Thread: "t1"}
	first := startProcess(t, dir, m, bundle)
	first.post("fetch", `{"threadId":"t1","runId":"r1","messages":[{"id":"m1","role":"user","content":"tea"}]}`)
	<-entered
	first.crash()

	next := startProcess(t, dir, m, bundle)
	defer next.stop()
	<-entered // the resumed run calls the service again, and waits
	resp, err := http.Post(next.srv.URL+"/agui/cancel", "application/json", strings.NewReader(`{"threadId":"t1"}`))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || c["status"] != "cancelled" || c["runId"] != "r1" {
		t.Errorf("cancel of the resumed run: %d %v", resp.StatusCode, c)
	}
	r, err := next.st.Run(context.Background(), k, "r1")
	if err != nil || r.Status != store.Cancelled {
		t.Errorf("run r1: %s, %v; want cancelled", r.Status, err)
	}
	// The first host's run still waits in its call: let it end.
	unhang.Do(func() { close(hang) })
	first.h.Shutdown(context.Background())
}
