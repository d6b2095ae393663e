package postgres

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aguic/aguic/vm/store"
)

// threadColumns are the columns scanThread reads, of threads t.
const threadColumns = bookkeepingColumns + `,
	(SELECT f.frame FROM frames f WHERE f.thread_id = t.id),
	CASE WHEN t.deltas > 0 THEN (SELECT array_agg(d.data ORDER BY d.n) FROM deltas d WHERE d.thread_id = t.id) END`

// headerColumns are the columns scanThread reads without the frame and
// deltas, which come back nil.
const headerColumns = bookkeepingColumns + `, NULL::bytea, NULL::bytea[]`

// bookkeepingColumns are a thread's columns but its frame and deltas.
const bookkeepingColumns = `t.scope, t.workflow, t.thread, t.status, t.hash, t.wait, t.wake_at, t.run_id,
	t.last_seq, t.first_seq, t.version, t.created, t.updated`

// scanThread reads a row of threadColumns, and then the columns after
// them into more.
func scanThread(row pgx.Row, more ...any) (store.Thread, error) {
	var th store.Thread
	var status string
	var wakeAt *time.Time
	var lastSeq, firstSeq, version int64
	err := row.Scan(append([]any{&th.Scope, &th.Workflow, &th.Thread, &status, &th.Hash, &th.Wait, &wakeAt, &th.RunID,
		&lastSeq, &firstSeq, &version, &th.Created, &th.Updated, &th.Frame, &th.Deltas}, more...)...)
	th.Status = store.Status(status)
	th.WakeAt = fromOptTime(wakeAt)
	th.LastSeq, th.FirstSeq, th.Version = uint64(lastSeq), uint64(firstSeq), uint64(version)
	th.Created, th.Updated = th.Created.UTC(), th.Updated.UTC()
	return th, err
}

// Thread returns a thread with its frame and deltas, in one query.
func (s *Store) Thread(ctx context.Context, k store.Key) (store.Thread, error) {
	fail := func(err error) (store.Thread, error) {
		return store.Thread{}, fmt.Errorf("thread %s: %w", keyName(k), err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	th, err := scanThread(s.pool.QueryRow(ctx, `SELECT `+threadColumns+` FROM threads t
		WHERE t.scope = $1 AND t.workflow = $2 AND t.thread = $3`, k.Scope, k.Workflow, k.Thread))
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(store.ErrNotFound)
	}
	if err != nil {
		return fail(classify(ctx, err))
	}
	return th, nil
}

// Threads lists a scope's threads, or one workflow's, without their
// frames and deltas, in the order of workflow and thread id (byte order). The
// cursor is opaque: the workflow and thread id of the page's last thread,
// as a JSON array in base64, which no key can be confused with.
func (s *Store) Threads(ctx context.Context, scope, workflow string, p store.Page) ([]store.Thread, string, error) {
	fail := func(err error) ([]store.Thread, string, error) {
		return nil, "", fmt.Errorf("threads of %q: %w", scope, err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	var after []string
	if p.After != "" {
		if err := decodeCursor(p.After, &after); err != nil || len(after) != 2 {
			return fail(fmt.Errorf("%w %q", store.ErrCursor, p.After))
		}
	} else {
		after = []string{"", ""}
	}
	limit := pageLimit(p)
	// One query text for each combination of filters, so that each is
	// planned, and prepared, on its own: a range scan of the index on
	// the key, from the cursor.
	args := []any{scope}
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	query := `SELECT ` + headerColumns + ` FROM threads t WHERE t.scope = $1`
	if workflow != "" {
		query += ` AND t.workflow = ` + arg(workflow)
	}
	if p.After != "" {
		query += ` AND (t.workflow, t.thread) > (` + arg(after[0]) + `, ` + arg(after[1]) + `)`
	}
	query += ` ORDER BY t.workflow, t.thread LIMIT ` + arg(limit+1)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return fail(classify(ctx, err))
	}
	threads, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Thread, error) { return scanThread(row) })
	if err != nil {
		return fail(classify(ctx, err))
	}
	next := ""
	if len(threads) > limit {
		threads = threads[:limit]
		last := threads[limit-1]
		next = encodeCursor([]string{last.Workflow, last.Thread})
	}
	return threads, next, nil
}

// pageLimit is the number of items a page asks for.
func pageLimit(p store.Page) int {
	if p.Limit <= 0 {
		return 100
	}
	return p.Limit
}

// encodeCursor makes an opaque cursor of v.
func encodeCursor(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and numbers only
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor of encodeCursor into v.
func decodeCursor(c string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// deleteThreads removes the threads that lockSQL selects and locks (it
// returns their ids and keys, FOR UPDATE), with their frames, deltas,
// events, runs and leases, in one transaction. The removal reads after
// the lock: what a commit wrote before it let go of a row goes too.
func (s *Store) deleteThreads(ctx context.Context, lockSQL string, args ...any) (deleted, error) {
	var d deleted
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		d = deleted{}
		rows, err := tx.Query(ctx, lockSQL, args...)
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			var k store.Key
			if err := rows.Scan(&id, &k.Scope, &k.Workflow, &k.Thread); err != nil {
				rows.Close()
				return err
			}
			ids, d.keys = append(ids, id), append(d.keys, k)
		}
		if rows.Close(); rows.Err() != nil || len(ids) == 0 {
			return rows.Err()
		}
		var events int64
		err = tx.QueryRow(ctx, `WITH
			f AS (DELETE FROM frames WHERE thread_id = ANY ($1)),
			d AS (DELETE FROM deltas WHERE thread_id = ANY ($1)),
			r AS (DELETE FROM runs WHERE thread_id = ANY ($1)),
			t AS (DELETE FROM threads WHERE id = ANY ($1)),
			e AS (DELETE FROM events WHERE thread_id = ANY ($1) RETURNING 1)
			SELECT count(*) FROM e`, ids).Scan(&events)
		d.events = int(events)
		return err
	})
	return d, err
}

