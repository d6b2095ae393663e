package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The sizes of the crash campaign. The whole test takes well under two
// minutes on two cores with these.
const (
	crashThreads    = 40                     // conversations driven at the same time
	crashTurns      = 8                      // turns of each conversation during the kills (one more comes after)
	crashKills      = 8                      // how many times the server is killed with SIGKILL
	crashKillMin    = 150 * time.Millisecond // the shortest a server lives before it is killed
	crashKillMax    = 1000 * time.Millisecond
	crashThinkMax   = 500 * time.Millisecond // the longest a client waits before its next turn
	crashAnswerMax  = 300 * time.Millisecond // the longest the HTTP call of a turn takes to answer
	crashShowThread = 4                      // threads whose whole story a failure prints

	// Guards against hangs only: nothing is asserted about time.
	crashGuard       = 100 * time.Second // the turns during the kills
	crashSettleGuard = 60 * time.Second  // the end: threads settling, the last turn
	crashStreamGuard = 60 * time.Second  // one request and its stream
)

// crashWorkflows are two conversations whose every turn says the user's
// message (so the history holds it), answers at once, calls the test's
// HTTP server, which echoes the message after a random delay, and answers
// with the echo: each answer is checkable against its own turn. crash says
// the message and the first answer before the call; crash_late makes the
// call first, as a model node does (it keeps the user's prompt once the
// model answered), so nothing of a turn is kept before its slow call ends.
// Even threads use crash, odd ones crash_late.
const crashWorkflows = `wf 1

workflow crash {
  conversation = true

  flow {
    top: say "<<$agent.latestUserMessage.content>>" { role = "user" }
    say "you said <<$agent.latestUserMessage.content>>"
    http GET "<<env('CRASH_URL')>>/<<$agent.latestUserMessage.content>>" -> $r
    say "server said <<$r.body>>"
    wait: suspend
    goto top
  }
}

workflow crash_late {
  conversation = true

  flow {
    top: http GET "<<env('CRASH_URL')>>/<<$agent.latestUserMessage.content>>" -> $r
    say "<<$agent.latestUserMessage.content>>" { role = "user" }
    say "you said <<$agent.latestUserMessage.content>>"
    say "server said <<$r.body>>"
    wait: suspend
    goto top
  }
}
`

// crashAnswers are the assistant messages a turn with the user message
// content must store, in order.
func crashAnswers(content string) []string {
	return []string{"you said " + content, "server said ok-" + content}
}

// crashTurn is one turn of a conversation as its client lived it.
type crashTurn struct {
	n       int // 1-based
	runID   string
	content string

	attempts []crashAttempt
	acked    bool         // an attempt saw RUN_STARTED; the turn was never sent again
	ackedGen int          // the server generation that acknowledged it
	events   []crashEvent // what the acknowledged attempt's stream carried
	complete bool         // that stream ended with its terminal event
	broke    string       // why that stream broke, when it did
	gaveUp   string       // why the client stopped trying to send the turn
	// mayHaveRun: an attempt that was not acknowledged may still have
	// reached a server (it was cut, not refused), which may have started
	// the run before it died.
	mayHaveRun bool
	// taken: after such an attempt, the turn's message was found in the
	// history once the thread stopped running, or a server answered that
	// the thread already has the turn's run, so it was not sent again:
	// the server took it without a RUN_STARTED reaching the client. It
	// must then be in the history once, as an acknowledged turn.
	taken bool
}

// crashAttempt is one request of a turn (or several alike in a row).
type crashAttempt struct {
	gen    int
	at     time.Duration // since the campaign began
	kind   string        // "acknowledged", "busy" (409, 503), "refused", "cut" (before RUN_STARTED), "odd"
	result string
	count  int
}

// crashThread is one conversation and its client's record.
type crashThread struct {
	id    string
	wf    string // the workflow it talks to
	rng   *rand.Rand
	turns []*crashTurn
	odd   []string // HTTP answers the campaign did not expect
}

