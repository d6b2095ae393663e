package storetest

import (
	"fmt"

	"github.com/aguic/aguic/vm/store"
)

var deltaChecks = []check{
	{"AppendTrimReplace", checkDeltas},
	{"RefusedCommitKeepsDeltas", checkDeltasConflict},
}

func delta(n int) []byte { return fmt.Appendf(nil, `{"n":"d%d"}`, n) }

func (c *tc) sameDeltas(what string, k store.Key, want ...[]byte) {
	c.Helper()
	got := c.thread(k).Deltas
	if len(want) == 0 {
		want = nil
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		c.Errorf("%s: Deltas %q, want %q", what, got, want)
	}
}

// checkDeltas: deltas append in order after the frame; Trim keeps the
// first Keep; a checkpoint with a frame drops them all, one without a frame
// keeps them; a commit both trims and appends.
func checkDeltas(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner", long)
	c.sameDeltas("a new thread", k)
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1)})
	for i := 1; i <= 4; i++ {
		c.commit(l, store.Commit{Delta: delta(i), Events: mkEvents("r1", i, 1)})
	}
	c.sameDeltas("four deltas", k, delta(1), delta(2), delta(3), delta(4))
	if th := c.thread(k); string(th.Frame) != string(checkpoint(store.Running, "r1", 1).Frame) {
		c.Errorf("the frame after deltas: %q", th.Frame)
	}

	// A checkpoint without a frame sets the status and keeps the deltas.
	cp := checkpoint(store.Suspended, "r1", 1)
	cp.Frame = nil
	th := c.commit(l, store.Commit{Checkpoint: cp})
	if th.Status != store.Suspended || string(th.Frame) != string(checkpoint(store.Running, "r1", 1).Frame) {
		c.Errorf("a checkpoint without a frame: Status %q Frame %q, want suspended and the frame before", th.Status, th.Frame)
	}
	c.sameDeltas("after a checkpoint without a frame", k, delta(1), delta(2), delta(3), delta(4))

	c.commit(l, store.Commit{Trim: true, Keep: 2, Delta: delta(9)})
	c.sameDeltas("Trim to 2, then a delta", k, delta(1), delta(2), delta(9))
	c.commit(l, store.Commit{Trim: true, Keep: 3})
	c.sameDeltas("Trim to all of them", k, delta(1), delta(2), delta(9))
	c.commit(l, store.Commit{Trim: true, Keep: 0})
	c.sameDeltas("Trim to 0", k)
	c.commit(l, store.Commit{Delta: delta(5)})
	c.commit(l, store.Commit{Delta: delta(6)})

	// A frame drops the deltas, and a delta in the same commit follows it.
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r2", 2), Delta: delta(7)})
	th = c.thread(k)
	if string(th.Frame) != string(checkpoint(store.Running, "r2", 2).Frame) {
		c.Errorf("a checkpoint with a frame: Frame %q", th.Frame)
	}
	c.sameDeltas("a checkpoint with a frame and a delta", k, delta(7))

	if _, err := c.s.Commit(c.ctx, l, store.Commit{Trim: true, Keep: 2}); err == nil {
		c.Errorf("Commit keeping 2 deltas of a thread that has 1 succeeded")
	}
	c.sameDeltas("after a refused Trim", k, delta(7))
	c.release(l)

	// Another thread's deltas are its own.
	o := key("acme", "chat", "t2")
	lo := c.acquire(o, "owner", long)
	c.commit(lo, store.Commit{Delta: delta(1)})
	c.sameDeltas("the other thread", o, delta(1))
	c.sameDeltas("the first thread beside it", k, delta(7))

	// Deleting a thread removes its deltas: the key starts again empty.
	if err := c.s.DeleteThread(c.ctx, o); err != nil {
		c.Fatalf("DeleteThread: %v", err)
	}
	lo = c.acquire(o, "owner", long)
	c.sameDeltas("a thread created again after DeleteThread", o)
	c.commit(lo, store.Commit{Delta: delta(2)})
	c.sameDeltas("its first delta", o, delta(2))
}

// checkDeltasConflict: a commit refused for its Expect or its run changes
// no delta.
func checkDeltasConflict(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner", long)
	v := c.commit(l, store.Commit{Delta: delta(1), Run: mkRun("r1", k, store.Running), NewRun: true}).Version
	_, err := c.s.Commit(c.ctx, l, store.Commit{Delta: delta(2), Trim: true, Keep: 0, Expect: v + 1})
	c.wantErr("Commit with a stale Expect", err, store.ErrConflict)
	_, err = c.s.Commit(c.ctx, l, store.Commit{Delta: delta(3), Trim: true, Keep: 0, Run: mkRun("r1", k, store.Running), NewRun: true})
	c.wantErr("Commit of a new run whose id the thread has", err, store.ErrRunExists)
	c.sameDeltas("after refused commits", k, delta(1))
}
