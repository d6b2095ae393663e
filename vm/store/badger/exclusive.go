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
// stay fenced out. It reads every lease and releases the held ones in
// transactions of up to 1,000.
func (s *Store) ReleaseAll(ctx context.Context) (int, error) {
	if err := s.enter(ctx); err != nil {
		return 0, fmt.Errorf("release leases: %w", err)
	}
	defer s.leave()
	var held [][]byte
	err := s.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte{prefixLease}, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			if err := item.Value(func(v []byte) error {
				l, err := decodeLease(v)
				if err == nil && l.Owner != "" {
					held = append(held, item.KeyCopy(nil))
				}
				return err
			}); err != nil {
				return err
			}
		}
		return nil
	})
	n := 0
	for len(held) > 0 && err == nil {
		chunk := held[:min(len(held), sweepChunk)]
		held = held[len(chunk):]
		released := 0
		err = s.update(ctx, func(txn *badgerdb.Txn) error {
			released = 0
			for _, k := range chunk {
				var l lease
				found, err := value(txn, k, func(v []byte) (err error) {
					l, err = decodeLease(v)
					return err
				})
				if err != nil {
					return err
				}
				if !found || l.Owner == "" {
					continue
				}
				l = lease{Token: l.Token}
				if err := txn.Set(k, encodeLease(&l)); err != nil {
					return err
				}
				released++
			}
			return nil
		})
		if err == nil {
			n += released
		}
	}
	if err != nil {
		return n, fmt.Errorf("release leases: %w", err)
	}
	return n, nil
}
