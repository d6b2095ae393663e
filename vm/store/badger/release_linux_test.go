package badger

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aguic/aguic/vm/store"
)

// TestReleaseMemory: the pages of the store's tables that reading the
// threads made resident leave the process's memory on ReleaseMemory, and
// the threads read back the same after it.
func TestReleaseMemory(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// Random frames, which compression cannot shrink, of about three
	// memtables in all: several tables once they are flushed.
	const threads = 300
	frames := map[string][]byte{}
	for i := range threads {
		k := store.Key{Scope: "s", Workflow: "w", Thread: fmt.Sprint("t", i)}
		frame := make([]byte, 3*diskMemTableSize/threads)
		rand.Read(frame)
		frames[k.Thread] = frame
		l, err := s.Acquire(t.Context(), k, "o", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Commit(t.Context(), l, store.Commit{Checkpoint: &store.Thread{Status: store.Suspended, Frame: frame}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(t.Context(), l); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	readAll := func() {
		t.Helper()
		for name, frame := range frames {
			th, err := s.Thread(t.Context(), store.Key{Scope: "s", Workflow: "w", Thread: name})
			if err != nil || string(th.Frame) != string(frame) {
				t.Fatalf("thread %s: %d bytes of frame (want %d), %v", name, len(th.Frame), len(frame), err)
			}
		}
	}
	readAll()
	before := residentUnder(t, dir)
	if before < diskMemTableSize {
		t.Fatalf("%d bytes of the store's files resident after reading every thread, want at least %d", before, diskMemTableSize)
	}
	if err := s.ReleaseMemory(); errors.Is(err, unix.EINVAL) {
		t.Skipf("the kernel has no MADV_PAGEOUT: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	after := residentUnder(t, dir)
	t.Logf("resident pages of the store's files: %d KiB before, %d KiB after", before>>10, after>>10)
	if after > before/4 {
		t.Errorf("%d bytes of the store's files still resident after ReleaseMemory, of %d", after, before)
	}
	readAll()
}

// residentUnder sums the resident bytes of the process's mappings of files
// in dir, from /proc/self/smaps.
func residentUnder(t *testing.T, dir string) int64 {
	t.Helper()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			in = len(fields) >= 6 && strings.HasPrefix(fields[5], dir+"/")
		case in && len(fields) == 3 && fields[0] == "Rss:":
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			total += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}
