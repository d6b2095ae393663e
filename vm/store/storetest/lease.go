package storetest

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aguic/aguic/vm/store"
)

var leaseChecks = []check{
	{"AcquireCreatesThread", checkAcquireCreates},
	{"BusyWhileHeld", checkBusyWhileHeld},
	{"SameOwnerAcquiresAgain", checkSameOwnerAgain},
	{"Renew", checkRenew},
	{"RenewOutlastsFirstTTL", checkRenewOutlasts},
	{"AcquireAfterRelease", checkAcquireAfterRelease},
	{"TakeoverAfterExpiry", checkTakeoverAfterExpiry},
	{"VersionUnchanged", checkLeaseVersion},
	{"ExclusiveUnderContention", checkContention},
}

func checkAcquireCreates(c *tc) {
	k := key("acme", "chat", "t1")
	if _, err := c.s.Thread(c.ctx, k); !errors.Is(err, store.ErrNotFound) {
		c.Fatalf("Thread(%s) before any Acquire: got error %v, want ErrNotFound", ks(k), err)
	}
	before := time.Now()
	l := c.acquire(k, "owner-a", long)
	if l.Version != 0 {
		c.Errorf("Acquire(%s) of a new thread: Version %d, want 0", ks(k), l.Version)
	}
	if !l.Expires.After(before) {
		c.Errorf("Acquire(%s, ttl %v) at %v: Expires %v is not in the future", ks(k), long, before, l.Expires)
	}
	th := c.thread(k)
	if len(th.Frame) != 0 || len(th.Wait) != 0 || th.Hash != "" || th.RunID != "" {
		c.Errorf("Thread(%s) created by Acquire: got checkpoint Hash %q Frame %q Wait %q RunID %q, want it empty",
			ks(k), th.Hash, th.Frame, th.Wait, th.RunID)
	}
	if th.LastSeq != 0 {
		c.Errorf("Thread(%s) created by Acquire: LastSeq %d, want 0", ks(k), th.LastSeq)
	}
	if th.Created.IsZero() || th.Updated.IsZero() {
		c.Errorf("Thread(%s) created by Acquire: Created %v, Updated %v, want both set", ks(k), th.Created, th.Updated)
	}
	if th.Updated.Before(th.Created) {
		c.Errorf("Thread(%s): Updated %v is before Created %v", ks(k), th.Updated, th.Created)
	}
	if evs := c.events(k, 0, 10); len(evs) != 0 {
		c.Errorf("Events(%s, 0, 10) of a thread created by Acquire: got Seq %s, want none", ks(k), seqs(evs))
	}
	// A commit with the new lease works, and Created stays.
	th2 := c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1), Events: mkEvents("r1", 1, 1)})
	if !th2.Created.Equal(th.Created) {
		c.Errorf("Commit to %s changed Created from %v to %v", ks(k), th.Created, th2.Created)
	}
	if th2.Updated.Before(th.Updated) {
		c.Errorf("Commit to %s moved Updated back from %v to %v", ks(k), th.Updated, th2.Updated)
	}
	// Another key is another thread.
	other := key("acme", "chat", "t2")
	if _, err := c.s.Thread(c.ctx, other); !errors.Is(err, store.ErrNotFound) {
		c.Errorf("Thread(%s) never acquired: got error %v, want ErrNotFound", ks(other), err)
	}
}

func checkBusyWhileHeld(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", long)
	for _, owner := range []string{"owner-b", "owner-c", "owner-b"} {
		_, err := c.s.Acquire(c.ctx, k, owner, long)
		c.wantErr(fmt.Sprintf("Acquire(%s, %q) while %q holds the lease", ks(k), owner, l.Owner), err, store.ErrBusy)
	}
	_, err := c.s.Acquire(c.ctx, k, "owner-b", time.Millisecond)
	c.wantErr(fmt.Sprintf("Acquire(%s, %q, 1ms) while %q holds the lease", ks(k), "owner-b", l.Owner), err, store.ErrBusy)
	// The refused attempts took nothing from the holder.
	c.commit(l, store.Commit{Events: mkEvents("r1", 1, 1)})
	if _, err := c.s.Renew(c.ctx, l, long); err != nil {
		c.Errorf("Renew by the holder after refused Acquires: %v", err)
	}
	_, err = c.s.Acquire(c.ctx, k, "owner-b", long)
	c.wantErr("Acquire by another owner after the holder renewed", err, store.ErrBusy)
}

