package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm/store"
)

// threadList is the answer of the thread list.
type threadList struct {
	Threads []server.ThreadInfo `json:"threads"`
	Next    string              `json:"next"`
}

// threadNames are the threads of a list as workflow/thread.
func threadNames(ths []server.ThreadInfo) []string {
	var names []string
	for _, th := range ths {
		names = append(names, th.Workflow+"/"+th.ThreadID)
	}
	return names
}

// listAll follows the thread list's cursor from query to the end, as who,
// and returns every thread listed and the number of requests it took.
func (e *env) listAll(query string, who ...string) ([]server.ThreadInfo, int) {
	e.t.Helper()
	var all []server.ThreadInfo
	after := ""
	for n := 1; ; n++ {
		q, _ := url.ParseQuery(query)
		if after != "" {
			q.Set("after", after)
		}
		var page threadList
		decode(e.t, e.send(http.MethodGet, "/agui/threads?"+q.Encode(), "", who...), &page)
		if page.Threads == nil {
			e.t.Fatalf("%s: threads is null, want a list", query)
		}
		all = append(all, page.Threads...)
		if page.Next == "" {
			return all, n
		}
		if page.Next == after || n > 1000 {
			e.t.Fatalf("%s: the cursor %q does not move", query, page.Next)
		}
		after = page.Next
	}
}

// turn runs one turn of workflow on thread as who and reads its stream.
func (e *env) turn(who []string, workflow, thread, runID, msg string) []event {
	e.t.Helper()
	body := fmt.Sprintf(`{"threadId": %q, "runId": %q, "messages": [{"id": %q, "role": "user", "content": %q}]}`, thread, runID, runID+"-m", msg)
	return e.stream(e.send(http.MethodPost, "/agui/workflows/"+workflow, body, who...))
}

