package host

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleMemory: memory is returned after a burst, when the process has
// idled for each of idleFrees checks, and not again until the next burst.
func TestIdleMemory(t *testing.T) {
	var allocated atomic.Uint64
	checked := make(chan struct{})
	var freed atomic.Int32
	m := idleMemory{
		check: time.Millisecond,
		allocated: func() uint64 {
			select {
			case checked <- struct{}{}:
			default:
			}
			return allocated.Load()
		},
		free: func() { freed.Add(1) },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.start(ctx)
	// checks waits for n more looks at the allocations.
	checks := func(n int) {
		for range n {
			<-checked
		}
	}
	rounds := slices.Max(idleFrees)
	checks(2 * rounds)
	if n := freed.Load(); n != 0 {
		t.Fatalf("memory returned %d times before any burst", n)
	}
	for round := range 2 {
		allocated.Add(10 * idleAlloc) // a burst
		checks(3 * rounds)
		if n, want := freed.Load(), int32((round+1)*len(idleFrees)); n != want {
			t.Fatalf("after burst %d: memory returned %d times, want %d", round+1, n, want)
		}
	}
}
