package badger

import (
	"context"
	"fmt"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/vm/store"
)

// PutSource stores a workflow source under its hash, unless the hash is
// stored already.
func (s *Store) PutSource(ctx context.Context, hash string, src []byte) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("put source %q: %w", hash, err)
	}
	defer s.leave()
	k := sourceKey(hash)
	err := s.update(ctx, func(txn *badgerdb.Txn) error {
		_, err := txn.Get(k)
		if err == nil {
			return nil
		}
		if err != badgerdb.ErrKeyNotFound {
			return err
		}
		return s.set(txn, k, src)
	})
	if err != nil {
		return fmt.Errorf("put source %q: %w", hash, err)
	}
	return nil
}

// Source returns the source stored under hash.
func (s *Store) Source(ctx context.Context, hash string) ([]byte, error) {
	if err := s.enter(ctx); err != nil {
		return nil, fmt.Errorf("source %q: %w", hash, err)
	}
	defer s.leave()
	var src []byte
	err := s.db.View(func(txn *badgerdb.Txn) error {
		found, err := value(txn, sourceKey(hash), func(v []byte) error {
			src = append([]byte{}, v...)
			return nil
		})
		if err == nil && !found {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("source %q: %w", hash, err)
	}
	return src, nil
}
