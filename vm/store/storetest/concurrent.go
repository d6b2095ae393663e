package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/aguic/aguic/vm/store"
)

var concurrentChecks = []check{
	{"SharedLease", checkConcurrentShared},
	{"Handoff", checkConcurrentHandoff},
}

// A committer's events carry who wrote them: worker w's commit i, event j.
type mark struct {
	W int `json:"w"`
	I int `json:"i"`
	J int `json:"j"`
}

// done is one successful concurrent commit: who made it, its checkpoint,
// and the Thread Commit returned.
type done struct {
	w, i int
	cp   *store.Thread
	th   store.Thread
}

func markedCommit(w, i, batch int) store.Commit {
	evs := make([]store.Event, batch)
	for j := range evs {
		evs[j] = store.Event{
			RunID: fmt.Sprintf("w%d", w),
			Time:  base.Add(time.Duration(i*batch+j) * time.Microsecond),
			Data:  fmt.Appendf(nil, `{"w":%d,"i":%d,"j":%d}`, w, i, j),
		}
	}
	cp := checkpoint(store.Running, fmt.Sprintf("w%d", w), w*1000+i)
	return store.Commit{Events: evs, Checkpoint: cp}
}

// errs collects errors from goroutines.
type errs struct {
	mu   sync.Mutex
	list []string
}

func (e *errs) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, fmt.Sprintf(format, args...))
}

func (e *errs) report(c *tc) {
	c.Helper()
	for i, s := range e.list {
		if i == 10 {
			c.Errorf("(and %d more errors)", len(e.list)-10)
			break
		}
		c.Error(s)
	}
	if len(e.list) > 0 {
		c.FailNow()
	}
}

// verifyLog checks a thread written concurrently by workers that each made
// commits commits of batch events: the log is 1..n without gap or
// repeat; every commit's events are contiguous, numbered as the Thread it
// returned says; each worker's events keep its order; versions are one per
// commit; the checkpoint is the last commit's.
func verifyLog(c *tc, k store.Key, v0 uint64, workers, commits, batch int, ds []done) {
	c.Helper()
	n := workers * commits * batch
	evs := c.allEvents(k, 0)
	c.checkSeqs(fmt.Sprintf("Events(%s) after %d concurrent commits of %d events", ks(k), workers*commits, batch), evs, 1, uint64(n))
	if len(evs) != n {
		return
	}
	marks := make([]mark, n)
	for x, e := range evs {
		if err := json.Unmarshal(e.Data, &marks[x]); err != nil {
			c.Fatalf("Events(%s): event %d: Data %q: %v", ks(k), e.Seq, e.Data, err)
		}
	}
	// Each worker's events in its order.
	next := make([]int, workers)
	for x, m := range marks {
		if m.W < 0 || m.W >= workers {
			c.Fatalf("Events(%s): event %d written by unknown worker %d", ks(k), x+1, m.W)
		}
		want := next[m.W]
		if got := m.I*batch + m.J; got != want {
			c.Errorf("Events(%s): event %d is worker %d's commit %d event %d, want its commit %d event %d: a committer's events out of order, lost or repeated",
				ks(k), x+1, m.W, m.I, m.J, want/batch, want%batch)
			return
		}
		next[m.W]++
	}
	// Each commit's events contiguous, where the returned Thread says.
	versions := map[uint64]bool{}
	var last done
	broken := 0
	for _, d := range ds {
		if broken >= 5 {
			c.Errorf("(and more commits whose events are not where they should be)")
			return
		}
		if d.th.LastSeq < uint64(batch) || d.th.LastSeq > uint64(n) {
			c.Errorf("Commit %d of worker %d to %s returned LastSeq %d, outside %d..%d", d.i, d.w, ks(k), d.th.LastSeq, batch, n)
			continue
		}
		for j := range batch {
			seq := d.th.LastSeq - uint64(batch) + 1 + uint64(j)
			if m := marks[seq-1]; m != (mark{d.w, d.i, j}) {
				c.Errorf("Commit %d of worker %d to %s returned LastSeq %d, but event %d is worker %d's commit %d event %d: a commit's events are not contiguous or the returned thread is not its own",
					d.i, d.w, ks(k), d.th.LastSeq, seq, m.W, m.I, m.J)
				broken++
				break
			}
		}
		if versions[d.th.Version] {
			c.Errorf("two commits to %s returned Version %d", ks(k), d.th.Version)
		}
		versions[d.th.Version] = true
		if d.th.Version > last.th.Version {
			last = d
		}
	}
	th := c.thread(k)
	if want := v0 + uint64(workers*commits); th.Version != want || last.th.Version != want {
		c.Errorf("Thread(%s) after %d commits from Version %d: Version %d, highest returned %d, want %d", ks(k), workers*commits, v0, th.Version, last.th.Version, want)
	}
	if d := diffCheckpoint(th, *last.cp); len(d) > 0 {
		c.Errorf("Thread(%s): the checkpoint is not the one of the commit that returned the highest Version (worker %d commit %d): %v", ks(k), last.w, last.i, d)
	}
	// In Version order, LastSeq grows by one batch per commit.
	slices.SortFunc(ds, func(a, b done) int { return int(a.th.Version) - int(b.th.Version) })
	for x, d := range ds {
		if want := uint64((x + 1) * batch); d.th.LastSeq != want {
			c.Errorf("the commit to %s that returned Version %d returned LastSeq %d, want %d", ks(k), d.th.Version, d.th.LastSeq, want)
			break
		}
	}
}