// checkSameOwnerAgain: the contract refuses "another owner's" lease only,
// so the holder may call Acquire again. The suite checks that this
// succeeds, that the token does not go down, that the new lease commits,
// and that others are still refused. Whether the first lease stays valid
// (same token) or is fenced (new token) is left to the implementation.
func checkSameOwnerAgain(c *tc) {
	k := key("acme", "chat", "t1")
	l1 := c.acquire(k, "owner-a", long)
	l2, err := c.s.Acquire(c.ctx, k, "owner-a", long)
	if err != nil {
		c.Fatalf("Acquire(%s, %q) again by the holder: %v, want success (only another owner's lease makes it busy)", ks(k), "owner-a", err)
	}
	if l2.Token < l1.Token {
		c.Errorf("Acquire again by the holder: Token %d, below the first lease's %d", l2.Token, l1.Token)
	}
	if l2.Expires.Before(l1.Expires) {
		c.Errorf("Acquire again by the holder with the same ttl: Expires %v, before the first lease's %v", l2.Expires, l1.Expires)
	}
	th := c.commit(l2, store.Commit{Events: mkEvents("r1", 1, 2)})
	if th.LastSeq != 2 {
		c.Errorf("Commit with the lease acquired again: LastSeq %d, want 2", th.LastSeq)
	}
	_, err = c.s.Acquire(c.ctx, k, "owner-b", long)
	c.wantErr("Acquire by another owner after the holder acquired again", err, store.ErrBusy)
	c.release(l2)
	c.acquire(k, "owner-b", long)
}

func checkRenew(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", long)
	l2, err := c.s.Renew(c.ctx, l, 2*long)
	if err != nil {
		c.Fatalf("Renew(%s, %v): %v", ks(k), 2*long, err)
	}
	if l2.Key != l.Key || l2.Owner != l.Owner || l2.Token != l.Token {
		c.Errorf("Renew changed the lease: got key %s owner %q token %d, want key %s owner %q token %d",
			ks(l2.Key), l2.Owner, l2.Token, ks(l.Key), l.Owner, l.Token)
	}
	if !l2.Expires.After(l.Expires) {
		c.Errorf("Renew with ttl %v: Expires %v, not after the acquired lease's %v (ttl %v)", 2*long, l2.Expires, l.Expires, long)
	}
	// Renewing keeps the token, so both copies are the current lease.
	c.commit(l2, store.Commit{Events: mkEvents("r1", 1, 1)})
	c.commit(l, store.Commit{Events: mkEvents("r1", 2, 1)})
	_, err = c.s.Acquire(c.ctx, k, "owner-b", long)
	c.wantErr("Acquire by another owner after Renew", err, store.ErrBusy)
	if _, err := c.s.Renew(c.ctx, l2, long); err != nil {
		c.Errorf("Renew a second time: %v", err)
	}
}

// checkRenewOutlasts renews a short lease for long and waits until the
// first expiry has passed: the lease is still held.
func checkRenewOutlasts(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", 300*time.Millisecond)
	if _, err := c.s.Renew(c.ctx, l, long); err != nil {
		c.Fatalf("Renew(%s, %v) right after Acquire with ttl 300ms: %v", ks(k), long, err)
	}
	c.until(l)
	_, err := c.s.Acquire(c.ctx, k, "owner-b", long)
	c.wantErr("Acquire by another owner after the first ttl passed but the lease was renewed", err, store.ErrBusy)
	c.commit(l, store.Commit{Events: mkEvents("r1", 1, 1)})
}

