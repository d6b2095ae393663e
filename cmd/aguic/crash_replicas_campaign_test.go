package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
)

// The sizes of the crash campaign across replicas. The whole test takes
// well under two minutes on two cores with these: every kill leaves the
// runs of the killed replica to wait for their leases to expire (--lease-
// ttl, two seconds) and for another replica's look for stranded runs.
const (
	replicaCount   = 3                       // serve processes on the store
	replicaPool    = 4                       // the connections of each to PostgreSQL
	replicaThreads = 40                      // conversations driven at the same time
	replicaTurns   = 10                      // turns of each during the kills (one more comes after)
	replicaRounds  = 10                      // kill rounds: one replica killed, sometimes two
	replicaKillMin = 300 * time.Millisecond  // the shortest time between two rounds
	replicaKillMax = 1200 * time.Millisecond // the longest
	replicaDownMax = 800 * time.Millisecond  // the longest a killed replica stays down
	// The longest the HTTP call of a turn takes to answer: longer than in
	// the single-node campaign, so that more runs are in progress when a
	// replica is killed.
	replicaAnswerMax = 800 * time.Millisecond
)

// crashFollowed is what a client read when it followed, on whichever
// replica, a run whose stream broke (GET …/runs/{runId}/events).
type crashFollowed struct {
	events   []crashEvent // the stream that ended with its terminal event
	requests int          // how many requests it took
	broke    int          // of them, streams that broke (the replica died)
	odd      []string     // answers the campaign did not expect
	gaveUp   string
}

// follow reconnects to the run of an acknowledged turn whose stream
// broke, as a client does: on the next replica, from the run's first
// event, until a stream ends with the run's end.
func (c *crashCampaign) follow(ctx context.Context, th *crashThread, tr *crashTurn) *crashFollowed {
	f := &crashFollowed{}
	path := "/threads/" + th.id + "/runs/" + tr.runID + "/events?workflowId=" + th.wf
	for {
		if err := ctx.Err(); err != nil {
			f.gaveUp = fmt.Sprintf("the guard ran out before a stream of the run ended (%v)", err)
			return f
		}
		base, gen, err := c.srv.current(ctx)
		if err != nil {
			continue
		}
		f.requests++
		events, code, detail, err := c.followOnce(ctx, base+path)
		switch {
		case err != nil && code == 0: // no answer: the replica is down
			c.srv.settle(ctx, gen, 100*time.Millisecond)
		case code == http.StatusOK && err == nil:
			f.events = events
			return f
		case code == http.StatusOK:
			f.broke++
			c.srv.settle(ctx, gen, 100*time.Millisecond)
		case code == http.StatusServiceUnavailable:
			c.pause(ctx, th, "")
		case c.srv.stale(gen):
			c.srv.settle(ctx, gen, 100*time.Millisecond) // another process's port
		default:
			f.odd = append(f.odd, fmt.Sprintf("%d %s", code, detail))
			if len(f.odd) > 20 {
				f.gaveUp = "too many unexpected answers"
				return f
			}
			c.pause(ctx, th, "")
		}
	}
}

// followOnce is one request of follow: the events of a stream, and err
// when it broke; or the status and problem of an answer that is not one.
func (c *crashCampaign) followOnce(ctx context.Context, u string) ([]crashEvent, int, string, error) {
	rctx, cancel := context.WithTimeout(ctx, crashStreamGuard)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, 0, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		detail, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, resp.StatusCode, crashDetail(detail), nil
	}
	var events []crashEvent
	err = readCrashStream(resp.Body, func(e crashEvent) { events = append(events, e) })
	return events, resp.StatusCode, "", err
}