func (th *crashThread) newTurn() *crashTurn {
	n := len(th.turns) + 1
	tr := &crashTurn{
		n:       n,
		runID:   fmt.Sprintf("run-%s-%d-%04x", th.id, n, th.rng.Uint32()&0xffff),
		content: fmt.Sprintf("%s-turn%d-%04x", th.id, n, th.rng.Uint32()&0xffff),
	}
	th.turns = append(th.turns, tr)
	return tr
}

// crashCampaign is the state the clients, the killer and the checks share.
type crashCampaign struct {
	srv    crashServers
	client *http.Client
	begun  time.Time
}

func (c *crashCampaign) record(tr *crashTurn, gen int, kind, result string) {
	if n := len(tr.attempts); n > 0 && tr.attempts[n-1].result == result && tr.attempts[n-1].gen == gen {
		tr.attempts[n-1].count++
		return
	}
	tr.attempts = append(tr.attempts, crashAttempt{gen: gen, at: time.Since(c.begun).Round(time.Millisecond), kind: kind, result: result, count: 1})
}

// send sends a turn until a server acknowledges it with RUN_STARTED, and
// reads the stream of that run to its end or until it breaks. A turn is
// sent again (same runId, same message) only when no RUN_STARTED came:
// once one did, the server owns the turn and must finish it, crash or
// not.
func (c *crashCampaign) send(ctx context.Context, th *crashThread, tr *crashTurn) {
	body, _ := json.Marshal(map[string]any{
		"threadId": th.id,
		"runId":    tr.runID,
		"messages": []map[string]any{{"id": "m-" + tr.runID, "role": "user", "content": tr.content}},
	})
	for {
		if err := ctx.Err(); err != nil {
			tr.gaveUp = fmt.Sprintf("the guard ran out before a server acknowledged the turn (%v)", err)
			return
		}
		base, gen, err := c.srv.current(ctx)
		if err != nil {
			continue
		}
		done, cut := c.attempt(ctx, th, tr, gen, base+"/workflows/"+th.wf, body)
		if done {
			return
		}
		if cut {
			taken, err := c.taken(ctx, th, tr, gen)
			if err != nil {
				tr.gaveUp = fmt.Sprintf("could not learn whether the server took the turn: %v", err)
				return
			}
			if taken {
				tr.taken = true
				c.record(tr, gen, "taken", "not sent again: the thread has stopped running and its history holds the message")
				return
			}
		}
	}
}

// taken tells, after an attempt to the server of generation gen was cut
// before RUN_STARTED, whether that server took the turn: once the process
// is gone and the thread has stopped running (a recovered run has
// finished), the turn was taken exactly when its message is in the
// thread's history. Sending it again without asking could run it twice.
func (c *crashCampaign) taken(ctx context.Context, th *crashThread, tr *crashTurn, gen int) (bool, error) {
	for !c.srv.stale(gen) {
		c.srv.settle(ctx, gen, time.Second)
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	for {
		var page struct {
			Status   string         `json:"status"`
			Messages []crashMessage `json:"messages"`
		}
		code, err := c.call(ctx, http.MethodGet, "/threads/"+th.id+"/messages?limit=500&workflowId="+th.wf, nil, &page)
		if code == http.StatusNotFound {
			return false, nil // no turn of the thread was kept yet
		}
		if err != nil {
			return false, err
		}
		if page.Status == "running" {
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
			}
			continue
		}
		for _, m := range page.Messages {
			if m.Role == "user" && m.text() == tr.content {
				return true, nil
			}
		}
		return false, nil
	}
}

