package badger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/vm/store"
)

// writeLegacy writes a backup of format 1, as aguic wrote them before the
// portable format: the magic line, then Badger's backup stream.
func writeLegacy(s *Store, w io.Writer) error {
	if _, err := io.WriteString(w, legacyMagic); err != nil {
		return err
	}
	_, err := s.db.Backup(w, 0)
	return err
}

func openTest(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fillLegacy writes a little of everything: sources, a thread running with
// a queued run, one suspended with a wait, a wake time and deltas, silent
// and hidden events, events removed by retention, ended runs with
// outcomes and errors, a thread never committed to, a lease held.
func fillLegacy(t *testing.T, s *Store) {
	ctx := t.Context()
	at := func(sec int) time.Time { return time.Unix(1767225600+int64(sec), 1000).UTC() }
	for i, src := range []string{"wf 1\nworkflow chat {}\n", "\x00\xff binary"} {
		if err := s.PutSource(ctx, fmt.Sprintf("sha256:%02d", i), []byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(k store.Key, cms ...store.Commit) store.Lease {
		l, err := s.Acquire(ctx, k, "filler", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cms {
			if _, err := s.Commit(ctx, l, c); err != nil {
				t.Fatal(err)
			}
		}
		return l
	}
	events := func(run string, n int) []store.Event {
		evs := make([]store.Event, n)
		for i := range evs {
			evs[i] = store.Event{RunID: run, Time: at(i), Silent: i%3 == 0, Data: fmt.Appendf(nil, `{"run":%q,"i":%d}`, run, i)}
		}
		return evs
	}
	running := store.Key{Scope: "acme", Workflow: "chat", Thread: "running"}
	l := commit(running, store.Commit{
		Checkpoint: &store.Thread{Status: store.Running, Hash: "sha256:00", Frame: []byte(`{"v":1}`), RunID: "r1"},
		Events:     events("r1", 4),
		Run:        &store.Run{ID: "r1", Status: store.Running, Started: at(0), Input: []byte(`{"messages":[]}`)}, NewRun: true,
	})
	if err := s.Enqueue(ctx, running, store.Run{ID: "r2", Status: store.Queued, Started: at(1), Input: []byte(`{"resume":1}`)}); err != nil {
		t.Fatal(err)
	}
	s.Release(ctx, l)
	suspended := store.Key{Scope: "acme", Workflow: "chat", Thread: "suspended"}
	l = commit(suspended,
		store.Commit{
			Checkpoint: &store.Thread{Status: store.Suspended, Hash: "sha256:00", Frame: []byte(`{"v":2}`), RunID: "r1", Wait: []byte(`{"interrupt":"ok?"}`), WakeAt: at(3600)},
			Events:     events("r1", 30),
			Run:        &store.Run{ID: "r1", Status: store.Suspended, Started: at(0), Finished: at(2), Outcome: []byte(`{"status":"suspended"}`)}, NewRun: true,
		},
		store.Commit{Delta: []byte(`{"d":1}`), Hide: []uint64{25}},
		store.Commit{Delta: []byte(`{"d":2}`)},
	)
	s.Release(ctx, l)
	failed := store.Key{Scope: "zeta", Workflow: "w", Thread: "failed"}
	l = commit(failed, store.Commit{
		Checkpoint: &store.Thread{Status: store.Failed, Hash: "sha256:01", Frame: []byte(`{"v":3}`), RunID: "r1"},
		Events:     events("r1", 2),
		Run:        &store.Run{ID: "r1", Status: store.Failed, Started: at(0), Finished: at(1), Error: "model: 500", Outcome: []byte(`{"status":"failed"}`)}, NewRun: true,
	})
	s.Release(ctx, l)
	l = commit(store.Key{Scope: "acme", Workflow: "chat", Thread: "new"})
	s.Release(ctx, l)
	commit(store.Key{Scope: "acme", Workflow: "chat", Thread: "held"}, store.Commit{
		Checkpoint: &store.Thread{Status: store.Running, Frame: []byte(`{"v":4}`), RunID: "r1"},
		Run:        &store.Run{ID: "r1", Status: store.Running, Started: at(0)}, NewRun: true,
	})
	if _, _, err := s.Sweep(ctx, store.Retention{MaxEvents: 20}, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// portable is the portable backup of s.
func portable(t *testing.T, s *Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Backup(t.Context(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestLegacyBackup: a backup of format 1, as earlier versions of aguic
// wrote them (testdata/backup-1.bin; go test -update writes a new one),
// restores into a Badger store, and Convert turns it into a portable
// backup that restores into the same.
func TestLegacyBackup(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join("testdata", "backup-1.bin")
	if golden.Update() {
		s := openTest(t, Options{InMemory: true})
		fillLegacy(t, s)
		var buf bytes.Buffer
		if err := writeLegacy(s, &buf); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	legacy, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}

	a := openTest(t, Options{InMemory: true})
	if err := a.Restore(ctx, bytes.NewReader(legacy)); err != nil {
		t.Fatalf("Restore of a backup of format 1: %v", err)
	}
	// What fillLegacy wrote is there.
	ths, _, err := a.Threads(ctx, "acme", "", store.Page{})
	if err != nil || len(ths) != 4 {
		t.Fatalf("Threads of acme: %d, %v; want 4", len(ths), err)
	}
	sus, err := a.Thread(ctx, store.Key{Scope: "acme", Workflow: "chat", Thread: "suspended"})
	if err != nil || sus.FirstSeq != 11 || sus.LastSeq != 30 || len(sus.Deltas) != 2 || len(sus.Wait) == 0 || sus.WakeAt.IsZero() {
		t.Errorf("the suspended thread: %+v, %v", sus, err)
	}
	if r, err := a.Run(ctx, store.Key{Scope: "acme", Workflow: "chat", Thread: "running"}, "r2"); err != nil || r.Status != store.Queued || string(r.Input) != `{"resume":1}` {
		t.Errorf("the queued run: %+v, %v", r, err)
	}

	var conv bytes.Buffer
	if err := Convert(ctx, bytes.NewReader(legacy), &conv); err != nil {
		t.Fatalf("Convert: %v", err)
	}
	if !bytes.HasPrefix(conv.Bytes(), []byte("aguic store backup 2\n")) {
		t.Fatalf("Convert wrote %q…", conv.Bytes()[:min(conv.Len(), 30)])
	}
	if got := portable(t, a); !bytes.Equal(got, conv.Bytes()) {
		t.Errorf("the converted backup differs from the backup of the store restored from the backup of format 1")
	}
	b := openTest(t, Options{InMemory: true})
	if err := store.ReadBackup(ctx, bytes.NewReader(conv.Bytes()), b); err != nil {
		t.Fatalf("ReadBackup of the converted backup: %v", err)
	}
	if got := portable(t, b); !bytes.Equal(got, conv.Bytes()) {
		t.Errorf("the store restored from the converted backup differs from the one restored from format 1")
	}
	// A portable backup converts to itself.
	var again bytes.Buffer
	if err := Convert(ctx, bytes.NewReader(conv.Bytes()), &again); err != nil || !bytes.Equal(again.Bytes(), conv.Bytes()) {
		t.Errorf("Convert of a portable backup: %v, same %v", err, bytes.Equal(again.Bytes(), conv.Bytes()))
	}

	// Only a Badger store restores format 1; the others say what to do.
	err = store.ReadBackup(ctx, bytes.NewReader(legacy), &backupStoreless{})
	if err == nil || !strings.Contains(err.Error(), "format 1, Badger's own, which only a Badger store restores") {
		t.Errorf("store.ReadBackup of format 1: got %v", err)
	}
}

// backupStoreless is a store.Restorer that must not be reached.
type backupStoreless struct{}

func (backupStoreless) Load(context.Context, func(store.Sink) error) error {
	return errors.New("Load called")
}

// TestLegacyRestoreRefuses: a backup of format 1 that is cut short
// restores nothing, and the store takes a good one after; a store that is
// not empty refuses one; tokens go on above those granted before.
func TestLegacyRestoreRefuses(t *testing.T) {
	ctx := t.Context()
	src := openTest(t, Options{InMemory: true})
	fillLegacy(t, src)
	var legacy bytes.Buffer
	if err := writeLegacy(src, &legacy); err != nil {
		t.Fatal(err)
	}
	want := portable(t, src)

	dst := openTest(t, Options{Dir: t.TempDir()})
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "running"}
	l, err := dst.Acquire(ctx, k, "before", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.DeleteThread(ctx, k); err != nil {
		t.Fatal(err)
	}
	err = dst.Restore(ctx, bytes.NewReader(legacy.Bytes()[:legacy.Len()/2]))
	if err == nil || !strings.Contains(err.Error(), "the backup is cut short") {
		t.Fatalf("Restore of half a backup of format 1: got %v", err)
	}
	if err := dst.Restore(ctx, bytes.NewReader(legacy.Bytes())); err != nil {
		t.Fatalf("Restore after a failed one: %v", err)
	}
	if got := portable(t, dst); !bytes.Equal(got, want) {
		t.Errorf("the restored store differs from the one backed up")
	}
	l2, err := dst.Acquire(ctx, k, "after", time.Hour)
	if err != nil || l2.Token <= l.Token {
		t.Errorf("a lease after the restore: token %d (%v), one before it had %d", l2.Token, err, l.Token)
	}
	err = dst.Restore(ctx, bytes.NewReader(legacy.Bytes()))
	if !errors.Is(err, store.ErrNotEmpty) {
		t.Errorf("Restore into a store that is not empty: got %v, want ErrNotEmpty", err)
	}
}

// TestFailedRestoreSyncsTheNewLogs: a restore that fails drops what it
// wrote, and Badger starts its value log again from the first file: the
// files Commit syncs are the ones Badger writes now, not those the drop
// deleted.
func TestFailedRestoreSyncsTheNewLogs(t *testing.T) {
	ctx := t.Context()
	src := openTest(t, Options{InMemory: true})
	fillLegacy(t, src)
	good := portable(t, src)
	dir := t.TempDir()
	dst := openTest(t, Options{Dir: dir})
	if err := dst.Restore(ctx, bytes.NewReader(good[:len(good)-1])); !errors.Is(err, store.ErrMalformedBackup) {
		t.Fatalf("Restore of a backup cut short: got %v", err)
	}
	for _, f := range []*logFile{&dst.logs.mem, &dst.logs.vlog} {
		path := filepath.Join(dir, fmt.Sprintf(f.format, f.n))
		onDisk, err := os.Stat(path)
		if err != nil {
			t.Fatalf("the log file the store syncs: %v", err)
		}
		open, err := f.f.Stat()
		if err != nil || !os.SameFile(open, onDisk) {
			t.Errorf("the store syncs a file that is not %s (%v)", path, err)
		}
	}
	if err := dst.Restore(ctx, bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	if got := portable(t, dst); !bytes.Equal(got, good) {
		t.Errorf("the store restored after a failed restore differs from the one backed up")
	}
}
