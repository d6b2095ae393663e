package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aguic/aguic/vm/store"
)

// A thread's lease is three columns of its row: owner, token and expiry.
// Every time is the database's, now(), never a process's clock: replicas
// whose clocks differ agree on who holds a lease. Every grant takes a new
// token from the sequence lease_tokens, the holder's own Acquire again
// too (which fences out its earlier copy). A lease is current while the
// row has its owner and token; expiry only lets another owner take it
// over, and until one does, an expired lease still commits.

// acquireSQL creates the thread when it does not exist, and takes its
// lease unless another owner holds it unexpired. ON CONFLICT locks the
// row, so of concurrent Acquires exactly one takes a free lease; the
// others find it held and get no row.
const acquireSQL = `
INSERT INTO threads AS t (scope, workflow, thread, created, updated, lease_owner, lease_token, lease_expires)
VALUES ($1, $2, $3, now(), now(), $4, nextval('lease_tokens'), now() + $5 * interval '1 microsecond')
ON CONFLICT (scope, workflow, thread) DO UPDATE SET
	lease_owner = excluded.lease_owner, lease_token = excluded.lease_token, lease_expires = excluded.lease_expires
WHERE t.lease_owner IS NULL OR t.lease_owner = excluded.lease_owner OR t.lease_expires <= now()
RETURNING lease_token, lease_expires, version`

// Acquire takes the thread's lease, creating the thread when it does not
// exist.
func (s *Store) Acquire(ctx context.Context, k store.Key, owner string, ttl time.Duration) (store.Lease, error) {
	fail := func(err error) (store.Lease, error) {
		return store.Lease{}, fmt.Errorf("acquire %s: %w", keyName(k), err)
	}
	if owner == "" {
		return fail(errors.New("no owner given"))
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	l := store.Lease{Key: k, Owner: owner}
	var version int64
	err := s.pool.QueryRow(ctx, acquireSQL, k.Scope, k.Workflow, k.Thread, owner, ttl.Microseconds()).
		Scan(&l.Token, &l.Expires, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(store.ErrBusy)
	}
	if err != nil {
		return fail(classify(ctx, err))
	}
	l.Expires = l.Expires.UTC()
	l.Version = uint64(version)
	return l, nil
}

// Renew extends the lease to now+ttl while it is the thread's current one.
func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	fail := func(err error) (store.Lease, error) {
		return store.Lease{}, fmt.Errorf("renew the lease of %s: %w", keyName(l.Key), err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	k := l.Key
	err := s.pool.QueryRow(ctx, `
		UPDATE threads SET lease_expires = now() + $6 * interval '1 microsecond'
		WHERE scope = $1 AND workflow = $2 AND thread = $3 AND lease_owner = $4 AND lease_token = $5
		RETURNING lease_expires`,
		k.Scope, k.Workflow, k.Thread, l.Owner, int64(l.Token), ttl.Microseconds()).Scan(&l.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(store.ErrLeaseLost)
	}
	if err != nil {
		return fail(classify(ctx, err))
	}
	l.Expires = l.Expires.UTC()
	return l, nil
}

// Release gives the lease up while it is the thread's current one. The
// token stays in the row: the next grant's is higher anyway.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	fail := func(err error) error {
		return fmt.Errorf("release the lease of %s: %w", keyName(l.Key), err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	k := l.Key
	tag, err := s.pool.Exec(ctx, `
		UPDATE threads SET lease_owner = NULL, lease_expires = NULL
		WHERE scope = $1 AND workflow = $2 AND thread = $3 AND lease_owner = $4 AND lease_token = $5`,
		k.Scope, k.Workflow, k.Thread, l.Owner, int64(l.Token))
	if err != nil {
		return fail(classify(ctx, err))
	}
	if tag.RowsAffected() == 0 {
		return fail(store.ErrLeaseLost)
	}
	s.changed(k)
	return nil
}

// Claim takes the thread's lease while it has runs running or queued, in a
// transaction that first locks the thread's row: a commit that ends a run
// and gives its lease up locks it too, and the runs are read after the
// lock is taken (a statement of its own, so it sees what that commit
// wrote). Claim sees the thread either before such a commit (the lease is
// held: ErrBusy) or after it (no run is left, and nothing is taken).
func (s *Store) Claim(ctx context.Context, k store.Key, owner string, ttl time.Duration) (store.Lease, []store.Run, error) {
	fail := func(err error) (store.Lease, []store.Run, error) {
		return store.Lease{}, nil, fmt.Errorf("claim %s: %w", keyName(k), err)
	}
	if owner == "" {
		return fail(errors.New("no owner given"))
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	l := store.Lease{Key: k, Owner: owner}
	var runs []store.Run
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id int64
		var busy bool
		err := tx.QueryRow(ctx, `SELECT id, lease_owner IS NOT NULL AND lease_owner <> $4 AND lease_expires > now()
			FROM threads WHERE scope = $1 AND workflow = $2 AND thread = $3 FOR UPDATE`,
			k.Scope, k.Workflow, k.Thread, owner).Scan(&id, &busy)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return err
		case busy:
			return store.ErrBusy
		}
		rows, err := tx.Query(ctx, `SELECT `+runColumns+` FROM threads t JOIN runs r ON r.thread_id = t.id
			WHERE t.id = $1 AND r.status IN ('running', 'queued')
			ORDER BY r.status = 'queued', r.started, r.id`, id)
		if err != nil {
			return err
		}
		if runs, err = collectRuns(rows); err != nil || len(runs) == 0 {
			return err
		}
		var version int64
		err = tx.QueryRow(ctx, `UPDATE threads SET lease_owner = $2, lease_token = nextval('lease_tokens'),
			lease_expires = now() + $3 * interval '1 microsecond'
			WHERE id = $1 RETURNING lease_token, lease_expires, version`, id, owner, ttl.Microseconds()).
			Scan(&l.Token, &l.Expires, &version)
		l.Version = uint64(version)
		return err
	})
	if err != nil {
		return fail(classify(ctx, err))
	}
	if len(runs) == 0 {
		return store.Lease{}, nil, nil
	}
	l.Expires = l.Expires.UTC()
	return l, runs, nil
}
