package storetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/aguic/aguic/vm/store"
)

var commitChecks = []check{
	{"Checkpoint", checkCommitCheckpoint},
	{"EventSequence", checkCommitEvents},
	{"Hide", checkCommitHide},
	{"Run", checkCommitRun},
	{"Expect", checkCommitExpect},
	{"ConflictWritesNothing", checkConflictWritesNothing},
	{"Release", checkCommitRelease},
}

// checkCommitRelease: a commit with Release writes what it holds and gives
// the lease up, as Release after it would; a refused one releases nothing.
func checkCommitRelease(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", long)
	// Refused (its Expect is wrong): the lease stays held.
	_, err := c.s.Commit(c.ctx, l, store.Commit{Expect: 99, Release: true, Events: mkEvents("r1", 1, 1)})
	c.wantErr("Commit with Release and a wrong Expect", err, store.ErrConflict)
	_, err = c.s.Acquire(c.ctx, k, "owner-b", long)
	c.wantErr("Acquire by another owner after a refused Commit with Release", err, store.ErrBusy)

	ch, stop := c.s.Watch(k)
	defer stop()
	drain(ch)
	th := c.commit(l, store.Commit{Checkpoint: checkpoint(store.Suspended, "r1", 1), Events: mkEvents("r1", 1, 2), Run: mkRun("r1", k, store.Suspended), Release: true})
	if th.LastSeq != 2 || th.Status != store.Suspended {
		c.Errorf("Commit with Release: LastSeq %d, Status %q; want 2, suspended", th.LastSeq, th.Status)
	}
	c.woken("Watch after a commit with Release", ch)
	l2 := c.acquire(k, "owner-b", long)
	if l2.Token <= l.Token {
		c.Errorf("Acquire after a commit with Release: Token %d, want more than %d", l2.Token, l.Token)
	}
	fenced(c, "after it committed with Release", l, c.thread(k))
}

func checkCommitCheckpoint(c *tc) {
	k := key("acme", "chat", "t1")
	other := key("other", "flow", "t9")
	l := c.acquire(k, "owner-a", long)
	th0 := c.thread(k)

	// Only Status, Hash, Frame, Wait and RunID are taken from the
	// checkpoint; the rest is the store's bookkeeping.
	cp := checkpoint(store.Suspended, "r1", 1)
	cp.Key = other
	cp.LastSeq, cp.FirstSeq, cp.Version = 77, 5, 42
	cp.Created, cp.Updated = base.AddDate(-1, 0, 0), base.AddDate(-1, 0, 0)
	th1 := c.commit(l, store.Commit{Checkpoint: cp})
	if d := diffCheckpoint(th1, *cp); len(d) > 0 {
		c.Errorf("Commit with a checkpoint returned %v", d)
	}
	if th1.LastSeq != 0 || th1.Version != th0.Version+1 || !th1.Created.Equal(th0.Created) {
		c.Errorf("Commit with a checkpoint carrying LastSeq 77, Version 42 and an old Created: got LastSeq %d (want 0), Version %d (want %d), Created %v (want %v)",
			th1.LastSeq, th1.Version, th0.Version+1, th1.Created, th0.Created)
	}
	c.sameThread("Thread after the commit vs the Thread Commit returned", c.thread(k), th1)
	if _, err := c.s.Thread(c.ctx, other); !errors.Is(err, store.ErrNotFound) {
		c.Errorf("Thread(%s), the Key of a checkpoint committed to %s: got error %v, want ErrNotFound", ks(other), ks(k), err)
	}

	// No checkpoint: the checkpoint stays.
	th2 := c.commit(l, store.Commit{Events: mkEvents("r1", 1, 2)})
	if d := diffCheckpoint(th2, *cp); len(d) > 0 {
		c.Errorf("Commit without a checkpoint changed it: %v", d)
	}
	c.sameThread("Thread vs the Thread Commit returned", c.thread(k), th2)

	// Replaced as a whole: a checkpoint without Wait clears it.
	for i, cp := range []*store.Thread{
		checkpoint(store.Running, "r2", 2),
		checkpoint(store.Suspended, "r2", 3),
		{Status: store.Finished, Hash: "sha256:ff", Frame: []byte(`{"v":1,"ended":true}`), RunID: "r3"},
	} {
		th := c.commit(l, store.Commit{Checkpoint: cp})
		if d := diffCheckpoint(th, *cp); len(d) > 0 {
			c.Errorf("checkpoint %d: Commit returned %v", i+3, d)
		}
		if th.LastSeq != 2 {
			c.Errorf("checkpoint %d: LastSeq %d, want 2", i+3, th.LastSeq)
		}
		c.sameThread(fmt.Sprintf("checkpoint %d: Thread vs the Thread Commit returned", i+3), c.thread(k), th)
	}
}