var concurrentKeys = []store.Key{
	key("acme", "chat", "c0"),
	key("evil", "chat", "c0"),
	key("acme", "chat", "c1"),
}

// checkConcurrentShared: one lease per thread, shared by the goroutines of
// its run, each committing in turn, to several threads at once.
func checkConcurrentShared(c *tc) {
	const workers, commits, batch = 4, 8, 3
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		e     errs
		mu    sync.Mutex
		ds    = make([][]done, len(concurrentKeys))
		v0    = make([]uint64, len(concurrentKeys))
	)
	for t, k := range concurrentKeys {
		l := c.acquire(k, fmt.Sprintf("run%d", t), long)
		v0[t] = c.thread(k).Version
		for w := range workers {
			wg.Go(func() {
				<-start
				for i := range commits {
					cm := markedCommit(w, i, batch)
					th, err := c.s.Commit(c.ctx, l, cm)
					if err != nil {
						e.add("worker %d commit %d to %s with the shared lease: %v", w, i, ks(k), err)
						return
					}
					mu.Lock()
					ds[t] = append(ds[t], done{w, i, cm.Checkpoint, th})
					mu.Unlock()
				}
			})
		}
	}
	close(start)
	wg.Wait()
	e.report(c)
	for t, k := range concurrentKeys {
		verifyLog(c, k, v0[t], workers, commits, batch, ds[t])
	}
}

// checkConcurrentHandoff: owners take turns on each thread, each taking the
// lease (retrying while busy), committing and releasing it, on several
// threads at once.
func checkConcurrentHandoff(c *tc) {
	const owners, rounds, batch = 3, 4, 2
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		e     errs
		mu    sync.Mutex
		ds    = make([][]done, len(concurrentKeys))
		v0    = make([]uint64, len(concurrentKeys))
	)
	deadline := time.Now().Add(30 * time.Second)
	for t, k := range concurrentKeys {
		c.release(c.acquire(k, "setup", long))
		v0[t] = c.thread(k).Version
		for w := range owners {
			owner := fmt.Sprintf("owner%d", w)
			wg.Go(func() {
				<-start
				for i := range rounds {
					var l store.Lease
					for tries := 1; ; tries++ {
						var err error
						l, err = c.s.Acquire(c.ctx, k, owner, long)
						if err == nil {
							break
						}
						if !errors.Is(err, store.ErrBusy) {
							e.add("Acquire(%s, %q), round %d, try %d: %v, want nil or ErrBusy", ks(k), owner, i, tries, err)
							return
						}
						if time.Now().After(deadline) {
							e.add("Acquire(%s, %q), round %d: still busy after %d tries", ks(k), owner, i, tries)
							return
						}
						runtime.Gosched()
					}
					cm := markedCommit(w, i, batch)
					th, err := c.s.Commit(c.ctx, l, cm)
					if err != nil {
						e.add("Commit to %s by %q (token %d), round %d: %v", ks(k), owner, l.Token, i, err)
						return
					}
					mu.Lock()
					ds[t] = append(ds[t], done{w, i, cm.Checkpoint, th})
					mu.Unlock()
					if err := c.s.Release(c.ctx, l); err != nil {
						e.add("Release(%s) by %q (token %d), round %d: %v", ks(k), owner, l.Token, i, err)
						return
					}
				}
			})
		}
	}
	close(start)
	wg.Wait()
	e.report(c)
	for t, k := range concurrentKeys {
		verifyLog(c, k, v0[t], owners, rounds, batch, ds[t])
	}
}