// TestThreadList: each scope lists its own threads only, in the order of
// workflow and thread id, to the end whatever the page size; workflow and
// status filter them; bad parameters are 400, an unknown workflow 404.
func TestThreadList(t *testing.T) {
	e := newEnv(t, withTokens(t))
	ada, bob := bearer("ada-secret-token"), bearer("bob-secret-token")
	for _, c := range []struct{ workflow, thread string }{
		{"counter", "c2"}, {"counter", "c1"}, {"echo", "e1"}, {"refund", "f1"}, {"approve", "i1"}, {"nap", "n1"}, {"counter", "c3"},
	} {
		e.turn(ada, c.workflow, c.thread, "r1", "hi")
	}
	e.turn(bob, "counter", "b1", "r1", "hi")

	all := []string{"approve/i1", "counter/c1", "counter/c2", "counter/c3", "echo/e1", "nap/n1", "refund/f1"}
	for _, tc := range []struct {
		who   []string
		query string
		want  []string
	}{
		{ada, "", all},
		{ada, "limit=1", all},
		{ada, "limit=2", all},
		{ada, "limit=500", all},
		{ada, "limit=501", all},
		{ada, "workflow=counter&limit=2", []string{"counter/c1", "counter/c2", "counter/c3"}},
		{ada, "status=finished", []string{"echo/e1"}},
		{ada, "status=suspended&limit=2", []string{"approve/i1", "counter/c1", "counter/c2", "counter/c3", "nap/n1", "refund/f1"}},
		{ada, "status=suspended&workflow=refund", []string{"refund/f1"}},
		{ada, "status=running", nil},
		{ada, "workflow=slow", nil},
		{bob, "", []string{"counter/b1"}},
		{bob, "workflow=echo", nil},
	} {
		t.Run(tc.query, func(t *testing.T) {
			outer := e.t
			e.t = t
			defer func() { e.t = outer }()
			got, _ := e.listAll(tc.query, tc.who...)
			if names := threadNames(got); !slices.Equal(names, tc.want) {
				t.Errorf("listed %q, want %q", names, tc.want)
			}
		})
	}

	// A listed thread is the stored one.
	got, _ := e.listAll("workflow=counter&status=suspended&limit=1", ada...)
	th, err := e.store.Thread(context.Background(), store.Key{Scope: "ada", Workflow: "counter", Thread: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	want := server.ThreadInfo{ThreadID: "c1", Workflow: "counter", Status: "suspended", Created: th.Created, Updated: th.Updated,
		RunID: "r1", FirstSeq: th.FirstSeq, LastSeq: th.LastSeq, Version: th.Version}
	if len(got) == 0 || got[0] != want || want.LastSeq == 0 || want.Version == 0 {
		t.Errorf("listed %+v, want %+v", got, want)
	}

	// Errors.
	outer := e.t
	for _, tc := range []struct {
		query  string
		status int
		detail string
	}{
		{"status=asleep", 400, "status"},
		{"limit=0", 400, "limit"},
		{"limit=-3", 400, "limit"},
		{"limit=x", 400, "limit"},
		{"after=%25not-a-cursor", 400, "malformed cursor"},
		{"workflow=nope", 404, `no workflow has the id \"nope\"`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			e.t = t
			defer func() { e.t = outer }()
			p := e.problem(e.send(http.MethodGet, "/agui/threads?"+tc.query, "", ada...), tc.status)
			if all, _ := json.Marshal(p); !bytes.Contains(all, []byte(tc.detail)) {
				t.Errorf("problem %s does not mention %s", all, tc.detail)
			}
		})
	}
	e.t = outer
	e.problem(e.get("/agui/threads"), http.StatusUnauthorized)
}

// TestThreadListBoundedReads: a status filter that keeps few of many
// threads reads at most a bounded number of them per request: pages hold
// fewer threads than the limit, none even, with a cursor, and following it
// finds every thread the filter keeps. Threads of a workflow the server
// does not serve are left out the same way.
func TestThreadListBoundedReads(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	const n = 2500
	var want []string
	for i := range n {
		k := store.Key{Scope: "default", Workflow: "counter", Thread: fmt.Sprintf("t%05d", i)}
		status := store.Finished
		if i%1000 == 999 {
			status = store.Failed
			want = append(want, "counter/"+k.Thread)
		}
		if i%7 == 3 {
			k.Workflow = "retired"
		}
		l, err := e.store.Acquire(ctx, k, "test", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Commit(ctx, l, store.Commit{Checkpoint: &store.Thread{Status: status, RunID: "r1"}, Release: true}); err != nil {
			t.Fatal(err)
		}
	}
	got, requests := e.listAll("status=failed&limit=2")
	if names := threadNames(got); !slices.Equal(names, want) {
		t.Errorf("listed %q, want %q", names, want)
	}
	if requests < (n+999)/1000 {
		t.Errorf("%d requests listed %d threads: more than 1000 threads read per request", requests, n)
	}
	all, _ := e.listAll("limit=500")
	for _, th := range all {
		if th.Workflow == "retired" {
			t.Fatalf("listed %s/%s, of a workflow the server does not serve", th.Workflow, th.ThreadID)
		}
	}
	if len(all) != n-n/7 {
		t.Errorf("listed %d threads, want %d", len(all), n-n/7)
	}
}

// threadDetail is the answer of GET {base}/threads/{threadId}, as a map
// where the checks read fields that are absent for some threads.
func (e *env) threadDetail(path string, who ...string) map[string]any {
	e.t.Helper()
	var d map[string]any
	decode(e.t, e.send(http.MethodGet, path, "", who...), &d)
	return d
}

// TestDescribeThread: a thread says what it waits for, with what a client
// needs to answer it, and its runs with how each ended.
func TestDescribeThread(t *testing.T) {
	e := newEnv(t, nil)
	e.turn(nil, "counter", "c1", "r1", "hi")
	e.turn(nil, "counter", "c1", "r2", "again")
	e.turn(nil, "refund", "f1", "r1", "refund please")
	e.turn(nil, "approve", "i1", "r1", "A-1")
	e.turn(nil, "nap", "n1", "r1", "later")
	e.turn(nil, "echo", "e1", "r1", "hi")
	failed := last(e.turn(nil, "usage", "u1", "r1", "fail"))
	if failed["type"] != "RUN_ERROR" || str(failed["code"]) == "" {
		t.Fatalf("the failing run ended with %v", failed)
	}
	b := newBlocker(t)
	running := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered
	defer func() {
		b.release()
		e.stream(running)
	}()
	nap, err := e.store.Thread(context.Background(), store.Key{Scope: "default", Workflow: "nap", Thread: "n1"})
	if err != nil || nap.WakeAt.IsZero() {
		t.Fatalf("the napping thread: %+v, %v", nap, err)
	}
	j := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for _, tc := range []struct {
		thread, status, title string
		conversation          bool
		waiting               string // the JSON of waiting
		runs                  string // each run as id:status:outcome type or error code
	}{
		{"c1", "suspended", "Counter", true, `{"for":"user"}`, "r2:suspended:success r1:suspended:success"},
		{"f1", "suspended", "Refund", true, `{"for":"tools","toolCalls":[{"args":"{\"orderId\":\"A-1\"}","id":"CALL","name":"confirm_refund"}]}`, "r1:suspended:success"},
		{"i1", "suspended", "Approve", true, `{"for":"interrupts","interrupts":[{"id":"INTERRUPT","message":"Approve A-1?","reason":"approval"}]}`, "r1:suspended:interrupt"},
		{"n1", "suspended", "Nap", true, `{"for":"time","wakeAt":"` + nap.WakeAt.Format(time.RFC3339Nano) + `"}`, "r1:suspended:success"},
		{"e1", "finished", "Echo", false, `{"for":"nothing"}`, "r1:finished:success"},
		{"u1", "failed", "Usage", false, `{"for":"nothing"}`, "r1:failed:" + str(failed["code"])},
		{"busy", "running", "Slow", false, `{"for":"nothing"}`, "r1:running:"},
	} {
		t.Run(tc.thread, func(t *testing.T) {
			outer := e.t
			e.t = t
			defer func() { e.t = outer }()
			d := e.threadDetail("/agui/threads/" + tc.thread)
			if d["threadId"] != tc.thread || d["status"] != tc.status || d["title"] != tc.title || d["conversation"] != tc.conversation || d["runsNext"] != "" {
				t.Errorf("thread %s", j(d))
			}
			w := d["waiting"].(map[string]any)
			for _, list := range []string{"toolCalls", "interrupts"} {
				if items, ok := w[list].([]any); ok && len(items) > 0 {
					item := items[0].(map[string]any)
					if id := str(item["id"]); id == "" {
						t.Errorf("%s without an id: %s", list, j(item))
					}
					item["id"] = map[string]string{"toolCalls": "CALL", "interrupts": "INTERRUPT"}[list]
				}
			}
			if got := j(w); got != tc.waiting {
				t.Errorf("waiting %s\nwant    %s", got, tc.waiting)
			}
			var runs []string
			for _, r := range d["runs"].([]any) {
				r := r.(map[string]any)
				end := str(r["code"])
				if o, ok := r["outcome"].(map[string]any); ok {
					end = str(o["type"])
				}
				runs = append(runs, str(r["runId"])+":"+str(r["status"])+":"+end)
				if _, ok := r["input"]; ok {
					t.Errorf("run %s shows its input", j(r))
				}
				if r["status"] == "running" {
					if r["finished"] != nil || r["durationMs"] != nil {
						t.Errorf("a running run %s has ended", j(r))
					}
					continue
				}
				if r["finished"] == nil || r["durationMs"] == nil {
					t.Errorf("an ended run %s without finished and durationMs", j(r))
				}
				if r["status"] == "failed" && (str(r["error"]) == "" || r["outcome"] != nil) {
					t.Errorf("a failed run %s, want its error and code, without outcome", j(r))
				}
			}
			if got := strings.Join(runs, " "); got != tc.runs {
				t.Errorf("runs %s, want %s", got, tc.runs)
			}
		})
	}

	// The tool call and the interrupt are those the runs ended with.
	f1 := e.threadDetail("/agui/threads/f1")
	call := f1["waiting"].(map[string]any)["toolCalls"].([]any)[0].(map[string]any)["id"]
	pending := f1["runs"].([]any)[0].(map[string]any)["outcome"].(map[string]any)["pendingToolCallIds"].([]any)
	if len(pending) != 1 || pending[0] != call {
		t.Errorf("waits for the call %v, the run ended pending %v", call, pending)
	}
	i1 := e.threadDetail("/agui/threads/i1")
	waited := i1["waiting"].(map[string]any)["interrupts"]
	ended := i1["runs"].([]any)[0].(map[string]any)["outcome"].(map[string]any)["interrupts"]
	if j(waited) != j(ended) {
		t.Errorf("waits for the interrupts %s, the run ended with %s", j(waited), j(ended))
	}
}

// TestThreadRoutesErrors: the errors of the routes of one thread.
func TestThreadRoutesErrors(t *testing.T) {
	e := newEnv(t, withTokens(t))
	ada, bob := bearer("ada-secret-token"), bearer("bob-secret-token")
	e.turn(ada, "counter", "t1", "r1", "hi")
	e.turn(ada, "echo", "t1", "r1", "hi")
	e.turn(ada, "counter", "c1", "r1", "hi")
	long := strings.Repeat("x", server.MaxIDBytes+1)
	outer := e.t
	for _, tc := range []struct {
		who          []string
		path         string
		status       int
		detail       string
		wantAnswered bool
	}{
		{bob, "/agui/threads/c1", 404, `there is no thread \"c1\"`, false},
		{bob, "/agui/threads/c1/runs", 404, `there is no thread \"c1\"`, false},
		{bob, "/agui/threads/c1/events", 404, `there is no thread \"c1\"`, false},
		{ada, "/agui/threads/nope", 404, "nope", false},
		{ada, "/agui/threads/c1?workflow=nope", 404, "nope", false},
		{ada, "/agui/threads/c1?workflow=echo", 404, "c1", false},
		{ada, "/agui/threads/t1", 400, `workflows \"counter\" and \"echo\" both have a thread \"t1\": name one with the query parameter workflow`, false},
		{ada, "/agui/threads/t1/runs", 400, "name one with the query parameter workflow", false},
		{ada, "/agui/threads/t1/events", 400, "name one with the query parameter workflow", false},
		{ada, "/agui/threads/t1?workflow=echo", 200, "", true},
		{ada, "/agui/threads/" + long, 400, "threadId is 257 bytes long; the limit is 256", false},
		{ada, "/agui/threads/" + long + "/runs", 400, "threadId is 257 bytes long", false},
		{ada, "/agui/threads/" + long + "/events", 400, "threadId is 257 bytes long", false},
		{ada, "/agui/threads/c1/runs?limit=0", 400, "limit", false},
		{ada, "/agui/threads/c1/runs?after=%25x", 400, "malformed cursor", false},
		{ada, "/agui/threads/c1/events?limit=0", 400, "limit", false},
		{ada, "/agui/threads/c1/events?after=x", 400, `malformed cursor \"x\"`, false},
		{ada, "/agui/threads/c1/events?after=-1", 400, "malformed cursor", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			e.t = t
			defer func() { e.t = outer }()
			resp := e.send(http.MethodGet, tc.path, "", tc.who...)
			if tc.wantAnswered {
				if drain(resp) != tc.status {
					t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
				}
				return
			}
			p := e.problem(resp, tc.status)
			if all, _ := json.Marshal(p); !bytes.Contains(all, []byte(tc.detail)) {
				t.Errorf("problem %s does not mention %s", all, tc.detail)
			}
		})
	}
	e.t = outer
}

// TestListThreadRuns: a thread's runs come newest first, a page at a time to
// the end, never with their input.
func TestListThreadRuns(t *testing.T) {
	e := newEnv(t, nil)
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("r%d", i)
		e.turn(nil, "counter", "c1", id, "turn "+id)
		want = append([]string{id}, want...)
	}
	for _, limit := range []int{1, 2, 3, 7, 100} {
		var got []string
		after := ""
		for n := 0; ; n++ {
			var page struct {
				Runs []map[string]any `json:"runs"`
				Next string           `json:"next"`
			}
			decode(t, e.get(fmt.Sprintf("/agui/threads/c1/runs?limit=%d&after=%s", limit, url.QueryEscape(after))), &page)
			if len(page.Runs) > limit {
				t.Fatalf("limit %d: a page of %d runs", limit, len(page.Runs))
			}
			for _, r := range page.Runs {
				got = append(got, str(r["runId"]))
				if _, ok := r["input"]; ok {
					t.Errorf("run %v shows its input", r)
				}
			}
			if page.Next == "" {
				break
			}
			if n > 10 {
				t.Fatalf("limit %d: the cursor does not end", limit)
			}
			after = page.Next
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: runs %q, want %q", limit, got, want)
		}
	}
	// The thread's first page is the route's.
	d := e.threadDetail("/agui/threads/c1")
	var ids []string
	for _, r := range d["runs"].([]any) {
		ids = append(ids, str(r.(map[string]any)["runId"]))
	}
	if !slices.Equal(ids, want) || d["runsNext"] != "" {
		t.Errorf("the thread lists the runs %q (next %q), want %q", ids, d["runsNext"], want)
	}
}