// checkFollowed checks what a client that followed a turn's run got: the
// run's start and its successful end, its own messages only, and exactly
// what the history keeps of the turn (ids included) when the turn is in
// it once.
func checkFollowed(tr *crashTurn, f *crashFollowed, msgs []crashMessage) []crashProblem {
	var ps []crashProblem
	add := func(kind, format string, args ...any) {
		ps = append(ps, crashProblem{kind, fmt.Sprintf(format, args...)})
	}
	for _, o := range f.odd {
		add("unexpected answer to a follower", "turn %d, following its run: %s", tr.n, o)
	}
	if f.gaveUp != "" {
		add("a broken run's end never reached a follower", "turn %d, following its run: %s", tr.n, f.gaveUp)
		return ps
	}
	ev := f.events
	if len(ev) < 2 || ev[0].Type != "RUN_STARTED" || ev[0].RunID != tr.runID {
		add("a followed run did not start as its own", "turn %d's run %s, followed: %s", tr.n, tr.runID, crashEvents(ev))
		return ps
	}
	if last := ev[len(ev)-1]; last.Type != "RUN_FINISHED" {
		add("a followed run ended with RUN_ERROR", "turn %d's run, followed, ended with %s", tr.n, last.short())
	}
	own := append([]string{tr.content}, crashAnswers(tr.content)...)
	for _, m := range crashSeen(ev) {
		if !m.ended || !slices.Contains(own, m.text) {
			add("a followed run showed another turn's text", "turn %d's run, followed, showed %s %q (ended: %v)", tr.n, m.role, m.text, m.ended)
		}
	}
	n := 0
	for _, m := range msgs {
		if m.Role == "user" && m.text() == tr.content {
			n++
		}
	}
	if n == 1 {
		if seen, stored := crashSeenIDs(ev), crashStored(msgs, tr.content); !slices.Equal(seen, stored) {
			add("history differs from a followed run", "turn %d: following its run showed %q, the history keeps %q", tr.n, seen, stored)
		}
	}
	return ps
}

// TestCrashCampaignReplicas is the crash campaign (TestCrashCampaign) on
// three replicas that share one PostgreSQL schema: many conversations at
// once, their requests spread over the replicas round-robin, while
// replicas are killed with SIGKILL at random moments, one at a time or
// two at once, and started again a moment later with the same flags. The
// others go on serving, and take over the runs of the killed ones once
// their leases expire (--lease-ttl 2s). A client whose request gets no
// answer, or 409 or 503, sends it again to the next replica; it sends a
// turn again (same run id) only when no RUN_STARTED came for it and, when
// its request was cut, only once the thread has stopped running without
// the turn's message. A client whose acknowledged stream broke follows
// the run on the next replica until its end, or (half of them) sends its
// next turn, which finds the thread busy until the run has ended. At the end, with every
// replica up and no run pending in the store, every acknowledged turn
// must be in its thread's history exactly once, in the order sent, with
// its own answer; every followed run must have ended with what the
// history keeps of it; and every thread must take a new turn.
//
// AGUIC_CRASH_SEED=n replays the campaign's random choices.
func TestCrashCampaignReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it many times")
	}
	storeURL := replicaStore(t, replicaPool) // skips without PostgreSQL
	st := openReplicaStore(t, storeURL)
	seed := rand.Uint64()
	if s := os.Getenv("AGUIC_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("AGUIC_CRASH_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (AGUIC_CRASH_SEED=%d go test ./cmd/aguic -run TestCrashCampaignReplicas replays its choices)", seed, seed)

	dir := t.TempDir()
	bin := buildAguic(t, dir)
	wfDir := writeWorkflow(t, dir, "crash.wf", crashWorkflows)

	// The turns' HTTP calls: the answer echoes the path, after a delay.
	var delayMu sync.Mutex
	delays := rand.New(rand.NewPCG(seed, 2))
	calls := map[string]int{}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		delayMu.Lock()
		calls[name]++
		d := time.Duration(delays.Int64N(int64(replicaAnswerMax) + 1))
		delayMu.Unlock()
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "ok-%s", name)
	}))
	t.Cleanup(echo.Close)

	cl := newCrashCluster(bin, replicaCount, crashReplicaArgs(storeURL, wfDir), crashEnv("CRASH_URL="+echo.URL))
	t.Cleanup(cl.killAll) // before the schema is dropped, and before echo.Close
	var startFailures []string
	var startMu sync.Mutex
	// restart starts a replica after a kill. A start that fails is a
	// finding (the store must serve after any crash); it is reported at
	// the end, and tried again so the campaign goes on.
	restart := func(i int) error {
		var err error
		for range 3 {
			if err = cl.start(i); err == nil {
				return nil
			}
			startMu.Lock()
			startFailures = append(startFailures, fmt.Sprintf("after %d kills: %v", cl.killed(), err))
			startMu.Unlock()
		}
		return err
	}
	for i := range replicaCount {
		if err := cl.start(i); err != nil {
			t.Fatal(err)
		}
	}
	c := &crashCampaign{
		srv:    cl,
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		begun:  time.Now(),
	}

	threads := make([]*crashThread, replicaThreads)
	follows := make([]map[*crashTurn]*crashFollowed, replicaThreads)
	for i := range threads {
		threads[i] = &crashThread{id: fmt.Sprintf("th%02d", i), wf: "crash", rng: rand.New(rand.NewPCG(seed, uint64(100+i)))}
		if i%2 == 1 {
			threads[i].wf = "crash_late"
		}
		follows[i] = map[*crashTurn]*crashFollowed{}
	}
	keys := make([]store.Key, len(threads))
	for i, th := range threads {
		keys[i] = store.Key{Scope: "default", Workflow: th.wf, Thread: th.id}
	}

	// The clients: conversation k's turn i waits for kill round
	// k·rounds/threads + i·rounds/turns (or the last), so that turns, and
	// first turns, are under way at every round.
	ctx, cancel := context.WithTimeout(context.Background(), crashGuard)
	defer cancel()
	var clients sync.WaitGroup
	clientsDone := make(chan struct{})
	for k, th := range threads {
		clients.Go(func() {
			for i := range replicaTurns {
				cl.waitRounds(ctx, min(replicaRounds, k*replicaRounds/replicaThreads+i*replicaRounds/replicaTurns))
				select {
				case <-time.After(time.Duration(th.rng.Int64N(int64(crashThinkMax) + 1))):
				case <-ctx.Done():
				}
				tr := th.newTurn()
				c.send(ctx, th, tr)
				if tr.gaveUp != "" {
					return
				}
				// A client whose stream broke follows the run to its
				// end, or (half of them) goes on with its next turn,
				// which finds the thread busy until the run is taken
				// over and ends.
				if tr.acked && !tr.complete && th.rng.IntN(2) == 0 {
					follows[k][tr] = c.follow(ctx, th, tr)
				}
			}
		})
	}
	go func() {
		clients.Wait()
		close(clientsDone)
	}()

	// The killer: at random moments, SIGKILL to one replica, or to two at
	// once, never to the last one up. Each stays down a random while, as
	// the others serve (a kill may come meanwhile), then starts again.
	killerRand := rand.New(rand.NewPCG(seed, 1))
	var killerMu sync.Mutex
	var killerErr error
	var restarts sync.WaitGroup
	doubles := 0
	for range replicaRounds {
		d := replicaKillMin + time.Duration(killerRand.Int64N(int64(replicaKillMax-replicaKillMin)+1))
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		up := cl.waitUp(ctx, 2) // one to kill, one to serve
		if ctx.Err() != nil {
			break
		}
		n := 1
		if killerRand.IntN(3) == 0 && len(up) > 2 {
			n = 2
			doubles++
		}
		for _, j := range killerRand.Perm(len(up))[:n] {
			i := up[j]
			cl.kill(i)
			down := time.Duration(killerRand.Int64N(int64(replicaDownMax) + 1))
			restarts.Go(func() {
				select {
				case <-time.After(down):
				case <-ctx.Done():
				}
				if err := restart(i); err != nil {
					killerMu.Lock()
					killerErr = err
					killerMu.Unlock()
					cancel()
				}
			})
		}
		cl.endRound()
	}
	restarts.Wait()
	// Until the last turn: a replica that exited by itself (a finding) is
	// started again, so the campaign goes on.
