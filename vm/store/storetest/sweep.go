package storetest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aguic/aguic/vm/store"
)

var sweepChecks = []check{
	{"MaxEvents", checkSweepMaxEvents},
	{"FinishedTTL", checkSweepFinished},
}

func (c *tc) sweep(r store.Retention, now time.Time, wantEvents, wantThreads int) {
	c.Helper()
	events, threads, err := c.s.Sweep(c.ctx, r, now)
	if err != nil {
		c.Fatalf("Sweep(%+v): %v", r, err)
	}
	if events != wantEvents || threads != wantThreads {
		c.Errorf("Sweep(%+v): removed %d events and %d threads, want %d and %d", r, events, threads, wantEvents, wantThreads)
	}
}

func checkSweepMaxEvents(c *tc) {
	a, b, e := key("acme", "chat", "a"), key("acme", "chat", "b"), key("evil", "chat", "exactly")
	la := c.acquire(a, "owner", long)
	var all []store.Event
	for _, n := range []int{4, 3, 3} {
		evs := mkEvents("ra", len(all)+1, n)
		c.commit(la, store.Commit{Events: evs, Checkpoint: checkpoint(store.Suspended, "ra", len(all))})
		all = append(all, withSeqs(evs, uint64(len(all))+1)...)
	}
	c.create(b, store.Finished, 3)
	c.create(e, store.Running, 5)
	tha, thb, the := c.thread(a), c.thread(b), c.thread(e)
	evb, eve := c.events(b, 0, 100), c.events(e, 0, 100)

	now := time.Now()
	c.sweep(store.Retention{}, now, 0, 0)
	c.sweep(store.Retention{MaxEvents: 5}, now, 5, 0)

	th := c.thread(a)
	if th.FirstSeq != 6 || th.LastSeq != 10 {
		c.Errorf("Thread(%s) of 10 events after Sweep(MaxEvents 5): FirstSeq %d LastSeq %d, want 6 and 10", ks(a), th.FirstSeq, th.LastSeq)
	}
	if d := diffCheckpoint(th, tha); len(d) > 0 {
		c.Errorf("Thread(%s) after Sweep(MaxEvents 5): the checkpoint changed: %v", ks(a), d)
	}
	c.sameEvents(fmt.Sprintf("Events(%s, after 5) after Sweep(MaxEvents 5)", ks(a)), c.events(a, 5, 100), all[5:])
	c.sameEvents(fmt.Sprintf("Events(%s, after 7) after Sweep(MaxEvents 5)", ks(a)), c.events(a, 7, 100), all[7:])
	c.sameEvents(fmt.Sprintf("LastEvents(%s, 100) after Sweep(MaxEvents 5)", ks(a)), c.lastEvents(a, 100), all[5:])
	c.sameEvents(fmt.Sprintf("LastEvents(%s, 2) after Sweep(MaxEvents 5)", ks(a)), c.lastEvents(a, 2), all[8:])
	for _, after := range []uint64{0, 1, 4} {
		evs, err := c.s.Events(c.ctx, a, after, 100)
		if !errors.Is(err, store.ErrExpired) {
			c.Errorf("Events(%s, after %d) with events 1..5 removed: got Seq %s and error %v, want ErrExpired", ks(a), after, seqs(evs), err)
		}
	}
	c.sameThread(fmt.Sprintf("Thread(%s) of 3 events after Sweep(MaxEvents 5)", ks(b)), c.thread(b), thb)
	c.sameEvents(fmt.Sprintf("Events(%s) of 3 events after Sweep(MaxEvents 5)", ks(b)), c.events(b, 0, 100), evb)
	c.sameThread(fmt.Sprintf("Thread(%s) of 5 events after Sweep(MaxEvents 5)", ks(e)), c.thread(e), the)
	c.sameEvents(fmt.Sprintf("Events(%s) of 5 events after Sweep(MaxEvents 5)", ks(e)), c.events(e, 0, 100), eve)

	// Numbering goes on after removal.
	more := mkEvents("ra", 11, 2)
	th = c.commit(la, store.Commit{Events: more})
	all = append(all, withSeqs(more, 11)...)
	if th.LastSeq != 12 || th.FirstSeq != 6 {
		c.Errorf("Commit of 2 events after Sweep: LastSeq %d FirstSeq %d, want 12 and 6", th.LastSeq, th.FirstSeq)
	}
	c.sameEvents(fmt.Sprintf("Events(%s, after 5) after 2 more events", ks(a)), c.events(a, 5, 100), all[5:])
	c.sweep(store.Retention{MaxEvents: 5}, now, 2, 0)
	if th := c.thread(a); th.FirstSeq != 8 || th.LastSeq != 12 {
		c.Errorf("Thread(%s) after the second Sweep: FirstSeq %d LastSeq %d, want 8 and 12", ks(a), th.FirstSeq, th.LastSeq)
	}
	c.sameEvents(fmt.Sprintf("Events(%s, after 7) after the second Sweep", ks(a)), c.events(a, 7, 100), all[7:])
	_, err := c.s.Events(c.ctx, a, 6, 100)
	c.wantErr(fmt.Sprintf("Events(%s, after 6) with events 1..7 removed", ks(a)), err, store.ErrExpired)
	c.sweep(store.Retention{MaxEvents: 5}, now, 0, 0)
	c.sweep(store.Retention{MaxEvents: 1}, now, 4+2+4, 0)
	c.sameEvents(fmt.Sprintf("LastEvents(%s, 3) after Sweep(MaxEvents 1)", ks(a)), c.lastEvents(a, 3), all[11:])
}

