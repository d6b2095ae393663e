package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aguic/aguic/internal/pgtest"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
	"github.com/aguic/aguic/vm/store/postgres"
	"github.com/aguic/aguic/vm/store/storetest"
)

// openBadger opens a Badger store in memory, which the suite closes.
func openBadger(t *testing.T) store.Store {
	s, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBackupConformance: backups of a PostgreSQL store restore into
// another and into a Badger store, and back; and the backups of a filled
// Badger store restore into a PostgreSQL store and back.
func TestBackupConformance(t *testing.T) {
	pgtest.URL(t)
	pg := func(t *testing.T) store.Store { return open(t, pgtest.Schema(t)) }
	t.Run("PostgreSQL", func(t *testing.T) { storetest.RunBackup(t, pg, openBadger) })
	t.Run("FromBadger", func(t *testing.T) { storetest.RunBackup(t, openBadger, pg) })
}

// fill commits n events to k, in commits of batch events, and returns the
// thread.
func fill(t *testing.T, s store.Store, k store.Key, n, batch int) store.Thread {
	t.Helper()
	ctx := t.Context()
	l, err := s.Acquire(ctx, k, "writer", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var th store.Thread
	for i := 0; i < n; i += batch {
		evs := make([]store.Event, min(batch, n-i))
		for j := range evs {
			evs[j] = store.Event{RunID: "r1", Time: time.Unix(1700000000, int64(i+j)*1000).UTC(), Silent: j%3 == 0,
				Data: fmt.Appendf(nil, `{"i":%d}`, i+j)}
		}
		c := store.Commit{Events: evs, Lazy: true}
		if i == 0 {
			c.Checkpoint = &store.Thread{Status: store.Running, Hash: "h", RunID: "r1", Frame: []byte(`{"pc":1}`)}
			c.Run, c.NewRun = &store.Run{ID: "r1", Status: store.Running, Started: time.Unix(1700000000, 0).UTC()}, true
		}
		if th, err = s.Commit(ctx, l, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	return th
}

// snapshot is a Sink that records what a Dump gives of the threads, and
// calls pause once, at the first thread.
type snapshot struct {
	pause   func()
	threads []store.Thread
	last    []uint64 // the Seq of each thread's last event
	runs    []int    // how many runs each thread has
}

func (s *snapshot) Source(string, []byte) error { return nil }

func (s *snapshot) Thread(t store.Thread) error {
	if s.pause != nil {
		s.pause()
		s.pause = nil
	}
	s.threads, s.last, s.runs = append(s.threads, t), append(s.last, 0), append(s.runs, 0)
	return nil
}

func (s *snapshot) Event(e store.Event) error {
	i := len(s.threads) - 1
	if e.Seq != s.last[i]+1 && s.last[i] != 0 {
		return fmt.Errorf("thread %s: event %d after %d", s.threads[i].Thread, e.Seq, s.last[i])
	}
	s.last[i] = e.Seq
	return nil
}

func (s *snapshot) Run(store.Run) error {
	s.runs[len(s.runs)-1]++
	return nil
}

// TestDumpWhileCommitting: commits go on while Dump reads, and what it
// gives is one state of the store. A writer commits to the threads in
// turn, in key order, ten events and a delta each time; there are more
// threads than Dump reads in one page. Each Dump waits, at its first
// thread, for the writer to commit to every thread once more. In every
// dump each thread's events end at its LastSeq, which is ten times its
// Version, and the versions of the threads in key order are those of one
// moment: each the one before it, or one less.
func TestDumpWhileCommitting(t *testing.T) {
	ctx := t.Context()
	s := open(t, pgtest.Schema(t))
	defer s.Close()
	n := postgres.DumpThreads * 3 / 2
	var keys []store.Key
	var leases []store.Lease
	for i := range n {
		k := store.Key{Scope: "acme", Workflow: "chat", Thread: fmt.Sprintf("t%04d", i)}
		l, err := s.Acquire(ctx, k, "writer", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		keys, leases = append(keys, k), append(leases, l)
	}
	var commits atomic.Int64
	tick := make(chan struct{}, 1)
	stop, done := make(chan struct{}), make(chan struct{})
	var werr error
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c := store.Commit{Events: events(10), Delta: []byte(`{"d":1}`), Lazy: true}
			if i < n {
				c.Run, c.NewRun = &store.Run{ID: "r1", Status: store.Running, Started: time.Now()}, true
			}
			if _, err := s.Commit(ctx, leases[i%n], c); err != nil {
				werr = err
				return
			}
			commits.Add(1)
			select {
			case tick <- struct{}{}:
			default:
			}
		}
	}()
	// wait returns once the writer committed m more times, or stopped.
	wait := func(m int) {
		target := commits.Load() + int64(m)
		for commits.Load() < target {
			select {
			case <-tick:
			case <-done:
				return
			}
		}
	}
	wait(n)
	for d := range 3 {
		snap := &snapshot{pause: func() { wait(n + 5) }}
		if err := s.Dump(ctx, snap); err != nil {
			t.Fatalf("dump %d: %v", d+1, err)
		}
		if len(snap.threads) != n {
			t.Fatalf("dump %d has %d threads, want %d", d+1, len(snap.threads), n)
		}
		bad := 0
		for i, th := range snap.threads {
			if th.Key != keys[i] || snap.last[i] != th.LastSeq || th.LastSeq != 10*th.Version ||
				len(th.Deltas) != int(th.Version) || snap.runs[i] != 1 {
				t.Errorf("dump %d: thread %s with LastSeq %d, Version %d, %d deltas; its last event %d, %d runs",
					d+1, th.Thread, th.LastSeq, th.Version, len(th.Deltas), snap.last[i], snap.runs[i])
			}
			first, prev := snap.threads[0], snap.threads[max(i-1, 0)]
			if th.Version > prev.Version || th.Version+1 < first.Version {
				if bad++; bad <= 3 {
					t.Errorf("dump %d: thread %s at Version %d, after thread %s at Version %d, and thread %s at %d: not one moment of the writer's",
						d+1, th.Thread, th.Version, prev.Thread, prev.Version, first.Thread, first.Version)
				}
			}
		}
		t.Logf("dump %d: versions from %d to %d", d+1, snap.threads[0].Version, snap.threads[n-1].Version)
	}
	close(stop)
	<-done
	if werr != nil {
		t.Fatalf("commit beside the dumps: %v", werr)
	}
}

// waitingForLock waits until a statement on the schema's table threads
// waits for a lock, and fails the test when done (the call that was to
// wait) finishes first.
func waitingForLock(t *testing.T, schema string, done <-chan error) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for {
		select {
		case err := <-done:
			t.Fatalf("returned (%v) while the Load before it held the tables", err)
		default:
		}
		var waiting bool
		if err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_locks l
			JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relname = 'threads' AND NOT l.granted)`, schema).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLoadExclusive: a Load holds off, until it commits, another Load and
// an Acquire that would create a thread, in another process: the other
// Load then finds the store full, and the Acquire finds the restored
// thread.
func TestLoadExclusive(t *testing.T) {
	ctx := t.Context()
	src := open(t, pgtest.Schema(t))
	defer src.Close()
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "t1"}
	want := fill(t, src, k, 3000, 1000)

	for _, other := range []string{"Load", "Acquire"} {
		t.Run(other, func(t *testing.T) {
			schema := pgtest.Schema(t)
			a, b := open(t, schema), open(t, schema)
			defer a.Close()
			defer b.Close()
			inFill, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			let := func() { once.Do(func() { close(release) }) }
			defer let() // before the stores close, when the test fails
			loaded := make(chan error, 1)
			go func() {
				loaded <- a.Load(ctx, func(sink store.Sink) error {
					close(inFill)
					<-release
					return src.Dump(ctx, sink)
				})
			}()
			<-inFill
			done := make(chan error, 1)
			var lease store.Lease
			go func() {
				if other == "Load" {
					done <- b.Load(ctx, func(sink store.Sink) error { return src.Dump(ctx, sink) })
					return
				}
				var err error
				lease, err = b.Acquire(ctx, k, "other", time.Hour)
				done <- err
			}()
			waitingForLock(t, schema, done)
			let()
			if err := <-loaded; err != nil {
				t.Fatalf("the first Load: %v", err)
			}
			err := <-done
			switch {
			case other == "Load" && !errors.Is(err, store.ErrNotEmpty):
				t.Errorf("a Load that waited for another: got %v, want ErrNotEmpty", err)
			case other == "Acquire" && (err != nil || lease.Version != want.Version):
				t.Errorf("an Acquire that waited for a Load: lease of Version %d, %v; want the restored thread's Version %d", lease.Version, err, want.Version)
			}
			th, err := b.Thread(ctx, k)
			if err != nil || th.LastSeq != want.LastSeq || th.Version != want.Version {
				t.Errorf("the restored thread: LastSeq %d, Version %d, %v; want %d and %d", th.LastSeq, th.Version, err, want.LastSeq, want.Version)
			}
		})
	}
}

// TestRestoreWakes: a restore wakes the watchers of the threads it
// restored, in its own process and in the others.
func TestRestoreWakes(t *testing.T) {
	ctx := t.Context()
	src := open(t, pgtest.Schema(t))
	defer src.Close()
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "t1"}
	fill(t, src, k, 3, 3)
	var backup bytes.Buffer
	if err := src.Backup(ctx, &backup); err != nil {
		t.Fatal(err)
	}
	schema := pgtest.Schema(t)
	a, b := open(t, schema), open(t, schema)
	defer a.Close()
	defer b.Close()
	ach, astop := a.Watch(k)
	defer astop()
	bch, bstop := b.Watch(k)
	defer bstop()
	if err := a.Restore(ctx, &backup); err != nil {
		t.Fatal(err)
	}
	woken(t, "a watch in the process that restored", ach)
	woken(t, "a watch in another process", bch)
}

// TestLoadFails: a Load whose fill fails after writing rows, or whose
// sink is given what no thread holds, leaves the store empty and usable.
func TestLoadFails(t *testing.T) {
	ctx := t.Context()
	s := open(t, pgtest.Schema(t))
	defer s.Close()
	boom := errors.New("boom")
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "t1"}
	for _, tt := range []struct {
		name string
		fill func(store.Sink) error
		want error
	}{
		{"FillFails", func(sink store.Sink) error {
			if err := sink.Source("h", []byte("src")); err != nil {
				return err
			}
			for i := range 3 {
				th := store.Thread{Key: store.Key{Scope: "acme", Workflow: "chat", Thread: fmt.Sprintf("t%d", i)}, Status: store.Running,
					FirstSeq: 1, LastSeq: 6000, Version: 1, Created: time.Now(), Updated: time.Now()}
				if err := sink.Thread(th); err != nil {
					return err
				}
				for seq := range uint64(6000) {
					if err := sink.Event(store.Event{Seq: seq + 1, RunID: "r1", Time: time.Now(), Data: []byte(`{}`)}); err != nil {
						return err
					}
				}
			}
			return boom
		}, boom},
		{"KeyTooLong", func(sink store.Sink) error {
			th := store.Thread{Key: store.Key{Scope: "acme", Workflow: "chat", Thread: string(randomBytes(t, 8000))},
				Created: time.Now(), Updated: time.Now()}
			if err := sink.Thread(th); err != nil {
				return err
			}
			return nil
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Load(ctx, tt.fill)
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Load: got %v, want %v", err, tt.want)
			}
			t.Logf("Load: %v", err)
			threads, _, err := s.Threads(ctx, "acme", "", store.Page{})
			if err != nil || len(threads) != 0 {
				t.Fatalf("Threads after a failed Load: %d threads, %v; want none", len(threads), err)
			}
			if _, err := s.Source(ctx, "h"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Source after a failed Load: got %v, want ErrNotFound", err)
			}
		})
	}
	// Usable: it takes a thread, and then refuses a Load.
	l, err := s.Acquire(ctx, k, "o", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, l, store.Commit{Events: events(2)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Load(ctx, func(store.Sink) error { return nil }); !errors.Is(err, store.ErrNotEmpty) {
		t.Errorf("Load into a store with a thread: got %v, want ErrNotEmpty", err)
	}
}

// randomBytes returns n bytes of lowercase letters, which PostgreSQL
// cannot compress.
func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = 'a' + byte(x%26)
	}
	return b
}

var (
	_ store.Dumper   = (*postgres.Store)(nil)
	_ store.Restorer = (*postgres.Store)(nil)
)
