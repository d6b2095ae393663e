package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// Two servers on one store behave as two replicas behind a load
// balancer: a client may reach either one for a run that executes on the
// other. The store carries the changes and the cancel requests between
// them (within the process here, through PostgreSQL between processes).

// replica is a second server on e's store.
type replica struct {
	e    *env
	http *httptest.Server
}

func newReplica(t *testing.T, e *env, owner string, m *vm.Machine) *replica {
	t.Helper()
	if m == nil {
		m = e.machine(t)
	}
	srv, err := server.New(server.Config{Machine: m, Store: e.store, Logger: discardLogger(), Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		srv.Shutdown(t.Context())
	})
	return &replica{e: e, http: hs}
}

func (r *replica) do(method, path, body string, header ...string) *http.Response {
	r.e.t.Helper()
	req, err := http.NewRequest(method, r.http.URL+path, strings.NewReader(body))
	if err != nil {
		r.e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := r.http.Client().Do(req)
	if err != nil {
		r.e.t.Fatal(err)
	}
	return resp
}

// pull reads a stream a frame at a time.
func pull(t *testing.T, resp *http.Response) (next func() (event, bool), stop func()) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	n, s := iter.Pull2(agui.ReadSSE(resp.Body))
	return func() (event, bool) {
			f, err, ok := n()
			if !ok {
				return event{}, false
			}
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			var m map[string]any
			if err := json.Unmarshal(f.Data, &m); err != nil {
				t.Fatalf("frame %q: %v", f.Data, err)
			}
			return event{id: f.ID, data: m}, true
		}, func() {
			s()
			resp.Body.Close()
		}
}

// until reads frames until one of type typ (and read, when not nil, says
// it is the one), and returns every frame read.
func until(t *testing.T, next func() (event, bool), typ string, match func(event) bool) []event {
	t.Helper()
	var evs []event
	for {
		ev, ok := next()
		if !ok {
			t.Fatalf("the stream ended before a %s; read %v", typ, types(evs))
		}
		evs = append(evs, ev)
		if ev.typ() == typ && (match == nil || match(ev)) {
			return evs
		}
	}
}

func types(evs []event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.typ())
	}
	return out
}

func rest(next func() (event, bool)) []event {
	var evs []event
	for ev, ok := next(); ok; ev, ok = next() {
		evs = append(evs, ev)
	}
	return evs
}

func TestCancelAcrossReplicas(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker(t)
	other := newReplica(t, e, "replica-2", nil)
	first := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered // the run executes on the first server, its start is stored
	var c map[string]any
	decode(t, other.do(http.MethodPost, "/agui/cancel", `{"threadId": "busy"}`), &c)
	if c["status"] != "cancelled" || c["runId"] != "r1" || c["workflowId"] != "slow" {
		t.Errorf("cancel on the other replica answered %v", c)
	}
	if o := outcome(t, e.stream(first)); o["type"] != "cancelled" {
		t.Errorf("the run's own stream ended with %v, want cancelled", o)
	}
	e.problem(other.do(http.MethodPost, "/agui/threads/busy/interrupt", ``), http.StatusNotFound)
}

