package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
)

var busChecks = []check{
	{"Pending", checkPending},
	{"Stranded", checkStranded},
	{"Claim", checkClaim},
	{"ClaimRacesRunEnd", checkClaimRacesRunEnd},
	{"WatchCommit", checkWatchCommit},
	{"WatchReleaseEnqueueDelete", checkWatchOthers},
	{"Cancel", checkCancel},
	{"TakeTask", checkTakeTask},
}

// busWait bounds how long a check waits for a watch or a cancel request
// to arrive.
const busWait = 5 * time.Second

// woken waits until ch receives, failing the check after busWait.
func (c *tc) woken(what string, ch <-chan struct{}) {
	c.Helper()
	select {
	case <-ch:
	case <-time.After(busWait):
		c.Fatalf("%s: the watch was not woken within %v", what, busWait)
	case <-c.ctx.Done():
		c.Fatalf("%s: %v", what, c.ctx.Err())
	}
}

// drain takes a pending wake from ch, if any: what a watch received before
// a step is not the step's.
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

func (c *tc) pending(k store.Key) []string {
	c.Helper()
	runs, err := c.s.Pending(c.ctx, k)
	if err != nil {
		c.Fatalf("Pending(%s): %v", ks(k), err)
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
		if r.Key != k {
			c.Errorf("Pending(%s) returned run %q of %s", ks(k), r.ID, ks(r.Key))
		}
	}
	return ids
}

// queue enqueues run id on k, started at base plus ms milliseconds.
func (c *tc) queue(k store.Key, id string, ms int) {
	c.Helper()
	r := store.Run{ID: id, Status: store.Queued, Started: base.Add(time.Duration(ms) * time.Millisecond), Input: []byte(`{"q":"` + id + `"}`)}
	if err := c.s.Enqueue(c.ctx, k, r); err != nil {
		c.Fatalf("Enqueue(%s, %q): %v", ks(k), id, err)
	}
}

func checkPending(c *tc) {
	k := key("acme", "chat", "t1")
	if got := c.pending(k); len(got) != 0 {
		c.Errorf("Pending of a thread that does not exist: %v, want none", got)
	}
	l := c.acquire(k, "owner-a", long)
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1), Run: mkRun("r1", k, store.Running), NewRun: true})
	// Queued out of order: Pending gives them in the order they started.
	c.queue(k, "q-late", 30)
	c.queue(k, "q-early", 10)
	c.queue(k, "q-b", 20)
	c.queue(k, "q-a", 20)
	want := []string{"r1", "q-early", "q-a", "q-b", "q-late"}
	if got := c.pending(k); !slices.Equal(got, want) {
		c.Errorf("Pending(%s): %v, want the running run, then the queued ones by start time and id: %v", ks(k), got, want)
	}
	// Ended runs and other threads' runs are not pending.
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Finished, "r1", 2), Run: mkRun("r1", k, store.Finished)})
	other := key("acme", "chat", "t2")
	c.create(other, store.Running, 1)
	if got := c.pending(k); !slices.Equal(got, want[1:]) {
		c.Errorf("Pending(%s) after its running run finished: %v, want %v", ks(k), got, want[1:])
	}
}

func checkStranded(c *tc) {
	stranded := func() []store.Key {
		c.Helper()
		keys, err := c.s.Stranded(c.ctx, 100)
		if err != nil {
			c.Fatalf("Stranded: %v", err)
		}
		return keys
	}
	has := func(keys []store.Key, k store.Key) bool { return slices.Contains(keys, k) }

	held := key("acme", "chat", "held")
	released := key("acme", "chat", "released")
	expired := key("acme", "chat", "expired")
	queued := key("acme", "chat", "queued")
	idle := key("acme", "chat", "idle")
	start := func(k store.Key, owner string, ttl time.Duration) store.Lease {
		c.Helper()
		l := c.acquire(k, owner, ttl)
		c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1), Run: mkRun("r1", k, store.Running), NewRun: true})
		return l
	}
	start(held, "alive", long)
	c.release(start(released, "gone", long))
	le := start(expired, "dead", 20*time.Millisecond)
	c.create(idle, store.Suspended, 1)
	c.create(queued, store.Suspended, 1)
	c.queue(queued, "q1", 1)

	c.until(le)
	keys := stranded()
	for _, k := range []store.Key{released, expired, queued} {
		if !has(keys, k) {
			c.Errorf("Stranded: %s is not listed (%s); want every thread with a pending run and no live lease", ks(k), fmtKeys(keys))
		}
	}
	for _, k := range []store.Key{held, idle} {
		if has(keys, k) {
			c.Errorf("Stranded: %s is listed (%s); a thread whose lease is held, or that has no pending run, is not stranded", ks(k), fmtKeys(keys))
		}
	}
	// A recovery takes the lease: the thread is not stranded any more.
	c.acquire(expired, "recovery", long)
	if has(stranded(), expired) {
		c.Errorf("Stranded lists %s after its lease was taken", ks(expired))
	}
	if keys, err := c.s.Stranded(c.ctx, 1); err != nil || len(keys) != 1 {
		c.Errorf("Stranded(limit 1): %s, %v; want one thread", fmtKeys(keys), err)
	}
}

