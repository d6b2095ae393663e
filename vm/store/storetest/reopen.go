package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aguic/aguic/vm/store"
)

var reopenChecks = []reopenCheck{
	{"Everything", checkReopenEverything},
	{"RemovalsStay", checkReopenRemovals},
}

// snapshot is what a store holds, read through its methods.
type snapshot struct {
	threads map[store.Key]store.Thread
	events  map[store.Key][]store.Event
	runs    map[runRef]store.Run
	byState map[store.Status][]string
	lists   map[string][]store.Key
	sources map[string][]byte
}

// runRef names a run: its thread and id.
type runRef struct {
	k  store.Key
	id string
}

func (c *tc) snapshot(keys []store.Key, runs []runRef, sources []string) snapshot {
	c.Helper()
	s := snapshot{
		threads: map[store.Key]store.Thread{},
		events:  map[store.Key][]store.Event{},
		runs:    map[runRef]store.Run{},
		byState: map[store.Status][]string{},
		lists:   map[string][]store.Key{},
		sources: map[string][]byte{},
	}
	for _, k := range keys {
		th := c.thread(k)
		s.threads[k] = th
		s.events[k] = c.allEvents(k, max(th.FirstSeq, 1)-1)
		s.lists[k.Scope] = threadKeys(c.listThreads(k.Scope, "", 2))
	}
	for _, r := range runs {
		s.runs[r] = c.run(r.k, r.id)
	}
	for _, st := range []store.Status{store.Running, store.Suspended, store.Finished, store.Failed, store.Cancelled} {
		s.byState[st] = runIDs(c.listRuns(st, 2))
	}
	for _, h := range sources {
		src, err := c.s.Source(c.ctx, h)
		if err != nil {
			c.Fatalf("Source(%q): %v", h, err)
		}
		s.sources[h] = src
	}
	return s
}

// same fails the check unless the store still holds what s recorded.
func (c *tc) same(when string, s snapshot) {
	c.Helper()
	keys := make([]store.Key, 0, len(s.threads))
	for k := range s.threads {
		keys = append(keys, k)
	}
	var runs []runRef
	var sources []string
	for r := range s.runs {
		runs = append(runs, r)
	}
	for h := range s.sources {
		sources = append(sources, h)
	}
	now := c.snapshot(keys, runs, sources)
	for k, th := range s.threads {
		c.sameThread(fmt.Sprintf("%s: Thread(%s)", when, ks(k)), now.threads[k], th)
		c.sameEvents(fmt.Sprintf("%s: Events(%s)", when, ks(k)), now.events[k], s.events[k])
	}
	for ref, r := range s.runs {
		c.sameRun(fmt.Sprintf("%s: Run(%s, %q)", when, ks(ref.k), ref.id), now.runs[ref], r)
	}
	for st, ids := range s.byState {
		if !slices.Equal(now.byState[st], ids) {
			c.Errorf("%s: Runs(%q): got %q, want %q", when, st, now.byState[st], ids)
		}
	}
	for sc, keys := range s.lists {
		if !slices.Equal(now.lists[sc], keys) {
			c.Errorf("%s: Threads(%q): got %s, want %s", when, sc, fmtKeys(now.lists[sc]), fmtKeys(keys))
		}
	}
	for h, src := range s.sources {
		if !bytes.Equal(now.sources[h], src) {
			c.Errorf("%s: Source(%q): got %d bytes, want the %d stored", when, h, len(now.sources[h]), len(src))
		}
	}
}

