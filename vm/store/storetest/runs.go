package storetest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aguic/aguic/vm/store"
)

var runChecks = []check{
	{"ByID", checkRunByID},
	{"ByStatus", checkRunsByStatus},
	{"IDsPerThread", checkRunIDsPerThread},
	{"Enqueue", checkEnqueue},
	{"ThreadRuns", checkThreadRuns},
	{"BadCursor", checkBadCursor},
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

// checkThreadRuns: a thread's runs are listed newest first (by Started,
// then by id), paged to the end, without their input; a run whose start
// changes (a queued run that starts) moves; the runs of other threads,
// other scopes and of a thread deleted and created again never show.
func checkThreadRuns(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner", long)
	var want []store.Run
	// Started times out of id order, two runs sharing one.
	for i, ms := range []int{30, 10, 50, 20, 50, 40, 0} {
		st := []store.Status{store.Finished, store.Failed, store.Suspended, store.Cancelled}[i%4]
		r := mkRun(fmt.Sprintf("r%d", i), k, st)
		r.Started = base.Add(time.Duration(ms) * time.Millisecond)
		if r.Status != store.Suspended {
			r.Finished = r.Started.Add(1500 * time.Microsecond)
		}
		r.Input = fmt.Appendf(nil, `{"turn":%d}`, i)
		c.commit(l, store.Commit{Run: r, NewRun: true})
		r.Input = nil
		want = append(want, *r)
	}
	c.release(l)
	for _, other := range []store.Key{key("evil", "chat", "t1"), key("acme", "chat", "t2"), key("acme", "chat2", "t1")} {
		lo := c.acquire(other, "owner", long)
		r := mkRun("x-"+other.Scope+other.Workflow+other.Thread, other, store.Finished)
		r.Started = base.Add(25 * time.Millisecond)
		c.commit(lo, store.Commit{Run: r, NewRun: true})
		c.release(lo)
	}
	newestFirst := func(a, b store.Run) int {
		if cmp := b.Started.Compare(a.Started); cmp != 0 {
			return cmp
		}
		return strings.Compare(a.ID, b.ID)
	}
	verify := func(when string) {
		c.Helper()
		slices.SortFunc(want, newestFirst)
		for _, limit := range []int{1, 2, 3, 7, 100, 0} {
			got := c.listThreadRuns(k, limit)
			if g, w := orderedIDs(got), orderedIDs(want); !slices.Equal(g, w) {
				c.Errorf("%s: ThreadRuns(%s) in pages of %d: got %q, want %q", when, ks(k), limit, g, w)
				continue
			}
			for i, r := range got {
				c.sameRun(fmt.Sprintf("%s: ThreadRuns(%s) lists %q", when, ks(k), r.ID), r, want[i])
			}
		}
	}
	verify("after creating them")

	// A queued run that starts gets a new start time, and moves.
	q := store.Run{ID: "q1", Status: store.Queued, Started: base.Add(5 * time.Millisecond), Input: []byte(`{"queued":1}`)}
	if err := c.s.Enqueue(c.ctx, k, q); err != nil {
		c.Fatalf("Enqueue(q1): %v", err)
	}
	q.Key, q.Input = k, nil
	want = append(want, q)
	verify("after enqueueing q1")
	l = c.acquire(k, "owner", long)
	started := mkRun("q1", k, store.Running)
	started.Started = base.Add(60 * time.Millisecond)
	c.commit(l, store.Commit{Run: started})
	c.release(l)
	want[slices.IndexFunc(want, func(r store.Run) bool { return r.ID == "q1" })] = *started
	verify("after q1 started")

	if runs, next, err := c.s.ThreadRuns(c.ctx, key("acme", "chat", "nobody"), store.Page{}); err != nil || len(runs) != 0 || next != "" {
		c.Errorf("ThreadRuns of a thread that does not exist: %d runs, next %q, %v; want none", len(runs), next, err)
	}
	if err := c.s.DeleteThread(c.ctx, k); err != nil {
		c.Fatalf("DeleteThread(%s): %v", ks(k), err)
	}
	c.acquire(k, "owner", long)
	if runs := c.listThreadRuns(k, 2); len(runs) != 0 {
		c.Errorf("ThreadRuns(%s) of the thread created again: %q, want none of its former life", ks(k), orderedIDs(runs))
	}
}

// checkBadCursor: a listing refuses a cursor it did not make.
func checkBadCursor(c *tc) {
	k := key("acme", "chat", "t1")
	c.create(k, store.Finished, 1)
	// Not a cursor at all; base64 of "nope", which no store makes.
	for _, after := range []string{"%not a cursor%", "bm9wZQ"} {
		p := store.Page{After: after}
		_, _, err := c.s.Threads(c.ctx, "acme", "", p)
		c.wantErr(fmt.Sprintf("Threads with the cursor %q", after), err, store.ErrCursor)
		_, _, err = c.s.Runs(c.ctx, store.Finished, p)
		c.wantErr(fmt.Sprintf("Runs with the cursor %q", after), err, store.ErrCursor)
		_, _, err = c.s.ThreadRuns(c.ctx, k, p)
		c.wantErr(fmt.Sprintf("ThreadRuns with the cursor %q", after), err, store.ErrCursor)
	}
}

// orderedIDs are the ids of runs, in their order.
func orderedIDs(runs []store.Run) []string {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return ids
}
