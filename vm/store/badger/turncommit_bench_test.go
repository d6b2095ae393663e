package badger_test

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// turnEnd is the commit that ends a turn, the same as the PostgreSQL
// store's BenchmarkTurnCommit makes (vm/store/postgres/bench_test.go):
// its last 5 events of about 200 bytes, the run's deltas replaced by one
// delta of 1 KiB of what the turn changed, the checkpoint (suspended,
// without a frame) and the run record, finished.
func turnEnd(k store.Key, lazy bool) store.Commit {
	evs := make([]store.Event, 5)
	for i := range evs {
		evs[i] = store.Event{RunID: "r1", Time: time.Now(), Data: fmt.Appendf(nil,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"%s"}`, bytes.Repeat([]byte("x"), 140))}
	}
	return store.Commit{
		Checkpoint: &store.Thread{Status: store.Suspended, Hash: "sha256:ab", RunID: "r1", Wait: []byte(`{"interrupt":"approve"}`)},
		Trim:       true,
		Keep:       0,
		Delta:      bytes.Repeat([]byte("d"), 1024),
		Events:     evs,
		Run: &store.Run{ID: "r1", Key: k, Status: store.Suspended, Started: time.Now(), Finished: time.Now(),
			Outcome: []byte(`{"status":"suspended"}`)},
		Lazy: lazy,
	}
}

// openDisk opens a store in a fresh directory, closed when b ends.
func openDisk(b *testing.B) *badger.Store {
	b.Helper()
	s, err := badger.Open(badger.Options{Dir: b.TempDir()})
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

// BenchmarkTurnCommit is the PostgreSQL store's BenchmarkTurnCommit on
// disk, the same commits made the same way, so that the two compare: one
// commit that ends a turn (turnEnd) as a turn makes it, synchronous (on
// disk when it returns); lazy, as the saves in the middle of a turn are;
// and synchronous from 8 × GOMAXPROCS goroutines (b.SetParallelism(8), as
// there) committing to threads of their own at once, whose syncs the store
// shares.
func BenchmarkTurnCommit(b *testing.B) {
	for _, bc := range []struct {
		name string
		lazy bool
	}{{"Sync", false}, {"Lazy", true}} {
		b.Run(bc.name, func(b *testing.B) {
			s := openDisk(b)
			k := store.Key{Scope: "bench", Workflow: "chat", Thread: "t1"}
			l, err := s.Acquire(b.Context(), k, "bench", time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := s.Commit(b.Context(), l, turnEnd(k, bc.lazy)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("SyncParallel8", func(b *testing.B) {
		s := openDisk(b)
		var next atomic.Int64
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			k := store.Key{Scope: "bench", Workflow: "chat", Thread: fmt.Sprint(next.Add(1))}
			l, err := s.Acquire(b.Context(), k, "bench", time.Hour)
			if err != nil {
				b.Error(err)
				return
			}
			for pb.Next() {
				if _, err := s.Commit(b.Context(), l, turnEnd(k, false)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
