package postgres_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/pgtest"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/postgres"
	"github.com/aguic/aguic/vm/store/storetest"
)

// quiet is the logger of the stores the tests open.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// open opens a store on schema, with a small pool: the tests share the
// server's connections.
func open(t testing.TB, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), postgres.Options{
		URL: pgtest.URL(t), Schema: schema, MaxConns: 4, Logger: quiet,
	})
	if err != nil {
		t.Fatalf("Open(schema %q): %v", schema, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	pgtest.URL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, pgtest.Schema(t)) })
	// Each directory of the suite stands for a schema of its own; a new
	// Store on it is a reopening.
	var mu sync.Mutex
	schemas := map[string]string{}
	storetest.RunReopen(t, func(t *testing.T, dir string) store.Store {
		mu.Lock()
		schema, ok := schemas[dir]
		if !ok {
			schema = pgtest.Schema(t)
			schemas[dir] = schema
		}
		mu.Unlock()
		return open(t, schema)
	})
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		schema := pgtest.Schema(t)
		return open(t, schema), open(t, schema)
	})
}

// TestLazyThenSync: lazy commits are read back at once, by another store
// too, and Sync after them succeeds.
func TestLazyThenSync(t *testing.T) {
	schema := pgtest.Schema(t)
	s, other := open(t, schema), open(t, schema)
	defer s.Close()
	defer other.Close()
	ctx := t.Context()
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "lazy"}
	l, err := s.Acquire(ctx, k, "owner", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := s.Commit(ctx, l, store.Commit{Events: events(2), Delta: []byte(`{"d":1}`), Lazy: true}); err != nil {
			t.Fatalf("lazy commit %d: %v", i+1, err)
		}
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatalf("Sync after lazy commits: %v", err)
	}
	th, err := other.Thread(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if th.LastSeq != 20 || th.Version != 10 || len(th.Deltas) != 10 {
		t.Errorf("after 10 lazy commits of 2 events and a delta: LastSeq %d Version %d, %d deltas; want 20, 10, 10", th.LastSeq, th.Version, len(th.Deltas))
	}
}
