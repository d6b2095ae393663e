package storetest

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/aguic/aguic/vm/store"
)

var threadChecks = []check{
	{"OrderAndPaging", checkThreadsOrder},
	{"WorkflowFilter", checkThreadsFilter},
	{"ScopeIsolation", checkScopeIsolation},
	{"DefaultLimit", checkThreadsDefaultLimit},
	{"KeysNotConfused", checkKeysNotConfused},
	{"Count", checkCountThreads},
}

// sortKeys orders keys as Threads lists them: by workflow, then thread id.
func sortKeys(keys []store.Key) {
	slices.SortFunc(keys, func(a, b store.Key) int {
		return cmp.Or(cmp.Compare(a.Workflow, b.Workflow), cmp.Compare(a.Thread, b.Thread))
	})
}

// Ordering checks use lower-case letters and digits only, which every
// collation orders the same way.
var orderKeys = []store.Key{
	key("acme", "beta", "t2"),
	key("acme", "alpha", "t3"),
	key("acme", "gamma", "t1"),
	key("acme", "beta", "t10"),
	key("acme", "alpha", "t1"),
	key("acme", "beta", "t1"),
	key("acme", "alpha", "x"),
	key("acme", "beta", "a9"),
	key("acme", "gamma", "t0"),
}

func checkThreadsOrder(c *tc) {
	for i, k := range orderKeys {
		c.create(k, store.Finished, i%3)
	}
	c.create(key("acmf", "alpha", "t1"), store.Running, 1)
	c.create(key("acm", "alpha", "t1"), store.Running, 1)
	want := slices.Clone(orderKeys)
	sortKeys(want)
	for _, limit := range []int{1, 2, 4, 9, 10, 100, 0} {
		got := c.listThreads("acme", "", limit)
		if !slices.Equal(threadKeys(got), want) {
			c.Errorf("Threads(%q, \"\") in pages of %d: got %s, want %s", "acme", limit, fmtKeys(threadKeys(got)), fmtKeys(want))
			continue
		}
		for _, th := range got {
			if th.Frame != nil || th.Deltas != nil {
				c.Errorf("Threads lists %s with its frame or deltas; it lists the threads' bookkeeping only", ks(th.Key))
			}
			st := c.thread(th.Key)
			if th.Status != st.Status || th.Hash != st.Hash || th.LastSeq != st.LastSeq || th.Version != st.Version {
				c.Errorf("Threads lists %s with Status %q Hash %q LastSeq %d Version %d; Thread says %q %q %d %d",
					ks(th.Key), th.Status, th.Hash, th.LastSeq, th.Version, st.Status, st.Hash, st.LastSeq, st.Version)
			}
		}
	}
}

func checkThreadsFilter(c *tc) {
	for i, k := range orderKeys {
		c.create(k, store.Suspended, i%2)
	}
	c.create(key("acme", "betamax", "t1"), store.Running, 0)
	c.create(key("acme", "bet", "t1"), store.Running, 0)
	c.create(key("other", "beta", "t5"), store.Running, 0)
	for _, wf := range []string{"alpha", "beta", "gamma"} {
		var want []store.Key
		for _, k := range orderKeys {
			if k.Workflow == wf {
				want = append(want, k)
			}
		}
		sortKeys(want)
		for _, limit := range []int{1, 2, 100} {
			got := threadKeys(c.listThreads("acme", wf, limit))
			if !slices.Equal(got, want) {
				c.Errorf("Threads(%q, %q) in pages of %d: got %s, want %s", "acme", wf, limit, fmtKeys(got), fmtKeys(want))
			}
		}
	}
	for _, wf := range []string{"delta", "alph", "b"} {
		if got := c.listThreads("acme", wf, 10); len(got) != 0 {
			c.Errorf("Threads(%q, %q) with no such workflow: got %s, want none", "acme", wf, fmtKeys(threadKeys(got)))
		}
	}
}