func checkClaim(c *tc) {
	claim := func(k store.Key, owner string) (store.Lease, []string, error) {
		c.Helper()
		l, runs, err := c.s.Claim(c.ctx, k, owner, long)
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.ID
		}
		return l, ids, err
	}
	nothing := func(what string, k store.Key) {
		c.Helper()
		l, ids, err := claim(k, "recovery")
		if err != nil || l != (store.Lease{}) || len(ids) != 0 {
			c.Errorf("Claim of %s: %+v, %v, %v; want no lease, no runs, no error", what, l, ids, err)
		}
	}
	start := func(k store.Key, owner string, ttl time.Duration) store.Lease {
		c.Helper()
		l := c.acquire(k, owner, ttl)
		c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1), Run: mkRun("r1", k, store.Running), NewRun: true})
		return l
	}

	missing := key("acme", "chat", "missing")
	nothing("a thread that does not exist", missing)
	if _, err := c.s.Thread(c.ctx, missing); !errors.Is(err, store.ErrNotFound) {
		c.Errorf("Claim created thread %s: Thread says %v", ks(missing), err)
	}
	idle := key("acme", "chat", "idle")
	c.create(idle, store.Suspended, 1)
	nothing("a thread with no pending run", idle)
	c.release(c.acquire(idle, "next-request", long)) // Claim left the lease free

	held := key("acme", "chat", "held")
	start(held, "alive", long)
	if _, _, err := claim(held, "recovery"); !errors.Is(err, store.ErrBusy) {
		c.Errorf("Claim of a thread whose lease is held: %v, want ErrBusy", err)
	}

	// A run whose last commit gave the lease up: nothing is left to claim.
	ended := key("acme", "chat", "ended")
	l := start(ended, "alive", long)
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Suspended, "r1", 2), Run: mkRun("r1", ended, store.Finished), Release: true})
	nothing("a thread whose run ended and released its lease", ended)
	c.release(c.acquire(ended, "next-request", long))

	// Stranded runs: a released lease, an expired one, a queued run.
	released := key("acme", "chat", "released")
	c.release(start(released, "gone", long))
	expired := key("acme", "chat", "expired")
	le := start(expired, "dead", 20*time.Millisecond)
	queued := key("acme", "chat", "queued")
	c.create(queued, store.Suspended, 1)
	c.queue(queued, "q1", 1)
	c.until(le)
	for _, tc := range []struct {
		k    store.Key
		want []string
	}{{released, []string{"r1"}}, {expired, []string{"r1"}}, {queued, []string{"q1"}}} {
		l, ids, err := claim(tc.k, "recovery")
		if err != nil || !slices.Equal(ids, tc.want) || l.Owner != "recovery" || l.Token == 0 {
			c.Errorf("Claim of %s: %+v, %v, %v; want the lease and the runs %v", ks(tc.k), l, ids, err, tc.want)
			continue
		}
		if _, err := c.s.Acquire(c.ctx, tc.k, "other", long); !errors.Is(err, store.ErrBusy) {
			c.Errorf("Acquire of %s after Claim: %v, want ErrBusy", ks(tc.k), err)
		}
		c.commit(l, store.Commit{Run: mkRun(tc.want[0], tc.k, store.Finished), Release: true})
	}
	if _, err := c.s.Commit(c.ctx, le, store.Commit{Checkpoint: checkpoint(store.Finished, "r1", 2)}); !errors.Is(err, store.ErrLeaseLost) {
		c.Errorf("a commit under the expired lease Claim took over: %v, want ErrLeaseLost", err)
	}
}