func checkAcquireAfterRelease(c *tc) {
	k := key("acme", "chat", "t1")
	l1 := c.acquire(k, "owner-a", long)
	th := c.commit(l1, store.Commit{Checkpoint: checkpoint(store.Suspended, "r1", 1), Events: mkEvents("r1", 1, 2)})
	c.release(l1)

	fenced(c, "after Release", l1, th)

	l2 := c.acquire(k, "owner-b", long)
	if l2.Token <= l1.Token {
		c.Errorf("Acquire by %q after %q released: Token %d, want more than the released lease's %d", l2.Owner, l1.Owner, l2.Token, l1.Token)
	}
	fenced(c, "after Release and another owner's Acquire", l1, th)
	th = c.commit(l2, store.Commit{Events: mkEvents("r2", 1, 1)})
	if th.LastSeq != 3 {
		c.Errorf("Commit by the new owner: LastSeq %d, want 3", th.LastSeq)
	}
	_, err := c.s.Acquire(c.ctx, k, "owner-c", long)
	c.wantErr("Acquire by a third owner while the new owner holds the lease", err, store.ErrBusy)

	// The first owner comes back after the second released.
	c.release(l2)
	l3 := c.acquire(k, "owner-a", long)
	if l3.Token <= l2.Token {
		c.Errorf("Acquire by %q after %q released: Token %d, want more than %d", l3.Owner, l2.Owner, l3.Token, l2.Token)
	}
	fenced(c, "after its owner acquired the thread again", l1, th)
	c.commit(l3, store.Commit{Events: mkEvents("r3", 1, 1)})
}

func checkTakeoverAfterExpiry(c *tc) {
	k := key("acme", "chat", "t1")
	l0 := c.acquire(k, "owner-a", long)
	th := c.commit(l0, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1), Events: mkEvents("r1", 1, 3)})
	c.release(l0)

	l1 := c.acquire(k, "owner-a", 20*time.Millisecond)
	var l2 store.Lease
	tries := 0
	c.eventually("another owner taking over the expired lease", 5*time.Second, func() bool {
		tries++
		var err error
		l2, err = c.s.Acquire(c.ctx, k, "owner-b", long)
		if err != nil && !errors.Is(err, store.ErrBusy) {
			c.Fatalf("Acquire(%s, %q) while waiting for a 20ms lease to expire, try %d: %v, want nil or ErrBusy", ks(k), "owner-b", tries, err)
		}
		return err == nil
	})
	if l2.Token <= l1.Token {
		c.Errorf("Acquire after the lease expired: Token %d, want more than the expired lease's %d", l2.Token, l1.Token)
	}
	fenced(c, "after another owner took the expired lease over", l1, th)
	_, err := c.s.Acquire(c.ctx, k, "owner-a", long)
	c.wantErr("Acquire by the former holder while the new owner holds the lease", err, store.ErrBusy)
	_, err = c.s.Acquire(c.ctx, k, "owner-c", long)
	c.wantErr("Acquire by a third owner while the new owner holds the lease", err, store.ErrBusy)
	if _, err := c.s.Renew(c.ctx, l2, long); err != nil {
		c.Errorf("Renew by the new owner after the former holder was fenced out: %v", err)
	}
	th = c.commit(l2, store.Commit{Events: mkEvents("r2", 1, 1)})
	if th.LastSeq != 4 {
		c.Errorf("Commit by the new owner: LastSeq %d, want 4", th.LastSeq)
	}
}