// attempt is one request of send; it reports whether the turn is done
// with (acknowledged, or given up), and whether the attempt was cut
// before RUN_STARTED after it may have reached the server.
func (c *crashCampaign) attempt(ctx context.Context, th *crashThread, tr *crashTurn, gen int, u string, body []byte) (done, cut bool) {
	rctx, cancel := context.WithTimeout(ctx, crashStreamGuard)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.client.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			c.record(tr, gen, "refused", "no answer: "+crashErr(err))
		} else {
			tr.mayHaveRun = true
			c.record(tr, gen, "cut", "no answer: "+crashErr(err))
			return false, true
		}
		c.srv.settle(ctx, gen, 100*time.Millisecond)
		return false, false
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusConflict, http.StatusServiceUnavailable:
		detail, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode == http.StatusConflict && bytes.Contains(detail, []byte("already has a run")) {
			// A cut attempt reached a server, which took the turn before
			// it died: its run exists, and will run (or ran) to its end
			// where a replica resumes it. Sending it again cannot help.
			tr.taken = true
			c.record(tr, gen, "taken", "not sent again: the server answered that the thread already has the turn's run")
			return true, false
		}
		c.record(tr, gen, "busy", fmt.Sprintf("%d %s", resp.StatusCode, crashDetail(detail)))
		c.pause(ctx, th, resp.Header.Get("Retry-After"))
		return false, false
	default:
		detail, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		msg := fmt.Sprintf("%d %s", resp.StatusCode, crashDetail(detail))
		if c.srv.stale(gen) {
			// The server was killed since: the answer may be another
			// process's that took its port.
			c.record(tr, gen, "refused", msg+" (from a killed server's port: ignored)")
			c.srv.settle(ctx, gen, 100*time.Millisecond)
			return false, false
		}
		c.record(tr, gen, "odd", msg)
		th.odd = append(th.odd, fmt.Sprintf("turn %d: %s", tr.n, msg))
		if len(th.odd) > 20 {
			tr.gaveUp = "too many unexpected answers"
			return true, false
		}
		c.pause(ctx, th, "")
		return false, false
	}

	started := false
	var events []crashEvent
	serr := readCrashStream(resp.Body, func(e crashEvent) {
		if len(events) == 0 && e.Type == "RUN_STARTED" {
			started = true
			tr.acked, tr.ackedGen = true, gen
		}
		events = append(events, e)
	})
	if !started {
		// The server took the request (it answered 200) but its stream
		// broke before RUN_STARTED, or it refused the turn with a lone
		// RUN_ERROR. Either way the turn was not acknowledged.
		if serr == nil {
			msg := "200 without RUN_STARTED: " + crashEvents(events)
			c.record(tr, gen, "odd", msg)
			th.odd = append(th.odd, fmt.Sprintf("turn %d: %s", tr.n, msg))
			tr.gaveUp = "the server refused the turn"
			return true, false
		}
		tr.mayHaveRun = true
		c.record(tr, gen, "cut", fmt.Sprintf("200, stream broke before RUN_STARTED: %s", crashErr(serr)))
		return false, true
	}
	tr.events = events
	if serr != nil {
		tr.broke = crashErr(serr)
		if rctx.Err() != nil && ctx.Err() == nil {
			tr.broke = "the stream hung for " + crashStreamGuard.String()
		}
		c.record(tr, gen, "acknowledged", fmt.Sprintf("acknowledged, stream broke after %d events: %s", len(events), tr.broke))
		return true, false
	}
	tr.complete = true
	c.record(tr, gen, "acknowledged", "acknowledged, stream complete: "+events[len(events)-1].short())
	return true, false
}

// pause waits before a request is sent again: Retry-After when the
// server gave it (at most two seconds), else a short random while.
func (c *crashCampaign) pause(ctx context.Context, th *crashThread, retryAfter string) {
	d := time.Duration(30+th.rng.IntN(120)) * time.Millisecond
	if s, err := strconv.Atoi(strings.TrimSpace(retryAfter)); err == nil && s >= 0 {
		d = min(time.Duration(s)*time.Second, 2*time.Second)
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// call sends a request to the live server and decodes its JSON answer
// into out, trying again while the server is down or answers 5xx; it
// returns the status of the last answer.
func (c *crashCampaign) call(ctx context.Context, method, path string, in, out any) (int, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		base, gen, err := c.srv.current(ctx)
		if err != nil {
			return 0, err
		}
		var body io.Reader
		if in != nil {
			b, _ := json.Marshal(in)
			body = bytes.NewReader(b)
		}
		req, _ := http.NewRequestWithContext(ctx, method, base+path, body)
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.client.Do(req)
		if err != nil {
			c.srv.settle(ctx, gen, 100*time.Millisecond)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode >= 500 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, crashDetail(b))
		}
		return resp.StatusCode, json.Unmarshal(b, out)
	}
}

