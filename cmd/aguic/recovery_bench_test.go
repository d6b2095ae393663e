package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/pgtest"
	"github.com/aguic/aguic/server/agui"
)

// recoveryWorkflow answers every turn after an HTTP call to the
// benchmark's server, which holds the calls until it is released.
const recoveryWorkflow = `wf 1

workflow slow {
  conversation = true

  flow {
    top: say "you said <<$agent.latestUserMessage.content>>"
    http GET "<<env('SLOW_URL')>>/<<$agent.latestUserMessage.content>>" -> $r
    say "server said <<$r.body>>"
    wait: suspend
    goto top
  }
}
`

// recoveryRuns are the numbers of runs in progress BenchmarkRecovery
// kills, and recoveryTTLs the lease TTLs it measures.
var (
	recoveryRuns = []int{16, 200}
	recoveryTTLs = []time.Duration{10 * time.Second, 2 * time.Second}
)

// BenchmarkRecovery measures how long the runs of a replica that died
// take to finish on another: two aguic serve processes, A and B, share a
// PostgreSQL schema (skipped without AGUIC_TEST_POSTGRES), both with
// --lease-ttl as the sub-benchmark says. Each iteration starts N runs on A
// (conversations whose turn waits on an HTTP call that the benchmark's
// server holds), and once A has made all N calls, kills A with SIGKILL
// and releases the server, which from then on answers at once. Each
// client then follows its run on B, as a client whose stream broke does
// (GET {base}/threads/{id}/runs/{run}/events), to its RUN_FINISHED.
// It reports, from the SIGKILL, the time until B says it resumes them
// (claimed-s, from B's log), and until the first and the last of the N
// runs finished (first-s, all-s): means over the iterations, and the
// least and the most of all-s (all-min-s, all-max-s); each iteration's
// are logged. A is started again for the next iteration, and the kill
// comes after a pause of random length (up to 2s, or a third of the TTL),
// so that the iterations sample the cycles that set the time: B's look
// for stranded runs every 2 seconds, A's lease renewals every third of
// the TTL.
// Nothing in it is a timed assertion: only a run that does not finish
// within two minutes, or ends in error, fails it.
//
//	AGUIC_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test go test ./cmd/aguic -run '^$' -bench Recovery -benchtime 3x -v -timeout 30m
func BenchmarkRecovery(b *testing.B) {
	pgtest.URL(b) // skips without AGUIC_TEST_POSTGRES, before the build
	dir := b.TempDir()
	bin := buildBench(b, dir)
	wfDir := filepath.Join(dir, "workflows")
	writeFiles(b, wfDir, map[string]string{"slow.wf": recoveryWorkflow})
	hold := newHoldServer()
	b.Cleanup(hold.Close)
	env := []string{"SLOW_URL=" + hold.URL}

	for _, ttl := range recoveryTTLs {
		b.Run("lease-ttl="+ttl.String(), func(b *testing.B) {
			for _, n := range recoveryRuns {
				b.Run("runs="+strconv.Itoa(n), func(b *testing.B) {
					args := []string{"--store", pgStoreArg(b, pgtest.Schema(b), ""), "--lease-ttl", ttl.String()}
					a := startReplica(b, bin, wfDir, env, args...)
					live := startReplica(b, bin, wfDir, env, args...)
					var claims, firsts, alls []time.Duration
					iter := 0
					for b.Loop() {
						if a == nil {
							a = startReplica(b, bin, wfDir, env, args...)
						}
						iter++
						claimed, first, all := recoverOnce(b, hold, a, live, ttl, fmt.Sprintf("i%d-%s", iter, randomHex(3)), n)
						a = nil // killed
						claims, firsts, alls = append(claims, claimed), append(firsts, first), append(alls, all)
						b.Logf("iteration %d: B took the runs over %.2fs after the SIGKILL; the first finished %.2fs after it, all %d %.2fs after", iter, claimed.Seconds(), first.Seconds(), n, all.Seconds())
					}
					b.ReportMetric(meanSeconds(claims), "claimed-s")
					b.ReportMetric(meanSeconds(firsts), "first-s")
					b.ReportMetric(meanSeconds(alls), "all-s")
					b.ReportMetric(slices.Min(alls).Seconds(), "all-min-s")
					b.ReportMetric(slices.Max(alls).Seconds(), "all-max-s")
				})
			}
		})
	}
}

func meanSeconds(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum.Seconds() / float64(max(len(ds), 1))
}