func checkReopenEverything(r *reopener) {
	c := r.Open()
	srcs := map[string][]byte{"sha256:aa": []byte("workflow a:\n  start: end\n"), "sha256:big": bigSource(64 << 10)}
	for h, src := range srcs {
		if err := c.s.PutSource(c.ctx, h, src); err != nil {
			c.Fatalf("PutSource(%q): %v", h, err)
		}
	}
	a, b, e := key("acme", "chat", "a"), key("acme", "other", "b"), key("evil", "chat", "a")
	la := c.acquire(a, "owner-a", long)
	evs := mkEvents("r1", 1, 3)
	evs[1].Silent = true
	c.commit(la, store.Commit{Checkpoint: checkpoint(store.Running, "r1", 1), Events: evs, Run: mkRun("r0", a, store.Finished)})
	evs = mkEvents("r1", 4, 2)
	evs[0].Hidden = true
	c.commit(la, store.Commit{Checkpoint: checkpoint(store.Suspended, "r1", 2), Events: evs, Hide: []uint64{2}, Run: mkRun("r1", a, store.Suspended)})
	c.release(la)
	lb := c.acquire(b, "owner-b", long)
	c.commit(lb, store.Commit{Checkpoint: checkpoint(store.Running, "rb", 1), Events: mkEvents("rb", 1, 2), Run: mkRun("rb", b, store.Running)})
	c.create(e, store.Failed, 4)
	keys := []store.Key{a, b, e}
	runs := []runRef{{a, "r0"}, {a, "r1"}, {b, "rb"}, {e, runOf(e)}}
	before := c.snapshot(keys, runs, []string{"sha256:aa", "sha256:big"})
	r.Close()

	c = r.Open()
	c.same("after Close and open", before)
	_, err := c.s.Source(c.ctx, "sha256:none")
	c.wantErr("Source of an unknown hash after reopening", err, store.ErrNotFound)

	// Numbering, versions and lease tokens go on.
	l := c.acquire(a, "owner-c", long)
	if l.Token <= la.Token {
		c.Errorf("Acquire(%s) after reopening: Token %d, want more than the %d before Close", ks(a), l.Token, la.Token)
	}
	fenced(c, "after reopening and another owner's Acquire", la, before.threads[a])
	th := c.commit(l, store.Commit{Events: mkEvents("r2", 6, 2), Checkpoint: checkpoint(store.Finished, "r2", 3), Run: mkRun("r2", a, store.Finished)})
	if th.LastSeq != 7 || th.Version != before.threads[a].Version+1 {
		c.Errorf("Commit to %s after reopening: LastSeq %d Version %d, want 7 and %d", ks(a), th.LastSeq, th.Version, before.threads[a].Version+1)
	}
	c.checkSeqs(fmt.Sprintf("Events(%s) after reopening and committing", ks(a)), c.allEvents(a, 0), 1, 7)
	c.release(l)
	after := c.snapshot(keys, append(runs, runRef{a, "r2"}), []string{"sha256:aa", "sha256:big"})
	r.Close()

	c = r.Open()
	c.same("after a second Close and open", after)
}

func checkReopenRemovals(r *reopener) {
	c := r.Open()
	x, y, z, w := key("acme", "chat", "x"), key("acme", "chat", "y"), key("acme", "chat", "z"), key("acme", "chat", "w")
	c.create(x, store.Finished, 3)
	c.create(y, store.Suspended, 10)
	c.create(z, store.Finished, 2)
	c.create(w, store.Running, 3)
	if err := c.s.DeleteThread(c.ctx, x); err != nil {
		c.Fatalf("DeleteThread(%s): %v", ks(x), err)
	}
	if n, _, err := c.s.Sweep(c.ctx, store.Retention{MaxEvents: 4}, time.Now()); err != nil || n != 6 {
		c.Fatalf("Sweep(MaxEvents 4): %d events removed, error %v; want 6, nil", n, err)
	}
	if _, n, err := c.s.Sweep(c.ctx, store.Retention{FinishedTTL: time.Hour}, time.Now().Add(2*time.Hour)); err != nil || n != 1 {
		c.Fatalf("Sweep(FinishedTTL 1h) 2h later: %d threads removed, error %v; want 1, nil", n, err)
	}
	before := c.snapshot([]store.Key{y, w}, []runRef{{y, runOf(y)}, {w, runOf(w)}}, nil)
	r.Close()

	for round := 1; round <= 2; round++ {
		when := fmt.Sprintf("after Close and open #%d", round)
		c = r.Open()
		c.same(when, before)
		for _, k := range []store.Key{x, z} {
			c.notFound(k, when)
			if _, err := c.s.Run(c.ctx, k, runOf(k)); !errors.Is(err, store.ErrNotFound) {
				c.Errorf("%s: Run(%q) of a removed thread: got error %v, want ErrNotFound", when, runOf(k), err)
			}
		}
		if th := c.thread(y); th.FirstSeq != 7 {
			c.Errorf("%s: Thread(%s).FirstSeq = %d, want 7", when, ks(y), th.FirstSeq)
		}
		_, err := c.s.Events(c.ctx, y, 0, 100)
		c.wantErr(fmt.Sprintf("%s: Events(%s, after 0) with events 1..6 removed", when, ks(y)), err, store.ErrExpired)
		c.checkSeqs(fmt.Sprintf("%s: Events(%s, after 6)", when, ks(y)), c.events(y, 6, 100), 7, 9+uint64(round))
		if got := threadKeys(c.listThreads("acme", "", 10)); !slices.Equal(got, []store.Key{w, y}) {
			c.Errorf("%s: Threads(%q): got %s, want %s", when, "acme", fmtKeys(got), fmtKeys([]store.Key{w, y}))
		}
		if round == 1 {
			l := c.acquire(y, "owner", long)
			th := c.commit(l, store.Commit{Events: mkEvents("ry", 11, 1)})
			if th.LastSeq != 11 || th.FirstSeq != 7 {
				c.Errorf("%s: Commit to %s: LastSeq %d FirstSeq %d, want 11 and 7", when, ks(y), th.LastSeq, th.FirstSeq)
			}
			c.release(l)
			before = c.snapshot([]store.Key{y, w}, []runRef{{y, runOf(y)}, {w, runOf(w)}}, nil)
		}
		r.Close()
	}
}
