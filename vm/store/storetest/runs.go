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
		c.sameRun(fmt.Sprintf("Run(%q)", id), c.run(id), r)
	}
	for _, id := range []string{"r0", "acme-r", "acme-r0 ", "evil-r3", ""} {
		_, err := c.s.Run(c.ctx, id)
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
	c.sameRun("Run(running-3) after it finished", c.run(moved.ID), *done)
}