// recoverOnce starts n runs on dying (threads named after tag), kills it
// once they all wait on hold, releases hold, and returns how long after
// the kill live said it resumes them (the first such line of its log) and
// the first and the last of them finished, as followed on live.
func recoverOnce(b *testing.B, hold *holdServer, dying, live *crashProc, ttl time.Duration, tag string, n int) (claimed, first, all time.Duration) {
	b.Helper()
	hold.hold()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}}
	defer hc.CloseIdleConnections()
	thread := func(i int) string { return fmt.Sprintf("rec-%s-%d", tag, i) }
	for i := range n {
		go func() {
			// The stream breaks when a dies; what it says does not matter.
			body := fmt.Sprintf(`{"threadId":%q,"runId":"%s-r1","messages":[{"id":"%s-m1","role":"user","content":"hold-%d"}]}`, thread(i), thread(i), thread(i), i)
			req, _ := http.NewRequest(http.MethodPost, dying.log.url+"/workflows/slow", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "text/event-stream")
			if resp, err := hc.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	if !hold.waitArrived(n, time.Minute) {
		b.Fatalf("%d of %d runs called the server within a minute\n%s", hold.arrivedCount(), n, crashTail(dying.log.String(), 20))
	}

	// B looks for stranded runs every 2 seconds, and A renewed the runs'
	// leases every third of the TTL: a pause of random length before the
	// kill keeps the kill from falling at the same point of those cycles in
	// every iteration (it does, without it: an iteration ends right after
	// one of B's looks).
	time.Sleep(rand.N(max(2*time.Second, ttl/3)))
	logged := len(live.log.String())
	start := time.Now()
	dying.kill()
	hold.release()

	done := make([]time.Duration, n)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d, err := followToEnd(hc, live.log.url, thread(i), thread(i)+"-r1", start, 2*time.Minute)
			if err != nil {
				failed.Store(true)
				b.Errorf("run of %s: %v\n%s", thread(i), err, crashTail(live.log.String(), 10))
			}
			done[i] = d
		})
	}
	wg.Wait()
	if failed.Load() {
		b.FailNow()
	}
	claimed = -1
	for line := range strings.Lines(live.log.String()[logged:]) {
		if strings.Contains(line, `msg="resuming runs no process executes"`) {
			if at, ok := logTime(line); ok {
				claimed = at.Sub(start)
			}
			break
		}
	}
	if claimed < 0 {
		b.Fatalf("B's log does not say when it resumed the runs:\n%s", crashTail(live.log.String(), 10))
	}
	return claimed, slices.Min(done), slices.Max(done)
}

// logTime is the time of a log line of aguic serve (time=RFC 3339).
func logTime(line string) (time.Time, bool) {
	f, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
	t, err := time.Parse(time.RFC3339Nano, f)
	return t, err == nil && strings.HasPrefix(line, "time=")
}

// followToEnd follows run on thread at base (a replica's AG-UI base URL)
// until it reads RUN_FINISHED, and returns the time since start then. A
// stream that ends without its terminal event, or a request that fails, is
// tried again after 50ms, until limit.
func followToEnd(hc *http.Client, base, thread, run string, start time.Time, limit time.Duration) (time.Duration, error) {
	u := fmt.Sprintf("%s/threads/%s/runs/%s/events", base, thread, run)
	var last error
	for time.Since(start) < limit {
		resp, err := hc.Get(u)
		if err != nil {
			last = err
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for f, err := range agui.ReadSSE(resp.Body) {
			if err != nil {
				last = err
				break
			}
			switch {
			case bytes.Contains(f.Data, []byte(`"type":"RUN_FINISHED"`)):
				resp.Body.Close()
				return time.Since(start), nil
			case bytes.Contains(f.Data, []byte(`"type":"RUN_ERROR"`)):
				resp.Body.Close()
				return time.Since(start), fmt.Errorf("RUN_ERROR: %s", f.Data)
			}
		}
		resp.Body.Close()
		if last == nil {
			last = fmt.Errorf("the stream ended before RUN_FINISHED")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start), fmt.Errorf("not finished %v after the kill: %v", limit, last)
}

// holdServer answers GET /hold-N with "ok" at once when released, and
// holds the request (until released, or the caller goes) otherwise.
type holdServer struct {
	*httptest.Server
	mu       sync.Mutex
	released chan struct{} // closed by release
	arrived  int           // requests held since hold
	changed  chan struct{} // closed and replaced when arrived changes
}

func newHoldServer() *holdServer {
	h := &holdServer{released: make(chan struct{}), changed: make(chan struct{})}
	close(h.released)
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		released := h.released
		select {
		case <-released:
		default:
			h.arrived++
			close(h.changed)
			h.changed = make(chan struct{})
		}
		h.mu.Unlock()
		select {
		case <-released:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "ok")
	}))
	return h
}

// hold makes the server hold the requests that come from now on.
func (h *holdServer) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released, h.arrived = make(chan struct{}), 0
}

// release answers the held requests and every one after.
func (h *holdServer) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.released)
}

func (h *holdServer) arrivedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.arrived
}

// waitArrived waits until n requests are held, for at most d.
func (h *holdServer) waitArrived(n int, d time.Duration) bool {
	deadline := time.After(d)
	for {
		h.mu.Lock()
		arrived, changed := h.arrived, h.changed
		h.mu.Unlock()
		if arrived >= n {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}
