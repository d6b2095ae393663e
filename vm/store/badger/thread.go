package badger

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/vm/store"
)

// Thread returns a thread with its checkpoint.
func (s *Store) Thread(ctx context.Context, k store.Key) (store.Thread, error) {
	if err := s.enter(ctx); err != nil {
		return store.Thread{}, fmt.Errorf("thread %s: %w", keyName(k), err)
	}
	defer s.leave()
	tk := threadKey(k)
	var t store.Thread
	err := s.db.View(func(txn *badgerdb.Txn) error {
		h, err := threadHeader(txn, tk)
		if err != nil {
			return err
		}
		t, err = readThread(txn, k, tk, &h)
		return err
	})
	if err != nil {
		return store.Thread{}, fmt.Errorf("thread %s: %w", keyName(k), err)
	}
	return t, nil
}

// Threads lists a scope's threads, or one workflow's, from their headers
// alone. The cursor is opaque: it encodes the workflow and thread id of
// the last thread of the page.
func (s *Store) Threads(ctx context.Context, scope, workflow string, p store.Page) ([]store.Thread, string, error) {
	fail := func(err error) ([]store.Thread, string, error) {
		return nil, "", fmt.Errorf("threads of %q: %w", scope, err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	defer s.leave()
	scoped := appendEscaped([]byte{prefixThread}, scope)
	prefix := scoped
	if workflow != "" {
		prefix = appendEscaped(bytes.Clone(scoped), workflow)
	}
	start := prefix
	if p.After != "" {
		c, err := base64.RawURLEncoding.DecodeString(p.After)
		start = append(bytes.Clone(scoped), c...)
		if err != nil || !bytes.HasPrefix(start, prefix) || !isThreadCursor(c) {
			return fail(fmt.Errorf("%w %q", store.ErrCursor, p.After))
		}
	}
	limit := pageLimit(p)
	var threads []store.Thread
	var next string
	err := s.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{
			Prefix: prefix, PrefetchValues: true, PrefetchSize: min(limit+1, 100),
		})
		defer it.Close()
		for it.Seek(start); it.Valid(); it.Next() {
			item := it.Item()
			if p.After != "" && bytes.Equal(item.Key(), start) {
				continue
			}
			if len(threads) == limit {
				last := threadKey(threads[len(threads)-1].Key)
				next = base64.RawURLEncoding.EncodeToString(last[len(scoped)-1:])
				return nil
			}
			k, h, err := itemThread(item)
			if err != nil {
				return err
			}
			threads = append(threads, thread(k, &h))
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return threads, next, nil
}

// isThreadCursor reports whether c is what Threads' cursors encode: a
// workflow and a thread id, escaped, and nothing after them.
func isThreadCursor(c []byte) bool {
	_, rest, err := cutEscaped(c)
	if err == nil {
		_, rest, err = cutEscaped(rest)
	}
	return err == nil && len(rest) == 0
}

// pageLimit is the number of items a page asks for.
func pageLimit(p store.Page) int {
	if p.Limit <= 0 {
		return 100
	}
	return p.Limit
}

// DeleteThread removes a thread, its lease, its events and its runs. The
// thread is gone when its transaction commits; its events and runs are
// removed after it, in batches (a crash in between leaves them to the next
// Sweep).
func (s *Store) DeleteThread(ctx context.Context, k store.Key) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("delete thread %s: %w", keyName(k), err)
	}
	defer s.leave()
	tk := threadKey(k)
	var gen uint64
	err := s.leases.with(tk, func(sl *slot) error {
		err := s.update(ctx, func(txn *badgerdb.Txn) error {
			h, err := threadHeader(txn, tk)
			if err != nil {
				return err
			}
			gen = h.Gen
			return unlink(txn, tk, &h)
		})
		if err == nil {
			sl.owner = "" // the lease goes with the thread
		}
		sl.head = nil
		return err
	})
	if err == nil {
		s.hub.Changed(k)
		_, err = s.purge(ctx, k, gen)
	}
	if err != nil {
		return fmt.Errorf("delete thread %s: %w", keyName(k), err)
	}
	return nil
}

// unlink deletes a thread's header, its checkpoint and its wake time, and
// records that its generation's events, deltas and runs are to be removed.
func unlink(txn *badgerdb.Txn, tk []byte, h *header) error {
	if h.WakeAt != 0 {
		if err := txn.Delete(wakeKey(h.WakeAt, tk)); err != nil {
			return err
		}
	}
	gen := h.Gen
	for _, p := range []byte{prefixThread, prefixFrame} {
		if err := txn.Delete(key(p, tk)); err != nil {
			return err
		}
	}
	return txn.Set(key(prefixDeleted, tk, be64(gen)), nil)
}

// purgeChunk is how many runs one transaction of purge removes.
const purgeChunk = 256