func checkScopeIsolation(c *tc) {
	scopes := []string{"acme", "evil", "acme2", "acm", "ACME"}
	for i, sc := range scopes {
		c.create(key(sc, "chat", "shared"), store.Suspended, i+1)
		c.create(key(sc, "chat", "own-"+sc), store.Finished, 1)
	}
	for i, sc := range scopes {
		want := []store.Key{key(sc, "chat", "own-"+sc), key(sc, "chat", "shared")}
		for _, wf := range []string{"", "chat"} {
			got := threadKeys(c.listThreads(sc, wf, 1))
			if !slices.Equal(got, want) {
				c.Errorf("Threads(%q, %q): got %s, want only the scope's own %s", sc, wf, fmtKeys(got), fmtKeys(want))
			}
		}
		k := key(sc, "chat", "shared")
		if th := c.thread(k); th.LastSeq != uint64(i+1) {
			c.Errorf("Thread(%s): LastSeq %d, want %d: threads of the same workflow and id in other scopes mixed in", ks(k), th.LastSeq, i+1)
		}
		evs := c.events(k, 0, 100)
		c.checkSeqs(fmt.Sprintf("Events(%s)", ks(k)), evs, 1, uint64(i+1))
	}
	for _, sc := range []string{"nobody", "acm2", "Acme", "acme/"} {
		if got := c.listThreads(sc, "", 10); len(got) != 0 {
			c.Errorf("Threads(%q) of a scope without threads: got %s, want none", sc, fmtKeys(threadKeys(got)))
		}
	}

	// Leases of the same workflow and thread id in two scopes are
	// separate.
	la := c.acquire(key("acme", "chat", "shared"), "owner-a", long)
	lb := c.acquire(key("evil", "chat", "shared"), "owner-b", long)
	c.commit(la, store.Commit{Events: mkEvents("ra", 100, 1)})
	c.commit(lb, store.Commit{Events: mkEvents("rb", 100, 2)})
	if th := c.thread(la.Key); th.LastSeq != 2 {
		c.Errorf("Thread(%s) after one more event: LastSeq %d, want 2", ks(la.Key), th.LastSeq)
	}
	if th := c.thread(lb.Key); th.LastSeq != 4 {
		c.Errorf("Thread(%s) after two more events: LastSeq %d, want 4", ks(lb.Key), th.LastSeq)
	}

	// Deleting in one scope leaves the others.
	if err := c.s.DeleteThread(c.ctx, key("acme", "chat", "shared")); err != nil {
		c.Fatalf("DeleteThread: %v", err)
	}
	for _, sc := range scopes[1:] {
		c.thread(key(sc, "chat", "shared"))
	}
}

func checkThreadsDefaultLimit(c *tc) {
	var want []store.Key
	for i := range 101 {
		k := key("acme", "chat", fmt.Sprintf("t%03d", i))
		c.acquire(k, "owner", long)
		want = append(want, k)
	}
	ths, next, err := c.s.Threads(c.ctx, "acme", "", store.Page{})
	if err != nil {
		c.Fatalf("Threads(%q, Page{}): %v", "acme", err)
	}
	if len(ths) != 100 || next == "" {
		c.Fatalf("Threads(%q, Page{}) of 101 threads: got %d threads and next %q, want 100 (Limit 0 means 100) and a cursor", "acme", len(ths), next)
	}
	rest, next2, err := c.s.Threads(c.ctx, "acme", "", store.Page{After: next})
	if err != nil {
		c.Fatalf("Threads(%q, Page{After: %q}): %v", "acme", next, err)
	}
	if len(rest) != 1 || next2 != "" {
		c.Errorf("Threads(%q), second page: got %d threads and next %q, want 1 and \"\"", "acme", len(rest), next2)
	}
	if got := threadKeys(append(ths, rest...)); !slices.Equal(got, want) {
		c.Errorf("Threads(%q) in two default pages: got %s, want %s", "acme", fmtKeys(got), fmtKeys(want))
	}
}

// confusable are keys that naive key encodings mix up: parts joined with a
// separator the parts contain, or parts that prefix one another.
var confusable = []store.Key{
	key("a", "b", "c"),
	key("a/b", "c", "d"),
	key("a", "b/c", "d"),
	key("a", "b", "c/d"),
	key("a", "b", "c/e/1"),
	key("a", "b", "c/"),
	key("a:b", "c", "d"),
	key("a", "b:c", "d"),
	key("a|b", "c", "d"),
	key("ab", "c", "d"),
	key("a", "bc", "d"),
	key("a", "b", "cd"),
	key("a", "b", "c\x01d"),
	key("a\x01b", "c", "d"),
	key("a", "b", "c d"),
	key("é", "ü", "日本"),
	key("a", "b", "c%2Fd"),
	key("a", "b", "c\\d"),
}