// crashMessage is a message of the history route.
type crashMessage struct {
	ID      string `json:"id"`
	Role    string `json:"role"`
	Content any    `json:"content"`
}

func (m crashMessage) text() string {
	if s, ok := m.Content.(string); ok {
		return s
	}
	b, _ := json.Marshal(m.Content)
	return string(b)
}

// TestCrashCampaign drives many conversations of the real binary at once
// while it kills the server with SIGKILL at random moments and starts it
// again on the same data directory. A client sends a turn again only when
// no RUN_STARTED came for it; a turn the server acknowledged must be
// finished by the server's recovery. At the end every acknowledged turn
// must be in its thread's history exactly once, in the order sent, with
// its own answer, and every thread must take a new turn.
//
// AGUIC_CRASH_SEED=n replays the campaign's random choices (the kill
// moments, the clients' pauses, the HTTP delays, the messages); the
// interleaving of the goroutines and processes is the machine's.
func TestCrashCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it many times")
	}
	seed := rand.Uint64()
	if s := os.Getenv("AGUIC_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("AGUIC_CRASH_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (AGUIC_CRASH_SEED=%d go test ./cmd/aguic -run TestCrashCampaign replays its choices)", seed, seed)

	dir := t.TempDir()
	bin := buildAguic(t, dir)
	wfDir := writeWorkflow(t, dir, "crash.wf", crashWorkflows)

	// The turns' HTTP calls: the answer echoes the path, after a delay.
	var delayMu sync.Mutex
	delays := rand.New(rand.NewPCG(seed, 2))
	calls := map[string]int{} // how many calls each message got
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		delayMu.Lock()
		calls[name]++
		d := time.Duration(delays.Int64N(int64(crashAnswerMax) + 1))
		delayMu.Unlock()
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "ok-%s", name)
	}))
	t.Cleanup(echo.Close) // after the server's end: cleanups run last first

	srv := newCrashServer(bin,
		[]string{"serve", "--data", filepath.Join(dir, "data"), "--addr", "127.0.0.1:0", wfDir},
		crashEnv("CRASH_URL="+echo.URL))
	t.Cleanup(srv.kill)
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	c := &crashCampaign{
		srv: srv,
		// A new connection for every request: a connection kept from a
		// process that was killed would only fail the next request.
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		begun:  time.Now(),
	}

	threads := make([]*crashThread, crashThreads)
	for i := range threads {
		threads[i] = &crashThread{id: fmt.Sprintf("th%02d", i), wf: "crash", rng: rand.New(rand.NewPCG(seed, uint64(100+i)))}
		if i%2 == 1 {
			threads[i].wf = "crash_late"
		}
	}

	// The clients: each conversation sends its turns one after the other,
	// spread over the kills. The conversations start all along the
	// campaign, for a conversation's first turn is where a crash before
	// the run's first node boundary has the most room (crash_late's first
	// node is its slow call): conversation k's turn i waits for kill
	// k·kills/threads + (i-1)·kills/turns, or the last kill.
	ctx, cancel := context.WithTimeout(context.Background(), crashGuard)
	defer cancel()
	var clients sync.WaitGroup
	clientsDone := make(chan struct{})
	for k, th := range threads {
		clients.Go(func() {
			for i := range crashTurns {
				srv.waitKills(ctx, min(crashKills, k*crashKills/crashThreads+i*crashKills/crashTurns))
				select {
				case <-time.After(time.Duration(th.rng.Int64N(int64(crashThinkMax) + 1))):
				case <-ctx.Done():
				}
				tr := th.newTurn()
				c.send(ctx, th, tr)
				if tr.gaveUp != "" {
					return
				}
			}
		})
	}

	// restart starts serve after a kill. A start that fails is a finding
	// (the data directory must open after any crash); it is reported at
	// the end, and the start is tried again so the campaign goes on.
	var startFailures []string
	restart := func() error {
		var err error
		for range 3 {
			if err = srv.start(); err == nil {
				return nil
			}
			startFailures = append(startFailures, fmt.Sprintf("after kill %d: %v", srv.killed(), err))
		}
		return err
	}

	// The killer: SIGKILL at a random moment of each process's life,
	// then a new process on the same data directory.
	killerRand := rand.New(rand.NewPCG(seed, 1))
	var killerErr error
	for range crashKills {
		d := crashKillMin + time.Duration(killerRand.Int64N(int64(crashKillMax-crashKillMin)+1))
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		srv.kill()
		if killerErr = restart(); killerErr != nil {
			cancel()
			break
		}
	}
	// Until the last turn: a server that exited by itself (a finding) is
	// started again, so the campaign goes on.
	go func() {
		clients.Wait()
		close(clientsDone)
	}()
