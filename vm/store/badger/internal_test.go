package badger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/vm/store"
)

func TestThreadKey(t *testing.T) {
	keys := []store.Key{
		{},
		{Scope: "a"},
		{Scope: "a", Workflow: "b", Thread: "c"},
		{Scope: "a\x00", Workflow: "b", Thread: "c"},
		{Scope: "a", Workflow: "\x00b", Thread: "c"},
		{Scope: "a", Workflow: "b\x00", Thread: "\x00\x01"},
		{Scope: "a/b", Workflow: "c", Thread: "d"},
		{Scope: "a", Workflow: "b/c", Thread: "d"},
		{Scope: "a", Workflow: "b", Thread: "c/d"},
		{Scope: "a", Workflow: "b", Thread: "c\xff"},
		{Scope: "ab", Workflow: "", Thread: "c"},
		{Scope: "a", Workflow: "bc", Thread: ""},
		{Scope: "a", Workflow: "b", Thread: "cd"},
	}
	for _, k := range keys {
		got, rest, err := parseThreadKey(threadKey(k))
		if err != nil || got != k || len(rest) != 0 {
			t.Errorf("parseThreadKey(threadKey(%q)) = %q, %q, %v", k, got, rest, err)
		}
	}
	// Byte order of encoded keys is the order of (scope, workflow, thread).
	cmp := func(a, b store.Key) int {
		return cmp3(strings.Compare(a.Scope, b.Scope), strings.Compare(a.Workflow, b.Workflow), strings.Compare(a.Thread, b.Thread))
	}
	for _, a := range keys {
		for _, b := range keys {
			if got, want := bytes.Compare(threadKey(a), threadKey(b)), cmp(a, b); got != want {
				t.Errorf("threadKey(%q) vs threadKey(%q): %d, want %d", a, b, got, want)
			}
			// No key is a prefix of another.
			if a != b && bytes.HasPrefix(threadKey(a), threadKey(b)) {
				t.Errorf("threadKey(%q) starts with threadKey(%q)", a, b)
			}
		}
	}
	for _, bad := range [][]byte{nil, {'a'}, {'a', 0}, {'a', 0, 2}} {
		if _, _, err := cutEscaped(bad); err == nil {
			t.Errorf("cutEscaped(%q) succeeded", bad)
		}
	}
}

func cmp3(a, b, c int) int {
	if a != 0 {
		return a
	}
	if b != 0 {
		return b
	}
	return c
}

func FuzzThreadKey(f *testing.F) {
	f.Add("a", "b", "c", "a", "b\x00", "c")
	f.Fuzz(func(t *testing.T, s1, w1, t1, s2, w2, t2 string) {
		a, b := store.Key{Scope: s1, Workflow: w1, Thread: t1}, store.Key{Scope: s2, Workflow: w2, Thread: t2}
		ka, kb := threadKey(a), threadKey(b)
		if got, _, err := parseThreadKey(ka); err != nil || got != a {
			t.Fatalf("round trip of %q: %q, %v", a, got, err)
		}
		want := cmp3(strings.Compare(s1, s2), strings.Compare(w1, w2), strings.Compare(t1, t2))
		if got := bytes.Compare(ka, kb); got != want {
			t.Fatalf("order of %q and %q: %d, want %d", a, b, got, want)
		}
	})
}