keep:
	for {
		select {
		case <-clientsDone:
			break keep
		case <-time.After(100 * time.Millisecond):
			if killerErr != nil || ctx.Err() != nil {
				continue
			}
			_, down := cl.up()
			for _, i := range down {
				if killerErr = restart(i); killerErr != nil {
					cancel()
					break
				}
			}
		}
	}
	if killerErr != nil {
		t.Fatalf("starting a replica again: %v", killerErr)
	}
	campaign := time.Since(c.begun)

	// The end: one more kill, the replica started again, every replica up,
	// and no run pending in the store: the others have taken over the
	// killed one's runs.
	last := killerRand.IntN(replicaCount)
	cl.kill(last)
	if err := restart(last); err != nil {
		t.Fatalf("starting replica %d at the end: %v", last, err)
	}
	if _, down := cl.up(); len(down) > 0 {
		t.Fatalf("replicas %v are down at the end: %v", down, cl.died())
	}
	settle, cancelSettle := context.WithTimeout(context.Background(), crashSettleGuard)
	defer cancelSettle()
	status := replicaSettle(settle, c, st, threads, keys)

	// A last turn on every thread, with no more kills: none may be stuck.
	final, cancelFinal := context.WithTimeout(context.Background(), crashSettleGuard)
	defer cancelFinal()
	var lastTurns sync.WaitGroup
	for _, th := range threads {
		lastTurns.Go(func() {
			c.send(final, th, th.newTurn())
		})
	}
	lastTurns.Wait()
	after, cancelAfter := context.WithTimeout(context.Background(), crashSettleGuard)
	defer cancelAfter()
	pendingAfter, pendingErr := pendingRuns(after, st, keys)

	// The histories, and the checks.
	histories := c.histories(t, threads)

	summary := map[string]int{}
	var failed []*crashThread
	problems := map[string][]string{}
	for k, th := range threads {
		ps := checkCrashThread(th, histories[th.id], status[th.id])
		for _, tr := range th.turns {
			if f := follows[k][tr]; f != nil {
				ps = append(ps, checkFollowed(tr, f, histories[th.id])...)
			}
		}
		for _, p := range ps {
			summary["["+th.wf+"] "+p.kind]++
			problems[th.id] = append(problems[th.id], p.text)
		}
		if len(ps) > 0 {
			failed = append(failed, th)
		}
	}

	// What happened, whether it failed or not.
	acked, broken, followed, followRequests, followBroke := 0, 0, 0, 0, 0
	kinds := map[string]int{}
	for k, th := range threads {
		for _, tr := range th.turns {
			if tr.acked {
				acked++
			}
			if tr.broke != "" {
				broken++
			}
			for _, a := range tr.attempts {
				kinds[a.kind] += a.count
			}
			if f := follows[k][tr]; f != nil {
				followed++
				followRequests += f.requests
				followBroke += f.broke
			}
		}
	}
	logs := cl.allLogs()
	resumed := 0
	for _, by := range crashResumed(logs) {
		resumed += len(by)
	}
	t.Logf("%d replicas, %d threads × %d turns (+1 at the end); %d kill rounds (%d of two replicas at once), %d processes killed in %v (and one more at the end), %d started; %d turns acknowledged, %d with a stream a kill broke, %d of them followed to their end on another replica (%d requests, %d of them broken by a kill); %d runs of killed processes resumed by another; requests sent again: %d refused, %d cut before RUN_STARTED, %d answered 409/503; %d cut turns found taken; whole test %v",
		replicaCount, replicaThreads, replicaTurns, replicaRounds, doubles, cl.killed()-1, campaign.Round(time.Millisecond), len(logs),
		acked, broken, followed, followRequests, followBroke, resumed, kinds["refused"], kinds["cut"], kinds["busy"], kinds["taken"], time.Since(c.begun).Round(time.Millisecond))
	for _, m := range cl.moved() {
		t.Logf("%s", m)
	}

	for _, f := range startFailures {
		t.Errorf("a replica did not start on the store the kills left: %s", f)
	}
	for _, d := range cl.died() {
		t.Errorf("%s", d)
	}
	if pendingErr != nil {
		t.Errorf("reading the pending runs after the last turns: %v", pendingErr)
	}
	for _, r := range pendingAfter {
		t.Errorf("run %s of thread %s is still %s after the last turns ended", r.ID, r.Key.Thread, r.Status)
	}
	if len(failed) == 0 {
		return
	}
	delayMu.Lock()
	defer delayMu.Unlock()
	reportCrashFailures(t, failed, problems, summary, len(threads), seed, func(th *crashThread) string {
		return crashStory(th, histories[th.id], status[th.id], logs, calls)
	})
}

