package badger

import (
	"context"
	"fmt"

	badgerdb "github.com/dgraph-io/badger/v4"
)

// ReleaseAll gives up every lease the database holds and returns how many
// it released. Only one process can open a Badger directory, so the leases
// found when it opens belong to a process that stopped without releasing
// them (a crash): call ReleaseAll right after Open, before anything runs,
// so that recovery can take those threads at once instead of waiting for
// the leases to expire. Tokens keep growing, so the dead process's leases
// stay fenced out.
func (s *Store) ReleaseAll(ctx context.Context) (int, error) {
	if err := s.enter(ctx); err != nil {
		return 0, fmt.Errorf("release leases: %w", err)
	}
	defer s.leave()
	n := 0
	err := s.update(ctx, func(txn *badgerdb.Txn) error {
		n = 0
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte{prefixLease}})
		defer it.Close()
		var keys [][]byte
		var vals [][]byte
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			l, err := decodeLease(v)
			if err != nil {
				return err
			}
			if l.Owner == "" {
				continue
			}
			free := lease{Token: l.Token}
			keys = append(keys, item.KeyCopy(nil))
			vals = append(vals, encodeLease(&free))
		}
		for i := range keys {
			if err := txn.Set(keys[i], vals[i]); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("release leases: %w", err)
	}
	return n, nil
}