func TestCodec(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	h := header{Status: store.Suspended, Hash: "h", RunID: "r", Wait: []byte(`{"kind":"timer"}`), Deltas: 4, LastSeq: 1 << 40, FirstSeq: 3, Version: 9, Gen: 77, Created: now, Updated: now.Add(time.Hour), WakeAt: 1 << 41}
	if got, err := decodeHeader(encodeHeader(&h)); err != nil || !reflect.DeepEqual(got, h) {
		t.Errorf("header round trip: %+v, %v", got, err)
	}
	e := store.Event{Seq: 4, RunID: "r", Time: now, Hidden: true, Data: []byte(`{}`)}
	if got, err := decodeEvent(4, encodeEvent(&e)); err != nil || got.Seq != 4 || !got.Time.Equal(now) || !got.Hidden || got.Silent || string(got.Data) != "{}" {
		t.Errorf("event round trip: %+v, %v", got, err)
	}
	r := store.Run{ID: "id", Key: store.Key{Scope: "s", Workflow: "w", Thread: "t"}, Status: store.Failed, Started: now, Outcome: []byte("o"), Error: "e", Input: []byte("i")}
	got, err := decodeRun(r.Key, "id", encodeRun(&r))
	if err != nil || got.Key != r.Key || got.Status != r.Status || !got.Started.Equal(now) || !got.Finished.IsZero() || string(got.Outcome) != "o" || got.Error != "e" || string(got.Input) != "i" {
		t.Errorf("run round trip: %+v, %v", got, err)
	}
	// Truncated or overlong records are errors, not panics; a header
	// written before wake times, which ends at Updated, reads as one
	// without.
	enc := encodeHeader(&h)
	old := h
	old.WakeAt = 0
	oldLen := len(encodeHeader(&old)) - 1 // without the wake time's one byte
	for i := range enc {
		got, err := decodeHeader(enc[:i])
		switch {
		case i == oldLen && (err != nil || got.WakeAt != 0 || !got.Updated.Equal(h.Updated)):
			t.Errorf("a header without a wake time: %+v, %v", got, err)
		case i != oldLen && err == nil:
			t.Errorf("decodeHeader of %d of %d bytes succeeded", i, len(enc))
		}
	}
	if _, err := decodeHeader(append(enc, 0)); err == nil {
		t.Error("decodeHeader with a trailing byte succeeded")
	}
}

