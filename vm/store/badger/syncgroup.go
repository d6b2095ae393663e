package badger

import (
	"sync"
	"time"
)

// syncGroup shares syncs among concurrent callers (group commit): a caller
// waits for a sync that started after it called, and every caller that
// arrives while one sync runs shares the next.
//
// A commit that will sync says so before it writes (writing), and the
// leader of a round waits for the commits being written, up to gather,
// before it syncs: they would otherwise need a round of their own right
// after. Only commits already under way are waited for, so a lone commit
// syncs at once.
type syncGroup struct {
	mu      sync.Mutex
	busy    bool          // a round is gathering or syncing
	next    *syncRound    // the round callers join
	writing int           // commits being written that will sync after
	quiet   chan struct{} // closed when writing drops to 0, while a leader waits
}

type syncRound struct {
	done chan struct{}
	err  error
}

// gather is how long the leader of a round waits, at most, for the
// commits being written.
const gather = 300 * time.Microsecond

// writingOne notes a commit that is being written and will sync (run) or give
// up (wrote) when done.
func (g *syncGroup) writingOne() {
	g.mu.Lock()
	g.writing++
	g.mu.Unlock()
}

// wrote notes that a commit writingOne announced will not sync.
func (g *syncGroup) wrote() {
	g.mu.Lock()
	g.doneWriting()
	g.mu.Unlock()
}

func (g *syncGroup) doneWriting() {
	g.writing--
	if g.writing == 0 && g.quiet != nil {
		close(g.quiet)
		g.quiet = nil
	}
}

// run returns when a call of sync that started after run was called has
// returned, with its error. A caller that announced itself with
// writingOne passes announced.
func (g *syncGroup) run(announced bool, sync func() error) error {
	g.mu.Lock()
	if announced {
		g.doneWriting()
	}
	r := g.next
	if r == nil {
		r = &syncRound{done: make(chan struct{})}
		g.next = r
	}
	lead := !g.busy
	g.busy = true
	g.mu.Unlock()
	if lead {
		g.lead(sync)
	}
	<-r.done
	return r.err
}

// lead gathers the next round, syncs it, then hands the round after, if
// callers wait for one, to a goroutine of its own.
func (g *syncGroup) lead(sync func() error) {
	deadline := time.Now().Add(gather)
	g.mu.Lock()
	for g.writing > 0 {
		wait := time.Until(deadline)
		if wait <= 0 {
			break
		}
		if g.quiet == nil {
			g.quiet = make(chan struct{})
		}
		quiet := g.quiet
		g.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-quiet:
		case <-t.C:
		}
		t.Stop()
		g.mu.Lock()
	}
	r := g.next
	g.next = nil
	g.mu.Unlock()

	r.err = sync()
	close(r.done)

	g.mu.Lock()
	more := g.next != nil
	g.busy = more
	g.mu.Unlock()
	if more {
		go g.lead(sync)
	}
}
