package badger

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/vm/store"
)

// sweepChunk is how many thread headers Sweep reads per transaction.
const sweepChunk = 1000

// Sweep applies r as of now. It deletes finished, failed and cancelled
// threads not updated for r.FinishedTTL whose lease is not held, with
// their events and runs, and removes the oldest events of the other
// threads beyond r.MaxEvents (raising their FirstSeq). It also finishes
// deletions that a crash or a cancelled context interrupted. The events it
// reports include those of the threads it deleted.
//
// Sweep works thread by thread, each in transactions of its own, beside
// running commits; a thread changed while Sweep looks at it is judged
// again in the transaction that changes it.
func (s *Store) Sweep(ctx context.Context, r store.Retention, now time.Time) (events, threads int, err error) {
	if err := s.enter(ctx); err != nil {
		return 0, 0, fmt.Errorf("sweep: %w", err)
	}
	defer s.leave()
	events, err = s.resumePurges(ctx)
	if err != nil {
		return events, 0, fmt.Errorf("sweep: %w", err)
	}
	if r.MaxEvents <= 0 && r.FinishedTTL <= 0 {
		return events, 0, nil
	}
	prefix := []byte{prefixThread}
	var after []byte
	for {
		var keys []store.Key
		var headers []header
		err := s.db.View(func(txn *badgerdb.Txn) error {
			it := txn.NewIterator(badgerdb.IteratorOptions{
				Prefix: prefix, PrefetchValues: true, PrefetchSize: 100,
			})
			defer it.Close()
			start := prefix
			if after != nil {
				start = after
			}
			for it.Seek(start); it.Valid() && len(keys) < sweepChunk; it.Next() {
				item := it.Item()
				if after != nil && bytes.Equal(item.Key(), after) {
					continue
				}
				k, h, err := itemThread(item)
				if err != nil {
					return err
				}
				keys, headers = append(keys, k), append(headers, h)
			}
			return nil
		})
		if err != nil {
			return events, threads, fmt.Errorf("sweep: %w", err)
		}
		if len(keys) == 0 {
			return events, threads, nil
		}
		after = key(prefixThread, threadKey(keys[len(keys)-1]))
		for i, k := range keys {
			if err := ctx.Err(); err != nil {
				return events, threads, fmt.Errorf("sweep: %w", err)
			}
			h := &headers[i]
			n, deleted := 0, false
			if expired(h, r, now) {
				n, deleted, err = s.expire(ctx, k, r, now)
			}
			if !deleted && err == nil && r.MaxEvents > 0 {
				n, err = s.trim(ctx, k, h, r.MaxEvents)
			}
			events += n
			if deleted {
				threads++
			}
			if err != nil {
				return events, threads, fmt.Errorf("sweep %s: %w", keyName(k), err)
			}
		}
	}
}

// expired reports whether a thread has ended and been idle for r.FinishedTTL.
func expired(h *header, r store.Retention, now time.Time) bool {
	switch h.Status {
	case store.Finished, store.Failed, store.Cancelled:
		return r.FinishedTTL > 0 && now.Sub(h.Updated) >= r.FinishedTTL
	}
	return false
}

// expire deletes a thread that has expired, unless its lease is held, and
// returns how many events it removed.
func (s *Store) expire(ctx context.Context, k store.Key, r store.Retention, now time.Time) (events int, deleted bool, err error) {
	tk := threadKey(k)
	var gen uint64
	err = s.leases.with(tk, func(sl *slot) error {
		if sl.owner != "" && sl.expires.After(now) {
			return nil
		}
		err := s.update(ctx, func(txn *badgerdb.Txn) error {
			deleted = false
			h, found, err := readHeader(txn, tk)
			if err != nil || !found || !expired(&h, r, now) {
				return err
			}
			gen, deleted = h.Gen, true
			return unlink(txn, tk, &h)
		})
		if deleted && err == nil {
			sl.owner = "" // the lease goes with the thread
		}
		sl.head = nil
		return err
	})
	if err != nil || !deleted {
		return 0, false, err
	}
	events, err = s.purge(ctx, k, gen)
	return events, true, err
}

// trim raises the thread's FirstSeq so that it keeps the last keep events, and
// removes the events before it (also those a crash left behind). h is the
// header as Sweep read it.
func (s *Store) trim(ctx context.Context, k store.Key, h *header, keep int) (int, error) {
	tk := threadKey(k)
	gen, first := h.Gen, h.FirstSeq
	if h.LastSeq-h.FirstSeq >= uint64(keep) && h.FirstSeq > 0 {
		err := s.leases.with(tk, func(sl *slot) error {
			sl.head = nil
			return s.update(ctx, func(txn *badgerdb.Txn) error {
				h, found, err := readHeader(txn, tk)
				if err != nil || !found {
					return err
				}
				gen, first = h.Gen, h.FirstSeq
				if h.LastSeq-h.FirstSeq < uint64(keep) {
					return nil
				}
				h.FirstSeq = h.LastSeq - uint64(keep) + 1
				first = h.FirstSeq
				return txn.Set(key(prefixThread, tk), encodeHeader(&h))
			})
		})
		if err != nil {
			return 0, err
		}
	}
	if first <= 1 {
		return 0, nil
	}
	return s.deleteKeys(ctx, eventPrefix(tk, gen), func(k []byte) bool {
		return eventSeq(k) >= first
	})
}

// resumePurges finishes the deletions that were interrupted and returns
// how many events it removed.
func (s *Store) resumePurges(ctx context.Context) (int, error) {
	type pending struct {
		k   store.Key
		gen uint64
	}
	var todo []pending
	err := s.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte{prefixDeleted}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k, rest, err := parseThreadKey(it.Item().Key()[1:])
			if err != nil || len(rest) != 8 {
				return fmt.Errorf("malformed deletion record %q", it.Item().Key())
			}
			todo = append(todo, pending{k, binary.BigEndian.Uint64(rest)})
		}
		return nil
	})
	events := 0
	for _, p := range todo {
		if err != nil {
			break
		}
		var n int
		n, err = s.purge(ctx, p.k, p.gen)
		events += n
	}
	return events, err
}