func TestJoinAcrossReplicas(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker(t)
	other := newReplica(t, e, "replica-2", nil)
	first := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered

	// On the other replica the run is followed as it is committed: what
	// it said before the HTTP call is there before the call returns.
	next, stop := pull(t, other.do(http.MethodGet, "/agui/threads/busy/runs/r1/events", ""))
	defer stop()
	head := until(t, next, "TEXT_MESSAGE_CONTENT", nil)
	if head[0].typ() != "RUN_STARTED" || head[0].data["runId"] != "r1" || head[0].data["threadId"] != "busy" {
		t.Errorf("the followed stream starts with %v", head[0].data)
	}
	if got := text(head); got != "Fetching.\n" {
		t.Errorf("before the call returned the follower read %q", got)
	}
	cursor := head[len(head)-1].id
	if cursor == "" {
		t.Errorf("a stored event came without an id")
	}
	b.release()
	all := append(head, rest(next)...)
	if got := text(all); got != "Fetching.\nFetched ok.\n" {
		t.Errorf("the follower read %q", got)
	}
	if o := outcome(t, all); o["type"] != "success" {
		t.Errorf("the follower's stream ended with %v", o)
	}
	e.stream(first)

	// Reconnecting after the cursor gives the rest only, and the end;
	// on either replica, after the run ended too.
	for _, via := range []*replica{other, {e: e, http: e.http}} {
		evs := e.stream(via.do(http.MethodGet, "/agui/threads/busy/runs/r1/events", "", "Last-Event-ID", cursor))
		if got := text(evs); got != "Fetched ok.\n" {
			t.Errorf("after cursor %s the stream holds %q, want the rest", cursor, got)
		}
	}
	e.problem(other.do(http.MethodGet, "/agui/threads/busy/runs/nope/events", ""), http.StatusNotFound)
	e.problem(other.do(http.MethodGet, "/agui/threads/busy/runs/r1/events?cursor=x", ""), http.StatusBadRequest)
}

func TestJoinLocalRun(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker(t)
	first := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered
	// In the process that executes it, the run is followed as it happens.
	next, stop := pull(t, e.get("/agui/threads/busy/runs/r1/events"))
	defer stop()
	head := until(t, next, "TEXT_MESSAGE_CONTENT", nil)
	if got := text(head); got != "Fetching.\n" {
		t.Errorf("the local follower read %q", got)
	}
	b.release()
	all := append(head, rest(next)...)
	if o := outcome(t, all); o["type"] != "success" || text(all) != "Fetching.\nFetched ok.\n" {
		t.Errorf("the local follower read %q, ending %v", text(all), o)
	}
	e.stream(first)
}

func TestReplayFollowsAcrossReplicas(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker(t)
	other := newReplica(t, e, "replica-2", nil)
	first := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered
	next, stop := pull(t, other.do(http.MethodGet, "/agui/threads/busy/replay?follow=true", ""))
	defer stop()
	head := until(t, next, "TEXT_MESSAGE_CONTENT", func(ev event) bool { return ev.data["delta"] == "Fetching." })
	b.release()
	// The log goes on with the run's events, and ends once it has ended.
	all := append(head, rest(next)...)
	if got := text(all); !strings.HasSuffix(got, "Fetching.\nFetched ok.\n") {
		t.Errorf("the followed replay holds %q", got)
	}
	for _, ev := range all {
		if ev.typ() == "RUN_STARTED" || ev.typ() == "RUN_FINISHED" {
			t.Errorf("a replay holds %s: it is the log, with no run events of its own", ev.typ())
		}
	}
	e.stream(first)
	// With nothing in progress, a followed replay ends at the end of the log.
	if evs := rest(must(pull(t, other.do(http.MethodGet, "/agui/threads/busy/replay?follow=true", "")))); len(evs) != len(all) {
		t.Errorf("a followed replay of a thread at rest holds %d events, want %d", len(evs), len(all))
	}
}

func must(next func() (event, bool), _ func()) func() (event, bool) { return next }

