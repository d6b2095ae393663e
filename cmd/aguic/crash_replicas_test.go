package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/pgtest"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/postgres"
)

// The crash campaign across replicas: several `aguic serve` processes on
// one PostgreSQL schema, killed with SIGKILL at random moments while the
// others serve, their runs taken over by the others once their leases
// expire. The clients, the turns and the checks are the single-node
// campaign's (crash_test.go). This file holds the cluster of processes,
// the PostgreSQL plumbing and TestKilledReplicaRecovered, a small
// deterministic takeover; crash_replicas_campaign_test.go holds the
// campaign (TestCrashCampaignReplicas).

// replicaLeaseTTL is the --lease-ttl of the replicas: short, so the runs
// of a replica that died are taken over quickly (within a lease and the
// host's look for stranded runs, every two seconds).
const replicaLeaseTTL = "2s"

// replicaStore returns the URL of a fresh PostgreSQL schema for the
// test's replicas (dropped at its end), with a small pool per process:
// other test packages share the server's connections. It skips the test
// without AGUIC_TEST_POSTGRES.
func replicaStore(t *testing.T, poolMax int) string {
	t.Helper()
	schema := pgtest.Schema(t)
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatalf("%s: %v", pgtest.Env, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("pool_max_conns", fmt.Sprint(poolMax))
	u.RawQuery = q.Encode()
	return u.String()
}

// openReplicaStore opens the replicas' store in the test, to read what
// they keep (the runs' records); it is closed at the test's end, before
// the schema is dropped.
func openReplicaStore(t *testing.T, storeURL string) *postgres.Store {
	t.Helper()
	connect, schema := splitSchema(storeURL)
	if u, err := url.Parse(connect); err == nil {
		q := u.Query()
		q.Set("pool_max_conns", "2") // the test reads little
		u.RawQuery = q.Encode()
		connect = u.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, postgres.Options{URL: connect, Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("open the replicas' store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// pendingRuns lists the runs still running or queued on the threads.
func pendingRuns(ctx context.Context, st store.Store, keys []store.Key) ([]store.Run, error) {
	var out []store.Run
	for _, k := range keys {
		runs, err := st.Pending(ctx, k)
		if err != nil {
			return nil, err
		}
		out = append(out, runs...)
	}
	return out, nil
}

// crashCluster is the replicas of a campaign: a fixed number of slots,
// each served by one process at a time, all on one store. Clients send
// each request to the next slot, round-robin, as a load balancer that
// does not know which replicas are up: a slot that is down has its last
// process's address, which refuses connections (or, once another process
// took its port, answers as that one). A restarted replica listens on its
// slot's port again, or on a new one when that port was taken meanwhile.
//
// Generations number every process the cluster started, whatever its
// slot.
type crashCluster struct {
	bin  string
	args func(addr string) []string // serve's arguments, listening on addr
	env  []string

	next atomic.Uint64 // the round-robin

	mu      sync.Mutex
	slots   []crashSlot
	procs   []*crashProc // by generation - 1
	logs    []string     // the logs of the processes that are gone, by generation - 1
	changed chan struct{}
	rounds  int      // kill rounds done
	kills   int      // processes killed
	deaths  []string // the processes that exited without being killed
	moves   []string // restarts that found their port taken
}

// crashSlot is one replica: the process that serves it, if any.
type crashSlot struct {
	proc *crashProc // nil while down
	url  string     // the last process's URL, "" before the first start
	addr string     // the last process's host:port
	gen  int        // the last process's generation
}

func newCrashCluster(bin string, slots int, args func(addr string) []string, env []string) *crashCluster {
	return &crashCluster{bin: bin, args: args, env: env, slots: make([]crashSlot, slots), changed: make(chan struct{})}
}

// notify wakes the waiters; c.mu is held.
func (c *crashCluster) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// start starts a process on slot i, which must be down: on the slot's
// last port, or on a new one when another socket holds it now.
func (c *crashCluster) start(i int) error {
	c.mu.Lock()
	addr := c.slots[i].addr
	c.mu.Unlock()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	p, err := startCrashProc(c.bin, c.args(addr), c.env)
	if err != nil && addr != "127.0.0.1:0" && strings.Contains(err.Error(), "address already in use") {
		c.mu.Lock()
		c.moves = append(c.moves, fmt.Sprintf("replica %d could not listen on %s again: moved to a new port", i, addr))
		c.mu.Unlock()
		p, err = startCrashProc(c.bin, c.args("127.0.0.1:0"), c.env)
	}
	if err != nil {
		return fmt.Errorf("replica %d: %w", i, err)
	}
	u, perr := url.Parse(p.log.url)
	if perr != nil {
		p.kill()
		return fmt.Errorf("replica %d logged the URL %q: %v", i, p.log.url, perr)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs = append(c.procs, p)
	c.logs = append(c.logs, "")
	gen := len(c.procs)
	c.slots[i] = crashSlot{proc: p, url: p.log.url, addr: u.Host, gen: gen}
	c.notify()
	go func() {
		<-p.exited
		if p.killed.Load() {
			return
		}
		log := p.log.String()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.logs[gen-1] = log
		c.deaths = append(c.deaths, fmt.Sprintf("replica %d, process %d exited by itself (%v); its log ends:\n%s", i, gen, p.err, crashTail(log, 30)))
		if c.slots[i].proc == p {
			c.slots[i].proc = nil
			c.notify()
		}
	}()
	return nil
}

// kill kills slot i's process with SIGKILL, if it has one, and keeps its
// log.
func (c *crashCluster) kill(i int) {
	c.mu.Lock()
	p, gen := c.slots[i].proc, c.slots[i].gen
	c.mu.Unlock()
	if p == nil {
		return
	}
	p.kill()
	c.mu.Lock()
	if c.slots[i].proc == p {
		c.slots[i].proc = nil
	}
	c.logs[gen-1] = p.log.String()
	c.kills++
	c.notify()
	c.mu.Unlock()
}

// killAll kills every process (the test's cleanup).
func (c *crashCluster) killAll() {
	for i := range c.slots {
		c.kill(i)
	}
}

// up lists the slots a process serves; down the others.
func (c *crashCluster) up() (up, down []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.slots {
		if s.proc != nil {
			up = append(up, i)
		} else {
			down = append(down, i)
		}
	}
	return up, down
}

// waitUp waits until at least n slots are up, and returns them.
func (c *crashCluster) waitUp(ctx context.Context, n int) []int {
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		up, _ := c.up()
		if len(up) >= n {
			return up
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return up
		}
	}
}

// endRound counts a kill round done.
func (c *crashCluster) endRound() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rounds++
	c.notify()
}

// waitRounds waits until n kill rounds are done.
func (c *crashCluster) waitRounds(ctx context.Context, n int) {
	for {
		c.mu.Lock()
		rounds, ch := c.rounds, c.changed
		c.mu.Unlock()
		if rounds >= n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

func (c *crashCluster) killed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kills
}

func (c *crashCluster) died() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.deaths...)
}

func (c *crashCluster) moved() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.moves...)
}

// current returns the next slot's URL, round-robin, whether its process
// is up or not (crashServers).
func (c *crashCluster) current(ctx context.Context) (string, int, error) {
	for {
		n := c.next.Add(1)
		c.mu.Lock()
		for j := range len(c.slots) {
			s := c.slots[(int(n)+j)%len(c.slots)]
			if s.url != "" {
				c.mu.Unlock()
				return s.url, s.gen, nil
			}
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return "", 0, ctx.Err()
		}
	}
}

// stale reports whether the process of generation gen is gone
// (crashServers).
func (c *crashCluster) stale(gen int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen < 1 || gen > len(c.procs) {
		return true
	}
	p := c.procs[gen-1]
	for _, s := range c.slots {
		if s.proc == p {
			return false
		}
	}
	return true
}

// settle waits until the process of generation gen is gone or d passes
// (crashServers).
func (c *crashCluster) settle(ctx context.Context, gen int, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		if c.stale(gen) {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// allLogs returns the log of every process so far, by generation.
func (c *crashCluster) allLogs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]string(nil), c.logs...)
	for _, s := range c.slots {
		if s.proc != nil {
			out[s.gen-1] = s.proc.log.String()
		}
	}
	return out
}

