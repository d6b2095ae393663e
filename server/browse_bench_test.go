package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// benchFrame is the frame every thread of the browsing benchmarks holds:
// a conversation of a few KiB, which listing threads must not read.
var benchFrame = bytes.Repeat([]byte("x"), 4<<10)

// browseServer serves the workflows of testdata from an on-disk store that
// fill writes first, and returns the server's handler.
func browseServer(b *testing.B, fill func(ctx context.Context, st store.Store)) http.Handler {
	b.Helper()
	st, err := badger.Open(badger.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	fill(b.Context(), st)
	if err := st.Sync(b.Context()); err != nil {
		b.Fatal(err)
	}
	srv, _ := newServer(b, func(c *server.Config) { c.Store = st })
	return srv.Handler()
}

// benchCommit writes c to thread k, lazily: the fill syncs once at its end.
func benchCommit(ctx context.Context, b *testing.B, st store.Store, k store.Key, c store.Commit) {
	l, err := st.Acquire(ctx, k, "bench", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	c.Lazy, c.Release = true, true
	if _, err := st.Commit(ctx, l, c); err != nil {
		b.Fatal(err)
	}
}

// benchGet answers GET path with h and decodes the JSON answer into v.
func benchGet(b *testing.B, h http.Handler, path string, v any) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d: %s", path, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		b.Fatal(err)
	}
}

// reportCPU reports the CPU time of the process per request since cpu0:
// what a request costs whatever else the machine runs (0 where cpuTime
// cannot tell).
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/float64(time.Microsecond), "cpu-µs/op")
}

// cursorAt follows the cursor of the listing at path, in pages of 500,
// until it has read n items, and returns the cursor there.
func cursorAt(b *testing.B, h http.Handler, path string, n int) string {
	after := ""
	for read := 0; read < n; read += 500 {
		var page struct {
			Next string `json:"next"`
		}
		benchGet(b, h, path+"?limit=500&after="+url.QueryEscape(after), &page)
		after = page.Next
	}
	return after
}

// BenchmarkThreadList measures a page of the thread list: the first page
// of 100 threads, a page in the middle (from a cursor), and a status
// filter that keeps one thread in 100, which reads its bound of 1000
// threads per request; on stores of 1,000 and 20,000 threads, each with a
// 4 KiB frame and a run, on disk.
func BenchmarkThreadList(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		h := browseServer(b, func(ctx context.Context, st store.Store) {
			for i := range n {
				k := store.Key{Scope: "default", Workflow: "counter", Thread: fmt.Sprintf("t%06d", i)}
				status := store.Suspended
				if i%100 == 0 {
					status = store.Failed
				}
				benchCommit(ctx, b, st, k, store.Commit{
					Checkpoint: &store.Thread{Status: status, RunID: "r1", Frame: benchFrame},
					Run:        &store.Run{ID: "r1", Key: k, Status: status, Started: time.Now(), Finished: time.Now(), Input: benchFrame[:1024]},
					NewRun:     true,
				})
			}
		})
		for _, tc := range []struct{ name, path string }{
			{"first", "/agui/threads"},
			{"middle", "/agui/threads?after=" + url.QueryEscape(cursorAt(b, h, "/agui/threads", n/2))},
			{"status", "/agui/threads?status=failed"},
		} {
			b.Run(fmt.Sprintf("threads=%d/%s", n, tc.name), func(b *testing.B) {
				var page threadList
				cpu0 := cpuTime()
				for b.Loop() {
					benchGet(b, h, tc.path, &page)
				}
				reportCPU(b, cpu0)
				want := 100
				if tc.name == "status" {
					want = 10 // 1000 threads read
				}
				if len(page.Threads) != want {
					b.Fatalf("%s: %d threads, want %d", tc.path, len(page.Threads), want)
				}
			})
		}
	}
}

// BenchmarkThreadRuns measures a page of 100 runs of a thread: the newest,
// and a page in the middle (from a cursor); on threads of 200 and 20,000
// runs, each run with 1 KiB of input, on disk.
func BenchmarkThreadRuns(b *testing.B) {
	for _, n := range []int{200, 20000} {
		k := store.Key{Scope: "default", Workflow: "counter", Thread: "c1"}
		h := browseServer(b, func(ctx context.Context, st store.Store) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := range n {
				started := start.Add(time.Duration(i) * time.Second)
				benchCommit(ctx, b, st, k, store.Commit{
					Checkpoint: &store.Thread{Status: store.Suspended, RunID: fmt.Sprintf("r%06d", i), Frame: benchFrame},
					Run: &store.Run{ID: fmt.Sprintf("r%06d", i), Key: k, Status: store.Suspended, Started: started,
						Finished: started.Add(time.Millisecond), Outcome: []byte(`{"status":"suspended","wait":{"kind":"user"}}`), Input: benchFrame[:1024]},
					NewRun: true,
				})
			}
		})
		for _, tc := range []struct{ name, path string }{
			{"newest", "/agui/threads/c1/runs"},
			{"middle", "/agui/threads/c1/runs?after=" + url.QueryEscape(cursorAt(b, h, "/agui/threads/c1/runs", n/2))},
		} {
			b.Run(fmt.Sprintf("runs=%d/%s", n, tc.name), func(b *testing.B) {
				var page struct {
					Runs []server.RunInfo `json:"runs"`
				}
				cpu0 := cpuTime()
				for b.Loop() {
					benchGet(b, h, tc.path, &page)
				}
				reportCPU(b, cpu0)
				if len(page.Runs) != 100 {
					b.Fatalf("%s: %d runs, want 100", tc.path, len(page.Runs))
				}
			})
		}
	}
}