func checkCommitEvents(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", long)
	v := c.thread(k).Version

	batches := [][]store.Event{mkEvents("r1", 1, 3), mkEvents("r1", 4, 1), nil, mkEvents("r2", 5, 4)}
	batches[0][1].Silent = true
	batches[0][2].Hidden = true
	batches[3][0].Silent, batches[3][0].Hidden = true, true
	batches[3][3].Seq = 1000 // the store assigns Seq; this one is ignored
	batches[3][2].Data = []byte(`{"type":"TEXT_MESSAGE_CONTENT","delta":"h\u00e9llo \"x\" <b>"}`)

	var want []store.Event
	for i, b := range batches {
		want = append(want, withSeqs(b, uint64(len(want))+1)...)
		th := c.commit(l, store.Commit{Events: b})
		if th.LastSeq != uint64(len(want)) {
			c.Errorf("commit %d of %d events: LastSeq %d, want %d", i+1, len(b), th.LastSeq, len(want))
		}
		if th.Version != v+uint64(i)+1 {
			c.Errorf("commit %d: Version %d, want %d (one more per commit)", i+1, th.Version, v+uint64(i)+1)
		}
		if len(want) > 0 && th.FirstSeq != 1 {
			c.Errorf("commit %d: FirstSeq %d, want 1 (nothing removed)", i+1, th.FirstSeq)
		}
		c.sameEvents(fmt.Sprintf("Events(%s, 0, 100) after commit %d", ks(k), i+1), c.events(k, 0, 100), want)
	}
	th := c.commit(l, store.Commit{})
	c.sameThread("Thread after an empty commit vs the Thread it returned", c.thread(k), th)
}

func checkCommitHide(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", long)
	evs := withSeqs(mkEvents("r1", 1, 5), 1)
	evs[4].Silent = true
	c.commit(l, store.Commit{Events: evs})

	v := c.thread(k).Version
	th := c.commit(l, store.Commit{Hide: []uint64{2, 4}})
	evs[1].Hidden, evs[3].Hidden = true, true
	if th.Version != v+1 || th.LastSeq != 5 {
		c.Errorf("Commit with only Hide: Version %d (want %d), LastSeq %d (want 5)", th.Version, v+1, th.LastSeq)
	}
	c.sameEvents("events after hiding 2 and 4", c.events(k, 0, 100), evs)

	// Hiding again is harmless; hiding earlier events in a commit that
	// appends new ones leaves the new ones alone.
	more := withSeqs(mkEvents("r2", 6, 2), 6)
	c.commit(l, store.Commit{Hide: []uint64{2, 5}, Events: more})
	evs[4].Hidden = true
	evs = append(evs, more...)
	c.sameEvents("events after hiding 2 again and 5 while appending 6 and 7", c.events(k, 0, 100), evs)
	c.sameEvents("LastEvents(3) after hiding", c.lastEvents(k, 3), evs[4:])
}

func checkCommitRun(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", long)
	if _, err := c.s.Run(c.ctx, k, "r1"); !errors.Is(err, store.ErrNotFound) {
		c.Errorf("Run(%q) before any commit: got error %v, want ErrNotFound", "r1", err)
	}

	r1 := mkRun("r1", k, store.Running)
	c.commit(l, store.Commit{Run: r1})
	c.sameRun("Run(r1) after the commit that created it", c.run(k, "r1"), *r1)

	done := mkRun("r1", k, store.Finished)
	done.Started = base.Add(-time.Second)
	c.commit(l, store.Commit{Run: done, Events: mkEvents("r1", 1, 1)})
	c.sameRun("Run(r1) after the commit that replaced it", c.run(k, "r1"), *done)

	r2 := mkRun("r2", k, store.Failed)
	c.commit(l, store.Commit{Run: r2})
	c.sameRun("Run(r2)", c.run(k, "r2"), *r2)
	c.sameRun("Run(r1) after r2 was created", c.run(k, "r1"), *done)

	// A commit without a run leaves runs alone.
	c.commit(l, store.Commit{Events: mkEvents("r2", 2, 1)})
	c.sameRun("Run(r2) after a commit without a run", c.run(k, "r2"), *r2)
}

