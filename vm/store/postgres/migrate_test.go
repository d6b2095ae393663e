package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aguic/aguic/internal/pgtest"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/postgres"
)

// counter is a slog.Handler that counts the records with a message.
type counter struct {
	msg string
	n   *atomic.Int64
}

func (c counter) Enabled(context.Context, slog.Level) bool { return true }
func (c counter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == c.msg {
		c.n.Add(1)
	}
	return nil
}
func (c counter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c counter) WithGroup(string) slog.Handler      { return c }

// sql runs a statement on a connection of its own and returns the first
// column of its first row, if any.
func sql(t *testing.T, query string, args ...any) any {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var v any
	if rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) > 0 {
			v = vals[0]
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v
}

// TestMigrateOnce opens stores on a schema that does not exist, all at
// once: one creates it and applies the migrations, the others find them
// applied.
func TestMigrateOnce(t *testing.T) {
	schema := pgtest.Schema(t)
	sql(t, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize())
	var applied atomic.Int64
	log := slog.New(counter{msg: "applied a migration", n: &applied})
	const n = 6
	var wg sync.WaitGroup
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = postgres.Open(t.Context(), postgres.Options{URL: pgtest.URL(t), Schema: schema, MaxConns: 2, Logger: log})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d of %d at once: %v", i+1, n, err)
			continue
		}
		defer stores[i].Close()
	}
	if got, want := applied.Load(), int64(postgres.SchemaVersion()); got != want {
		t.Errorf("%d concurrent Opens of a new schema applied %d migrations, want %d (each once)", n, got, want)
	}
	if got := sql(t, fmt.Sprintf("SELECT count(*) FROM %s.migrations", pgx.Identifier{schema}.Sanitize())); got != int64(postgres.SchemaVersion()) {
		t.Errorf("the table of migrations has %v rows, want %d", got, postgres.SchemaVersion())
	}
	// Every store works on the schema.
	for i, s := range stores {
		if s == nil {
			continue
		}
		k := store.Key{Scope: "acme", Workflow: "chat", Thread: fmt.Sprint(i)}
		if _, err := s.Acquire(t.Context(), k, "owner", time.Minute); err != nil {
			t.Errorf("Acquire in store %d: %v", i, err)
		}
	}
	// Opening again applies nothing.
	s, err := postgres.Open(t.Context(), postgres.Options{URL: pgtest.URL(t), Schema: schema, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := applied.Load(); got != int64(postgres.SchemaVersion()) {
		t.Errorf("opening a migrated schema applied migrations again: %d in all", got)
	}
}

// TestMigrateNewer: a database migrated by a newer aguic is used when its
// schema is compatible with this one, and refused, with a message naming
// both versions, when it is not.
func TestMigrateNewer(t *testing.T) {
	mine := postgres.SchemaVersion()
	schema := pgtest.Schema(t)
	ident := pgx.Identifier{schema}.Sanitize()
	open(t, schema).Close()

	// Compatible: the newer schema still takes this aguic.
	sql(t, "INSERT INTO "+ident+".migrations (version, compatible, name) VALUES ($1, $2, 'future_compatible.sql')", mine+1, mine)
	s := open(t, schema)
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "t1"}
	l, err := s.Acquire(t.Context(), k, "owner", time.Minute)
	if err != nil {
		t.Fatalf("Acquire on a newer, compatible schema: %v", err)
	}
	if _, err := s.Commit(t.Context(), l, store.Commit{Events: []store.Event{{RunID: "r1", Data: []byte(`{}`)}}}); err != nil {
		t.Fatalf("Commit on a newer, compatible schema: %v", err)
	}
	s.Close()

	// Incompatible: refused, and nothing is changed.
	sql(t, "INSERT INTO "+ident+".migrations (version, compatible, name) VALUES ($1, $1, 'future_incompatible.sql')", mine+2)
	_, err = postgres.Open(t.Context(), postgres.Options{URL: pgtest.URL(t), Schema: schema, Logger: quiet})
	want := fmt.Sprintf("open store (schema %q): the database's schema is at version %d, which needs an aguic of schema version %d or later; "+
		"this aguic is of schema version %d: run a newer aguic (the one that migrated the database, or later)", schema, mine+2, mine+2, mine)
	if err == nil || err.Error() != want {
		t.Fatalf("Open of a schema that needs a newer aguic:\ngot  %v\nwant %s", err, want)
	}
	if got := sql(t, "SELECT count(*) FROM "+ident+".migrations"); got != int64(mine+2) {
		t.Errorf("a refused Open changed the table of migrations: %v rows, want %d", got, mine+2)
	}
}