keep:
	for {
		select {
		case <-clientsDone:
			break keep
		case <-time.After(100 * time.Millisecond):
			if killerErr == nil && srv.down() {
				if killerErr = restart(); killerErr != nil {
					cancel()
				}
			}
		}
	}
	if killerErr != nil {
		t.Fatalf("starting serve again: %v", killerErr)
	}
	campaign := time.Since(c.begun)

	// The end: one more kill, a last start, and every thread settles.
	srv.kill()
	if err := restart(); err != nil {
		t.Fatalf("starting serve at the end: %v", err)
	}
	settle, cancelSettle := context.WithTimeout(context.Background(), crashSettleGuard)
	defer cancelSettle()
	status := map[string]string{}
	for {
		running := 0
		for _, th := range threads {
			if st, ok := status[th.id]; ok && st != "running" {
				continue
			}
			var page struct {
				Status string `json:"status"`
			}
			if _, err := c.call(settle, http.MethodGet, "/threads/"+th.id+"/messages?workflowId="+th.wf, nil, &page); err != nil {
				if settle.Err() != nil {
					break
				}
				status[th.id] = fmt.Sprintf("unknown (%v)", err)
				continue
			}
			status[th.id] = page.Status
			if page.Status == "running" {
				running++
			}
		}
		if running == 0 || settle.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, th := range threads {
		if st := status[th.id]; st == "running" || st == "" {
			status[th.id] = fmt.Sprintf("running (%q) after waiting %v", st, crashSettleGuard)
		}
	}

	// A last turn on every thread, with no more kills: none may be stuck.
	final, cancelFinal := context.WithTimeout(context.Background(), crashSettleGuard)
	defer cancelFinal()
	var last sync.WaitGroup
	for _, th := range threads {
		last.Go(func() {
			c.send(final, th, th.newTurn())
		})
	}
	last.Wait()

	// The histories, and the checks.
	histories := c.histories(t, threads)

	summary := map[string]int{}
	var failed []*crashThread
	problems := map[string][]string{}
	for _, th := range threads {
		ps := checkCrashThread(th, histories[th.id], status[th.id])
		for _, p := range ps {
			summary["["+th.wf+"] "+p.kind]++
			problems[th.id] = append(problems[th.id], p.text)
		}
		if len(ps) > 0 {
			failed = append(failed, th)
		}
	}

	// What happened, whether it failed or not.
	acked, broken := 0, 0
	kinds := map[string]int{}
	for _, th := range threads {
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
		}
	}
	t.Logf("%d threads × %d turns (+1 at the end), %d kills in %v (and one more at the end); %d turns acknowledged, %d of them with a stream a kill broke; requests sent again: %d refused, %d cut before RUN_STARTED, %d answered 409/503; %d cut turns found taken; whole test %v",
		crashThreads, crashTurns, srv.killed()-1, campaign.Round(time.Millisecond), acked, broken, kinds["refused"], kinds["cut"], kinds["busy"], kinds["taken"], time.Since(c.begun).Round(time.Millisecond))

	for _, f := range startFailures {
		t.Errorf("serve did not start on the data directory a kill left: %s", f)
	}
	for _, d := range srv.died() {
		t.Errorf("%s", d)
	}
	if len(failed) == 0 {
		return
	}
	logs := srv.allLogs()
	delayMu.Lock()
	defer delayMu.Unlock()
	reportCrashFailures(t, failed, problems, summary, len(threads), seed, func(th *crashThread) string {
		return crashStory(th, histories[th.id], status[th.id], logs, calls)
	})
}