// checkClaimRacesRunEnd: while runs start and end on a thread, each under
// its lease and giving it up in its last commit, a claim never finds the
// thread stranded, and so never takes its lease.
func checkClaimRacesRunEnd(c *tc) {
	k := key("acme", "chat", "busy")
	c.create(k, store.Suspended, 1)
	const turns = 200
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for i := range turns {
			id := fmt.Sprintf("r%d", i)
			l, err := c.s.Acquire(c.ctx, k, "server", long)
			if err != nil {
				c.Errorf("turn %d: Acquire: %v (a claim took the lease)", i, err)
				return
			}
			if _, err := c.s.Commit(c.ctx, l, store.Commit{Checkpoint: checkpoint(store.Running, id, 1), Run: mkRun(id, k, store.Running), NewRun: true}); err != nil {
				c.Errorf("turn %d: %v", i, err)
				return
			}
			if _, err := c.s.Commit(c.ctx, l, store.Commit{Checkpoint: checkpoint(store.Suspended, id, 1), Run: mkRun(id, k, store.Finished), Release: true}); err != nil {
				c.Errorf("turn %d: %v", i, err)
				return
			}
		}
	})
	for claims := 0; ; claims++ {
		select {
		case <-done:
			wg.Wait()
			return
		default:
		}
		l, runs, err := c.s.Claim(c.ctx, k, "recovery", long)
		switch {
		case errors.Is(err, store.ErrBusy):
		case err != nil:
			c.Fatalf("Claim: %v", err)
		case l != (store.Lease{}) || len(runs) != 0:
			c.s.Release(c.ctx, l)
			c.Fatalf("claim %d took the lease of a thread whose runs all ran under a lease: %+v, runs %v", claims, l, runs)
		}
	}
}

func checkWatchCommit(c *tc) {
	k := key("acme", "chat", "t1")
	ch, stop := c.s.Watch(k)
	defer stop()
	l := c.acquire(k, "owner-a", long)
	drain(ch)
	c.commit(l, store.Commit{Events: mkEvents("r1", 1, 2)})
	c.woken("Watch after a commit", ch)
	// Every commit wakes it again.
	c.commit(l, store.Commit{Events: mkEvents("r1", 3, 1), Lazy: true})
	c.woken("Watch after a second, lazy, commit", ch)
	// Another watch of the same thread is woken too, and stop ends a
	// watch without disturbing the other.
	ch2, stop2 := c.s.Watch(k)
	stop2()
	stop2() // twice is harmless
	c.commit(l, store.Commit{Events: mkEvents("r1", 4, 1)})
	c.woken("Watch after another watch of the thread stopped", ch)
	select {
	case <-ch2:
		c.Errorf("a stopped watch received a change")
	default:
	}
}

func checkWatchOthers(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", long)
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1), Run: mkRun("r1", k, store.Running), NewRun: true})
	ch, stop := c.s.Watch(k)
	defer stop()
	drain(ch)
	c.release(l)
	c.woken("Watch after the lease was released", ch)
	drain(ch)
	c.queue(k, "q1", 1)
	c.woken("Watch after a run was enqueued", ch)
	drain(ch)
	if err := c.s.DeleteThread(c.ctx, k); err != nil {
		c.Fatalf("DeleteThread(%s): %v", ks(k), err)
	}
	c.woken("Watch after the thread was deleted", ch)
}

func checkCancel(c *tc) {
	k := key("acme", "chat", "t1")
	type req struct {
		k  store.Key
		id string
	}
	got := make(chan req, 4)
	stop := c.s.OnCancel(func(k store.Key, id string) { got <- req{k, id} })
	other := make(chan req, 4)
	stopOther := c.s.OnCancel(func(k store.Key, id string) { other <- req{k, id} })
	if err := c.s.Cancel(c.ctx, k, "r1"); err != nil {
		c.Fatalf("Cancel(%s, %q): %v", ks(k), "r1", err)
	}
	for _, ch := range []chan req{got, other} {
		select {
		case r := <-ch:
			if r.k != k || r.id != "r1" {
				c.Errorf("a cancel handler got run %q of %s, want %q of %s", r.id, ks(r.k), "r1", ks(k))
			}
		case <-time.After(busWait):
			c.Fatalf("a cancel handler was not called within %v", busWait)
		}
	}
	stop()
	if err := c.s.Cancel(c.ctx, k, "r2"); err != nil {
		c.Fatalf("Cancel(%s, %q): %v", ks(k), "r2", err)
	}
	select {
	case <-other:
	case <-time.After(busWait):
		c.Fatalf("the remaining cancel handler was not called within %v", busWait)
	}
	stopOther()
	select {
	case r := <-got:
		c.Errorf("a removed cancel handler was called for run %q", r.id)
	default:
	}
}

