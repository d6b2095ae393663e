package postgres_test

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/pgtest"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/storetest"
)

// BenchmarkStore runs the suite's benchmarks: 100 events of 200 bytes per
// commit, a 4 KiB checkpoint, the last 100 of 100,000 events.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return open(b, pgtest.Schema(b)) })
}

// turnEnd is the commit that ends a turn: its last 5 events of about 200
// bytes, the run's deltas replaced by one delta of 1 KiB of what the turn
// changed, the checkpoint (suspended, without a frame) and the run record,
// finished.
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

// BenchmarkTurnCommit measures one commit that ends a turn (turnEnd): as
// a turn makes it, synchronous (on disk when it returns); lazy, as the
// saves in the middle of a turn are; and synchronous from 8 × GOMAXPROCS goroutines
// committing to threads of their own at once, whose flushes PostgreSQL
// shares.
func BenchmarkTurnCommit(b *testing.B) {
	for _, bc := range []struct {
		name string
		lazy bool
	}{{"Sync", false}, {"Lazy", true}} {
		b.Run(bc.name, func(b *testing.B) {
			s := open(b, pgtest.Schema(b))
			defer s.Close()
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
		s := open(b, pgtest.Schema(b))
		defer s.Close()
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