func TestFormatVersion(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(txn *badgerdb.Txn) error {
		return txn.Set(metaKey, encoder(nil).uint(formatVersion+1))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(Options{Dir: dir})
	if want := fmt.Sprintf("the store has format %d, this aguic reads formats 1 to %d", formatVersion+1, formatVersion); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Open of a store of format %d: got error %v, want %q", formatVersion+1, err, want)
	}

	// A Badger database that is not a store.
	dir = t.TempDir()
	db, err := badgerdb.Open(badgerdb.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(txn *badgerdb.Txn) error { return txn.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "not an aguic store") {
		t.Errorf("Open of another Badger database: got error %v", err)
	}
}

// TestResumePurge: a deletion cut short after its thread was unlinked is
// finished by the next Sweep, and a thread made again under the same key in
// the meantime keeps its own events and runs.
func TestResumePurge(t *testing.T) {
	ctx := t.Context()
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "t1"}
	commit := func(run string, n int) {
		t.Helper()
		l, err := s.Acquire(ctx, k, "o", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Commit(ctx, l, store.Commit{Events: make([]store.Event, n), Run: &store.Run{ID: run, Status: store.Running}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	commit("old", 7)
	// Unlink as DeleteThread does, under the thread's slot, then "crash"
	// before the purge.
	tk := threadKey(k)
	if err := s.leases.with(tk, func(sl *slot) error {
		sl.head = nil
		return s.update(ctx, func(txn *badgerdb.Txn) error {
			h, _, err := readHeader(txn, tk)
			if err != nil {
				return err
			}
			return unlink(txn, tk, &h)
		})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Thread(ctx, k); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Thread after unlink: %v", err)
	}
	commit("new", 3)
	events, threads, err := s.Sweep(ctx, store.Retention{}, time.Now())
	if err != nil || events != 7 || threads != 0 {
		t.Fatalf("Sweep: %d events, %d threads, %v; want 7, 0, nil", events, threads, err)
	}
	if _, err := s.Run(ctx, k, "old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run(old) after the purge: %v", err)
	}
	if runs, _, err := s.Runs(ctx, store.Running, store.Page{}); err != nil || len(runs) != 1 || runs[0].ID != "new" {
		t.Errorf("Runs(running) after the purge: %+v, %v", runs, err)
	}
	if evs, err := s.Events(ctx, k, 0, 0); err != nil || len(evs) != 3 {
		t.Errorf("Events of the new thread after the purge: %d, %v", len(evs), err)
	}
	n := 0
	s.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte{prefixDeleted}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if n != 0 {
		t.Errorf("%d deletion records left after the purge", n)
	}
}

// TestCommitErrors: a commit that cannot be written changes nothing.
func TestCommitErrors(t *testing.T) {
	ctx := t.Context()
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "t1"}
	l, err := s.Acquire(ctx, k, "o", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, k, "", time.Hour); err == nil {
		t.Error("Acquire without an owner succeeded")
	}
	for _, c := range []store.Commit{
		{Events: make([]store.Event, 2), Hide: []uint64{3}},
		{Hide: []uint64{0}},
		{Run: &store.Run{Status: store.Running}},
		{Run: &store.Run{ID: "r", Key: store.Key{Thread: "other"}}},
	} {
		if _, err := s.Commit(ctx, l, c); err == nil {
			t.Errorf("Commit(%+v) succeeded", c)
		}
	}
	th, err := s.Thread(ctx, k)
	if err != nil || th.Version != 0 || th.LastSeq != 0 {
		t.Errorf("Thread after failed commits: %+v, %v", th, err)
	}

	// Values and keys too large fail with a message of one line (Badger
	// appends a hex dump of them to its own).
	_, err = s.Commit(ctx, l, store.Commit{Checkpoint: &store.Thread{Frame: make([]byte, 2<<20)}})
	if err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("Commit of a 2 MiB frame in memory: got error %q, want one line", err)
	}
	_, err = s.Acquire(ctx, store.Key{Thread: strings.Repeat("x", 70000)}, "o", time.Hour)
	if err == nil || strings.Contains(err.Error(), "\n") || len(err.Error()) > 1000 {
		t.Errorf("Acquire of a thread with a 70 kB id: got error %.200q, want one short line", err)
	}
}

// TestSyncGroup: every caller gets a sync that started after it called,
// and concurrent callers share syncs.
func TestSyncGroup(t *testing.T) {
	var g syncGroup
	var started, calls atomic.Int64
	doSync := func() error {
		started.Add(1)
		time.Sleep(time.Millisecond)
		return nil
	}
	var wg sync.WaitGroup
	const callers = 64
	for range callers {
		wg.Go(func() {
			for range 10 {
				before := started.Load()
				calls.Add(1)
				if err := g.run(false, doSync); err != nil {
					t.Error(err)
				}
				if started.Load() <= before {
					t.Error("run returned without a sync that started after it was called")
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d calls, %d syncs", calls.Load(), started.Load())
	if started.Load() >= calls.Load() {
		t.Errorf("%d syncs for %d calls: none shared", started.Load(), calls.Load())
	}
	fail := errors.New("disk on fire")
	if err := g.run(false, func() error { return fail }); err != fail {
		t.Errorf("run of a failing sync: %v", err)
	}
}

// TestConcurrentSweep: retention and commits running at once keep every
// thread's log gap-free.
func TestConcurrentSweep(t *testing.T) {
	ctx := t.Context()
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var committers, sweeper sync.WaitGroup
	keys := []store.Key{{Thread: "a"}, {Thread: "b"}, {Thread: "c"}}
	for _, k := range keys {
		committers.Go(func() {
			l, err := s.Acquire(ctx, k, "o", time.Hour)
			if err != nil {
				t.Error(err)
				return
			}
			for range 200 {
				if _, err := s.Commit(ctx, l, store.Commit{Events: make([]store.Event, 7)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	sweeps := 0
	sweeper.Go(func() {
		for {
			if _, _, err := s.Sweep(ctx, store.Retention{MaxEvents: 50}, time.Now()); err != nil {
				t.Error(err)
				return
			}
			sweeps++
			select {
			case <-done:
				return
			default:
			}
		}
	})
	committers.Wait()
	close(done)
	sweeper.Wait()
	t.Logf("%d sweeps", sweeps)
	if _, _, err := s.Sweep(ctx, store.Retention{MaxEvents: 50}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		evs, err := s.LastEvents(ctx, k, 1000)
		if err != nil || len(evs) != 50 || evs[0].Seq != 1351 || !slices.IsSortedFunc(evs, func(a, b store.Event) int { return int(a.Seq - b.Seq) }) {
			t.Fatalf("LastEvents(%v) after sweeping: %d events, %v", k, len(evs), err)
		}
		if _, err := s.Events(ctx, k, 1349, 0); !errors.Is(err, store.ErrExpired) {
			t.Errorf("Events(%v, after 1349): %v, want ErrExpired", k, err)
		}
	}
}

// TestOpenAfterAnEmptyMemtable: a crash can leave a memtable file of no
// bytes; the store opens all the same, with what it held.
func TestOpenAfterAnEmptyMemtable(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.PutSource(ctx, "sha256:1", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.WriteFile(filepath.Join(dir, "00099.mem"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open with an empty memtable file: %v", err)
	}
	defer s.Close()
	if src, err := s.Source(ctx, "sha256:1"); err != nil || string(src) != "kept" {
		t.Errorf("Source after the reopen: %q, %v", src, err)
	}
}

// TestLeaseRecordsDropped: the lease records of a store written when
// leases were stored are removed at Open, and the thread they named is
// free at once.
func TestLeaseRecordsDropped(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	k := store.Key{Scope: "s", Workflow: "w", Thread: "t"}
	if _, err := s.Acquire(t.Context(), k, "crashed", time.Hour); err != nil {
		t.Fatal(err)
	}
	old := encoder(nil).str("crashed").uint(7).time(time.Now().Add(time.Hour))
	if err := s.db.Update(func(txn *badgerdb.Txn) error { return txn.Set(key(prefixLease, threadKey(k)), old) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if left, err := s.hasPrefix(prefixLease); err != nil || left {
		t.Errorf("lease records left after Open: %v, %v", left, err)
	}
	if _, err := s.Acquire(t.Context(), k, "next", time.Hour); err != nil {
		t.Errorf("Acquire after the restart: %v", err)
	}
}

// TestCommitAfterSweep: a commit under a lease held while Sweep trimmed
// the thread, or under the next lease, keeps what the sweep changed in the
// thread's header (a commit writes the header its thread's slot holds, or
// the one kept from its last slot, which Sweep must not leave stale).
func TestCommitAfterSweep(t *testing.T) {
	ctx := t.Context()
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := store.Key{Thread: "a"}
	l, err := s.Acquire(ctx, k, "o", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, l, store.Commit{Events: make([]store.Event, 100)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Sweep(ctx, store.Retention{MaxEvents: 10}, time.Now()); err != nil {
		t.Fatal(err)
	}
	th, err := s.Commit(ctx, l, store.Commit{Events: make([]store.Event, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if th.FirstSeq != 91 || th.LastSeq != 101 {
		t.Errorf("after the sweep and a commit: events %d to %d, want 91 to 101", th.FirstSeq, th.LastSeq)
	}
	if _, err := s.Events(ctx, k, 89, 0); !errors.Is(err, store.ErrExpired) {
		t.Errorf("Events(after 89): %v, want ErrExpired", err)
	}
	// The same with the lease given back: the next lease starts from the
	// header as the sweep left it.
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Sweep(ctx, store.Retention{MaxEvents: 5}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if l, err = s.Acquire(ctx, k, "o", time.Hour); err != nil {
		t.Fatal(err)
	}
	if th, err = s.Commit(ctx, l, store.Commit{Events: make([]store.Event, 1)}); err != nil {
		t.Fatal(err)
	}
	if th.FirstSeq != 97 || th.LastSeq != 102 {
		t.Errorf("after a sweep between two leases: events %d to %d, want 97 to 102", th.FirstSeq, th.LastSeq)
	}
}
