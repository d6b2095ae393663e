package storetest

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
)

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

// BenchTurnCommit measures the commit that ends a turn (turnEnd), as
// sub-benchmarks of b, each on a fresh store from open, which it closes:
// Sync, synchronous as a turn makes it (durable when it returns); Lazy, as
// the saves in the middle of a turn are; and SyncParallel8, synchronous
// from 8 × GOMAXPROCS goroutines (b.SetParallelism(8)) committing to
// threads of their own at once, whose syncs the store may share. Every
// store runs the same commits the same way, so their numbers compare.
func BenchTurnCommit(b *testing.B, open func(b *testing.B) store.Store) {
	for _, bc := range []struct {
		name string
		lazy bool
	}{{"Sync", false}, {"Lazy", true}} {
		b.Run(bc.name, func(b *testing.B) {
			s, l := benchOpen(b, open)
			for b.Loop() {
				if _, err := s.Commit(b.Context(), l, turnEnd(l.Key, bc.lazy)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("SyncParallel8", func(b *testing.B) {
		s, _ := benchOpen(b, open)
		var next atomic.Int64
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			k := key("bench", "chat", fmt.Sprint(next.Add(1)))
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
