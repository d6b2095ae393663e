package storetest

import (
	"slices"
	"time"

	"github.com/aguic/aguic/vm/store"
)

var wakeChecks = []check{
	{"DueInOrder", checkDueInOrder},
	{"DueForgetsWhatChanged", checkDueForgets},
}

// wakeAt is a checkpoint of a thread suspended until t.
func wakeAt(run string, t time.Time) *store.Thread {
	cp := checkpoint(store.Suspended, run, 1)
	cp.WakeAt = t
	return cp
}

// checkDueInOrder: Due lists the threads whose wake time has come, the
// earliest first, at most limit of them; a thread keeps its wake time.
func checkDueInOrder(c *tc) {
	base := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	a, b, d := key("acme", "timer", "a"), key("acme", "timer", "b"), key("acme", "timer", "d")
	for _, w := range []struct {
		k   store.Key
		off time.Duration
	}{{b, 2 * time.Minute}, {a, time.Minute}, {d, time.Hour}} {
		l := c.acquire(w.k, "o", long)
		c.commit(l, store.Commit{Checkpoint: wakeAt("r", base.Add(w.off))})
		c.release(l)
	}
	plain := key("acme", "timer", "plain")
	l := c.acquire(plain, "o", long)
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Suspended, "r", 1)})
	c.release(l)

	if th := c.thread(a); !th.WakeAt.Equal(base.Add(time.Minute)) {
		c.Errorf("Thread(%s).WakeAt = %v, want %v", ks(a), th.WakeAt, base.Add(time.Minute))
	}
	for _, tc := range []struct {
		now   time.Time
		limit int
		want  []store.Key
	}{
		{base, 10, nil},
		{base.Add(time.Minute), 10, []store.Key{a}},
		{base.Add(30 * time.Minute), 10, []store.Key{a, b}},
		{base.Add(30 * time.Minute), 1, []store.Key{a}},
		{base.Add(24 * time.Hour), 10, []store.Key{a, b, d}},
	} {
		got, err := c.s.Due(c.ctx, tc.now, tc.limit)
		if err != nil {
			c.Fatalf("Due(%v, %d): %v", tc.now, tc.limit, err)
		}
		if !slices.Equal(got, tc.want) {
			c.Errorf("Due(%v, %d) = %s, want %s", tc.now, tc.limit, fmtKeys(got), fmtKeys(tc.want))
		}
	}
}

// checkDueForgets: a thread that runs again, or waits for something else,
// or is deleted, is no longer due.
func checkDueForgets(c *tc) {
	at := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	later := at.Add(time.Hour)
	a, b, d := key("acme", "timer", "a"), key("acme", "timer", "b"), key("acme", "timer", "d")
	leases := map[store.Key]store.Lease{}
	for _, k := range []store.Key{a, b, d} {
		leases[k] = c.acquire(k, "o", long)
		c.commit(leases[k], store.Commit{Checkpoint: wakeAt("r", at)})
	}
	c.commit(leases[a], store.Commit{Checkpoint: checkpoint(store.Running, "r2", 2)})
	c.commit(leases[b], store.Commit{Checkpoint: wakeAt("r2", later)})
	c.release(leases[d])
	if err := c.s.DeleteThread(c.ctx, d); err != nil {
		c.Fatalf("DeleteThread(%s): %v", ks(d), err)
	}
	if got, err := c.s.Due(c.ctx, at, 10); err != nil || len(got) != 0 {
		c.Errorf("Due at the first wake time, after the threads moved on: %s, %v; want none", fmtKeys(got), err)
	}
	if got, err := c.s.Due(c.ctx, later, 10); err != nil || !slices.Equal(got, []store.Key{b}) {
		c.Errorf("Due at the new wake time: %s, %v; want [%s]", fmtKeys(got), err, ks(b))
	}
	if th := c.thread(a); !th.WakeAt.IsZero() {
		c.Errorf("Thread(%s).WakeAt after it ran again = %v, want none", ks(a), th.WakeAt)
	}
}