// url returns slot i's last URL.
func (c *crashCluster) url(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[i].url
}

// log returns the log of slot i's last process.
func (c *crashCluster) log(i int) string {
	c.mu.Lock()
	gen := c.slots[i].gen
	c.mu.Unlock()
	return c.allLogs()[gen-1]
}

// crashReplicaArgs are serve's arguments for a replica on the store.
func crashReplicaArgs(storeURL, wfDir string) func(addr string) []string {
	return func(addr string) []string {
		return []string{"serve", "--store", storeURL, "--lease-ttl", replicaLeaseTTL, "--addr", addr, wfDir}
	}
}

// crashResumed counts, in the logs, the runs each process resumed for
// another (or for a process before it): "resumed an interrupted run"
// lines, by run id.
func crashResumed(logs []string) map[string][]int {
	out := map[string][]int{}
	for g, l := range logs {
		for line := range strings.SplitSeq(l, "\n") {
			if !strings.Contains(line, `msg="resumed an interrupted run"`) {
				continue
			}
			for f := range strings.FieldsSeq(line) {
				if id, ok := strings.CutPrefix(f, "run="); ok {
					out[id] = append(out[id], g+1)
				}
			}
		}
	}
	return out
}

// TestKilledReplicaRecovered: two replicas on one store; runs in progress
// on replica A, each waiting on an HTTP call, when A is killed with
// SIGKILL. Replica B takes them over once their leases expire: every run
// ends, its record says how, the history holds its turn once, with its
// answer, and a client that follows one of them on B, having lost its
// stream with A, gets the run's end. Every thread then takes one more turn
// on B.
func TestKilledReplicaRecovered(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it")
	}
	storeURL := replicaStore(t, 4)
	st := openReplicaStore(t, storeURL)
	dir := t.TempDir()
	bin := buildAguic(t, dir)
	wfDir := writeWorkflow(t, dir, "crash.wf", crashWorkflows)

	// The turns' HTTP calls wait until released; then they answer at
	// once, echoing the path.
	const n = 6
	entered := make(chan string, 4*n)
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	var callsMu sync.Mutex
	calls := map[string]int{}
	blocker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		callsMu.Lock()
		calls[name]++
		callsMu.Unlock()
		select {
		case entered <- name:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "ok-%s", name)
	}))
	t.Cleanup(blocker.Close)
	t.Cleanup(releaseAll) // before blocker.Close: cleanups run last first

	cl := newCrashCluster(bin, 2, crashReplicaArgs(storeURL, wfDir), crashEnv("CRASH_URL="+blocker.URL))
	t.Cleanup(cl.killAll)
	for i := range 2 {
		if err := cl.start(i); err != nil {
			t.Fatal(err)
		}
	}
	a, b := cl.url(0), cl.url(1)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	guard, cancel := context.WithTimeout(context.Background(), 90*time.Second) // against a hang only
	defer cancel()

	// n conversations, each with a turn in progress on A, waiting on its
	// call. Even ones talk to crash (which says the message and a first
	// answer before the call), odd ones to crash_late (the call first).
	type conv struct {
		th      *crashThread
		tr      *crashTurn
		started chan struct{} // closed at the first event
		first   crashEvent    // set once started is closed
		done    chan struct{} // closed once the stream ended or broke
		events  []crashEvent  // read once done is closed
		err     error
	}
	convs := make([]*conv, n)
	for i := range convs {
		th := &crashThread{id: fmt.Sprintf("rec%d", i), wf: "crash", rng: rand.New(rand.NewPCG(uint64(i), 1))}
		if i%2 == 1 {
			th.wf = "crash_late"
		}
		cv := &conv{th: th, tr: th.newTurn(), started: make(chan struct{}), done: make(chan struct{})}
		convs[i] = cv
		resp := crashPost(t, guard, client, a+"/workflows/"+th.wf, th, cv.tr)
		go func() {
			defer close(cv.done)
			defer resp.Body.Close()
			once := sync.OnceFunc(func() { close(cv.started) })
			cv.err = readCrashStream(resp.Body, func(e crashEvent) {
				if len(cv.events) == 0 {
					cv.first = e
					once()
				}
				cv.events = append(cv.events, e)
			})
			once()
		}()
	}
	waiting := map[string]bool{}
	for len(waiting) < n {
		select {
		case name := <-entered:
			waiting[name] = true
		case <-guard.Done():
			t.Fatalf("only %d of the %d runs on A reached their HTTP call; A's log:\n%s", len(waiting), n, cl.log(0))
		}
	}
	for _, cv := range convs {
		<-cv.started
		if cv.first.Type != "RUN_STARTED" {
			<-cv.done
			t.Fatalf("%s: A's stream began with %s", cv.th.id, crashEvents(cv.events))
		}
	}

	cl.kill(0)
	for _, cv := range convs {
		<-cv.done
		if cv.err == nil {
			t.Errorf("%s: A's stream ended after A was killed: %s", cv.th.id, crashEvents(cv.events))
		}
		cv.tr.acked, cv.tr.ackedGen, cv.tr.events, cv.tr.broke = true, 1, cv.events, crashErr(cv.err)
	}

	// A client that lost its stream with A follows the run on B, before B
	// has taken it over.
	follow := convs[0]
	req, _ := http.NewRequestWithContext(guard, http.MethodGet, b+"/threads/"+follow.th.id+"/runs/"+follow.tr.runID+"/events?workflowId="+follow.th.wf, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("following %s on B: %v", follow.tr.runID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		detail, _ := io.ReadAll(resp.Body)
		t.Fatalf("following %s on B: %d %s", follow.tr.runID, resp.StatusCode, crashDetail(detail))
	}
	followed := make(chan []crashEvent, 1)
	followStarted := make(chan struct{})
	var followErr error
	go func() {
		var events []crashEvent
		once := sync.OnceFunc(func() { close(followStarted) })
		followErr = readCrashStream(resp.Body, func(e crashEvent) {
			events = append(events, e)
			once()
		})
		once()
		followed <- events
	}()
	<-followStarted
	releaseAll()

	// B recovers every run: its record ends, as a turn's does.
	keys := make([]store.Key, n)
	for i, cv := range convs {
		keys[i] = store.Key{Scope: "default", Workflow: cv.th.wf, Thread: cv.th.id}
	}
	var runs []store.Run
	for {
		runs = runs[:0]
		for i, cv := range convs {
			r, err := st.Run(guard, keys[i], cv.tr.runID)
			if err != nil {
				t.Fatalf("the record of %s: %v", cv.tr.runID, err)
			}
			runs = append(runs, r)
		}
		if !slices.ContainsFunc(runs, func(r store.Run) bool { return r.Status == store.Running || r.Status == store.Queued }) {
			break
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-guard.Done():
			t.Fatalf("the runs of the killed replica are still pending: %v; B's log:\n%s", runs, cl.log(1))
		}
	}
	for _, r := range runs {
		if r.Status != store.Suspended {
			t.Errorf("run %s ended %s, want %s (a turn that ends at the conversation's suspend)", r.ID, r.Status, store.Suspended)
		}
	}
	if pending, err := pendingRuns(guard, st, keys); err != nil || len(pending) > 0 {
		t.Errorf("runs still pending after recovery: %v (%v)", pending, err)
	}
	// B, and no other process, resumed each run, once.
	resumed := crashResumed(cl.allLogs())
	for _, cv := range convs {
		if got := resumed[cv.tr.runID]; !slices.Equal(got, []int{2}) {
			t.Errorf("run %s was resumed by the processes %v, want B (2) once", cv.tr.runID, got)
		}
	}

	// The follower got the run's end.
	var fevents []crashEvent
	select {
	case fevents = <-followed:
	case <-guard.Done():
		t.Fatal("the follower on B never got the run's end")
	}
	if followErr != nil {
		t.Errorf("the followed stream broke: %v: %s", followErr, crashEvents(fevents))
	}
	want := []string{"user " + follow.tr.content}
	for _, s := range crashAnswers(follow.tr.content) {
		want = append(want, "assistant "+s)
	}
	var got []string
	for _, m := range crashSeen(fevents) {
		got = append(got, m.role+" "+m.text)
	}
	if len(fevents) < 2 || fevents[0].Type != "RUN_STARTED" || fevents[0].RunID != follow.tr.runID ||
		fevents[len(fevents)-1].Type != "RUN_FINISHED" || !slices.Equal(got, want) {
		t.Errorf("following %s on B: %s; want RUN_STARTED, the messages %q, RUN_FINISHED", follow.tr.runID, crashEvents(fevents), want)
	}

	// Each history holds its turn once, with its answer; then every
	// thread takes one more turn on B.
	for i, cv := range convs {
		msgs := crashHistory(t, guard, client, b, cv.th)
		var got []string
		for _, m := range msgs {
			got = append(got, m.Role+" "+m.text())
		}
		want := []string{"user " + cv.tr.content}
		for _, s := range crashAnswers(cv.tr.content) {
			want = append(want, "assistant "+s)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: after the recovery the history holds %q, want %q", cv.th.id, got, want)
		}
		// What the follower saw is what the history keeps, ids included.
		if i == 0 && followErr == nil {
			if seen, stored := crashSeenIDs(fevents), crashStored(msgs, cv.tr.content); !slices.Equal(seen, stored) {
				t.Errorf("the followed stream showed %q, the history keeps %q", seen, stored)
			}
		}
		tr := cv.th.newTurn()
		resp := crashPost(t, guard, client, b+"/workflows/"+cv.th.wf, cv.th, tr)
		tr.acked = true
		if err := readCrashStream(resp.Body, func(e crashEvent) { tr.events = append(tr.events, e) }); err != nil {
			t.Errorf("%s: the next turn's stream on B broke: %v", cv.th.id, err)
		} else {
			tr.complete = true
		}
		resp.Body.Close()
		if r, err := st.Run(guard, keys[i], tr.runID); err != nil || r.Status != store.Suspended {
			t.Errorf("%s: the next turn's run record: %+v (%v), want it %s as the recovered one", cv.th.id, r, err, store.Suspended)
		}
		msgs = crashHistory(t, guard, client, b, cv.th)
		if ps := checkCrashThread(cv.th, msgs, "suspended"); len(ps) > 0 {
			t.Errorf("%s after its next turn: %v\nits history: %v", cv.th.id, ps, msgs)
		}
	}
	callsMu.Lock()
	defer callsMu.Unlock()
	t.Logf("%d runs killed with replica A, waiting on their calls, all resumed by B; the calls made, by message: %v", n, calls)
}

