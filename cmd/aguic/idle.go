package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// A burst of turns (conversations parking, a backlog recovered) grows the
// heap, and Badger's pooled table builders with it, and Go keeps what it
// freed for the next burst. Once the process idles, returnIdleMemory gives
// it back to the system, so that the memory of a server at rest follows
// what it holds, not the largest burst it served.
const (
	// idleCheck is how often the process looks whether it idles.
	idleCheck = 10 * time.Second
	// idleAlloc is what the process may allocate in an idleCheck and
	// still count as idle.
	idleAlloc = 4 << 20
	// idleRounds is how many idle checks in a row it takes before the
	// memory is returned: Badger frees a pooled builder for every two
	// seconds in which it builds no table.
	idleRounds = 3
)

// returnIdleMemory returns freed memory to the system once after each busy
// period that the process idles after, until ctx is done.
func returnIdleMemory(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	allocated := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	t := time.NewTicker(idleCheck)
	defer t.Stop()
	last, idle, returned := allocated(), 0, true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := allocated()
		if now-last > idleAlloc {
			idle, returned = 0, false
		} else {
			idle++
		}
		last = now
		if idle >= idleRounds && !returned {
			debug.FreeOSMemory()
			returned = true
			last = allocated()
		}
	}
}
