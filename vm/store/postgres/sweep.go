package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aguic/aguic/vm/store"
)

// sweepBatch is how many threads one transaction of Sweep deletes or
// trims: a sweep of many threads is many short transactions.
const sweepBatch = 200

// Sweep applies r as of now. It deletes the finished, failed and
// cancelled threads not updated since now minus r.FinishedTTL whose lease
// is free or expired, with their events and runs, then removes the
// oldest events of the threads that keep more than r.MaxEvents (raising
// their FirstSeq). The events it reports include those of the threads it
// deleted. now is the caller's clock; Updated is the database's.
//
// Both are scans of threads, in batches that lock the rows they change
// and skip the rows commits hold: a thread a commit holds is not idle,
// and its events are trimmed by the next Sweep.
func (s *Store) Sweep(ctx context.Context, r store.Retention, now time.Time) (events, threads int, err error) {
	if err := s.enter(ctx); err != nil {
		return 0, 0, fmt.Errorf("sweep: %w", err)
	}
	if r.FinishedTTL > 0 {
		for {
			gone, err := s.deleteThreads(ctx, `SELECT id, scope, workflow, thread FROM threads
				WHERE status IN ('finished', 'failed', 'cancelled') AND updated <= $1
				AND (lease_owner IS NULL OR lease_expires <= now())
				ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`, now.Add(-r.FinishedTTL), sweepBatch)
			if err != nil {
				return events, threads, fmt.Errorf("sweep threads idle since %v: %w", now.Add(-r.FinishedTTL), classify(ctx, err))
			}
			events += gone.events
			threads += len(gone.keys)
			for _, k := range gone.keys {
				s.changed(k)
			}
			if len(gone.keys) < sweepBatch {
				break
			}
		}
	}
	if r.MaxEvents > 0 {
		var after int64
		for {
			n, last, err := s.trimEvents(ctx, after, r.MaxEvents)
			events += n
			if err != nil {
				return events, threads, fmt.Errorf("sweep events beyond %d per thread: %w", r.MaxEvents, classify(ctx, err))
			}
			if last == 0 {
				break
			}
			after = last
		}
	}
	return events, threads, nil
}

// trimEvents raises the FirstSeq of a batch of threads after the thread
// id after that keep more than keep events, and removes the events before
// it, in one transaction: first the threads' rows, locked, then their
// events, read after the lock, so that none a commit wrote before it is
// left behind. It returns how many events it removed, and the last id of
// a full batch (0 when the batch was the last).
func (s *Store) trimEvents(ctx context.Context, after int64, keep int) (events int, last int64, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE threads SET first_seq = last_seq - $2 + 1
			WHERE id IN (
				SELECT id FROM threads WHERE id > $1 AND first_seq > 0 AND last_seq - first_seq + 1 > $2
				ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED
			)
			RETURNING id, first_seq`, after, keep, sweepBatch)
		if err != nil {
			return err
		}
		var ids, firsts []int64
		for rows.Next() {
			var id, first int64
			if err := rows.Scan(&id, &first); err != nil {
				rows.Close()
				return err
			}
			ids, firsts = append(ids, id), append(firsts, first)
		}
		if rows.Close(); rows.Err() != nil || len(ids) == 0 {
			return rows.Err()
		}
		if len(ids) == sweepBatch {
			last = slices.Max(ids)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM events e USING unnest($1::bigint[], $2::bigint[]) AS t(id, first_seq)
			WHERE e.thread_id = t.id AND e.seq < t.first_seq`, ids, firsts)
		events = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	return events, last, nil
}
