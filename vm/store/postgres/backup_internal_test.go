package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// rowTracer records, of the statements the pool sends (queries, the
// queries of batches, COPYs), the most rows one of them read or wrote.
type rowTracer struct {
	mu      sync.Mutex
	most    int64  // rows of a query
	mostSQL string // its text
	pages   int    // queries of events
	copies  int    // COPYs of events
	copied  int64  // the most rows of one of them
}

func (tr *rowTracer) query(sql string, rows int64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if rows > tr.most {
		tr.most, tr.mostSQL = rows, sql
	}
	if strings.Contains(sql, "FROM events") {
		tr.pages++
	}
}

func (tr *rowTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, tr, d.SQL)
}

func (tr *rowTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(tr).(string)
	tr.query(sql, d.CommandTag.RowsAffected())
}

func (tr *rowTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (tr *rowTracer) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	tr.query(d.SQL, d.CommandTag.RowsAffected())
}

func (tr *rowTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (tr *rowTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	return context.WithValue(ctx, tr, d.TableName.Sanitize())
}

func (tr *rowTracer) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromEndData) {
	if table, _ := ctx.Value(tr).(string); table != `"events"` {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.copies++
	tr.copied = max(tr.copied, d.CommandTag.RowsAffected())
}

func (tr *rowTracer) reset() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.most, tr.mostSQL, tr.pages, tr.copies, tr.copied = 0, "", 0, 0, 0
}

// openTraced opens a store on a schema of its own, whose statements tr
// sees.
func openTraced(t *testing.T, tr *rowTracer) *Store {
	t.Helper()
	s, err := open(t.Context(), Options{URL: pgtest.URL(t), Schema: pgtest.Schema(t), MaxConns: 2,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = tr })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestBackupLongThread: a thread of 100,000 events backs up and restores
// whole, and streams: Dump reads its events a page at a time, and Load
// writes them a buffer at a time, no statement of either holding more
// than a page or a buffer. Its backup cut short leaves the store empty,
// however many rows the restore wrote before it failed.
func TestBackupLongThread(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 events")
	}
	ctx := t.Context()
	var srcTrace, dstTrace rowTracer
	src, dst := openTraced(t, &srcTrace), openTraced(t, &dstTrace)
	k := store.Key{Scope: "acme", Workflow: "chat", Thread: "long"}
	const n, batch = 100_000, 2000
	l, err := src.Acquire(ctx, k, "writer", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += batch {
		evs := make([]store.Event, batch)
		for j := range evs {
			evs[j] = store.Event{RunID: "r1", Time: time.Unix(1700000000, int64(i+j)*1000).UTC(), Silent: j%3 == 0,
				Data: fmt.Appendf(nil, `{"i":%d}`, i+j)}
		}
		c := store.Commit{Events: evs, Lazy: true}
		if i == 0 {
			c.Checkpoint = &store.Thread{Status: store.Running, Hash: "h", RunID: "r1", Frame: []byte(`{"pc":1}`)}
			c.Run, c.NewRun = &store.Run{ID: "r1", Status: store.Running, Started: time.Unix(1700000000, 0).UTC()}, true
		}
		if _, err := src.Commit(ctx, l, c); err != nil {
			t.Fatal(err)
		}
	}

	srcTrace.reset()
	var backup bytes.Buffer
	if err := src.Backup(ctx, &backup); err != nil {
		t.Fatal(err)
	}
	if srcTrace.most > dumpEvents || srcTrace.pages < n/dumpEvents {
		t.Errorf("Dump read %d rows in one statement (%q), and the events in %d statements; want at most %d, in at least %d",
			srcTrace.most, srcTrace.mostSQL, srcTrace.pages, dumpEvents, n/dumpEvents)
	}

	cut := backup.Bytes()[:backup.Len()*9/10]
	if err := dst.Restore(ctx, bytes.NewReader(cut)); !errors.Is(err, store.ErrMalformedBackup) {
		t.Fatalf("Restore of the backup cut short: got %v, want ErrMalformedBackup", err)
	}
	if dstTrace.copies < 2 {
		t.Errorf("the restore of the backup cut short wrote %d buffers of events before it failed, want several", dstTrace.copies)
	}
	if _, err := dst.Thread(ctx, k); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Thread after a failed restore: got %v, want ErrNotFound", err)
	}

	dstTrace.reset()
	if err := dst.Restore(ctx, bytes.NewReader(backup.Bytes())); err != nil {
		t.Fatal(err)
	}
	if dstTrace.copied > loadRows || dstTrace.copies < n/loadRows {
		t.Errorf("Load wrote up to %d events in one COPY, in %d COPYs; want at most %d, in at least %d",
			dstTrace.copied, dstTrace.copies, loadRows, n/loadRows)
	}
	t.Logf("Dump read at most %d rows in a statement, the events in %d; Load wrote the events in %d COPYs of at most %d rows",
		srcTrace.most, srcTrace.pages, dstTrace.copies, dstTrace.copied)
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
	var again bytes.Buffer
	if err := dst.Backup(ctx, &again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), backup.Bytes()) {
		t.Errorf("the backup of the restored store (%d bytes) differs from the one it was restored from (%d bytes)", again.Len(), backup.Len())
	}
}