// DeleteThread removes a thread, its frame, deltas, events, runs and
// lease, in one transaction. Its id goes with it: a lease from before
// cannot write to the thread made again under its key.
func (s *Store) DeleteThread(ctx context.Context, k store.Key) error {
	fail := func(err error) error { return fmt.Errorf("delete thread %s: %w", keyName(k), err) }
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	gone, err := s.deleteThreads(ctx, `SELECT id, scope, workflow, thread FROM threads
		WHERE scope = $1 AND workflow = $2 AND thread = $3 FOR UPDATE`, k.Scope, k.Workflow, k.Thread)
	if err != nil {
		return fail(classify(ctx, err))
	}
	if len(gone.keys) == 0 {
		return fail(store.ErrNotFound)
	}
	s.changed(k)
	return nil
}

// deleted is what deleteThreads removed.
type deleted struct {
	keys   []store.Key
	events int
}

// eventColumns are the columns scanEvents reads, of events e, beside the
// thread's first and last sequence numbers.
const eventColumns = `t.first_seq, e.seq, e.run_id, e.time, e.silent, e.hidden, e.data`

// Events returns up to limit events with Seq > after (all of them when
// limit <= 0), in one query that reads the thread's FirstSeq with them.
// store.ErrExpired when the event after the cursor was removed by
// retention.
func (s *Store) Events(ctx context.Context, k store.Key, after uint64, limit int) ([]store.Event, error) {
	fail := func(err error) ([]store.Event, error) {
		return nil, fmt.Errorf("events of %s after %d: %w", keyName(k), after, err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `SELECT `+eventColumns+` FROM threads t
		LEFT JOIN LATERAL (SELECT * FROM events WHERE thread_id = t.id AND seq > $4 ORDER BY seq LIMIT $5) e ON true
		WHERE t.scope = $1 AND t.workflow = $2 AND t.thread = $3`,
		k.Scope, k.Workflow, k.Thread, int64(min(after, 1<<63-1)), lim)
	if err != nil {
		return fail(classify(ctx, err))
	}
	first, events, err := scanEvents(rows)
	if err != nil {
		return fail(classify(ctx, err))
	}
	if first == nil {
		return fail(store.ErrNotFound)
	}
	if after+1 < *first {
		return fail(fmt.Errorf("%w: events before %d were removed", store.ErrExpired, *first))
	}
	return events, nil
}

// LastEvents returns the thread's last n events still kept, in order.
func (s *Store) LastEvents(ctx context.Context, k store.Key, n int) ([]store.Event, error) {
	fail := func(err error) ([]store.Event, error) {
		return nil, fmt.Errorf("last %d events of %s: %w", n, keyName(k), err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+eventColumns+` FROM threads t
		LEFT JOIN LATERAL (SELECT * FROM events WHERE thread_id = t.id AND seq >= t.first_seq ORDER BY seq DESC LIMIT $4) e ON true
		WHERE t.scope = $1 AND t.workflow = $2 AND t.thread = $3`,
		k.Scope, k.Workflow, k.Thread, max(n, 0))
	if err != nil {
		return fail(classify(ctx, err))
	}
	first, events, err := scanEvents(rows)
	if err != nil {
		return fail(classify(ctx, err))
	}
	if first == nil {
		return fail(store.ErrNotFound)
	}
	slices.Reverse(events)
	return events, nil
}

// scanEvents reads rows of eventColumns: the thread's FirstSeq, nil when
// there is no row (no such thread), and its events; a thread without
// events is one row of NULLs.
func scanEvents(rows pgx.Rows) (*uint64, []store.Event, error) {
	defer rows.Close()
	var first *uint64
	var events []store.Event
	for rows.Next() {
		var firstSeq int64
		var seq *int64
		var runID *string
		var at *time.Time
		var silent, hidden *bool
		var data []byte
		if err := rows.Scan(&firstSeq, &seq, &runID, &at, &silent, &hidden, &data); err != nil {
			return nil, nil, err
		}
		f := uint64(firstSeq)
		first = &f
		if seq == nil {
			continue
		}
		events = append(events, store.Event{Seq: uint64(*seq), RunID: *runID, Time: at.UTC(), Silent: *silent, Hidden: *hidden, Data: data})
	}
	return first, events, rows.Err()
}

// CountThreads counts the threads by status, across scopes, in one
// query over the threads' rows (which hold no frame or event).
func (s *Store) CountThreads(ctx context.Context) (map[store.Status]int, error) {
	fail := func(err error) (map[store.Status]int, error) { return nil, fmt.Errorf("count threads: %w", err) }
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	rows, err := s.pool.Query(ctx, `SELECT status, count(*) FROM threads WHERE status <> '' GROUP BY status`)
	if err != nil {
		return fail(classify(ctx, err))
	}
	defer rows.Close()
	counts := map[store.Status]int{}
	for rows.Next() {
		var status string
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			return fail(classify(ctx, err))
		}
		counts[store.Status(status)] = int(n)
	}
	if err := rows.Err(); err != nil {
		return fail(classify(ctx, err))
	}
	return counts, nil
}
