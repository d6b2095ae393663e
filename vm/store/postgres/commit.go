package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aguic/aguic/vm/store"
)

// commitSQL calls commit_v2 (migrations/0002_commit_release.sql: commit_v1
// of 0001_init.sql, and the lease given up with c.Release) with a commit.
const commitSQL = `SELECT o_status, o_hash, o_wait, o_wake_at, o_run_id, o_last_seq, o_first_seq, o_version, o_created, o_updated
FROM commit_v2($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
	$18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33)`

// Commit writes c to the lease's thread in one statement, a call of the
// function commit_v2, in a transaction of its own: one round trip to the
// server (after the first, which prepares the statement on the
// connection). It is synchronous unless c.Lazy; with c.Release, the lease
// is given up in the same transaction.
//
// c.Run.Key may be left zero: the run belongs to the lease's thread. Hide
// may name events of this commit; it skips events that retention removed
// and fails on sequence numbers the thread never had.
func (s *Store) Commit(ctx context.Context, l store.Lease, c store.Commit) (store.Thread, error) {
	k := l.Key
	fail := func(err error) (store.Thread, error) {
		return store.Thread{}, fmt.Errorf("commit to %s: %w", keyName(k), err)
	}
	if r := c.Run; r != nil {
		if r.ID == "" {
			return fail(errors.New("the run has no id"))
		}
		if r.Key != (store.Key{}) && r.Key != k {
			return fail(fmt.Errorf("run %q belongs to thread %s", r.ID, keyName(r.Key)))
		}
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	args := make([]any, 0, 33)
	args = append(args, k.Scope, k.Workflow, k.Thread, l.Owner, int64(l.Token), int64(c.Expect), c.Lazy)
	if cp := c.Checkpoint; cp != nil {
		args = append(args, true, string(cp.Status), cp.Hash, cp.Wait, optTime(cp.WakeAt), cp.RunID, cp.Frame)
	} else {
		args = append(args, false, "", "", nil, nil, "", nil)
	}
	args = append(args, c.Trim, c.Keep, c.Delta)
	n := len(c.Events)
	runs, times, silent, hidden, data := make([]string, n), make([]time.Time, n), make([]bool, n), make([]bool, n), make([][]byte, n)
	for i, e := range c.Events {
		runs[i], times[i], silent[i], hidden[i], data[i] = e.RunID, e.Time, e.Silent, e.Hidden, e.Data
	}
	hide := make([]int64, len(c.Hide))
	for i, seq := range c.Hide {
		hide[i] = int64(seq)
	}
	args = append(args, runs, times, silent, hidden, data, hide)
	if r := c.Run; r != nil {
		args = append(args, true, c.NewRun, r.ID, string(r.Status), r.Started, optTime(r.Finished), r.Outcome, r.Error, r.Input)
	} else {
		args = append(args, false, false, "", "", time.Time{}, nil, nil, "", nil)
	}
	args = append(args, c.Release)

	th := store.Thread{Key: k}
	var status string
	var wakeAt *time.Time
	var lastSeq, firstSeq, version int64
	err := s.pool.QueryRow(ctx, commitSQL, args...).Scan(&status, &th.Hash, &th.Wait, &wakeAt, &th.RunID,
		&lastSeq, &firstSeq, &version, &th.Created, &th.Updated)
	if err != nil {
		return fail(classify(ctx, err))
	}
	th.Status = store.Status(status)
	th.WakeAt = fromOptTime(wakeAt)
	th.LastSeq, th.FirstSeq, th.Version = uint64(lastSeq), uint64(firstSeq), uint64(version)
	th.Created, th.Updated = th.Created.UTC(), th.Updated.UTC()
	s.changed(k)
	return th, nil
}

// Sync makes every commit that returned before it durable: it writes one
// row synchronously, and the flush of the write-ahead log up to that
// write's commit carries every lazy commit before it. Concurrent Syncs
// write different rows (by the server process of their connection), so
// they do not wait for each other's row.
func (s *Store) Sync(ctx context.Context) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	// Two statements in one string, without arguments: one implicit
	// transaction, synchronous whatever the server's default.
	if _, err := s.pool.Exec(ctx, `SELECT set_config('synchronous_commit', 'on', true);
		UPDATE syncs SET n = n + 1 WHERE slot = pg_backend_pid() % 16`); err != nil {
		return fmt.Errorf("sync: %w", classify(ctx, err))
	}
	return nil
}

// optTime is t for a nullable column: nil for the zero time.
func optTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// fromOptTime is the time of a nullable column: zero for NULL.
func fromOptTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