// eventPage is the answer of the events route.
type eventPage struct {
	Events []struct {
		Seq   uint64          `json:"seq"`
		RunID string          `json:"runId"`
		Time  time.Time       `json:"time"`
		Event json.RawMessage `json:"event"`
	} `json:"events"`
	Next     string `json:"next"`
	FirstSeq uint64 `json:"firstSeq"`
	LastSeq  uint64 `json:"lastSeq"`
}

// TestThreadEvents: the events route pages through what the replay route
// streams (hidden events left out, silent ones in), each event with its
// run and time; a cursor into the events retention removed is 410.
func TestThreadEvents(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	e.turn(nil, "counter", "c1", "r1", "hi")
	e.turn(nil, "counter", "c1", "r2", "again")
	key := store.Key{Scope: "default", Workflow: "counter", Thread: "c1"}
	// Hide one event, as a workflow's hide_after does.
	l, err := e.store.Acquire(ctx, key, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Commit(ctx, l, store.Commit{Hide: []uint64{2}, Release: true}); err != nil {
		t.Fatal(err)
	}
	stored, err := e.store.Events(ctx, key, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var replayed []string
	resp := e.get("/agui/threads/c1/replay?limit=500")
	for f, err := range agui.ReadSSE(resp.Body) {
		if err != nil {
			t.Fatal(err)
		}
		replayed = append(replayed, f.ID+" "+string(f.Data))
	}
	resp.Body.Close()
	if len(replayed) != len(stored)-1 {
		t.Fatalf("replay: %d events of %d stored, want all but the hidden one", len(replayed), len(stored))
	}
	for _, limit := range []int{1, 2, 5, 100} {
		var got []string
		after, pages := "", 0
		for {
			var page eventPage
			q := "?limit=" + strconv.Itoa(limit)
			if after != "" {
				q += "&after=" + after
			}
			decode(t, e.get("/agui/threads/c1/events"+q), &page)
			pages++
			if page.FirstSeq != 1 || page.LastSeq != stored[len(stored)-1].Seq {
				t.Errorf("firstSeq %d lastSeq %d, want 1 and %d", page.FirstSeq, page.LastSeq, stored[len(stored)-1].Seq)
			}
			for _, ev := range page.Events {
				se := stored[ev.Seq-1]
				if ev.RunID != se.RunID || !ev.Time.Equal(se.Time) || se.Hidden {
					t.Errorf("event %d: run %q time %v; stored run %q time %v hidden %v", ev.Seq, ev.RunID, ev.Time, se.RunID, se.Time, se.Hidden)
				}
				got = append(got, strconv.FormatUint(ev.Seq, 10)+" "+string(ev.Event))
			}
			if page.Next == "" {
				break
			}
			if pages > len(stored)+1 {
				t.Fatalf("limit %d: the cursor does not end", limit)
			}
			after = page.Next
		}
		if !slices.Equal(got, replayed) {
			t.Errorf("limit %d: the events route gave\n%s\nthe replay\n%s", limit, strings.Join(got, "\n"), strings.Join(replayed, "\n"))
		}
	}

	// Retention: without a cursor, from the oldest kept; a cursor into
	// the removed events is 410.
	if _, _, err := e.store.Sweep(ctx, store.Retention{MaxEvents: 3}, time.Now()); err != nil {
		t.Fatal(err)
	}
	var page eventPage
	decode(t, e.get("/agui/threads/c1/events"), &page)
	last := stored[len(stored)-1].Seq
	if page.FirstSeq != last-2 || len(page.Events) == 0 || page.Events[0].Seq != last-2 || page.Next != "" {
		t.Errorf("after the sweep: firstSeq %d, events from %v, next %q; want from %d", page.FirstSeq, page.Events, page.Next, last-2)
	}
	p := e.problem(e.get("/agui/threads/c1/events?after=1"), http.StatusGone)
	if want := fmt.Sprintf("the events after 1 were removed; replay from %d", last-3); p["detail"] != want {
		t.Errorf("410 detail %q, want %q", p["detail"], want)
	}
}

// TestWorkflowSource: the description of one workflow holds its source
// file, whole, and the lines of its block; the list does not.
func TestWorkflowSource(t *testing.T) {
	e := newEnv(t, nil)
	text, err := os.ReadFile("testdata/refund.wf")
	if err != nil {
		t.Fatal(err)
	}
	text = lang.Clean(text)
	lines := strings.Split(string(text), "\n")
	for _, tc := range []struct {
		workflow, first string
	}{
		{"refund", "workflow refund {"},
		{"approve", "workflow approve {"},
	} {
		var w server.WorkflowInfo
		decode(t, e.get("/agui/workflows/"+tc.workflow), &w)
		src := w.Source
		if src == nil || src.File != "testdata/refund.wf" || src.Text != string(text) {
			t.Fatalf("%s: source %+v, want all of testdata/refund.wf", tc.workflow, src)
		}
		if src.StartLine < 1 || src.EndLine < src.StartLine || src.EndLine > len(lines) ||
			lines[src.StartLine-1] != tc.first || lines[src.EndLine-1] != "}" {
			t.Errorf("%s: lines %d to %d, want the workflow block", tc.workflow, src.StartLine, src.EndLine)
		}
	}
	resp := e.get("/agui/workflows")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(body, []byte(`"source"`)) {
		t.Errorf("the list holds sources: %.200s", body)
	}
}
