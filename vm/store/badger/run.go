package badger

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/vm/store"
)

// Run returns a run of a thread by id.
func (s *Store) Run(ctx context.Context, k store.Key, id string) (store.Run, error) {
	if err := s.enter(ctx); err != nil {
		return store.Run{}, fmt.Errorf("run %q of %s: %w", id, keyName(k), err)
	}
	defer s.leave()
	tk := threadKey(k)
	var r store.Run
	cached, known := s.leases.head(tk)
	err := s.db.View(func(txn *badgerdb.Txn) error {
		h := cached
		if !known {
			var err error
			if h, err = threadHeader(txn, tk); err != nil {
				return err
			}
		}
		var found bool
		var err error
		if r, found, err = readRun(txn, tk, h.Gen, id); err == nil && !found {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("run %q of %s: %w", id, keyName(k), err)
	}
	return r, nil
}

// Enqueue writes a queued run of an existing thread, synced as a Commit.
func (s *Store) Enqueue(ctx context.Context, k store.Key, r store.Run) error {
	fail := func(err error) error { return fmt.Errorf("enqueue run %q on %s: %w", r.ID, keyName(k), err) }
	if r.Status != store.Queued || r.ID == "" {
		return fail(fmt.Errorf("a queued run needs an id and the status %q", store.Queued))
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	defer s.leave()
	tk := threadKey(k)
	err := s.update(ctx, func(txn *badgerdb.Txn) error {
		h, err := threadHeader(txn, tk)
		if err != nil {
			return err
		}
		r.Key = k
		return s.putRun(txn, tk, h.Gen, &r, true)
	})
	if err == nil {
		err = s.sync(false) // the client is told the run is queued: it must survive
	}
	if err != nil {
		return fail(err)
	}
	s.hub.Changed(k)
	return nil
}

// Runs lists the runs with a status, ordered by thread and run id; the
// cursor is opaque.
func (s *Store) Runs(ctx context.Context, status store.Status, p store.Page) ([]store.Run, string, error) {
	fail := func(err error) ([]store.Run, string, error) {
		return nil, "", fmt.Errorf("runs %s: %w", status, err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	defer s.leave()
	prefix := statusPrefix(status)
	start := prefix
	if p.After != "" {
		c, err := base64.RawURLEncoding.DecodeString(p.After)
		if err == nil {
			_, _, _, err = parseRunRef(c)
		}
		if err != nil {
			return fail(fmt.Errorf("%w %q", store.ErrCursor, p.After))
		}
		start = append(bytes.Clone(prefix), c...)
	}
	limit := pageLimit(p)
	var runs []store.Run
	var next string
	err := s.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: prefix})
		defer it.Close()
		var last []byte
		for it.Seek(start); it.Valid(); it.Next() {
			ik := it.Item().Key()
			if p.After != "" && bytes.Equal(ik, start) {
				continue
			}
			if len(runs) == limit {
				next = base64.RawURLEncoding.EncodeToString(last[len(prefix):])
				return nil
			}
			k, gen, id, err := parseRunRef(ik[len(prefix):])
			if err != nil {
				return fmt.Errorf("the index of runs holds a malformed key %q", ik)
			}
			r, found, err := readRun(txn, threadKey(k), gen, id)
			if err != nil {
				return err
			}
			if !found || r.Status != status {
				return fmt.Errorf("the index of runs names run %q of %s, which is not %s", id, keyName(k), status)
			}
			runs = append(runs, r)
			last = bytes.Clone(ik)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return runs, next, nil
}

// ThreadRuns lists a thread's runs newest first, from the index of its
// runs by start time: a page reads the runs it lists. The cursor is
// opaque: the index key of the page's last run, after the thread's
// prefix.
func (s *Store) ThreadRuns(ctx context.Context, k store.Key, p store.Page) ([]store.Run, string, error) {
	fail := func(err error) ([]store.Run, string, error) {
		return nil, "", fmt.Errorf("runs of %s: %w", keyName(k), err)
	}
	var after []byte
	if p.After != "" {
		c, err := base64.RawURLEncoding.DecodeString(p.After)
		if err != nil || len(c) < 8 {
			return fail(fmt.Errorf("%w %q", store.ErrCursor, p.After))
		}
		after = c
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	defer s.leave()
	tk := threadKey(k)
	limit := pageLimit(p)
	var runs []store.Run
	var next string
	err := s.db.View(func(txn *badgerdb.Txn) error {
		h, found, err := readHeader(txn, tk)
		if err != nil || !found {
			return err
		}
		prefix := startedPrefix(tk, h.Gen)
		start := append(bytes.Clone(prefix), after...)
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(start); it.Valid(); it.Next() {
			ik := it.Item().Key()
			if after != nil && bytes.Equal(ik, start) {
				continue
			}
			if len(runs) == limit {
				last := startedKey(tk, h.Gen, runs[len(runs)-1].Started, runs[len(runs)-1].ID)
				next = base64.RawURLEncoding.EncodeToString(last[len(prefix):])
				return nil
			}
			if len(ik) < len(prefix)+8 {
				return fmt.Errorf("the index of runs by start time holds a malformed key %q", ik)
			}
			id := string(ik[len(prefix)+8:])
			r, found, err := readRun(txn, tk, h.Gen, id)
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("the index of runs by start time names run %q, which is not there", id)
			}
			r.Input = nil
			runs = append(runs, r)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return runs, next, nil
}

// wakeKey is the key of the wake time of thread tk, ms in Unix
// milliseconds: the keys of prefixWake sort by time.
func wakeKey(ms uint64, tk []byte) []byte {
	return key(prefixWake, be64(ms), tk)
}

// Due lists the threads whose wake time is at or before now, earliest
// first.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]store.Key, error) {
	fail := func(err error) ([]store.Key, error) { return nil, fmt.Errorf("due threads: %w", err) }
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	defer s.leave()
	if limit <= 0 {
		limit = 100
	}
	upTo := uint64(max(now.UnixMilli(), 0))
	var keys []store.Key
	err := s.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte{prefixWake}})
		defer it.Close()
		for it.Rewind(); it.Valid() && len(keys) < limit; it.Next() {
			k := it.Item().Key()[1:]
			if len(k) < 8 {
				return fmt.Errorf("malformed wake record %q", it.Item().Key())
			}
			if binary.BigEndian.Uint64(k[:8]) > upTo {
				break
			}
			tk, _, err := parseThreadKey(k[8:])
			if err != nil {
				return err
			}
			keys = append(keys, tk)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return keys, nil
}
