package badger

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
)

// TestLogFilesFollowBadger: the syncs start at the newest log of each kind
// and move on to the files Badger creates after it, syncing the one they
// leave.
func TestLogFilesFollowBadger(t *testing.T) {
	dir := t.TempDir()
	touch := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"00003.mem", "00004.mem", "000001.vlog", "000002.vlog", "000001.sst", "MANIFEST"} {
		touch(name)
	}
	l, err := openLogFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if l.mem.n != 4 || l.vlog.n != 2 {
		t.Fatalf("opened mem %d and vlog %d, want 4 and 2", l.mem.n, l.vlog.n)
	}
	touch("00005.mem")
	touch("00006.mem")
	touch("000003.vlog")
	if err := l.sync(); err != nil {
		t.Fatal(err)
	}
	if l.mem.n != 6 || l.vlog.n != 2 {
		t.Errorf("after a sync without big values: mem %d and vlog %d, want 6 and 2", l.mem.n, l.vlog.n)
	}
	l.bigValues.Store(true)
	if err := l.sync(); err != nil {
		t.Fatal(err)
	}
	if l.vlog.n != 3 || l.bigValues.Load() {
		t.Errorf("after a sync with big values: vlog %d (want 3), big values still marked: %v", l.vlog.n, l.bigValues.Load())
	}
	// A file Badger deleted after flushing it is still synced through the
	// descriptor held.
	if err := os.Remove(filepath.Join(dir, "00006.mem")); err != nil {
		t.Fatal(err)
	}
	if err := l.sync(); err != nil {
		t.Errorf("sync after the newest file was removed: %v", err)
	}
}

// TestCommitsSyncAcrossMemtables: commits that fill several memtables are
// synced, each in its own file, and all read back after reopening.
func TestCommitsSyncAcrossMemtables(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// The names logFiles looks for are Badger's: if a version of Badger
	// names its logs otherwise, this fails rather than syncing nothing.
	if s.logs.mem.f == nil || s.logs.vlog.f == nil {
		t.Fatalf("no memtable log or value log found in %s", dir)
	}
	first := s.logs.mem.n
	k := store.Key{Scope: "s", Workflow: "w", Thread: "rotate"}
	l, err := s.Acquire(t.Context(), k, "o", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 3<<10) // stays in the memtable
	big := make([]byte, 8<<10)   // goes to the value log
	for i := range 3 * diskMemTableSize / len(frame) {
		f := frame
		if i%50 == 0 {
			f = big
		}
		c := store.Commit{Checkpoint: &store.Thread{Status: store.Suspended, Frame: f}}
		if _, err := s.Commit(t.Context(), l, c); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	if s.logs.mem.n < first+2 {
		t.Errorf("the syncs reached memtable log %d from %d, want at least two more", s.logs.mem.n, first)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	th, err := s.Thread(t.Context(), k)
	if err != nil || len(th.Frame) != len(frame) {
		t.Errorf("after reopening: %d bytes of frame, %v", len(th.Frame), err)
	}
}
