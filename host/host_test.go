package host_test

import (
	"context"
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
	log := slog.New(slog.DiscardHandler)
	k := store.Key{Scope: "default", Workflow: "fetch", Thread: "t1"}

	// The first process: the turn starts, calls the service and hangs.
	st, err := badger.Open(badger.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.Start(host.Config{Machine: m, Bundle: bundle, Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler())
	go func() {
		resp, err := http.Post(srv.URL+"/agui/workflows/fetch", "application/json",
			strings.NewReader(`{"threadId":"t1","runId":"r1","messages":[{"id":"m1","role":"user","content":"tea"}]}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "the turn to be running", func() bool {
		th, err := st.Thread(context.Background(), k)
		return err == nil && th.Status == store.Running
	})
	// The process dies: nothing shuts down, the store is gone.
	st.Close()
	srv.CloseClientConnections()
	srv.Close()

	// The next process on the same data resumes the turn.
	st2, err := badger.Open(badger.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	h2, err := host.Start(host.Config{Machine: m, Bundle: bundle, Store: st2, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Shutdown(context.Background())
	waitFor(t, "the turn to be resumed", func() bool {
		th, err := st2.Thread(context.Background(), k)
		return err == nil && th.Status == store.Suspended
	})
	r, err := st2.Run(context.Background(), k, "r1")
	if err != nil || r.Status != store.Suspended {
		t.Fatalf("run r1 after recovery: %+v, %v", r, err)
	}
	evs, err := st2.Events(context.Background(), k, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	said := ""
	for _, e := range evs {
		if ve, err := e.Decode(); err == nil && ve.Delta != "" {
			said += ve.Delta
		}
	}
	if said != "answer to tea" {
		t.Errorf("the resumed turn said %q, want %q", said, "answer to tea")
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 {
		t.Errorf("the service was called %d times, want 2 (the call the crash cut, then the resumed one)", calls)
	}
	// The first host's run is still blocked in the call: let it fail on
	// its closed store, and stop the first host.
	unhang()
	h.Shutdown(context.Background())
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
	log := slog.New(slog.DiscardHandler)
	k := store.Key{Scope: "default", Workflow: "nap", Thread: "t1"}
	start := func() (*badger.Store, *host.Host, *httptest.Server) {
		st, err := badger.Open(badger.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		h, err := host.Start(host.Config{Machine: m, Bundle: bundle, Store: st, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return st, h, httptest.NewServer(h.Handler())
	}
	st, h, srv := start()
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
	srv.Close()
	h.Shutdown(context.Background())
	st.Close()

	st, h, srv = start()
	defer func() {
		srv.Close()
		h.Shutdown(context.Background())
		st.Close()
	}()
	waitFor(t, "the thread to wake", func() bool {
		th, err := st.Thread(context.Background(), k)
		return err == nil && th.Status == store.Suspended && th.WakeAt.IsZero()
	})
	evs, err := st.Events(context.Background(), k, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	said := ""
	for _, e := range evs {
		if ve, err := e.Decode(); err == nil && ve.Delta != "" {
			said += ve.Delta + ";"
		}
	}
	if said != "sleeping;awake;" {
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
	st, err := badger.Open(badger.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := host.Start(host.Config{Machine: m, Bundle: bundle, Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	url := srv.URL + "/agui/workflows/nap"
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
