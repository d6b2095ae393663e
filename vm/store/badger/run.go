package badger

import (
	"bytes"
	"context"
	"fmt"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/vm/store"
)

// Run returns a run by id.
func (s *Store) Run(ctx context.Context, id string) (store.Run, error) {
	if err := s.enter(ctx); err != nil {
		return store.Run{}, fmt.Errorf("run %q: %w", id, err)
	}
	defer s.leave()
	var r runRecord
	err := s.db.View(func(txn *badgerdb.Txn) error {
		var found bool
		var err error
		if r, found, err = readRun(txn, id); err == nil && !found {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("run %q: %w", id, err)
	}
	return r.Run, nil
}

// Runs lists the runs with a status, ordered by id; the cursor is the id
// of the last run of the page.
func (s *Store) Runs(ctx context.Context, status store.Status, p store.Page) ([]store.Run, string, error) {
	fail := func(err error) ([]store.Run, string, error) {
		return nil, "", fmt.Errorf("runs %s: %w", status, err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	defer s.leave()
	prefix := statusKey(status, "")
	start := statusKey(status, p.After)
	limit := pageLimit(p)
	var runs []store.Run
	var next string
	err := s.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(start); it.Valid(); it.Next() {
			k := it.Item().Key()
			if p.After != "" && bytes.Equal(k, start) {
				continue
			}
			if len(runs) == limit {
				next = runs[len(runs)-1].ID
				return nil
			}
			id := string(k[len(prefix):])
			r, found, err := readRun(txn, id)
			if err != nil {
				return err
			}
			if !found || r.Status != status {
				return fmt.Errorf("the index of runs names run %q, which is not %s", id, status)
			}
			runs = append(runs, r.Run)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return runs, next, nil
}