// fenced checks that l is no longer the thread's lease: Commit, Renew and
// Release fail with ErrLeaseLost, and the thread is still want.
func fenced(c *tc, when string, l store.Lease, want store.Thread) {
	c.Helper()
	k := l.Key
	evs := c.allEvents(k, 0)
	_, err := c.s.Commit(c.ctx, l, store.Commit{
		Checkpoint: checkpoint(store.Finished, "zombie", 99),
		Events:     mkEvents("zombie", 1, 2),
		Hide:       []uint64{1},
		Run:        mkRun("zombie", k, store.Finished),
	})
	c.wantErr(fmt.Sprintf("Commit with the lease of %q (token %d) %s", l.Owner, l.Token, when), err, store.ErrLeaseLost)
	_, err = c.s.Renew(c.ctx, l, long)
	c.wantErr(fmt.Sprintf("Renew of the lease of %q (token %d) %s", l.Owner, l.Token, when), err, store.ErrLeaseLost)
	err = c.s.Release(c.ctx, l)
	c.wantErr(fmt.Sprintf("Release of the lease of %q (token %d) %s", l.Owner, l.Token, when), err, store.ErrLeaseLost)

	got := c.thread(k)
	if d := diffCheckpoint(got, want); len(d) > 0 || got.LastSeq != want.LastSeq || got.Version != want.Version {
		c.Errorf("a refused Commit %s changed the thread: %v, LastSeq %d (want %d), Version %d (want %d)",
			when, d, got.LastSeq, want.LastSeq, got.Version, want.Version)
	}
	c.sameEvents(fmt.Sprintf("events after a refused Commit %s", when), c.allEvents(k, 0), evs)
	if _, err := c.s.Run(c.ctx, k, "zombie"); !errors.Is(err, store.ErrNotFound) {
		c.Errorf("Run(%q) written by a refused Commit %s: got error %v, want ErrNotFound", "zombie", when, err)
	}
}

func checkLeaseVersion(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", long)
	v := c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1), Events: mkEvents("r1", 1, 1)}).Version
	same := func(after string) {
		c.Helper()
		if got := c.thread(k).Version; got != v {
			c.Errorf("Version after %s: %d, want %d (only commits change it)", after, got, v)
		}
	}
	l, err := c.s.Renew(c.ctx, l, long)
	if err != nil {
		c.Fatalf("Renew: %v", err)
	}
	same("Renew")
	_, _ = c.s.Acquire(c.ctx, k, "owner-b", long)
	same("a refused Acquire")
	l, err = c.s.Acquire(c.ctx, k, "owner-a", long)
	if err != nil {
		c.Fatalf("Acquire again by the holder: %v", err)
	}
	same("Acquire again by the holder")
	c.release(l)
	same("Release")
	l = c.acquire(k, "owner-b", long)
	same("Acquire by another owner")
	if l.Version != v {
		c.Errorf("Acquire returned a lease of Version %d, the thread's is %d", l.Version, v)
	}
	// So a reader can base a commit on the version it read before taking
	// the lease.
	c.commit(l, store.Commit{Expect: v, Events: mkEvents("r2", 1, 1)})
}

func checkContention(c *tc) {
	const n = 16
	k := key("acme", "chat", "contended")
	race := func(round int) store.Lease {
		c.Helper()
		var (
			wg     sync.WaitGroup
			start  = make(chan struct{})
			leases = make([]store.Lease, n)
			errs   = make([]error, n)
		)
		for i := range n {
			wg.Go(func() {
				<-start
				leases[i], errs[i] = c.s.Acquire(c.ctx, k, fmt.Sprintf("round%d-owner%d", round, i), long)
			})
		}
		close(start)
		wg.Wait()
		var winners []int
		for i, err := range errs {
			switch {
			case err == nil:
				winners = append(winners, i)
			case !errors.Is(err, store.ErrBusy):
				c.Errorf("round %d: Acquire by owner %d of %d at once: %v, want nil or ErrBusy", round, i, n, err)
			}
		}
		if len(winners) != 1 {
			c.Fatalf("round %d: %d concurrent Acquires of %s: %d succeeded (owners %v), want exactly 1", round, n, ks(k), len(winners), winners)
		}
		return leases[winners[0]]
	}
	l1 := race(1) // the thread does not exist yet
	c.commit(l1, store.Commit{Events: mkEvents("r1", 1, 1)})
	c.release(l1)
	l2 := race(2) // the thread exists, its lease released
	if l2.Token <= l1.Token {
		c.Errorf("round 2 winner's Token %d, want more than round 1's %d", l2.Token, l1.Token)
	}
	fenced(c, "after the next round's winner took the lease", l1, c.thread(k))
	th := c.commit(l2, store.Commit{Events: mkEvents("r2", 1, 1)})
	if th.LastSeq != 2 {
		c.Errorf("after two rounds: LastSeq %d, want 2", th.LastSeq)
	}
}