func checkTakeTask(c *tc) {
	const period = 200 * time.Millisecond
	take := func(task string) bool {
		c.Helper()
		ok, err := c.s.TakeTask(c.ctx, task, period)
		if err != nil {
			c.Fatalf("TakeTask(%q): %v", task, err)
		}
		return ok
	}
	if !take("sweep") {
		c.Fatalf("TakeTask(%q) the first time: false, want true", "sweep")
	}
	if take("sweep") {
		c.Errorf("TakeTask(%q) again within its period: true, want false", "sweep")
	}
	if !take("gc") {
		c.Errorf("TakeTask(%q), another task: false, want true", "gc")
	}
	c.eventually("the task's period passing", 5*time.Second, func() bool { return take("sweep") })
}

// RunShared checks what several processes that share one store rely on:
// open returns two stores on one database, as two processes would open
// it. Leases are exclusive across them and fence each other; what one
// commits the other reads; a commit, a release or an enqueue in one wakes
// a watch in the other; a cancel request sent in one reaches the handlers
// of both; a task is taken once across them; a lease the other let expire
// shows as stranded. The suite closes both stores.
func RunShared(t *testing.T, open func(t *testing.T) (store.Store, store.Store)) {
	t.Helper()
	t.Run("Shared", func(t *testing.T) {
		for _, ch := range sharedChecks {
			t.Run(ch.name, func(t *testing.T) {
				a, b := open(t)
				if a == nil || b == nil {
					t.Fatal("open returned a nil store")
				}
				t.Cleanup(func() {
					for _, s := range []store.Store{a, b} {
						if err := s.Close(); err != nil {
							t.Errorf("Close: %v", err)
						}
					}
				})
				ch.f(newTC(t, a), newTC(t, b))
			})
		}
	})
}

type sharedCheck struct {
	name string
	f    func(a, b *tc)
}

var sharedChecks = []sharedCheck{
	{"LeaseAcross", checkLeaseAcross},
	{"CommitAcross", checkCommitAcross},
	{"WatchAcross", checkWatchAcross},
	{"CancelAcross", checkCancelAcross},
	{"TaskAcross", checkTaskAcross},
	{"StrandedAcross", checkStrandedAcross},
	{"ContentionAcross", checkContentionAcross},
}

func checkLeaseAcross(a, b *tc) {
	k := key("acme", "chat", "t1")
	la := a.acquire(k, "process-a", long)
	_, err := b.s.Acquire(b.ctx, k, "process-b", long)
	b.wantErr("Acquire in the other process while the lease is held", err, store.ErrBusy)
	a.release(la)
	lb := b.acquire(k, "process-b", long)
	if lb.Token <= la.Token {
		b.Errorf("Acquire after the other process released: Token %d, want more than %d", lb.Token, la.Token)
	}
	_, err = a.s.Commit(a.ctx, la, store.Commit{Events: mkEvents("zombie", 1, 1)})
	a.wantErr("Commit with the released lease of the other process", err, store.ErrLeaseLost)
	// A short lease taken over after expiry fences its former holder.
	b.release(lb)
	short := a.acquire(k, "process-a", 20*time.Millisecond)
	var took store.Lease
	b.eventually("the other process taking over the expired lease", 5*time.Second, func() bool {
		l, err := b.s.Acquire(b.ctx, k, "process-b", long)
		took = l
		return err == nil
	})
	_, err = a.s.Commit(a.ctx, short, store.Commit{Events: mkEvents("zombie", 1, 1)})
	a.wantErr("Commit by a holder whose lease the other process took over", err, store.ErrLeaseLost)
	b.commit(took, store.Commit{Events: mkEvents("r2", 1, 1)})
}