// crashProblem is one thing wrong with a thread; kind counts it in the
// summary.
type crashProblem struct{ kind, text string }

// reportCrashFailures fails the test with the problems of each failed
// thread, the story of the first few (story tells one), and how many
// problems of each kind there were.
func reportCrashFailures(t *testing.T, failed []*crashThread, problems map[string][]string, summary map[string]int, threads int, seed uint64, story func(*crashThread) string) {
	t.Helper()
	for i, th := range failed {
		t.Errorf("%s (%s): %s", th.id, th.wf, strings.Join(problems[th.id], "; "))
		if i < crashShowThread {
			t.Logf("the story of %s:\n%s", th.id, story(th))
		}
	}
	names := make([]string, 0, len(summary))
	for k := range summary {
		names = append(names, k)
	}
	sort.Strings(names)
	var sb strings.Builder
	for _, k := range names {
		fmt.Fprintf(&sb, "\n  %4d  %s", summary[k], k)
	}
	t.Errorf("%d of %d threads failed (seed %d); the problems:%s", len(failed), threads, seed, sb.String())
}

// histories reads the history of every thread, after the campaign.
func (c *crashCampaign) histories(t *testing.T, threads []*crashThread) map[string][]crashMessage {
	t.Helper()
	histories := map[string][]crashMessage{}
	for _, th := range threads {
		var h struct {
			Messages []crashMessage `json:"messages"`
		}
		ctx, cancel := context.WithTimeout(context.Background(), crashSettleGuard)
		_, err := c.call(ctx, http.MethodPost, "/history", map[string]any{"threadId": th.id, "workflowId": th.wf}, &h)
		cancel()
		if err != nil {
			t.Errorf("%s: the history: %v", th.id, err)
			continue
		}
		histories[th.id] = h.Messages
	}
	return histories
}

