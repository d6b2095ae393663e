package badger_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
	"github.com/aguic/aguic/vm/store/storetest"
)

// TestBackupConformance: backups of a store on disk restore into one in
// memory, and the other way round.
func TestBackupConformance(t *testing.T) {
	onDisk := func(t *testing.T) store.Store { return open(t, badger.Options{Dir: t.TempDir()}) }
	inMemory := func(t *testing.T) store.Store { return open(t, badger.Options{InMemory: true}) }
	t.Run("OnDisk", func(t *testing.T) { storetest.RunBackup(t, onDisk, inMemory) })
	t.Run("InMemory", func(t *testing.T) { storetest.RunBackup(t, inMemory, onDisk) })
}

// TestBackupLongThread: a thread of 100,000 events backs up and restores
// whole.
func TestBackupLongThread(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 events")
	}
	ctx := t.Context()
	src := openClosed(t, badger.Options{Dir: t.TempDir()})
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "long"}
	l, err := src.Acquire(ctx, k, "writer", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	const n, batch = 100_000, 1000
	for i := 0; i < n; i += batch {
		evs := make([]store.Event, batch)
		for j := range evs {
			evs[j] = store.Event{RunID: "r1", Time: time.Unix(1700000000, int64(i+j)).UTC(), Silent: j%3 == 0, Data: fmt.Appendf(nil, `{"i":%d}`, i+j)}
		}
		if _, err := src.Commit(ctx, l, store.Commit{Events: evs, Lazy: true}); err != nil {
			t.Fatal(err)
		}
	}
	var backup bytes.Buffer
	if err := src.Backup(ctx, &backup); err != nil {
		t.Fatal(err)
	}
	dst := openClosed(t, badger.Options{Dir: t.TempDir()})
	if err := dst.Restore(ctx, bytes.NewReader(backup.Bytes())); err != nil {
		t.Fatal(err)
	}
	th, err := dst.Thread(ctx, k)
	if err != nil || th.FirstSeq != 1 || th.LastSeq != n {
		t.Fatalf("the restored thread: FirstSeq %d, LastSeq %d, %v; want 1 and %d", th.FirstSeq, th.LastSeq, err, n)
	}
	for _, after := range []uint64{0, n / 2, n - 3} {
		want, err := src.Events(ctx, k, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dst.Events(ctx, k, after, 3)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Events after %d: got %v (%v), want %v", after, got, err, want)
		}
	}
}
