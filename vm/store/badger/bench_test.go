package badger

import (
	"bytes"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/storetest"
)

func benchStore(b *testing.B, opts Options) *Store {
	b.Helper()
	s, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	return s
}

// BenchmarkStore runs the suite's benchmarks: 100 events of 200 bytes per
// commit, a 4 KiB checkpoint, the last 100 of 100,000 events.
func BenchmarkStore(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts func(dir string) Options
	}{
		{"Disk", func(dir string) Options { return Options{Dir: dir} }},
		{"DiskSyncWrites", func(dir string) Options { return Options{Dir: dir, SyncWrites: true} }},
		{"Memory", func(string) Options { return Options{InMemory: true} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			storetest.Bench(b, func(b *testing.B) store.Store {
				s, err := Open(bc.opts(b.TempDir()))
				if err != nil {
					b.Fatal(err)
				}
				return s
			})
		})
	}
}

// BenchmarkAppend1KiB commits 100 events of 1 KiB at a time, as the end of
// a run would, each commit durable (synced) when it returns: from one
// goroutine, and from 8 goroutines writing to their own threads at once,
// which share syncs.
func BenchmarkAppend1KiB(b *testing.B) {
	events := make([]store.Event, 100)
	for i := range events {
		events[i] = store.Event{RunID: "r1", Time: time.Now(), Data: bytes.Repeat([]byte{'x'}, 1024)}
	}
	for _, syncWrites := range []bool{false, true} {
		name := "SyncPerCommit"
		if syncWrites {
			name = "SyncWrites"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, Options{Dir: b.TempDir(), SyncWrites: syncWrites})
			l, err := s.Acquire(b.Context(), store.Key{Thread: "t"}, "bench", time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := s.Commit(b.Context(), l, store.Commit{Events: events}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "events/s")
		})
		b.Run(name+"Parallel8", func(b *testing.B) {
			s := benchStore(b, Options{Dir: b.TempDir(), SyncWrites: syncWrites})
			var next atomic.Int64
			var total atomic.Int64
			b.SetParallelism(8 / max(runtime.GOMAXPROCS(0), 1))
			b.RunParallel(func(pb *testing.PB) {
				k := store.Key{Thread: fmt.Sprint(next.Add(1))}
				l, err := s.Acquire(b.Context(), k, "bench", time.Hour)
				if err != nil {
					b.Error(err)
					return
				}
				for pb.Next() {
					if _, err := s.Commit(b.Context(), l, store.Commit{Events: events}); err != nil {
						b.Error(err)
						return
					}
					total.Add(int64(len(events)))
				}
			})
			b.ReportMetric(float64(total.Load())/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkOpen1M opens a store of a million threads, each with a
// checkpoint, a run and 2 events (the setup writes them first and
// takes a while; skipped with -short). It also reports the heap the open
// store holds.
func BenchmarkOpen1M(b *testing.B) {
	if testing.Short() {
		b.Skip("the setup writes a million threads")
	}
	const threads = 1_000_000
	dir := b.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	wb := s.db.NewWriteBatch()
	now := time.Now()
	frame := bytes.Repeat([]byte{'f'}, 300)
	for i := range threads {
		k := store.Key{Scope: "acme", Workflow: "chat", Thread: fmt.Sprintf("thread-%07d", i)}
		tk := threadKey(k)
		h := header{Status: store.Suspended, Hash: "sha256:1", RunID: fmt.Sprint("run-", i), LastSeq: 2, FirstSeq: 1, Version: 1, Gen: uint64(i + 1), Created: now, Updated: now}
		r := store.Run{ID: h.RunID, Key: k, Status: store.Suspended, Started: now}
		ev := encodeEvent(&store.Event{RunID: h.RunID, Time: now, Data: []byte(`{"type":"TEXT_MESSAGE_CONTENT","delta":"hello"}`)})
		for _, kv := range [][2][]byte{
			{key(prefixThread, tk), encodeHeader(&h)},
			{key(prefixFrame, tk), frame},
			{eventKey(eventPrefix(tk, h.Gen), 1), ev},
			{eventKey(eventPrefix(tk, h.Gen), 2), ev},
			{runKey(tk, h.Gen, h.RunID), encodeRun(&r)},
			{statusKey(r.Status, tk, h.Gen, r.ID), nil},
		} {
			if err := wb.Set(kv[0], kv[1]); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := wb.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("setup: %d threads in %v", threads, time.Since(start).Round(time.Millisecond))

	var heap uint64
	for b.Loop() {
		s, err := Open(Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		heap = max(heap, heapInUse())
		if _, err := s.Thread(b.Context(), store.Key{Scope: "acme", Workflow: "chat", Thread: "thread-0999999"}); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
}

// BenchmarkOpenEmpty opens a new store and reports the heap it holds.
func BenchmarkOpenEmpty(b *testing.B) {
	var heap uint64
	for b.Loop() {
		s, err := Open(Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		heap = max(heap, heapInUse())
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
