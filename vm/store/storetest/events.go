package storetest

import (
	"fmt"

	"github.com/aguic/aguic/vm/store"
)

var eventChecks = []check{
	{"Paging", checkEventsPaging},
	{"AtEnd", checkEventsAtEnd},
	{"NotFound", checkEventsNotFound},
	{"Last", checkLastEvents},
}

// tenEvents gives k a log of 10 events over three commits and returns
// them as stored.
func tenEvents(c *tc, k store.Key) []store.Event {
	c.Helper()
	l := c.acquire(k, "owner-a", long)
	var all []store.Event
	for _, n := range []int{4, 1, 5} {
		evs := mkEvents("r1", len(all)+1, n)
		evs[0].Silent = true
		c.commit(l, store.Commit{Events: evs})
		all = append(all, withSeqs(evs, uint64(len(all))+1)...)
	}
	c.release(l)
	return all
}

func checkEventsPaging(c *tc) {
	k := key("acme", "chat", "t1")
	all := tenEvents(c, k)
	for after := 0; after <= 10; after += 3 {
		end := min(after+3, 10)
		c.sameEvents(fmt.Sprintf("Events(%s, after %d, limit 3)", ks(k), after), c.events(k, uint64(after), 3), all[after:end])
	}
	for _, p := range []struct{ after, limit int }{{0, 10}, {0, 11}, {0, 1000}, {5, 100}, {9, 1}, {1, 8}} {
		end := min(p.after+p.limit, 10)
		c.sameEvents(fmt.Sprintf("Events(%s, after %d, limit %d)", ks(k), p.after, p.limit), c.events(k, uint64(p.after), p.limit), all[p.after:end])
	}
	// Following the cursor visits every event once.
	var got []store.Event
	for after := uint64(0); ; {
		evs := c.events(k, after, 4)
		if len(evs) == 0 {
			break
		}
		got = append(got, evs...)
		after = evs[len(evs)-1].Seq
		if len(got) > 10 {
			break
		}
	}
	c.sameEvents("events read by following the cursor in pages of 4", got, all)
}

func checkEventsAtEnd(c *tc) {
	k := key("acme", "chat", "t1")
	all := tenEvents(c, k)
	last := all[len(all)-1].Seq
	if evs := c.events(k, last, 100); len(evs) != 0 {
		c.Errorf("Events(%s, after LastSeq %d): got Seq %s, want none", ks(k), last, seqs(evs))
	}
	empty := key("acme", "chat", "empty")
	c.acquire(empty, "owner-a", long)
	if evs := c.events(empty, 0, 100); len(evs) != 0 {
		c.Errorf("Events(%s, 0, 100) of a thread without events: got Seq %s, want none", ks(empty), seqs(evs))
	}
	if evs := c.lastEvents(empty, 10); len(evs) != 0 {
		c.Errorf("LastEvents(%s, 10) of a thread without events: got Seq %s, want none", ks(empty), seqs(evs))
	}
}

func checkEventsNotFound(c *tc) {
	tenEvents(c, key("acme", "chat", "t1"))
	for _, k := range []store.Key{
		key("acme", "chat", "t2"),
		key("acme", "other", "t1"),
		key("evil", "chat", "t1"), // another scope
		key("acme", "chat", "t"),
		key("acme", "chat", "t1/"),
	} {
		c.notFound(k, "never created")
	}
}

func checkLastEvents(c *tc) {
	k := key("acme", "chat", "t1")
	all := tenEvents(c, k)
	for _, n := range []int{1, 3, 9, 10, 11, 100} {
		c.sameEvents(fmt.Sprintf("LastEvents(%s, %d)", ks(k), n), c.lastEvents(k, n), all[max(len(all)-n, 0):])
	}
}
