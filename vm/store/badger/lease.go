package badger

import (
	"context"
	"errors"
	"fmt"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/vm/store"
)

// A lease is current while its owner and token are the ones in the thread's
// lease record. Expiry only decides whether another owner may take the
// lease over: until one does, an expired lease still commits, renews and
// releases. The token starts at the thread's generation and Acquire
// increments it, so tokens only grow, across a thread's deletion and
// re-creation too (a new generation is larger than any token of the old).

// Acquire takes the thread's lease, creating the thread when it does not
// exist. The owner of an unexpired lease may acquire it again; that
// fences out its previous lease.
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
	defer s.leave()
	tk := threadKey(k)
	var out store.Lease
	err := s.update(ctx, func(txn *badgerdb.Txn) error {
		now := time.Now().UTC()
		h, found, err := readHeader(txn, tk)
		if err != nil {
			return err
		}
		var l lease
		if found {
			var held bool
			if l, held, err = readLease(txn, tk); err != nil {
				return err
			}
			if !held {
				l.Token = h.Gen - 1
			}
			if l.Owner != "" && l.Owner != owner && l.Expires.After(now) {
				return store.ErrBusy
			}
		} else {
			// A generation larger than every commit timestamp so far.
			h = header{Gen: txn.ReadTs() + 1, Created: now, Updated: now}
			if err := txn.Set(key(prefixThread, tk), encodeHeader(&h)); err != nil {
				return err
			}
			l.Token = h.Gen - 1
		}
		l = lease{Owner: owner, Token: l.Token + 1, Expires: now.Add(ttl)}
		out = store.Lease{Key: k, Owner: l.Owner, Token: l.Token, Expires: l.Expires, Version: h.Version}
		return txn.Set(key(prefixLease, tk), encodeLease(&l))
	})
	if err != nil {
		return fail(err)
	}
	return out, nil
}

// Renew extends the lease to now+ttl while it is the thread's current one.
func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	fail := func(err error) (store.Lease, error) {
		return store.Lease{}, fmt.Errorf("renew %s: %w", keyName(l.Key), err)
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	defer s.leave()
	tk := threadKey(l.Key)
	out := l
	err := s.update(ctx, func(txn *badgerdb.Txn) error {
		cur, err := currentLease(txn, tk, l)
		if err != nil {
			return err
		}
		cur.Expires = time.Now().UTC().Add(ttl)
		out.Expires = cur.Expires
		return txn.Set(key(prefixLease, tk), encodeLease(&cur))
	})
	if err != nil {
		return fail(err)
	}
	return out, nil
}

// Release gives the lease up while it is the thread's current one.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("release %s: %w", keyName(l.Key), err)
	}
	defer s.leave()
	tk := threadKey(l.Key)
	err := s.update(ctx, func(txn *badgerdb.Txn) error {
		cur, err := currentLease(txn, tk, l)
		if err != nil {
			return err
		}
		cur = lease{Token: cur.Token}
		return txn.Set(key(prefixLease, tk), encodeLease(&cur))
	})
	if err != nil {
		return fmt.Errorf("release %s: %w", keyName(l.Key), err)
	}
	return nil
}

// currentLease reads the thread's lease record and checks that l is it:
// store.ErrLeaseLost when not.
func currentLease(txn *badgerdb.Txn, tk []byte, l store.Lease) (lease, error) {
	cur, found, err := readLease(txn, tk)
	if err != nil {
		return cur, err
	}
	if !found || cur.Owner == "" || cur.Owner != l.Owner || cur.Token != l.Token {
		return cur, store.ErrLeaseLost
	}
	return cur, nil
}