// purge removes the events, frame deltas and runs of a generation of an
// unlinked thread, then the record that they were to be removed. It
// returns how many events it removed.
func (s *Store) purge(ctx context.Context, k store.Key, gen uint64) (int, error) {
	tk := threadKey(k)
	events, err := s.deleteKeys(ctx, eventPrefix(tk, gen), nil)
	if err != nil {
		return events, err
	}
	if _, err := s.deleteKeys(ctx, deltaPrefix(tk, gen), nil); err != nil {
		return events, err
	}
	if _, err := s.deleteKeys(ctx, startedPrefix(tk, gen), nil); err != nil {
		return events, err
	}
	runs := runPrefix(tk, gen)
	for {
		var done bool
		err := s.update(ctx, func(txn *badgerdb.Txn) error {
			it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: runs, PrefetchValues: true, PrefetchSize: 100})
			defer it.Close()
			n := 0
			for it.Rewind(); it.Valid() && n < purgeChunk; it.Next() {
				item := it.Item()
				id := string(item.Key()[len(runs):])
				var r store.Run
				if err := item.Value(func(v []byte) (err error) {
					r, err = decodeRun(k, id, v)
					return err
				}); err != nil {
					return err
				}
				if err := txn.Delete(statusKey(r.Status, tk, gen, id)); err != nil {
					return err
				}
				if err := txn.Delete(item.KeyCopy(nil)); err != nil {
					return err
				}
				n++
			}
			done = n == 0
			return nil
		})
		if err != nil {
			return events, err
		}
		if done {
			break
		}
		if err := ctx.Err(); err != nil {
			return events, err
		}
	}
	err = s.update(ctx, func(txn *badgerdb.Txn) error {
		return txn.Delete(key(prefixDeleted, tk, be64(gen)))
	})
	return events, err
}

// deleteKeys deletes the keys under prefix, in order, until stop says to
// stop at one (nil: all of them), in write batches, and returns how many it
// deleted. It is for keys nothing writes any more: it does not detect
// conflicts.
func (s *Store) deleteKeys(ctx context.Context, prefix []byte, stop func(k []byte) bool) (int, error) {
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	n := 0
	err := s.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			if stop != nil && stop(k) {
				return nil
			}
			if err := wb.Delete(bytes.Clone(k)); err != nil {
				return err
			}
			n++
			if n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := wb.Flush(); err != nil {
		return 0, err
	}
	return n, nil
}

// Events returns up to limit events with Seq > after (all of them when
// limit <= 0). store.ErrExpired when the event after the cursor was removed
// by retention.
func (s *Store) Events(ctx context.Context, k store.Key, after uint64, limit int) ([]store.Event, error) {
	return s.threadEvents(ctx, k, "events", func(h *header) (from, to uint64, err error) {
		if after+1 < h.FirstSeq {
			return 0, 0, fmt.Errorf("%w: events before %d were removed, the cursor is %d", store.ErrExpired, h.FirstSeq, after)
		}
		to = h.LastSeq
		if limit > 0 && uint64(limit) < to-min(after, to) {
			to = after + uint64(limit)
		}
		return after + 1, to, nil
	})
}

// LastEvents returns the thread's last n events still kept, in order.
func (s *Store) LastEvents(ctx context.Context, k store.Key, n int) ([]store.Event, error) {
	return s.threadEvents(ctx, k, "last events", func(h *header) (from, to uint64, err error) {
		if n <= 0 || h.LastSeq == 0 {
			return 1, 0, nil
		}
		from = h.FirstSeq
		if h.LastSeq-from >= uint64(n) {
			from = h.LastSeq - uint64(n) + 1
		}
		return from, h.LastSeq, nil
	})
}

// threadEvents reads the events from..to of thread k that span picks from
// its header; none when from > to. what names the read in errors.
func (s *Store) threadEvents(ctx context.Context, k store.Key, what string, span func(*header) (from, to uint64, err error)) ([]store.Event, error) {
	if err := s.enter(ctx); err != nil {
		return nil, fmt.Errorf("%s of %s: %w", what, keyName(k), err)
	}
	defer s.leave()
	tk := threadKey(k)
	var events []store.Event
	err := s.db.View(func(txn *badgerdb.Txn) error {
		h, err := threadHeader(txn, tk)
		if err != nil {
			return err
		}
		from, to, err := span(&h)
		if err != nil || from > to {
			return err
		}
		events, err = readEvents(txn, eventPrefix(tk, h.Gen), from, to)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s of %s: %w", what, keyName(k), err)
	}
	return events, nil
}

// readEvents reads the events from..to of one generation of a thread,
// which must all be there.
func readEvents(txn *badgerdb.Txn, prefix []byte, from, to uint64) ([]store.Event, error) {
	n := int(to - from + 1)
	events := make([]store.Event, 0, n)
	it := txn.NewIterator(badgerdb.IteratorOptions{
		Prefix: prefix, PrefetchValues: true, PrefetchSize: min(n, 100),
	})
	defer it.Close()
	want := from
	for it.Seek(eventKey(prefix, from)); it.Valid() && want <= to; it.Next() {
		item := it.Item()
		if seq := eventSeq(item.Key()); seq != want {
			return nil, fmt.Errorf("event %d is missing", want)
		}
		var e store.Event
		if err := item.Value(func(v []byte) (err error) {
			e, err = decodeEvent(want, v)
			return err
		}); err != nil {
			return nil, fmt.Errorf("event %d: %w", want, err)
		}
		events = append(events, e)
		want++
	}
	if want <= to {
		return nil, fmt.Errorf("event %d is missing", want)
	}
	return events, nil
}

// CountThreads counts the threads by status, across scopes: one pass over
// the thread headers, which are small, never their frames or events.
func (s *Store) CountThreads(ctx context.Context) (map[store.Status]int, error) {
	if err := s.enter(ctx); err != nil {
		return nil, fmt.Errorf("count threads: %w", err)
	}
	defer s.leave()
	counts := map[store.Status]int{}
	err := s.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte{prefixThread}, PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			_, h, err := itemThread(it.Item())
			if err != nil {
				return fmt.Errorf("thread header %q: %w", it.Item().Key(), err)
			}
			if h.Status != "" {
				counts[h.Status]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count threads: %w", err)
	}
	return counts, nil
}
