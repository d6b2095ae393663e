package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aguic/aguic/vm/store"
)

// runColumns are the columns scanRun reads, of runs r and threads t.
const runColumns = `t.scope, t.workflow, t.thread, r.id, r.status, r.started, r.finished, r.outcome, r.error, r.input`

func scanRun(row pgx.Row) (store.Run, error) {
	var r store.Run
	var status string
	var finished *time.Time
	err := row.Scan(&r.Key.Scope, &r.Key.Workflow, &r.Key.Thread, &r.ID, &status, &r.Started, &finished, &r.Outcome, &r.Error, &r.Input)
	r.Status = store.Status(status)
	r.Started = r.Started.UTC()
	r.Finished = fromOptTime(finished)
	return r, err
}

func collectRuns(rows pgx.Rows) ([]store.Run, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Run, error) { return scanRun(row) })
}

// Run returns a run of a thread by id.
func (s *Store) Run(ctx context.Context, k store.Key, id string) (store.Run, error) {
	fail := func(err error) (store.Run, error) {
		return store.Run{}, fmt.Errorf("run %q of %s: %w", id, keyName(k), err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM threads t JOIN runs r ON r.thread_id = t.id
		WHERE t.scope = $1 AND t.workflow = $2 AND t.thread = $3 AND r.id = $4`, k.Scope, k.Workflow, k.Thread, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(store.ErrNotFound)
	}
	if err != nil {
		return fail(classify(ctx, err))
	}
	return r, nil
}

// Enqueue writes a queued run of an existing thread, without its lease.
// It holds the thread's row (FOR KEY SHARE, which commits do not wait
// for) while it inserts, so that a concurrent DeleteThread either comes
// first, and Enqueue finds no thread, or after, and removes the run.
func (s *Store) Enqueue(ctx context.Context, k store.Key, r store.Run) error {
	fail := func(err error) error { return fmt.Errorf("enqueue run %q on %s: %w", r.ID, keyName(k), err) }
	if r.Status != store.Queued || r.ID == "" {
		return fail(fmt.Errorf("a queued run needs an id and the status %q", store.Queued))
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	var inserted, found bool
	err := s.pool.QueryRow(ctx, `WITH t AS (
			SELECT id FROM threads WHERE scope = $1 AND workflow = $2 AND thread = $3 FOR KEY SHARE
		), ins AS (
			INSERT INTO runs (thread_id, id, status, started, finished, outcome, error, input)
			SELECT t.id, $4, $5, $6, $7, $8, $9, $10 FROM t
			ON CONFLICT (thread_id, id) DO NOTHING
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM ins), EXISTS (SELECT 1 FROM t)`,
		k.Scope, k.Workflow, k.Thread, r.ID, string(r.Status), r.Started, optTime(r.Finished), r.Outcome, r.Error, r.Input).
		Scan(&inserted, &found)
	switch {
	case err != nil:
		return fail(classify(ctx, err))
	case !found:
		return fail(store.ErrNotFound)
	case !inserted:
		return fail(store.ErrRunExists)
	}
	s.changed(k)
	return nil
}

// Runs lists the runs with a status across all scopes, in the order of
// their thread's id and their id. The cursor is opaque: the last run's
// thread id and run id.
func (s *Store) Runs(ctx context.Context, status store.Status, p store.Page) ([]store.Run, string, error) {
	fail := func(err error) ([]store.Run, string, error) {
		return nil, "", fmt.Errorf("runs %s: %w", status, err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	type cursor struct {
		Thread int64  `json:"t"`
		Run    string `json:"r"`
	}
	var after cursor
	if p.After != "" {
		if err := decodeCursor(p.After, &after); err != nil {
			return fail(fmt.Errorf("%w %q", store.ErrCursor, p.After))
		}
	}
	limit := pageLimit(p)
	query := `SELECT r.thread_id, ` + runColumns + ` FROM runs r JOIN threads t ON t.id = r.thread_id WHERE r.status = $1`
	args := []any{string(status), limit + 1}
	if p.After != "" { // a query of its own, planned as a range scan of runs_status from the cursor
		query += ` AND (r.thread_id, r.id) > ($3, $4)`
		args = append(args, after.Thread, after.Run)
	}
	query += ` ORDER BY r.thread_id, r.id LIMIT $2`
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return fail(classify(ctx, err))
	}
	var runs []store.Run
	var ids []int64 // the thread ids of runs
	for rows.Next() {
		var r store.Run
		var id int64
		var status string
		var finished *time.Time
		if err := rows.Scan(&id, &r.Key.Scope, &r.Key.Workflow, &r.Key.Thread, &r.ID, &status, &r.Started,
			&finished, &r.Outcome, &r.Error, &r.Input); err != nil {
			rows.Close()
			return fail(classify(ctx, err))
		}
		r.Status, r.Started, r.Finished = store.Status(status), r.Started.UTC(), fromOptTime(finished)
		runs, ids = append(runs, r), append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return fail(classify(ctx, err))
	}
	if len(runs) > limit {
		return runs[:limit], encodeCursor(cursor{Thread: ids[limit-1], Run: runs[limit-1].ID}), nil
	}
	return runs, "", nil
}

// ThreadRuns lists a thread's runs newest first, a range scan of the
// index runs_started from the cursor: a page reads the runs it lists. The
// runs' input is not read. The cursor is opaque: the last run's start, in
// Unix microseconds (what the database keeps), and id.
func (s *Store) ThreadRuns(ctx context.Context, k store.Key, p store.Page) ([]store.Run, string, error) {
	fail := func(err error) ([]store.Run, string, error) {
		return nil, "", fmt.Errorf("runs of %s: %w", keyName(k), err)
	}
	type cursor struct {
		Started int64  `json:"s"`
		Run     string `json:"r"`
	}
	var after cursor
	if p.After != "" {
		if err := decodeCursor(p.After, &after); err != nil {
			return fail(fmt.Errorf("%w %q", store.ErrCursor, p.After))
		}
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	limit := pageLimit(p)
	query := `SELECT t.scope, t.workflow, t.thread, r.id, r.status, r.started, r.finished, r.outcome, r.error, NULL::bytea
		FROM threads t JOIN runs r ON r.thread_id = t.id
		WHERE t.scope = $1 AND t.workflow = $2 AND t.thread = $3`
	args := []any{k.Scope, k.Workflow, k.Thread, limit + 1}
	if p.After != "" { // a query of its own, planned as a range scan of runs_started from the cursor
		query += ` AND r.started <= $5 AND (r.started < $5 OR r.id > $6)`
		args = append(args, time.UnixMicro(after.Started), after.Run)
	}
	query += ` ORDER BY r.started DESC, r.id LIMIT $4`
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return fail(classify(ctx, err))
	}
	runs, err := collectRuns(rows)
	if err != nil {
		return fail(classify(ctx, err))
	}
	if len(runs) > limit {
		last := runs[limit-1]
		return runs[:limit], encodeCursor(cursor{Started: last.Started.UnixMicro(), Run: last.ID}), nil
	}
	return runs, "", nil
}

// Pending returns the thread's running runs, then its queued ones in the
// order they are to start; the partial index runs_pending finds them.
func (s *Store) Pending(ctx context.Context, k store.Key) ([]store.Run, error) {
	fail := func(err error) ([]store.Run, error) {
		return nil, fmt.Errorf("pending runs of %s: %w", keyName(k), err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM threads t JOIN runs r ON r.thread_id = t.id
		WHERE t.scope = $1 AND t.workflow = $2 AND t.thread = $3 AND r.status IN ('running', 'queued')
		ORDER BY r.status = 'queued', r.started, r.id`, k.Scope, k.Workflow, k.Thread)
	if err != nil {
		return fail(classify(ctx, err))
	}
	runs, err := collectRuns(rows)
	if err != nil {
		return fail(classify(ctx, err))
	}
	return runs, nil
}

// Stranded lists the threads with a running or queued run whose lease is
// free or expired by the database's clock, in key order. It reads the few
// pending runs from the partial index runs_pending, and their threads.
func (s *Store) Stranded(ctx context.Context, limit int) ([]store.Key, error) {
	fail := func(err error) ([]store.Key, error) { return nil, fmt.Errorf("stranded threads: %w", err) }
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT t.scope, t.workflow, t.thread FROM threads t
		WHERE t.id IN (SELECT thread_id FROM runs WHERE status IN ('running', 'queued'))
		AND (t.lease_owner IS NULL OR t.lease_expires <= now())
		ORDER BY t.scope, t.workflow, t.thread LIMIT $1`, limit)
	if err != nil {
		return fail(classify(ctx, err))
	}
	keys, err := collectKeys(rows)
	if err != nil {
		return fail(classify(ctx, err))
	}
	return keys, nil
}

// Due lists the threads whose wake time is at or before now, earliest
// first, from the partial index threads_wake.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]store.Key, error) {
	fail := func(err error) ([]store.Key, error) { return nil, fmt.Errorf("due threads: %w", err) }
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT scope, workflow, thread FROM threads
		WHERE wake_at IS NOT NULL AND wake_at <= $1 ORDER BY wake_at, scope, workflow, thread LIMIT $2`, now, limit)
	if err != nil {
		return fail(classify(ctx, err))
	}
	keys, err := collectKeys(rows)
	if err != nil {
		return fail(classify(ctx, err))
	}
	return keys, nil
}

func collectKeys(rows pgx.Rows) ([]store.Key, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Key, error) {
		var k store.Key
		err := row.Scan(&k.Scope, &k.Workflow, &k.Thread)
		return k, err
	})
}