func checkKeysNotConfused(c *tc) {
	for i, k := range confusable {
		l := c.acquire(k, fmt.Sprintf("owner%d", i), long)
		c.commit(l, store.Commit{
			Checkpoint: checkpoint(store.Suspended, fmt.Sprintf("run%d", i), i),
			Events:     mkEvents(fmt.Sprintf("run%d", i), 0, i+1),
			Run:        mkRun(fmt.Sprintf("run%d", i), k, store.Suspended),
		})
	}
	verify := func(when string, gone map[int]bool) {
		c.Helper()
		for i, k := range confusable {
			if gone[i] {
				c.notFound(k, when)
				continue
			}
			th := c.thread(k)
			if th.LastSeq != uint64(i+1) || th.RunID != fmt.Sprintf("run%d", i) {
				c.Errorf("%s: Thread(%s): LastSeq %d RunID %q, want %d %q", when, ks(k), th.LastSeq, th.RunID, i+1, fmt.Sprintf("run%d", i))
			}
			c.sameEvents(fmt.Sprintf("%s: Events(%s)", when, ks(k)), c.events(k, 0, 100), withSeqs(mkEvents(fmt.Sprintf("run%d", i), 0, i+1), 1))
			if r := c.run(k, fmt.Sprintf("run%d", i)); r.Key != k {
				c.Errorf("%s: Run(%q).Key = %s, want %s", when, r.ID, ks(r.Key), ks(k))
			}
		}
		// Listings, compared as sets: these keys' order depends on the
		// collation.
		scopes := map[string]bool{}
		for _, k := range confusable {
			scopes[k.Scope] = true
		}
		for sc := range scopes {
			for _, wf := range []string{"", "b", "c", "bc", "b/c"} {
				var want []store.Key
				for i, k := range confusable {
					if k.Scope == sc && (wf == "" || k.Workflow == wf) && !gone[i] {
						want = append(want, k)
					}
				}
				got := threadKeys(c.listThreads(sc, wf, 3))
				sortKeys(want)
				sortKeys(got)
				if !slices.Equal(got, want) {
					c.Errorf("%s: Threads(%q, %q): got %s, want %s", when, sc, wf, fmtKeys(got), fmtKeys(want))
				}
			}
		}
	}
	verify("after creating them", nil)
	gone := map[int]bool{}
	for _, i := range []int{0, 1, 11} { // {a b c}, {a/b c d}, {a b cd}
		if err := c.s.DeleteThread(c.ctx, confusable[i]); err != nil {
			c.Fatalf("DeleteThread(%s): %v", ks(confusable[i]), err)
		}
		gone[i] = true
	}
	verify("after deleting three", gone)
}

// checkCountThreads: a store that counts its threads (store.ThreadCounter)
// counts every scope's, by their status now, and leaves out a thread that
// has no status yet; a store that does not count skips the check.
func checkCountThreads(c *tc) {
	counter, ok := c.s.(store.ThreadCounter)
	if !ok {
		c.Skip("the store does not count its threads")
	}
	c.create(key("acme", "alpha", "t1"), store.Finished, 1)
	c.create(key("acme", "alpha", "t2"), store.Suspended, 0)
	c.create(key("other", "beta", "t1"), store.Suspended, 2)
	c.create(key("other", "beta", "t2"), store.Failed, 0)
	k := key("acme", "beta", "t3")
	c.create(k, store.Suspended, 0)
	l := c.acquire(k, "mover", long)
	c.commit(l, store.Commit{Checkpoint: checkpoint(store.Running, "r2", 0)})
	c.acquire(key("acme", "gamma", "new"), "holder", long) // no status yet
	got, err := counter.CountThreads(c.ctx)
	if err != nil {
		c.Fatalf("CountThreads: %v", err)
	}
	want := map[store.Status]int{store.Finished: 1, store.Suspended: 2, store.Failed: 1, store.Running: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		c.Errorf("CountThreads: got %v, want %v", got, want)
	}
}
