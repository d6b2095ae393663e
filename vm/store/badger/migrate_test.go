package badger

import (
	"context"
	"fmt"
	"testing"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/vm/store"
)

// TestMigrateFormat1: a store written by format 1 opens, keeps its
// threads, checkpoints, events and runs, and drops every format 1 key.
func TestMigrateFormat1(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "t1"}
	tk := threadKey(k)
	h := header{Status: store.Suspended, Hash: "sha256:1", RunID: "r2", LastSeq: 1, FirstSeq: 1, Version: 3, Gen: 7, Created: now, Updated: now}
	runs := []store.Run{
		{ID: "r1", Key: k, Status: store.Finished, Started: now, Finished: now, Outcome: []byte(`{"status":"finished"}`)},
		{ID: "r2", Key: k, Status: store.Running, Started: now},
	}
	ev := encodeEvent(&store.Event{RunID: "r1", Time: now, Data: []byte(`{"type":"CUSTOM"}`)})
	if err := s.db.Update(func(txn *badgerdb.Txn) error {
		sets := [][2][]byte{
			{metaKey, encoder(nil).uint(1)},
			{append([]byte{v1Thread}, tk...), encoder(nil).str(string(h.Status)).str(h.Hash).str(h.RunID).
				uint(h.LastSeq).uint(h.FirstSeq).uint(h.Version).uint(h.Gen).time(h.Created).time(h.Updated)},
			{append([]byte{v1Frame}, tk...), encoder(nil).bytes([]byte(`{"v":1}`)).bytes([]byte(`{"kind":"user"}`))},
			{eventKey(eventPrefix(tk, h.Gen), 1), ev},
		}
		for _, r := range runs {
			sets = append(sets,
				[2][]byte{append([]byte{v1Run}, r.ID...), encoder(nil).str(r.Key.Scope).str(r.Key.Workflow).str(r.Key.Thread).uint(h.Gen).
					str(string(r.Status)).time(r.Started).time(r.Finished).bytes(r.Outcome).str(r.Error)},
				[2][]byte{append(appendEscaped([]byte{v1Status}, string(r.Status)), r.ID...), nil},
				[2][]byte{append(append(append([]byte{v1Runs}, tk...), be64(h.Gen)...), r.ID...), nil})
		}
		for _, kv := range sets {
			if err := txn.Set(kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open of a format 1 store: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	th, err := s.Thread(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != store.Suspended || th.RunID != "r2" || string(th.Frame) != `{"v":1}` || string(th.Wait) != `{"kind":"user"}` || th.LastSeq != 1 || th.Version != 3 || len(th.Deltas) != 0 {
		t.Errorf("migrated thread: %+v", th)
	}
	for _, want := range runs {
		got, err := s.Run(ctx, k, want.ID)
		if err != nil || got.Status != want.Status || !got.Started.Equal(want.Started) || string(got.Outcome) != string(want.Outcome) {
			t.Errorf("migrated run %s: %+v, %v", want.ID, got, err)
		}
	}
	running, _, err := s.Runs(ctx, store.Running, store.Page{})
	if err != nil || len(running) != 1 || running[0].ID != "r2" || running[0].Key != k {
		t.Errorf("Runs(running) after the migration: %+v, %v", running, err)
	}
	evs, err := s.Events(ctx, k, 0, 10)
	if err != nil || len(evs) != 1 {
		t.Errorf("events after the migration: %+v, %v", evs, err)
	}
	if left, err := s.hasPrefix(v1Thread, v1Frame, v1Run, v1Status, v1Runs); err != nil || left {
		t.Errorf("format 1 keys left after the migration: %v, %v", left, err)
	}
	if listed, _, err := s.ThreadRuns(ctx, k, store.Page{}); err != nil || len(listed) != 2 {
		t.Errorf("ThreadRuns after the migration: %+v, %v; want both runs", listed, err)
	}
	// The migrated thread goes on.
	l, err := s.Acquire(ctx, k, "o", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, l, store.Commit{Delta: []byte(`{"n":"x"}`), Events: []store.Event{{RunID: "r3", Data: []byte(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	if th, err := s.Thread(ctx, k); err != nil || th.LastSeq != 2 || len(th.Deltas) != 1 {
		t.Errorf("after a commit: %+v, %v", th, err)
	}
}

// TestMigrateFormat2: a store of format 2, which had no index of a
// thread's runs by start time, opens as format 3 with the index of every
// run of every thread, deleted threads' leftovers aside.
func TestMigrateFormat2(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	keys := []store.Key{{Scope: "acme", Workflow: "chat", Thread: "t1"}, {Scope: "acme", Workflow: "chat", Thread: "t2"}, {Scope: "evil", Workflow: "chat", Thread: "t1"}}
	for i, k := range keys {
		l, err := s.Acquire(ctx, k, "o", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			r := store.Run{ID: fmt.Sprintf("r%d", j), Key: k, Status: store.Finished, Started: base.Add(time.Duration(i*10+j) * time.Second), Input: []byte(`{}`)}
			if _, err := s.Commit(ctx, l, store.Commit{Run: &r, NewRun: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// What format 2 held: no index of runs by start time.
	if _, err := s.deleteKeys(ctx, []byte{prefixStarted}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.setFormat(2); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open of a format 2 store: %v", err)
	}
	defer s.Close()
	for _, k := range keys {
		runs, next, err := s.ThreadRuns(ctx, k, store.Page{})
		if err != nil || next != "" || len(runs) != 3 || runs[0].ID != "r2" || runs[2].ID != "r0" {
			t.Errorf("ThreadRuns(%v) after the migration: %+v, %q, %v; want r2, r1, r0", k, runs, next, err)
		}
	}
	var format uint64
	if err := s.db.View(func(txn *badgerdb.Txn) error {
		_, err := value(txn, metaKey, func(v []byte) error {
			d := decoder{b: v}
			format = d.uint()
			return d.done()
		})
		return err
	}); err != nil || format != formatVersion {
		t.Errorf("format after the migration: %d, %v; want %d", format, err, formatVersion)
	}
}
