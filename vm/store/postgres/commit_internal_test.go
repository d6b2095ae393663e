package postgres

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aguic/aguic/internal/pgtest"
	"github.com/aguic/aguic/vm/store"
)

// tracer records the statements the pool sends, and the statements it
// prepares, but for the notifications the outbox sends on its own.
type tracer struct {
	mu       sync.Mutex
	queries  []string
	prepares []string
}

func (tr *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !strings.Contains(d.SQL, "pg_notify") { // sent by the outbox, on its own
		tr.queries = append(tr.queries, d.SQL)
	}
	return ctx
}

func (tr *tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (tr *tracer) TracePrepareStart(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !strings.Contains(d.SQL, "pg_notify") {
		tr.prepares = append(tr.prepares, d.SQL)
	}
	return ctx
}

func (tr *tracer) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

func (tr *tracer) take() (queries, prepares []string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	queries, prepares = tr.queries, tr.prepares
	tr.queries, tr.prepares = nil, nil
	return queries, prepares
}

// TestCommitOneStatement: a commit with events, a delta, a checkpoint and
// a run is one statement on the connection, prepared only the first time:
// one round trip.
func TestCommitOneStatement(t *testing.T) {
	tr := &tracer{}
	s, err := open(t.Context(), Options{URL: pgtest.URL(t), Schema: pgtest.Schema(t), MaxConns: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = tr })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "t1"}
	l, err := s.Acquire(t.Context(), k, "owner", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(i int) store.Commit {
		return store.Commit{
			Checkpoint: &store.Thread{Status: store.Suspended, Hash: "h", RunID: "r1"},
			Delta:      []byte(`{"d":1}`),
			Events:     []store.Event{{RunID: "r1", Data: []byte(`{}`)}, {RunID: "r1", Data: []byte(`{}`)}},
			Run:        &store.Run{ID: "r1", Status: store.Suspended, Started: time.Now()},
			Lazy:       i%2 == 1,
		}
	}
	if _, err := s.Commit(t.Context(), l, commit(0)); err != nil {
		t.Fatal(err)
	}
	tr.take()
	for i := range 4 {
		if _, err := s.Commit(t.Context(), l, commit(i)); err != nil {
			t.Fatal(err)
		}
		queries, prepares := tr.take()
		if len(queries) != 1 || queries[0] != commitSQL || len(prepares) != 0 {
			t.Errorf("commit %d: %d statements (%q) and %d prepared, want the one call of commit_v1, already prepared",
				i+2, len(queries), queries, len(prepares))
		}
	}
}