// crashPost sends a turn and returns its stream; anything but 200 fails
// the test.
func crashPost(t *testing.T, ctx context.Context, client *http.Client, u string, th *crashThread, tr *crashTurn) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"threadId": th.id,
		"runId":    tr.runID,
		"messages": []map[string]any{{"id": "m-" + tr.runID, "role": "user", "content": tr.content}},
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s turn %d: %v", th.id, tr.n, err)
	}
	if resp.StatusCode != http.StatusOK {
		detail, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("%s turn %d: %d %s", th.id, tr.n, resp.StatusCode, crashDetail(detail))
	}
	return resp
}

// crashHistory is a thread's history, read from the server at base.
func crashHistory(t *testing.T, ctx context.Context, client *http.Client, base string, th *crashThread) []crashMessage {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"threadId": th.id, "workflowId": th.wf})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/history", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("the history of %s: %v", th.id, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the history of %s: %d %s", th.id, resp.StatusCode, crashDetail(b))
	}
	var h struct {
		Messages []crashMessage `json:"messages"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("the history of %s: %v", th.id, err)
	}
	return h.Messages
}

// crashSeenIDs is the text messages of a stream, ids included, as
// crashStored writes a turn's stored ones.
func crashSeenIDs(events []crashEvent) []string {
	var out []string
	for _, m := range crashSeen(events) {
		out = append(out, fmt.Sprintf("%s %s %q", m.id, m.role, m.text))
	}
	return out
}

// crashStored is what the history keeps of the turn whose user message is
// content: that message and the answers after it, ids included.
func crashStored(msgs []crashMessage, content string) []string {
	var out []string
	for i, m := range msgs {
		if m.Role == "user" && m.text() == content {
			for _, a := range msgs[i:] {
				if a.Role == "user" && a.text() != content {
					break
				}
				out = append(out, fmt.Sprintf("%s %s %q", a.ID, a.Role, a.text()))
			}
			break
		}
	}
	return out
}