// checkCrashThread compares a thread's history with what its client sent
// and saw.
func checkCrashThread(th *crashThread, msgs []crashMessage, status string) []crashProblem {
	var ps []crashProblem
	add := func(kind, format string, args ...any) {
		ps = append(ps, crashProblem{kind, fmt.Sprintf(format, args...)})
	}
	if strings.HasPrefix(status, "running") || strings.HasPrefix(status, "unknown") {
		add("thread left running after the last restart", "status %s after the last restart", status)
	}
	for _, o := range th.odd {
		add("unexpected answer to a run request", "%s", o)
	}
	byContent := map[string]*crashTurn{}
	for _, tr := range th.turns {
		byContent[tr.content] = tr
		if tr.gaveUp != "" {
			kind := "turn never acknowledged"
			if tr.n == len(th.turns) {
				kind = "thread stuck: the last turn was never acknowledged"
			}
			add(kind, "turn %d: %s", tr.n, tr.gaveUp)
		}
		if tr.acked && tr.complete {
			if last := tr.events[len(tr.events)-1]; last.Type != "RUN_FINISHED" {
				add("acknowledged turn ended with RUN_ERROR", "turn %d ended with %s", tr.n, last.short())
			}
		}
		if tr.n == len(th.turns) && !tr.complete && !tr.taken && tr.gaveUp == "" {
			add("thread stuck: the last turn did not complete", "the last turn (%d) did not complete: %s", tr.n, tr.broke)
		}
		// Whatever a stream showed belongs to its own turn (a message the
		// kill cut short, only its beginning).
		own := append([]string{tr.content}, crashAnswers(tr.content)...)
		for _, m := range crashSeen(tr.events) {
			ok := slices.Contains(own, m.text)
			if !m.ended {
				ok = slices.ContainsFunc(own, func(s string) bool { return strings.HasPrefix(s, m.text) })
			}
			if !ok {
				add("stream showed another turn's text", "turn %d's stream showed %s %q", tr.n, m.role, m.text)
			}
		}
	}
	if msgs == nil {
		add("no history", "no history")
		return ps
	}

	// The user messages: each acknowledged turn's once, in order.
	count := map[*crashTurn]int{}
	lastN := 0
	for i, m := range msgs {
		if m.Role != "user" {
			if i == 0 {
				add("assistant message before any user message", "message 1 is %s %q, before any user message", m.Role, m.text())
			}
			continue
		}
		tr := byContent[m.text()]
		if tr == nil {
			add("user message of no turn", "message %d: user message %q is no turn's", i+1, m.text())
			continue
		}
		count[tr]++
		if count[tr] == 1 {
			if tr.n < lastN {
				add("turns out of order", "turn %d comes after turn %d", tr.n, lastN)
			}
			lastN = max(lastN, tr.n)
		}
		if !tr.acked && !tr.taken {
			add("unacknowledged turn in the history", "turn %d was never acknowledged but is in the history", tr.n)
		}
		// The answer that follows it is its own.
		var got []string
		for _, a := range msgs[i+1:] {
			if a.Role == "user" {
				break
			}
			got = append(got, a.Role+": "+a.text())
		}
		want := crashAnswers(tr.content)
		for j := range want {
			want[j] = "assistant: " + want[j]
		}
		if !slices.Equal(got, want) {
			add("wrong answer after a user message", "turn %d (message %d) is answered %q, want %q", tr.n, i+1, got, want)
		}
	}
	for _, tr := range th.turns {
		if !tr.acked && !tr.taken {
			continue
		}
		switch n := count[tr]; {
		case n == 0 && tr.taken:
			add("turn taken without acknowledgement, then lost", "turn %d (found in the history after a cut attempt, so not sent again) is not in the history", tr.n)
		case n == 0:
			add("acknowledged turn lost", "turn %d (acknowledged by server %d, stream %s) is not in the history", tr.n, tr.ackedGen, crashHow(tr))
		case n > 1 && tr.mayHaveRun:
			add("acknowledged turn duplicated after a resend", "turn %d is in the history %d times (an attempt was cut before RUN_STARTED; the turn was sent again only once the thread had stopped running without its message in the history)", tr.n, n)
		case n > 1:
			add("acknowledged turn duplicated", "turn %d (stream %s) is in the history %d times", tr.n, crashHow(tr), n)
		}
	}

	// A complete stream is what the history keeps of its turn: the same
	// messages, ids included.
	for _, tr := range th.turns {
		if !tr.complete || count[tr] != 1 {
			continue
		}
		var stored []string
		for i, m := range msgs {
			if m.Role == "user" && m.text() == tr.content {
				for _, a := range msgs[i:] {
					if a.Role == "user" && a.text() != tr.content {
						break
					}
					stored = append(stored, fmt.Sprintf("%s %s %q", a.ID, a.Role, a.text()))
				}
				break
			}
		}
		var seen []string
		for _, m := range crashSeen(tr.events) {
			seen = append(seen, fmt.Sprintf("%s %s %q", m.id, m.role, m.text))
		}
		if !slices.Equal(seen, stored) {
			add("history differs from a complete stream", "turn %d: the stream showed %q, the history keeps %q", tr.n, seen, stored)
		}
	}
	return ps
}

