package storetest

import (
	"fmt"
	"slices"
	"time"

	"github.com/aguic/aguic/vm/store"
)

var runChecks = []check{
	{"ByID", checkRunByID},
	{"ByStatus", checkRunsByStatus},
	{"IDsPerThread", checkRunIDsPerThread},
	{"Enqueue", checkEnqueue},
}

func checkRunByID(c *tc) {
	want := map[string]store.Run{}
	for i, sc := range []string{"acme", "evil"} {
		k := key(sc, "chat", "t1")
		l := c.acquire(k, "owner", long)
		for j, st := range []store.Status{store.Finished, store.Failed, store.Running} {
			r := mkRun(fmt.Sprintf("%s-r%d", sc, j), k, st)
			r.Started = base.Add(time.Duration(i*10+j) * time.Millisecond)
			c.commit(l, store.Commit{Run: r})
			want[r.ID] = *r
		}
	}
	for id, r := range want {
		c.sameRun(fmt.Sprintf("Run(%q)", id), c.run(r.Key, id), r)
	}
	for _, id := range []string{"r0", "acme-r", "acme-r0 ", "evil-r3", ""} {
		_, err := c.s.Run(c.ctx, key("acme", "chat", "t1"), id)
		c.wantErr(fmt.Sprintf("Run(%q) never created", id), err, store.ErrNotFound)
	}
}

func checkRunsByStatus(c *tc) {
	want := map[store.Status][]store.Run{}
	runs := map[string]store.Run{}
	add := func(k store.Key, id string, st store.Status) {
		c.Helper()
		l := c.acquire(k, "owner", long)
		r := mkRun(id, k, st)
		c.commit(l, store.Commit{Run: r, Checkpoint: checkpoint(st, id, 1)})
		c.release(l)
		want[st] = append(want[st], *r)
		runs[id] = *r
	}
	for i := range 7 {
		add(key([]string{"acme", "evil"}[i%2], "chat", fmt.Sprintf("t%d", i)), fmt.Sprintf("running-%d", i), store.Running)
	}
	for i, st := range []store.Status{store.Finished, store.Finished, store.Finished, store.Suspended, store.Suspended, store.Failed, store.Cancelled} {
		add(key("acme", "other", fmt.Sprintf("t%d", i)), fmt.Sprintf("%s-%d", st, i), st)
	}
	verify := func(when string) {
		c.Helper()
		for _, st := range []store.Status{store.Running, store.Suspended, store.Finished, store.Failed, store.Cancelled, "unknown"} {
			wantIDs := runIDs(want[st])
			for _, limit := range []int{1, 2, 3, 7, 100, 0} {
				got := c.listRuns(st, limit)
				if ids := runIDs(got); !slices.Equal(ids, wantIDs) {
					c.Errorf("%s: Runs(%q) in pages of %d: got %q, want %q (in any order, each once)", when, st, limit, ids, wantIDs)
					continue
				}
				for _, r := range got {
					c.sameRun(fmt.Sprintf("%s: Runs(%q) lists %q", when, st, r.ID), r, runs[r.ID])
				}
			}
		}
	}
	verify("after creating them")

	// A run that changes status moves between the listings (what crash
	// recovery relies on).
	moved := runs["running-3"]
	k := moved.Key
	l := c.acquire(k, "owner", long)
	done := mkRun(moved.ID, k, store.Finished)
	c.commit(l, store.Commit{Run: done})
	want[store.Running] = slices.DeleteFunc(want[store.Running], func(r store.Run) bool { return r.ID == moved.ID })
	want[store.Finished] = append(want[store.Finished], *done)
	runs[moved.ID] = *done
	verify("after running-3 finished")
	c.sameRun("Run(running-3) after it finished", c.run(k, moved.ID), *done)
}

// checkRunIDsPerThread: run ids belong to their thread: two threads (of
// one scope or of two) may each have a run "r1", neither sees or changes
// the other's, and NewRun refuses an id only its own thread has.
func checkRunIDsPerThread(c *tc) {
	a, b, e := key("acme", "chat", "a"), key("acme", "chat", "b"), key("evil", "chat", "a")
	runs := map[store.Key]*store.Run{}
	for i, k := range []store.Key{a, b, e} {
		l := c.acquire(k, "owner", long)
		r := mkRun("r1", k, []store.Status{store.Running, store.Finished, store.Suspended}[i])
		r.Input = fmt.Appendf(nil, `{"thread":%q}`, k.Thread+k.Scope)
		c.commit(l, store.Commit{Run: r, NewRun: true})
		runs[k] = r
		c.release(l)
	}
	for k, r := range runs {
		c.sameRun(fmt.Sprintf("Run(%s, r1)", ks(k)), c.run(k, "r1"), *r)
	}
	l := c.acquire(b, "owner", long)
	_, err := c.s.Commit(c.ctx, l, store.Commit{Run: mkRun("r1", b, store.Running), NewRun: true})
	c.wantErr("a new run r1 on a thread that has one", err, store.ErrRunExists)
	c.commit(l, store.Commit{Run: mkRun("r2", b, store.Running), NewRun: true})
	c.release(l)
	for k, r := range runs {
		c.sameRun(fmt.Sprintf("Run(%s, r1) after a refused NewRun", ks(k)), c.run(k, "r1"), *r)
	}
	_, err = c.s.Run(c.ctx, key("acme", "chat", "nobody"), "r1")
	c.wantErr("Run(r1) of a thread that does not exist", err, store.ErrNotFound)
	if got := runIDs(c.listRuns(store.Running, 10)); len(got) != 2 {
		c.Errorf("Runs(running): %q, want r1 of %s and r2 of %s", got, ks(a), ks(b))
	}
}

// checkEnqueue: a queued run is written without the lease, listed among
// the queued runs with its input, refused for a thread that does not exist
// or a run id the thread has, and becomes an ordinary run when its lease
// holder commits it.
func checkEnqueue(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner", long)
	c.commit(l, store.Commit{Run: mkRun("r1", k, store.Running), NewRun: true})
	q := store.Run{ID: "r2", Status: store.Queued, Started: base, Input: []byte(`{"resume":{}}`)}
	if err := c.s.Enqueue(c.ctx, k, q); err != nil {
		c.Fatalf("Enqueue(r2) while another owner holds the lease: %v", err)
	}
	q.Key = k
	c.sameRun("Run(r2) after Enqueue", c.run(k, "r2"), q)
	if got := runIDs(c.listRuns(store.Queued, 10)); len(got) != 1 || got[0] != "r2" {
		c.Errorf("Runs(queued): %q, want [r2]", got)
	}
	err := c.s.Enqueue(c.ctx, k, store.Run{ID: "r1", Status: store.Queued, Started: base})
	c.wantErr("Enqueue of a run id the thread has", err, store.ErrRunExists)
	err = c.s.Enqueue(c.ctx, key("acme", "chat", "none"), store.Run{ID: "r9", Status: store.Queued, Started: base})
	c.wantErr("Enqueue on a thread that does not exist", err, store.ErrNotFound)
	started := mkRun("r2", k, store.Running)
	c.commit(l, store.Commit{Run: started})
	if got := runIDs(c.listRuns(store.Queued, 10)); len(got) != 0 {
		c.Errorf("Runs(queued) after the queued run started: %q", got)
	}
}