func checkCommitAcross(a, b *tc) {
	k := key("acme", "chat", "t1")
	l := a.acquire(k, "process-a", long)
	a.commit(l, store.Commit{Checkpoint: checkpoint(store.Suspended, "r1", 1), Events: mkEvents("r1", 1, 3), Run: mkRun("r1", k, store.Suspended), NewRun: true})
	a.release(l)
	th := b.thread(k)
	if th.LastSeq != 3 || th.Status != store.Suspended {
		b.Errorf("the other process reads LastSeq %d, Status %q; want 3, suspended", th.LastSeq, th.Status)
	}
	b.sameEvents("events read by the other process", b.allEvents(k, 0), withSeqs(mkEvents("r1", 1, 3), 1))
	lb := b.acquire(k, "process-b", long)
	if lb.Version != th.Version {
		b.Errorf("the other process's lease: Version %d, want %d", lb.Version, th.Version)
	}
	got := b.commit(lb, store.Commit{Expect: th.Version, Events: mkEvents("r2", 1, 1)})
	if got.LastSeq != 4 {
		b.Errorf("a commit in the other process: LastSeq %d, want 4", got.LastSeq)
	}
}

func checkWatchAcross(a, b *tc) {
	k := key("acme", "chat", "t1")
	ch, stop := b.s.Watch(k)
	defer stop()
	l := a.acquire(k, "process-a", long)
	drain(ch)
	a.commit(l, store.Commit{Events: mkEvents("r1", 1, 1)})
	b.woken("a watch in the other process after a commit", ch)
	drain(ch)
	a.release(l)
	b.woken("a watch in the other process after a release", ch)
	drain(ch)
	a.queue(k, "q1", 1)
	b.woken("a watch in the other process after an enqueue", ch)
}

func checkCancelAcross(a, b *tc) {
	k := key("acme", "chat", "t1")
	got := make(chan string, 2)
	stop := b.s.OnCancel(func(ck store.Key, id string) {
		if ck == k {
			got <- id
		}
	})
	defer stop()
	if err := a.s.Cancel(a.ctx, k, "r1"); err != nil {
		a.Fatalf("Cancel: %v", err)
	}
	select {
	case id := <-got:
		if id != "r1" {
			b.Errorf("the other process was asked to cancel %q, want %q", id, "r1")
		}
	case <-time.After(busWait):
		b.Fatalf("the cancel request did not reach the other process within %v", busWait)
	}
}

func checkTaskAcross(a, b *tc) {
	const period = time.Hour
	var wg sync.WaitGroup
	got := make([]bool, 8)
	for i := range got {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			ok, err := s.s.TakeTask(s.ctx, "sweep", period)
			if err != nil {
				s.Errorf("TakeTask: %v", err)
			}
			got[i] = ok
		})
	}
	wg.Wait()
	if n := len(slices.DeleteFunc(slices.Clone(got), func(ok bool) bool { return !ok })); n != 1 {
		a.Errorf("8 TakeTask calls in two processes at once: %d took the task, want exactly 1", n)
	}
}

func checkStrandedAcross(a, b *tc) {
	k := key("acme", "chat", "t1")
	l := a.acquire(k, "process-a", 50*time.Millisecond)
	a.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1), Run: mkRun("r1", k, store.Running), NewRun: true})
	b.eventually("the other process seeing the run stranded once its lease expired", 5*time.Second, func() bool {
		keys, err := b.s.Stranded(b.ctx, 100)
		if err != nil {
			b.Fatalf("Stranded: %v", err)
		}
		return slices.Contains(keys, k)
	})
	lb := b.acquire(k, "recovery", long)
	if got := b.pending(k); !slices.Equal(got, []string{"r1"}) {
		b.Errorf("Pending in the other process: %v, want [r1]", got)
	}
	b.release(lb)
}

func checkContentionAcross(a, b *tc) {
	const n = 16
	k := key("acme", "chat", "contended")
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, n)
	for i := range n {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			<-start
			_, errs[i] = s.s.Acquire(s.ctx, k, fmt.Sprintf("owner%d", i), long)
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrBusy):
			a.Errorf("Acquire by owner %d: %v, want nil or ErrBusy", i, err)
		}
	}
	if won != 1 {
		a.Errorf("%d concurrent Acquires in two processes: %d succeeded, want exactly 1", n, won)
	}
}