func crashHow(tr *crashTurn) string {
	if tr.complete {
		return "complete"
	}
	return "broken: " + tr.broke
}

// crashSeenMessage is a text message as a stream showed it.
type crashSeenMessage struct {
	id, role, text string
	ended          bool // its TEXT_MESSAGE_END came
}

// crashSeen joins the text messages of a stream.
func crashSeen(events []crashEvent) []crashSeenMessage {
	var out []crashSeenMessage
	at := map[string]int{}
	for _, e := range events {
		switch e.Type {
		case "TEXT_MESSAGE_START":
			at[e.MessageID] = len(out)
			out = append(out, crashSeenMessage{id: e.MessageID, role: e.Role})
		case "TEXT_MESSAGE_CONTENT":
			if i, ok := at[e.MessageID]; ok {
				out[i].text += e.Delta
			}
		case "TEXT_MESSAGE_END":
			if i, ok := at[e.MessageID]; ok {
				out[i].ended = true
			}
		}
	}
	return out
}

// crashStory is everything known of a failed thread: its history, what
// its client sent and saw, and the server's log lines about it.
func crashStory(th *crashThread, msgs []crashMessage, status string, logs []string, calls map[string]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status after the last restart: %s\nhistory (%d messages):\n", status, len(msgs))
	for i, m := range msgs {
		fmt.Fprintf(&b, "  %2d %-9s %-26s %q\n", i+1, m.Role, m.ID, m.text())
	}
	b.WriteString("turns, as the client lived them:\n")
	for _, tr := range th.turns {
		fmt.Fprintf(&b, "  turn %d %s message %q (HTTP calls: %d)\n", tr.n, tr.runID, tr.content, calls[tr.content])
		for _, a := range tr.attempts {
			times := ""
			if a.count > 1 {
				times = fmt.Sprintf(" (×%d)", a.count)
			}
			fmt.Fprintf(&b, "    %8v server %d: %s%s\n", a.at, a.gen, a.result, times)
		}
		if len(tr.events) > 0 {
			fmt.Fprintf(&b, "    stream: %s\n", crashStream(tr.events))
		}
		if tr.gaveUp != "" {
			fmt.Fprintf(&b, "    gave up: %s\n", tr.gaveUp)
		}
	}
	b.WriteString("server log lines about it:\n")
	key := "thread=" + th.id + " "
	for g, l := range logs {
		for line := range strings.SplitSeq(l, "\n") {
			if strings.Contains(line+" ", key) {
				fmt.Fprintf(&b, "  server %d: %s\n", g+1, line)
			}
		}
	}
	return b.String()
}

// crashStream is a stream in short: its text messages joined, and its
// other events.
func crashStream(events []crashEvent) string {
	var parts []string
	at := map[string]int{}
	for _, e := range events {
		switch e.Type {
		case "TEXT_MESSAGE_START":
			at[e.MessageID] = len(parts)
			parts = append(parts, "")
		case "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END":
		default:
			parts = append(parts, e.short())
		}
	}
	for _, m := range crashSeen(events) {
		cut := ""
		if !m.ended {
			cut = " (cut)"
		}
		parts[at[m.id]] = fmt.Sprintf("%s %s %q%s", m.role, m.id, m.text, cut)
	}
	return strings.Join(parts, " | ")
}

func crashEvents(events []crashEvent) string {
	s := make([]string, len(events))
	for i, e := range events {
		s[i] = e.short()
	}
	return strings.Join(s, " | ")
}

// crashErr is an error without the URL a client error repeats.
func crashErr(err error) string {
	if ue, ok := err.(*url.Error); ok {
		err = ue.Err
	}
	return err.Error()
}

// crashDetail is the detail of a problem document, or its text.
func crashDetail(b []byte) string {
	var p struct {
		Detail string `json:"detail"`
	}
	if json.Unmarshal(b, &p) == nil && p.Detail != "" {
		return p.Detail
	}
	return strings.TrimSpace(string(b))
}