func checkSweepFinished(c *tc) {
	statuses := []store.Status{store.Finished, store.Failed, store.Cancelled, store.Running, store.Suspended}
	keys := make([]store.Key, len(statuses))
	threads := make([]store.Thread, len(statuses))
	for i, st := range statuses {
		keys[i] = key([]string{"acme", "evil"}[i%2], "chat", string(st))
		threads[i] = c.create(keys[i], st, i+1)
	}
	var endedEvents int
	for i := range 3 {
		endedEvents += i + 1
	}
	ttl := time.Hour
	c.sweep(store.Retention{FinishedTTL: ttl}, time.Now(), 0, 0)
	for i, k := range keys {
		c.sameThread(fmt.Sprintf("Thread(%s) updated just now, after Sweep(FinishedTTL %v)", ks(k), ttl), c.thread(k), threads[i])
	}
	// Half the TTL later, still kept.
	c.sweep(store.Retention{FinishedTTL: ttl}, time.Now().Add(ttl/2), 0, 0)

	later := time.Now().Add(2 * ttl)
	events, removed, err := c.s.Sweep(c.ctx, store.Retention{FinishedTTL: ttl}, later)
	if err != nil {
		c.Fatalf("Sweep(FinishedTTL %v) as of %v later: %v", ttl, 2*ttl, err)
	}
	if removed != 3 {
		c.Errorf("Sweep(FinishedTTL %v) as of %v later: removed %d threads, want 3 (finished, failed, cancelled)", ttl, 2*ttl, removed)
	}
	if events != 0 && events != endedEvents {
		c.Errorf("Sweep(FinishedTTL %v): reported %d events removed, want 0 (counting only MaxEvents) or %d (the deleted threads' events)", ttl, events, endedEvents)
	}
	for i, k := range keys {
		if i < 3 {
			c.notFound(k, fmt.Sprintf("a %s thread idle for longer than FinishedTTL", statuses[i]))
			_, err := c.s.Run(c.ctx, k, runOf(k))
			c.wantErr(fmt.Sprintf("Run(%q) of a swept thread", runOf(k)), err, store.ErrNotFound)
			continue
		}
		c.sameThread(fmt.Sprintf("Thread(%s) (%s) after Sweep(FinishedTTL)", ks(k), statuses[i]), c.thread(k), threads[i])
		c.checkSeqs(fmt.Sprintf("Events(%s) after Sweep(FinishedTTL)", ks(k)), c.events(k, 0, 100), 1, uint64(i+1))
		c.run(k, runOf(k))
	}
	var want []store.Key
	for _, sc := range []string{"acme", "evil"} {
		for _, th := range c.listThreads(sc, "", 10) {
			want = append(want, th.Key)
		}
	}
	if !slices.Equal(want, []store.Key{keys[4], keys[3]}) {
		c.Errorf("Threads left after Sweep(FinishedTTL): %s, want %s", fmtKeys(want), fmtKeys([]store.Key{keys[4], keys[3]}))
	}
	c.sweep(store.Retention{FinishedTTL: ttl}, later, 0, 0)
}
