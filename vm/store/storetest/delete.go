package storetest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/aguic/aguic/vm/store"
)

var deleteChecks = []check{
	{"RemovesEverything", checkDeleteRemoves},
	{"FencesFormerLease", checkDeleteFences},
}

func checkDeleteRemoves(c *tc) {
	a := key("acme", "chat", "a")
	b := key("acme", "chat", "b")
	la := c.acquire(a, "owner-a", long)
	c.commit(la, store.Commit{Checkpoint: checkpoint(store.Finished, "a1", 1), Events: mkEvents("a1", 1, 3), Run: mkRun("a1", a, store.Finished)})
	c.commit(la, store.Commit{Checkpoint: checkpoint(store.Running, "a2", 2), Events: mkEvents("a2", 4, 2), Run: mkRun("a2", a, store.Running)})
	c.release(la)
	lb := c.acquire(b, "owner-b", long)
	c.commit(lb, store.Commit{Checkpoint: checkpoint(store.Running, "b1", 1), Events: mkEvents("b1", 1, 4), Run: mkRun("b1", b, store.Running)})
	thb, evb, rb := c.thread(b), c.events(b, 0, 100), c.run(b, "b1")

	if err := c.s.DeleteThread(c.ctx, a); err != nil {
		c.Fatalf("DeleteThread(%s): %v", ks(a), err)
	}
	c.notFound(a, "after DeleteThread")
	for _, id := range []string{"a1", "a2"} {
		_, err := c.s.Run(c.ctx, a, id)
		c.wantErr(fmt.Sprintf("Run(%q) of the deleted thread", id), err, store.ErrNotFound)
	}
	if ids := runIDs(c.listRuns(store.Running, 10)); !slices.Equal(ids, []string{"b1"}) {
		c.Errorf("Runs(running) after deleting %s: got %q, want [b1]", ks(a), ids)
	}
	if ids := runIDs(c.listRuns(store.Finished, 10)); len(ids) != 0 {
		c.Errorf("Runs(finished) after deleting %s: got %q, want none", ks(a), ids)
	}
	if got := threadKeys(c.listThreads("acme", "", 10)); !slices.Equal(got, []store.Key{b}) {
		c.Errorf("Threads(%q) after deleting %s: got %s, want [%s]", "acme", ks(a), fmtKeys(got), ks(b))
	}
	c.sameThread(fmt.Sprintf("Thread(%s) after deleting %s", ks(b), ks(a)), c.thread(b), thb)
	c.sameEvents(fmt.Sprintf("Events(%s) after deleting %s", ks(b), ks(a)), c.events(b, 0, 100), evb)
	c.sameRun(fmt.Sprintf("Run(b1) after deleting %s", ks(a)), c.run(b, "b1"), rb)
	c.commit(lb, store.Commit{Events: mkEvents("b1", 5, 1)})

	// The key can be used again: a new thread, numbered from 1.
	l := c.acquire(a, "owner-c", long)
	th := c.thread(a)
	if th.LastSeq != 0 || len(th.Frame) != 0 {
		c.Errorf("Thread(%s) acquired again after DeleteThread: LastSeq %d Frame %q, want a new empty thread", ks(a), th.LastSeq, th.Frame)
	}
	c.commit(l, store.Commit{Events: mkEvents("a3", 1, 2)})
	c.checkSeqs(fmt.Sprintf("Events(%s) of the thread made again", ks(a)), c.events(a, 0, 100), 1, 2)
}

// checkDeleteFences: a run still holding the lease of a deleted thread
// cannot write to it, neither bringing it back nor writing into the
// thread another owner made again under its key.
func checkDeleteFences(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", long)
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1), Events: mkEvents("r1", 1, 2), Run: mkRun("r1", k, store.Running)})
	if err := c.s.DeleteThread(c.ctx, k); err != nil {
		c.Fatalf("DeleteThread(%s) while a lease is held: %v", ks(k), err)
	}
	_, err := c.s.Commit(c.ctx, l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 2), Events: mkEvents("r1", 3, 1), Run: mkRun("r1", k, store.Running)})
	if !errors.Is(err, store.ErrLeaseLost) && !errors.Is(err, store.ErrNotFound) {
		c.Errorf("Commit with the lease of a deleted thread: got error %v, want ErrLeaseLost or ErrNotFound", err)
	}
	c.notFound(k, "after a Commit with the lease of the deleted thread")
	if _, err := c.s.Run(c.ctx, k, "r1"); !errors.Is(err, store.ErrNotFound) {
		c.Errorf("Run(%q) after a Commit with the lease of the deleted thread: got error %v, want ErrNotFound", "r1", err)
	}

	l2 := c.acquire(k, "owner-b", long)
	th := c.commit(l2, store.Commit{Checkpoint: checkpoint(store.Suspended, "r2", 1), Events: mkEvents("r2", 1, 1)})
	fenced(c, "after the thread was deleted and made again by another owner", l, th)
}
