package badger

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/vm/store"
)

// One process owns a Badger directory, so the watches, cancel requests and
// periodic tasks of the store are those of the process: its Hub.

// Watch is store.Store.Watch.
func (s *Store) Watch(k store.Key) (<-chan struct{}, func()) { return s.hub.Watch(k) }

// Cancel calls the cancel handlers of the process.
func (s *Store) Cancel(ctx context.Context, k store.Key, runID string) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("cancel run %q of %s: %w", runID, keyName(k), err)
	}
	s.leave()
	s.hub.Cancelled(k, runID)
	return nil
}

// OnCancel is store.Store.OnCancel.
func (s *Store) OnCancel(f func(store.Key, string)) func() { return s.hub.OnCancel(f) }

// TakeTask is store.Store.TakeTask: the process is the only one.
func (s *Store) TakeTask(ctx context.Context, task string, period time.Duration) (bool, error) {
	if err := s.enter(ctx); err != nil {
		return false, fmt.Errorf("task %s: %w", task, err)
	}
	s.leave()
	return s.hub.TakeTask(task, period, time.Now()), nil
}

// Pending returns the thread's running and queued runs, from the index of
// runs by status.
func (s *Store) Pending(ctx context.Context, k store.Key) ([]store.Run, error) {
	fail := func(err error) ([]store.Run, error) {
		return nil, fmt.Errorf("pending runs of %s: %w", keyName(k), err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	defer s.leave()
	var runs []store.Run
	err := s.db.View(func(txn *badgerdb.Txn) (err error) {
		_, runs, err = pendingRuns(txn, threadKey(k))
		return err
	})
	if err != nil {
		return fail(err)
	}
	return runs, nil
}

// pendingRuns reads the header of thread tk and its running and queued
// runs, as Pending orders them; none when the thread does not exist.
func pendingRuns(txn *badgerdb.Txn, tk []byte) (header, []store.Run, error) {
	h, found, err := readHeader(txn, tk)
	if err != nil || !found {
		return h, nil, err
	}
	var running, queued []store.Run
	for _, status := range []store.Status{store.Running, store.Queued} {
		prefix := append(append(statusPrefix(status), tk...), be64(h.Gen)...)
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: prefix})
		for it.Rewind(); it.Valid(); it.Next() {
			id := string(it.Item().Key()[len(prefix):])
			r, found, err := readRun(txn, tk, h.Gen, id)
			if err != nil {
				it.Close()
				return h, nil, err
			}
			if found && r.Status == status {
				if status == store.Running {
					running = append(running, r)
				} else {
					queued = append(queued, r)
				}
			}
		}
		it.Close()
	}
	return h, append(running, store.SortQueued(queued)...), nil
}

// Claim takes the thread's lease while it has runs running or queued,
// under the lock of the thread's slot: a commit that ends a run and gives
// its lease up holds it too, so Claim sees the thread either before that
// commit (the lease is held: ErrBusy) or after it (no run is left, and
// nothing is taken).
func (s *Store) Claim(ctx context.Context, k store.Key, owner string, ttl time.Duration) (store.Lease, []store.Run, error) {
	var runs []store.Run
	l, err := s.take(ctx, "claim", k, owner, ttl, func(tk []byte, sl *slot, now time.Time) (h header, grant bool, err error) {
		err = s.db.View(func(txn *badgerdb.Txn) (err error) {
			h, runs, err = pendingRuns(txn, tk)
			return err
		})
		if err != nil || len(runs) == 0 {
			return h, false, err
		}
		if sl.head == nil {
			sl.head = &h
		}
		return *sl.head, true, nil
	})
	if err != nil || len(runs) == 0 {
		return store.Lease{}, nil, err
	}
	return l, runs, nil
}

// Stranded lists the threads with a running or queued run whose lease is
// not held in this process: those a failed commit left running, since
// every lease of a process that crashed is gone with it.
func (s *Store) Stranded(ctx context.Context, limit int) ([]store.Key, error) {
	fail := func(err error) ([]store.Key, error) { return nil, fmt.Errorf("stranded threads: %w", err) }
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	defer s.leave()
	if limit <= 0 {
		limit = 100
	}
	var keys []store.Key
	seen := map[store.Key]bool{}
	now := time.Now()
	err := s.db.View(func(txn *badgerdb.Txn) error {
		for _, status := range []store.Status{store.Running, store.Queued} {
			prefix := statusPrefix(status)
			it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: prefix, PrefetchValues: false})
			for it.Rewind(); it.Valid() && len(keys) < limit; it.Next() {
				k, _, _, err := parseRunRef(bytes.Clone(it.Item().Key()[len(prefix):]))
				if err != nil {
					it.Close()
					return fmt.Errorf("the index of runs holds a malformed key %q", it.Item().Key())
				}
				if seen[k] || s.leases.holds(threadKey(k), now) {
					continue
				}
				seen[k] = true
				keys = append(keys, k)
			}
			it.Close()
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	slices.SortFunc(keys, func(a, b store.Key) int {
		return strings.Compare(a.Scope+"\x00"+a.Workflow+"\x00"+a.Thread, b.Scope+"\x00"+b.Workflow+"\x00"+b.Thread)
	})
	return keys, nil
}
