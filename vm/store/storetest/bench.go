package storetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
)

// Bench runs the store benchmarks as sub-benchmarks of b, each on a fresh
// store from open, which the benchmark closes:
//
//   - Append100: one Commit of 100 events of about 200 bytes; reports
//     events/s besides ns/op.
//   - Checkpoint4KiB: one Commit of a checkpoint whose frame is 4 KiB.
//   - Last100Of100k: LastEvents(100) of a thread holding 100,000 events
//     (the setup writes them first, in commits of 1,000).
func Bench(b *testing.B, open func(b *testing.B) store.Store) {
	b.Run("Append100", func(b *testing.B) { benchAppend(b, open) })
	b.Run("Checkpoint4KiB", func(b *testing.B) { benchCheckpoint(b, open) })
	b.Run("Last100Of100k", func(b *testing.B) { benchLast(b, open) })
}

func benchOpen(b *testing.B, open func(b *testing.B) store.Store) (store.Store, store.Lease) {
	b.Helper()
	s := open(b)
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Errorf("Close: %v", err)
		}
	})
	l, err := s.Acquire(b.Context(), key("bench", "chat", "t1"), "bench", 24*time.Hour)
	if err != nil {
		b.Fatalf("Acquire: %v", err)
	}
	return s, l
}

// benchEvents returns n events of about size bytes of Data each.
func benchEvents(n, size int) []store.Event {
	pad := bytes.Repeat([]byte("x"), max(size-80, 0))
	evs := make([]store.Event, n)
	for i := range evs {
		evs[i] = store.Event{
			RunID: "r1",
			Time:  base.Add(time.Duration(i) * time.Millisecond),
			Data:  fmt.Appendf(nil, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m%d","delta":"%s"}`, i, pad),
		}
	}
	return evs
}

func benchAppend(b *testing.B, open func(b *testing.B) store.Store) {
	s, l := benchOpen(b, open)
	ctx := b.Context()
	evs := benchEvents(100, 200)
	n := 0
	for b.Loop() {
		if _, err := s.Commit(ctx, l, store.Commit{Events: evs}); err != nil {
			b.Fatalf("Commit %d: %v", n+1, err)
		}
		n++
	}
	b.ReportMetric(float64(n*len(evs))/b.Elapsed().Seconds(), "events/s")
}

func benchCheckpoint(b *testing.B, open func(b *testing.B) store.Store) {
	s, l := benchOpen(b, open)
	ctx := b.Context()
	frame := fmt.Appendf(nil, `{"v":1,"workflow":"chat","node":"n7","context":{"notes":%q}}`, bytes.Repeat([]byte("y"), 4000))
	cp := &store.Thread{Status: store.Running, Hash: "sha256:ab", Frame: frame, RunID: "r1"}
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := s.Commit(ctx, l, store.Commit{Checkpoint: cp}); err != nil {
			b.Fatalf("Commit: %v", err)
		}
	}
}

func benchLast(b *testing.B, open func(b *testing.B) store.Store) {
	const total, batch, last = 100_000, 1000, 100
	s, l := benchOpen(b, open)
	ctx := b.Context()
	evs := benchEvents(batch, 150)
	for i := 0; i < total; i += batch {
		if _, err := s.Commit(ctx, l, store.Commit{Events: evs}); err != nil {
			b.Fatalf("setup: Commit of events %d..%d: %v", i+1, i+batch, err)
		}
	}
	got, err := s.LastEvents(ctx, l.Key, last)
	if err != nil {
		b.Fatalf("LastEvents: %v", err)
	}
	if len(got) != last || got[0].Seq != total-last+1 || got[last-1].Seq != total {
		b.Fatalf("LastEvents(%d) of %d events: got %d events (Seq %s), want Seq %d..%d", last, total, len(got), seqs(got), total-last+1, total)
	}
	for b.Loop() {
		if _, err := s.LastEvents(ctx, l.Key, last); err != nil {
			b.Fatalf("LastEvents: %v", err)
		}
	}
}