// TestBusyPoliciesAcrossReplicas: the workflow's busy policy holds when
// the turns reach different replicas.
func TestBusyPoliciesAcrossReplicas(t *testing.T) {
	t.Run("enqueue", func(t *testing.T) {
		e, url, entered, release := busyEnv(t)
		m, _ := busyMachine(t)
		b, c := newReplica(t, e, "replica-b", m), newReplica(t, e, "replica-c", m)
		first := e.post("/agui/workflows/queueing", turnBody("r1", "one", url+"/block"))
		<-entered
		// Queued on two other replicas, in this order.
		second := b.do(http.MethodPost, "/agui/workflows/queueing", turnBody("r2", "two", url+"/fast"))
		waitQueued(t, e, "queueing", 1)
		third := c.do(http.MethodPost, "/agui/workflows/queueing", turnBody("r3", "three", url+"/fast"))
		waitQueued(t, e, "queueing", 2)
		// A turn sent to the first replica now goes behind them.
		fourth := e.post("/agui/workflows/queueing", turnBody("r4", "four", url+"/fast"))
		release()
		for i, resp := range []*http.Response{first, second, third, fourth} {
			word := []string{"one", "two", "three", "four"}[i]
			if got, want := text(e.stream(resp)), "start "+word+"\ndone "+word+"\n"; got != want {
				t.Errorf("turn %d streamed %q, want %q", i+1, got, want)
			}
		}
		if got := doneOrder(t, e, "queueing"); got != "[one two three four]" {
			t.Errorf("the turns ran in the order %s", got)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		e, url, entered, _ := busyEnv(t)
		m, _ := busyMachine(t)
		b := newReplica(t, e, "replica-b", m)
		first := e.post("/agui/workflows/interrupting", turnBody("r1", "one", url+"/block"))
		<-entered
		second := b.do(http.MethodPost, "/agui/workflows/interrupting", turnBody("r2", "two", url+"/fast"))
		if o := outcome(t, e.stream(first)); o["type"] != "cancelled" {
			t.Errorf("the interrupted run on the first replica: outcome %v, want cancelled", o)
		}
		if got := text(e.stream(second)); got != "start two\ndone two\n" {
			t.Errorf("the interrupting turn streamed %q", got)
		}
	})
	t.Run("reject", func(t *testing.T) {
		e, url, entered, release := busyEnv(t)
		m, _ := busyMachine(t)
		b := newReplica(t, e, "replica-b", m)
		first := e.post("/agui/workflows/rejecting", turnBody("r1", "one", url+"/block"))
		<-entered
		e.problem(b.do(http.MethodPost, "/agui/workflows/rejecting", turnBody("r2", "two", url+"/fast")), http.StatusConflict)
		release()
		e.stream(first)
	})
}

// waitQueued waits until the workflow's thread t has n queued runs.
func waitQueued(t *testing.T, e *env, workflow string, n int) {
	t.Helper()
	k := store.Key{Scope: "default", Workflow: workflow, Thread: "t"}
	for range 500 {
		runs, err := e.store.Pending(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		queued := 0
		for _, r := range runs {
			if r.Status == store.Queued {
				queued++
			}
		}
		if queued == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("thread t of %s never had %d queued runs", workflow, n)
}

// doneOrder lists the turns whose "done" the workflow's thread t said, in
// the order of its log.
func doneOrder(t *testing.T, e *env, workflow string) string {
	t.Helper()
	evs, err := e.store.Events(t.Context(), store.Key{Scope: "default", Workflow: workflow, Thread: "t"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, se := range evs {
		ev, _ := se.Decode()
		if ev.Type == vm.TextContent && strings.HasPrefix(ev.Delta, "done ") {
			order = append(order, strings.TrimPrefix(ev.Delta, "done "))
		}
	}
	return fmt.Sprint(order)
}

// TestRestoreDuringRunAcrossReplicas: a client that reloads while a run
// is in progress on another replica gets the conversation before the run,
// then the run's events as they are committed, then its end.
func TestRestoreDuringRunAcrossReplicas(t *testing.T) {
	e, url, entered, release := busyEnv(t)
	m, _ := busyMachine(t)
	b := newReplica(t, e, "replica-b", m)
	e.stream(e.post("/agui/workflows/rejecting", turnBody("r1", "one", url+"/fast")))
	<-entered
	second := e.post("/agui/workflows/rejecting", turnBody("r2", "two", url+"/block"))
	for p := <-entered; p != "/block"; p = <-entered {
	}
	reload := `{"threadId": "t", "runId": "reload", "messages": []}`
	for _, via := range []string{"run", "history"} {
		var resp *http.Response
		if via == "run" {
			resp = b.do(http.MethodPost, "/agui/workflows/rejecting", reload, "Accept", "text/event-stream")
		} else {
			resp = b.do(http.MethodPost, "/agui/history", `{"threadId": "t", "workflowId": "rejecting"}`, "Accept", "text/event-stream")
		}
		next, stop := pull(t, resp)
		head := until(t, next, "MESSAGES_SNAPSHOT", nil)
		if got := types(head); fmt.Sprint(got) != "[RUN_STARTED STATE_SNAPSHOT MESSAGES_SNAPSHOT]" {
			t.Errorf("%s: the restore starts with %v", via, got)
		}
		snap, _ := json.Marshal(head[2].data["messages"])
		if !strings.Contains(string(snap), "done one") || strings.Contains(string(snap), "two") {
			t.Errorf("%s: the snapshot holds %s; want the first turn only", via, snap)
		}
		// The run's events saved before its HTTP call are there already.
		until(t, next, "TEXT_MESSAGE_CONTENT", func(ev event) bool { return ev.data["delta"] == "start two" })
		if via == "run" {
			stop() // the client goes away; the run goes on
			continue
		}
		release()
		tail := rest(next)
		stop()
		if got := text(tail); got != "done two\n" {
			t.Errorf("%s: after the call the restore streamed %q", via, got)
		}
		if end := tail[len(tail)-1]; end.typ() != "RUN_FINISHED" {
			t.Errorf("%s: the restore ended with %v", via, end.data)
		}
	}
	e.stream(second)
}

// TestCancelStrandedRun: a run whose process died (its lease expired and
// nobody resumed it yet) is cancelled by the replica that takes the
// request: the thread goes back to where the turn found it.
func TestCancelStrandedRun(t *testing.T) {
	e := newEnv(t, nil)
	ctx := t.Context()
	turn := func(run, text string) []event {
		return e.stream(e.post("/agui/workflows/counter", `{"threadId": "c1", "runId": "`+run+`", "messages": [{"id": "m-`+run+`", "role": "user", "content": "`+text+`"}]}`))
	}
	turn("r1", "one")
	k := store.Key{Scope: "default", Workflow: "counter", Thread: "c1"}
	th, err := e.store.Thread(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	// A process takes the thread, writes the start of run r2, and dies.
	l, err := e.store.Acquire(ctx, k, "dead-process", 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	input, _ := json.Marshal(map[string]any{"deltas": len(th.Deltas), "waiting": map[string]any{"runId": th.RunID, "wait": json.RawMessage(th.Wait)}})
	if _, err := e.store.Commit(ctx, l, store.Commit{
		Checkpoint: &store.Thread{Status: store.Running, Hash: th.Hash, RunID: "r2"},
		Run:        &store.Run{ID: "r2", Status: store.Running, Started: time.Now(), Input: input},
		NewRun:     true,
	}); err != nil {
		t.Fatal(err)
	}
	for time.Now().Before(l.Expires.Add(time.Millisecond)) {
		time.Sleep(time.Millisecond)
	}
	var c map[string]any
	decode(t, e.post("/agui/cancel", `{"threadId": "c1"}`), &c)
	if c["status"] != "cancelled" || c["runId"] != "r2" {
		t.Errorf("cancel of a stranded run answered %v", c)
	}
	r2, err := e.store.Run(ctx, k, "r2")
	if err != nil || r2.Status != store.Cancelled {
		t.Errorf("run r2 is %s (%v), want cancelled", r2.Status, err)
	}
	if after, _ := e.store.Thread(ctx, k); after.Status != store.Suspended || after.RunID != th.RunID {
		t.Errorf("the thread is %s after run %s; want suspended after %s, where the turn found it", after.Status, after.RunID, th.RunID)
	}
	if got := text(turn("r3", "two")); got != "Turn 2: two\n" {
		t.Errorf("the next turn streamed %q", got)
	}
}

// TestHandOverAtShutdown: a server that shares its store with others
// hands the runs still in progress at the end of its grace over to them:
// each stops where it is, its lease free, and recovery goes on with it.
func TestHandOverAtShutdown(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker(t)
	srv, err := server.New(server.Config{Machine: e.machine(t), Store: e.store, Logger: discardLogger(), Owner: "leaving", HandOver: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	leaving := &replica{e: e, http: hs}
	resp := leaving.do(http.MethodPost, "/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // no grace
	srv.Shutdown(ctx)
	evs := e.stream(resp)
	if end := last(evs); end["type"] != "RUN_ERROR" || end["code"] != "handed_over" || !strings.Contains(str(end["message"]), "/agui/threads/busy/runs/r1/events") {
		t.Errorf("the stream of a run handed over ended with %v", end)
	}
	k := store.Key{Scope: "default", Workflow: "slow", Thread: "busy"}
	if r, err := e.store.Run(t.Context(), k, "r1"); err != nil || r.Status != store.Running {
		t.Errorf("run r1 after the hand-over: %s, %v; want still running, for recovery", r.Status, err)
	}
	keys, err := e.store.Stranded(t.Context(), 10)
	if err != nil || len(keys) != 1 || keys[0] != k {
		t.Fatalf("stranded threads after the hand-over: %v, %v; want the run's", keys, err)
	}
	// Another process takes it over and finishes it.
	b.release()
	rec, err := store.Claim(t.Context(), e.store, "other", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	out := rec.Resume(t.Context(), func(context.Context, string) (*vm.Machine, error) { return e.machine(t), nil }, 1, nil)
	rec.Release(t.Context())
	if len(out) != 1 || out[0].Err != nil || out[0].Outcome.Status != vm.Finished {
		t.Fatalf("the recovery of the run handed over: %+v", out)
	}
	if got := text(e.stream(e.get("/agui/threads/busy/runs/r1/events"))); got != "Fetching.\nFetched ok.\n" {
		t.Errorf("the run handed over, followed to its end, said %q", got)
	}
}

// TestRestoreDuringRunKeepsSilentMessages: a client that reloads during a
// run ends with the conversation its history holds once the run has
// ended. The snapshot is of the conversation before the run, so the
// stream brings the run's silent messages too (here the user's words,
// which the workflow keeps as the client's message), which its own
// stream leaves out because its client has them.
func TestRestoreDuringRunKeepsSilentMessages(t *testing.T) {
	e, url, entered, release := busyEnv(t)
	m, _ := busyMachine(t)
	b := newReplica(t, e, "replica-b", m)
	e.stream(e.post("/agui/workflows/keeping", turnBody("r1", "one", url+"/fast")))
	<-entered
	second := e.post("/agui/workflows/keeping", turnBody("r2", "two", url+"/block"))
	for p := <-entered; p != "/block"; p = <-entered {
	}
	const history = `{"threadId": "t", "workflowId": "keeping"}`
	next, stop := pull(t, b.do(http.MethodPost, "/agui/history", history, "Accept", "text/event-stream"))
	defer stop()
	evs := until(t, next, "TEXT_MESSAGE_CONTENT", func(ev event) bool { return ev.data["delta"] == "start two" })
	release()
	evs = append(evs, rest(next)...)
	e.stream(second)

	// The messages the stream gives a client: the snapshot's, then each
	// text message of the run.
	var got []string
	for _, ev := range evs {
		switch ev.typ() {
		case "MESSAGES_SNAPSHOT":
			for _, m := range ev.data["messages"].([]any) {
				m := m.(map[string]any)
				got = append(got, fmt.Sprint(m["id"], " ", m["role"], ": ", m["content"]))
			}
		case "TEXT_MESSAGE_START":
			got = append(got, fmt.Sprint(ev.data["messageId"], " ", ev.data["role"], ": "))
		case "TEXT_MESSAGE_CONTENT":
			got[len(got)-1] += str(ev.data["delta"])
		}
	}
	var h struct{ Messages []map[string]any }
	decode(t, b.do(http.MethodPost, "/agui/history", history), &h)
	var want []string
	for _, m := range h.Messages {
		want = append(want, fmt.Sprint(m["id"], " ", m["role"], ": ", m["content"]))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || !strings.Contains(fmt.Sprint(want), "m-r2 user: two") {
		t.Errorf("the restore during the run gave the messages\n%q\nthe history holds\n%q", got, want)
	}
}
