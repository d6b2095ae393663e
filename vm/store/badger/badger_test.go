package badger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
	"github.com/aguic/aguic/vm/store/storetest"
)

func open(t testing.TB, opts badger.Options) *badger.Store {
	t.Helper()
	s, err := badger.Open(opts)
	if err != nil {
		t.Fatalf("Open(%+v): %v", opts, err)
	}
	return s
}

// openClosed opens a store that the test closes when it ends.
func openClosed(t testing.TB, opts badger.Options) *badger.Store {
	t.Helper()
	s := open(t, opts)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	t.Run("InMemory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			return open(t, badger.Options{InMemory: true})
		})
	})
	t.Run("OnDisk", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			return open(t, badger.Options{Dir: t.TempDir()})
		})
	})
	t.Run("OnDiskSyncWrites", func(t *testing.T) {
		storetest.RunReopen(t, func(t *testing.T, dir string) store.Store {
			return open(t, badger.Options{Dir: dir, SyncWrites: true})
		})
	})
	storetest.RunReopen(t, func(t *testing.T, dir string) store.Store {
		return open(t, badger.Options{Dir: dir})
	})
}

func TestOpenInUse(t *testing.T) {
	dir := t.TempDir()
	s := open(t, badger.Options{Dir: dir})
	for range 2 {
		s2, err := badger.Open(badger.Options{Dir: dir})
		if err == nil {
			s2.Close()
			t.Fatalf("a second Open of %s succeeded", dir)
		}
		if !errors.Is(err, badger.ErrInUse) {
			t.Errorf("second Open: got error %v, want ErrInUse", err)
		}
		if want := "open store " + dir + ": the directory is in use by another aguic process"; err.Error() != want {
			t.Errorf("second Open: got message %q, want %q", err, want)
		}
	}
	// The first store still works, and the directory opens again after Close.
	ctx := t.Context()
	if err := s.PutSource(ctx, "h", []byte("src")); err != nil {
		t.Fatalf("PutSource after a refused Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openClosed(t, badger.Options{Dir: dir})
	if src, err := s.Source(ctx, "h"); err != nil || string(src) != "src" {
		t.Errorf("Source after reopening: %q, %v", src, err)
	}
}

// TestOpenInUseByAnotherProcess runs this test binary again as a second
// process that opens the directory this one holds.
func TestOpenInUseByAnotherProcess(t *testing.T) {
	if dir := os.Getenv("AGUIC_TEST_OPEN_DIR"); dir != "" {
		_, err := badger.Open(badger.Options{Dir: dir})
		fmt.Printf("error: %v\n", err)
		return
	}
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	openClosed(t, badger.Options{Dir: dir})
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestOpenInUseByAnotherProcess$")
	cmd.Env = append(os.Environ(), "AGUIC_TEST_OPEN_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the second process: %v\n%s", err, out)
	}
	if want := "error: open store " + dir + ": the directory is in use by another aguic process\n"; !strings.HasPrefix(string(out), want) {
		t.Errorf("the second process printed\n%s\nwant it to start with\n%s", out, want)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := badger.Open(badger.Options{}); err == nil || !strings.Contains(err.Error(), "no directory") {
		t.Errorf("Open without a directory: got error %v, want one saying so", err)
	}
	// A file where the directory should be.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := badger.Open(badger.Options{Dir: file})
	if err == nil || !strings.HasPrefix(err.Error(), "open store "+file+": ") {
		t.Errorf("Open of a file: got error %v, want one naming %s", err, file)
	}
}

func TestClosed(t *testing.T) {
	s := open(t, badger.Options{InMemory: true})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	_, err := s.Thread(t.Context(), store.Key{Thread: "t"})
	if !errors.Is(err, badger.ErrClosed) {
		t.Errorf("Thread after Close: got error %v, want ErrClosed", err)
	}
}

// fill writes sources, threads in two scopes with events (silent, hidden,
// some removed by retention), runs of several statuses and a deleted
// thread, and leaves one lease held.
func fill(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	for i := range 3 {
		if err := s.PutSource(ctx, fmt.Sprintf("sha256:%d", i), fmt.Appendf(nil, "wf 1\nworkflow w%d {}\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	statuses := []store.Status{store.Running, store.Suspended, store.Finished, store.Failed, store.Cancelled}
	for i := range 12 {
		k := store.Key{Scope: []string{"acme", "evil"}[i%2], Workflow: fmt.Sprintf("wf%d", i%3), Thread: fmt.Sprintf("t%02d", i)}
		l, err := s.Acquire(ctx, k, "filler", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			run := fmt.Sprintf("run-%02d-%d", i, j)
			evs := make([]store.Event, 5)
			for n := range evs {
				evs[n] = store.Event{RunID: run, Time: time.Unix(1700000000, int64(n*1000)).UTC(), Silent: n == 0, Data: fmt.Appendf(nil, `{"i":%d,"j":%d,"n":%d}`, i, j, n)}
			}
			c := store.Commit{
				Checkpoint: &store.Thread{Status: statuses[(i+j)%len(statuses)], Hash: "sha256:1", Frame: bytes.Repeat([]byte{'f'}, 100*i+j), RunID: run},
				Events:     evs,
				Run:        &store.Run{ID: run, Status: statuses[(i+j)%len(statuses)], Started: time.Unix(1700000000, 0).UTC(), Outcome: []byte(`{}`)},
			}
			if j == 2 {
				c.Hide = []uint64{2, 7}
			}
			if _, err := s.Commit(ctx, l, c); err != nil {
				t.Fatal(err)
			}
		}
		if i != 5 {
			if err := s.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, _, err := s.Sweep(ctx, store.Retention{MaxEvents: 12}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteThread(ctx, store.Key{Scope: "acme", Workflow: "wf2", Thread: "t02"}); err != nil {
		t.Fatal(err)
	}
}

// contents is everything a store holds that its API lists.
type contents struct {
	threads []store.Thread
	events  map[store.Key][]store.Event
	runs    []store.Run
	sources map[string]string
}

func dump(t *testing.T, s store.Store) contents {
	t.Helper()
	ctx := t.Context()
	c := contents{events: map[store.Key][]store.Event{}, sources: map[string]string{}}
	for _, scope := range []string{"acme", "evil"} {
		ths, next, err := s.Threads(ctx, scope, "", store.Page{Limit: 1000})
		if err != nil || next != "" {
			t.Fatalf("Threads(%q): %v (next %q)", scope, err, next)
		}
		for i, th := range ths {
			evs, err := s.Events(ctx, th.Key, th.FirstSeq-1, 0)
			if err != nil {
				t.Fatal(err)
			}
			c.events[th.Key] = evs
			// Threads lists bookkeeping; the frame and deltas are Thread's.
			whole, err := s.Thread(ctx, th.Key)
			if err != nil {
				t.Fatal(err)
			}
			ths[i].Frame, ths[i].Deltas = whole.Frame, whole.Deltas
		}
		c.threads = append(c.threads, ths...)
	}
	for _, st := range []store.Status{store.Running, store.Suspended, store.Finished, store.Failed, store.Cancelled} {
		runs, _, err := s.Runs(ctx, st, store.Page{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		c.runs = append(c.runs, runs...)
	}
	for i := range 4 {
		h := fmt.Sprintf("sha256:%d", i)
		if src, err := s.Source(ctx, h); err == nil {
			c.sources[h] = string(src)
		} else if !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
	}
	return c
}

func sameContents(t *testing.T, got, want contents) {
	t.Helper()
	threadEq := func(a, b store.Thread) bool {
		return a.Key == b.Key && a.Status == b.Status && a.Hash == b.Hash && bytes.Equal(a.Frame, b.Frame) &&
			bytes.Equal(a.Wait, b.Wait) && a.RunID == b.RunID && a.LastSeq == b.LastSeq && a.FirstSeq == b.FirstSeq &&
			a.Version == b.Version && a.Created.Equal(b.Created) && a.Updated.Equal(b.Updated)
	}
	if !slices.EqualFunc(got.threads, want.threads, threadEq) {
		t.Errorf("threads differ:\ngot  %+v\nwant %+v", got.threads, want.threads)
	}
	eventEq := func(a, b store.Event) bool {
		return a.Seq == b.Seq && a.RunID == b.RunID && a.Time.Equal(b.Time) && a.Silent == b.Silent &&
			a.Hidden == b.Hidden && bytes.Equal(a.Data, b.Data)
	}
	for k, evs := range want.events {
		if !slices.EqualFunc(got.events[k], evs, eventEq) {
			t.Errorf("events of %v differ:\ngot  %+v\nwant %+v", k, got.events[k], evs)
		}
	}
	runEq := func(a, b store.Run) bool {
		return a.ID == b.ID && a.Key == b.Key && a.Status == b.Status && a.Started.Equal(b.Started) &&
			a.Finished.Equal(b.Finished) && bytes.Equal(a.Outcome, b.Outcome) && a.Error == b.Error
	}
	if !slices.EqualFunc(got.runs, want.runs, runEq) {
		t.Errorf("runs differ:\ngot  %+v\nwant %+v", got.runs, want.runs)
	}
	if fmt.Sprint(got.sources) != fmt.Sprint(want.sources) {
		t.Errorf("sources differ: got %v, want %v", got.sources, want.sources)
	}
}

func TestBackupRestore(t *testing.T) {
	src := openClosed(t, badger.Options{Dir: t.TempDir()})
	fill(t, src)
	want := dump(t, src)
	if len(want.threads) != 11 || len(want.runs) != 33 || len(want.sources) != 3 {
		t.Fatalf("fill made %d threads, %d runs and %d sources, want 11, 33 and 3", len(want.threads), len(want.runs), len(want.sources))
	}
	var backup bytes.Buffer
	if err := src.Backup(t.Context(), &backup); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	for _, opts := range []badger.Options{{InMemory: true}, {Dir: t.TempDir()}} {
		t.Run(fmt.Sprintf("InMemory=%v", opts.InMemory), func(t *testing.T) {
			ctx := t.Context()
			dst := openClosed(t, opts)
			if err := dst.Restore(ctx, bytes.NewReader(backup.Bytes())); err != nil {
				t.Fatalf("Restore: %v", err)
			}
			sameContents(t, dump(t, dst), want)

			// The restored store goes on where the original stopped:
			// tokens and sequence numbers continue. Leases are not part
			// of a backup: the thread whose lease was held is free.
			held := store.Key{Scope: "evil", Workflow: "wf2", Thread: "t05"}
			if _, err := dst.Acquire(ctx, held, "other", time.Hour); err != nil {
				t.Errorf("Acquire of a thread whose lease was held at the backup: %v", err)
			}
			k := store.Key{Scope: "acme", Workflow: "wf0", Thread: "t00"}
			before := want.threads[0]
			if before.Key != k {
				t.Fatalf("the first thread is %v", before.Key)
			}
			l, err := dst.Acquire(ctx, k, "after", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			th, err := dst.Commit(ctx, l, store.Commit{Events: []store.Event{{Data: []byte(`{}`)}}, Expect: before.Version})
			if err != nil {
				t.Fatal(err)
			}
			if th.LastSeq != before.LastSeq+1 || th.Version != before.Version+1 {
				t.Errorf("a commit after Restore: LastSeq %d Version %d, want %d and %d", th.LastSeq, th.Version, before.LastSeq+1, before.Version+1)
			}
			// A new thread gets a token above every restored one.
			fresh, err := dst.Acquire(ctx, store.Key{Scope: "acme", Thread: "new"}, "after", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if fresh.Token <= l.Token {
				t.Errorf("a new thread's token %d is not above a restored thread's %d", fresh.Token, l.Token)
			}
		})
	}
}

func TestRestoreRefuses(t *testing.T) {
	ctx := t.Context()
	src := openClosed(t, badger.Options{InMemory: true})
	fill(t, src)
	var backup bytes.Buffer
	if err := src.Backup(ctx, &backup); err != nil {
		t.Fatal(err)
	}

	t.Run("NotEmpty", func(t *testing.T) {
		dst := openClosed(t, badger.Options{InMemory: true})
		if err := dst.PutSource(ctx, "mine", []byte("x")); err != nil {
			t.Fatal(err)
		}
		err := dst.Restore(ctx, bytes.NewReader(backup.Bytes()))
		if err == nil || !strings.Contains(err.Error(), "the store is not empty") {
			t.Fatalf("Restore into a store with a source: got error %v, want one saying it is not empty", err)
		}
		if src, err := dst.Source(ctx, "mine"); err != nil || string(src) != "x" {
			t.Errorf("Source after a refused Restore: %q, %v", src, err)
		}
		if ths, _, err := dst.Threads(ctx, "acme", "", store.Page{}); err != nil || len(ths) != 0 {
			t.Errorf("Threads after a refused Restore: %d threads, %v", len(ths), err)
		}
	})
	for _, tc := range []struct{ name, data, msg string }{
		{"NotABackup", "hello, world", "not an aguic store backup"},
		{"Empty", "", "not an aguic store backup"},
		{"CutShort", backup.String()[:backup.Len()/2], "restore (in memory): "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := openClosed(t, badger.Options{InMemory: true})
			err := dst.Restore(ctx, strings.NewReader(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Restore: got error %v, want one containing %q", err, tc.msg)
			}
			// The store is still empty and usable: a good backup restores.
			if err := dst.Restore(ctx, bytes.NewReader(backup.Bytes())); err != nil {
				t.Fatalf("Restore of a good backup after a failed one: %v", err)
			}
			sameContents(t, dump(t, dst), dump(t, src))
		})
	}
	t.Run("Cancelled", func(t *testing.T) {
		dst := openClosed(t, badger.Options{InMemory: true})
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := dst.Restore(cctx, bytes.NewReader(backup.Bytes())); !errors.Is(err, context.Canceled) {
			t.Errorf("Restore with a cancelled context: got error %v, want context.Canceled", err)
		}
		if err := src.Backup(cctx, &bytes.Buffer{}); !errors.Is(err, context.Canceled) {
			t.Errorf("Backup with a cancelled context: got error %v, want context.Canceled", err)
		}
	})
}

func TestGC(t *testing.T) {
	ctx := t.Context()
	s := openClosed(t, badger.Options{Dir: t.TempDir()})
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "t1"}
	l, err := s.Acquire(ctx, k, "gc", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Frames of 64 KiB live in the value log; rewriting them makes garbage.
	var last []byte
	for i := range 200 {
		last = bytes.Repeat([]byte{byte('a' + i%26)}, 64<<10)
		if _, err := s.Commit(ctx, l, store.Commit{Checkpoint: &store.Thread{Status: store.Running, Frame: last}}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.RunGC(ctx)
	if err != nil {
		t.Fatalf("RunGC: %v", err)
	}
	t.Logf("RunGC rewrote %d value-log files", n)
	th, err := s.Thread(ctx, k)
	if err != nil || !bytes.Equal(th.Frame, last) {
		t.Fatalf("Thread after RunGC: frame of %d bytes, %v; want the last one", len(th.Frame), err)
	}

	mem := openClosed(t, badger.Options{InMemory: true})
	if n, err := mem.RunGC(ctx); n != 0 || err != nil {
		t.Errorf("RunGC in memory: %d, %v; want 0, nil", n, err)
	}

	// StartGC stops with its context, and with Close.
	gctx, cancel := context.WithCancel(ctx)
	stopped := s.StartGC(gctx, time.Millisecond)
	cancel()
	<-stopped
	other := open(t, badger.Options{InMemory: true})
	stopped = other.StartGC(ctx, time.Hour)
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	<-stopped
}