// replicaSettle waits until no run is pending on the threads in the store,
// and no thread says it runs; it returns each thread's status, "running…"
// for one that still ran when ctx ended.
func replicaSettle(ctx context.Context, c *crashCampaign, st store.Store, threads []*crashThread, keys []store.Key) map[string]string {
	status := map[string]string{}
	for {
		pending, err := pendingRuns(ctx, st, keys)
		if err == nil && len(pending) == 0 {
			break
		}
		select {
		case <-time.After(50 * time.Millisecond):
			continue
		case <-ctx.Done():
		}
		for _, r := range pending {
			status[r.Key.Thread] = fmt.Sprintf("running: run %s still %s in the store", r.ID, r.Status)
		}
		if err != nil {
			for _, th := range threads {
				status[th.id] = fmt.Sprintf("unknown (%v)", err)
			}
		}
		return status
	}
	for _, th := range threads {
		var page struct {
			Status string `json:"status"`
		}
		if _, err := c.call(ctx, http.MethodGet, "/threads/"+th.id+"/messages?workflowId="+th.wf, nil, &page); err != nil {
			status[th.id] = fmt.Sprintf("unknown (%v)", err)
			continue
		}
		status[th.id] = page.Status
		if page.Status == "running" {
			status[th.id] = "running, with no run pending in the store"
		}
	}
	return status
}
