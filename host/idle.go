package host

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"time"

	"github.com/aguic/aguic/internal/every"
)

// A burst of turns (conversations parking, a backlog recovered) grows the
// heap, and Badger's pooled table builders with it, and Go keeps what it
// freed for the next burst; the pages of the store's files that the burst
// read or wrote may stay mapped in the process. Once the process idles, an
// idleMemory gives both back to the system, so that the memory of a server
// at rest follows what it holds, not the largest burst it served nor the
// size of its data.
const (
	// idleCheck is how often the process looks whether it idles.
	idleCheck = 2 * time.Second
	// idleAlloc is what the process may allocate in an idleCheck and
	// still count as idle.
	idleAlloc = 4 << 20
)

// idleFrees are the numbers of idle checks in a row after a burst at which
// the memory is returned: soon, and again once Badger has freed its pooled
// table builders (one of its up to eight for every two seconds in which
// it builds no table).
var idleFrees = []int{2, 10}

// idleMemory returns freed memory to the system after each busy period
// that the process idles after, at idleFrees.
type idleMemory struct {
	check     time.Duration
	allocated func() uint64 // the bytes allocated since the process started
	free      func()        // returns freed memory to the system
}

// processMemory is the idleMemory of a host: it returns the heap's free
// memory, then calls release, when not nil, for the store's.
func processMemory(release func() error, log *slog.Logger) idleMemory {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	return idleMemory{
		check: idleCheck,
		allocated: func() uint64 {
			metrics.Read(sample)
			return sample[0].Value.Uint64()
		},
		free: func() {
			debug.FreeOSMemory()
			if release == nil {
				return
			}
			if err := release(); err != nil {
				log.Warn("giving memory back at idle", "error", err)
			}
		},
	}
}

// start looks every check whether the process idles, from a goroutine of
// its own, until ctx is done.
func (m idleMemory) start(ctx context.Context) <-chan struct{} {
	last, idle, burst := m.allocated(), 0, false
	return every.Run(ctx, m.check, func() {
		now := m.allocated()
		if now-last > idleAlloc {
			idle, burst = 0, true
		} else {
			idle++
		}
		last = now
		if burst && slices.Contains(idleFrees, idle) {
			m.free()
			last = m.allocated()
			burst = idle < slices.Max(idleFrees)
		}
	})
}
