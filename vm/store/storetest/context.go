package storetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aguic/aguic/vm/store"
)

var contextChecks = []check{
	{"Cancelled", checkCancelled},
}

// checkCancelled calls every method with a context cancelled beforehand:
// each returns an error wrapping context.Canceled and writes nothing. A
// store must look at ctx before it does anything, even where the work
// would be quick.
func checkCancelled(c *tc) {
	k := key("acme", "chat", "t1")
	l := c.acquire(k, "owner-a", long)
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Suspended, "r1", 1), Events: mkEvents("r1", 1, 3), Run: mkRun("r1", k, store.Suspended)})
	if err := c.s.PutSource(c.ctx, "sha256:aa", []byte("a")); err != nil {
		c.Fatalf("PutSource: %v", err)
	}
	th, evs := c.thread(k), c.events(k, 0, 100)

	ctx, cancel := context.WithCancel(c.ctx)
	cancel()
	fresh := key("acme", "chat", "fresh")
	calls := []struct {
		name string
		call func() error
	}{
		{"PutSource", func() error { return c.s.PutSource(ctx, "sha256:bb", []byte("b")) }},
		{"Source", func() error { _, err := c.s.Source(ctx, "sha256:aa"); return err }},
		{"Acquire of a new thread", func() error { _, err := c.s.Acquire(ctx, fresh, "owner-b", long); return err }},
		{"Acquire by the holder", func() error { _, err := c.s.Acquire(ctx, k, "owner-a", long); return err }},
		{"Renew", func() error { _, err := c.s.Renew(ctx, l, 2*long); return err }},
		{"Release", func() error { return c.s.Release(ctx, l) }},
		{"Commit", func() error {
			_, err := c.s.Commit(ctx, l, store.Commit{Checkpoint: checkpoint(store.Finished, "r1", 2), Events: mkEvents("r1", 4, 2), Hide: []uint64{1}, Run: mkRun("r2", k, store.Finished)})
			return err
		}},
		{"Sync", func() error { return c.s.Sync(ctx) }},
		{"Thread", func() error { _, err := c.s.Thread(ctx, k); return err }},
		{"Threads", func() error { _, _, err := c.s.Threads(ctx, "acme", "", store.Page{}); return err }},
		{"DeleteThread", func() error { return c.s.DeleteThread(ctx, k) }},
		{"Events", func() error { _, err := c.s.Events(ctx, k, 0, 10); return err }},
		{"LastEvents", func() error { _, err := c.s.LastEvents(ctx, k, 10); return err }},
		{"Run", func() error { _, err := c.s.Run(ctx, k, "r1"); return err }},
		{"Runs", func() error { _, _, err := c.s.Runs(ctx, store.Suspended, store.Page{}); return err }},
		{"ThreadRuns", func() error { _, _, err := c.s.ThreadRuns(ctx, k, store.Page{}); return err }},
		{"Pending", func() error { _, err := c.s.Pending(ctx, k); return err }},
		{"Stranded", func() error { _, err := c.s.Stranded(ctx, 10); return err }},
		{"Cancel", func() error { return c.s.Cancel(ctx, k, "r1") }},
		{"TakeTask", func() error { _, err := c.s.TakeTask(ctx, "sweep", time.Hour); return err }},
		{"Sweep", func() error {
			_, _, err := c.s.Sweep(ctx, store.Retention{MaxEvents: 1, FinishedTTL: time.Nanosecond}, time.Now().Add(24*time.Hour))
			return err
		}},
	}
	for _, call := range calls {
		if err := call.call(); !errors.Is(err, context.Canceled) {
			c.Errorf("%s with a cancelled context: got error %v, want one wrapping context.Canceled", call.name, err)
		}
	}

	// Nothing was written.
	c.sameThread("Thread after calls with a cancelled context", c.thread(k), th)
	c.sameEvents("events after calls with a cancelled context", c.events(k, 0, 100), evs)
	if _, err := c.s.Source(c.ctx, "sha256:bb"); !errors.Is(err, store.ErrNotFound) {
		c.Errorf("Source of a PutSource with a cancelled context: got error %v, want ErrNotFound", err)
	}
	if _, err := c.s.Thread(c.ctx, fresh); !errors.Is(err, store.ErrNotFound) {
		c.Errorf("Thread(%s) acquired with a cancelled context: got error %v, want ErrNotFound", ks(fresh), err)
	}
	if _, err := c.s.Run(c.ctx, k, "r2"); !errors.Is(err, store.ErrNotFound) {
		c.Errorf("Run(%q) committed with a cancelled context: got error %v, want ErrNotFound", "r2", err)
	}
	_, err := c.s.Acquire(c.ctx, k, "owner-b", long)
	c.wantErr(fmt.Sprintf("Acquire(%s) by another owner after a Release with a cancelled context", ks(k)), err, store.ErrBusy)
	c.commit(l, store.Commit{Events: mkEvents("r1", 4, 1)})
}