func checkCommitExpect(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", long)
	v := c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1)}).Version

	for _, stale := range []uint64{v - 1, v + 1, v + 100} {
		if stale == 0 {
			continue
		}
		_, err := c.s.Commit(c.ctx, l, store.Commit{Expect: stale, Events: mkEvents("r1", 1, 1)})
		c.wantErr(fmt.Sprintf("Commit with Expect %d to a thread at Version %d", stale, v), err, store.ErrConflict)
	}
	th := c.commit(l, store.Commit{Expect: v, Events: mkEvents("r1", 1, 1)})
	if th.Version != v+1 || th.LastSeq != 1 {
		c.Errorf("Commit with Expect %d, the current Version: Version %d (want %d), LastSeq %d (want 1)", v, th.Version, v+1, th.LastSeq)
	}
	_, err := c.s.Commit(c.ctx, l, store.Commit{Expect: v, Events: mkEvents("r1", 2, 1)})
	c.wantErr(fmt.Sprintf("Commit with Expect %d again, now stale (Version %d)", v, v+1), err, store.ErrConflict)
	th = c.commit(l, store.Commit{Events: mkEvents("r1", 2, 1)}) // Expect 0: no check
	if th.Version != v+2 || th.LastSeq != 2 {
		c.Errorf("Commit without Expect: Version %d (want %d), LastSeq %d (want 2)", th.Version, v+2, th.LastSeq)
	}
	th = c.commit(l, store.Commit{Expect: v + 2, Events: mkEvents("r1", 3, 1)})
	if th.Version != v+3 || th.LastSeq != 3 {
		c.Errorf("Commit with Expect %d: Version %d (want %d), LastSeq %d (want 3)", v+2, th.Version, v+3, th.LastSeq)
	}
}

// checkConflictWritesNothing: a commit refused for its Expect writes no
// part of itself, and burns no sequence number.
func checkConflictWritesNothing(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", long)
	r1 := mkRun("r1", k, store.Running)
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1), Events: mkEvents("r1", 1, 3), Run: r1})
	before := c.thread(k)
	evs := c.events(k, 0, 100)

	_, err := c.s.Commit(c.ctx, l, store.Commit{
		Checkpoint: checkpoint(store.Finished, "r2", 2),
		Events:     mkEvents("r2", 1, 4),
		Hide:       []uint64{1, 2},
		Run:        mkRun("r1", k, store.Finished),
		Expect:     before.Version + 1,
	})
	c.wantErr("Commit with a stale Expect", err, store.ErrConflict)
	_, err = c.s.Commit(c.ctx, l, store.Commit{Run: mkRun("r2", k, store.Running), Expect: before.Version + 1})
	c.wantErr("Commit of a new run with a stale Expect", err, store.ErrConflict)

	c.sameThread("Thread after commits refused with ErrConflict", c.thread(k), before)
	c.sameEvents("events after commits refused with ErrConflict", c.events(k, 0, 100), evs)
	c.sameRun("Run(r1) after a refused commit replaced it", c.run(k, "r1"), *r1)
	if _, err := c.s.Run(c.ctx, k, "r2"); !errors.Is(err, store.ErrNotFound) {
		c.Errorf("Run(%q) created by a refused commit: got error %v, want ErrNotFound", "r2", err)
	}
	th := c.commit(l, store.Commit{Events: mkEvents("r3", 1, 1), Expect: before.Version})
	if th.LastSeq != before.LastSeq+1 || th.Version != before.Version+1 {
		c.Errorf("Commit after refused ones: LastSeq %d (want %d), Version %d (want %d): a refused commit used up numbers",
			th.LastSeq, before.LastSeq+1, th.Version, before.Version+1)
	}
}
