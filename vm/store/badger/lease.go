package badger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/vm/store"
)

// Leases live in memory, not in the database. Only one process can open a
// Badger directory, so a lease can never be seen by another process, and
// one that a crash cut is gone with its holder: a store opens with every
// lease free, and taking and giving back a lease writes nothing.
//
// A lease is current while its owner and token are the ones of the
// thread's slot. Expiry only decides whether another owner may take the
// lease over: until one does, an expired lease still commits, renews and
// releases. Tokens come from one counter for the whole store, which starts
// each time the store opens above every token an earlier open granted
// (tokenEpoch), so a thread's tokens only grow, across its deletion and
// re-creation and across restarts.

// leases are the held leases of a store's threads.
type leases struct {
	mu    sync.Mutex
	slots map[string]*slot // by thread key; only slots in use
	// recent holds the headers of threads whose slots were dropped
	// lately, for the next slot of the thread to start with: a thread's
	// next turn then reads nothing before its first write. At most
	// recentHeaders; one taken out by a slot is back only when the slot is
	// dropped again, so a header here is always the thread's current one.
	recent map[string]header
	last   atomic.Uint64 // the last token granted
}

// recentHeaders bounds leases.recent (a header takes about 200 bytes).
const recentHeaders = 4096

// slot is one thread's lease. Its mutex is held by every operation that
// reads or changes the lease, and by a Commit for the whole of its
// transaction, so no lease changes hands while a commit made under it is
// being written.
type slot struct {
	mu      sync.Mutex
	gone    bool   // dropped from the map; whoever holds it starts again
	owner   string // "" when the lease is free
	token   uint64
	expires time.Time
	// head, when not nil, is the thread's header as the last transaction
	// made under the slot left it. Every transaction that writes a header
	// runs under its thread's slot and sets or clears head, so a commit
	// under a held lease need not read the header again.
	head *header
}

// with runs fn on the slot of thread tk, locked, and drops the slot when fn
// leaves the lease free.
func (ls *leases) with(tk []byte, fn func(*slot) error) error {
	for {
		ls.mu.Lock()
		sl := ls.slots[string(tk)]
		if sl == nil {
			sl = &slot{}
			if h, ok := ls.recent[string(tk)]; ok {
				sl.head = &h
				delete(ls.recent, string(tk))
			}
			ls.slots[string(tk)] = sl
		}
		ls.mu.Unlock()
		sl.mu.Lock()
		if sl.gone {
			sl.mu.Unlock()
			continue
		}
		err := fn(sl)
		if sl.owner == "" {
			sl.gone = true
			ls.mu.Lock()
			delete(ls.slots, string(tk))
			if sl.head != nil {
				if len(ls.recent) >= recentHeaders {
					for k := range ls.recent { // one, at random
						delete(ls.recent, k)
						break
					}
				}
				ls.recent[string(tk)] = *sl.head
			}
			ls.mu.Unlock()
		}
		sl.mu.Unlock()
		return err
	}
}

// head returns the header of thread tk that its slot keeps, if a lease on
// it is held and the slot has it.
func (ls *leases) head(tk []byte) (h header, ok bool) {
	ls.mu.Lock()
	sl := ls.slots[string(tk)]
	ls.mu.Unlock()
	if sl == nil {
		return header{}, false
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.gone || sl.owner == "" || sl.head == nil {
		return header{}, false
	}
	return *sl.head, true
}

// held reports whether l is the slot's current lease.
func (sl *slot) held(l store.Lease) bool {
	return sl.owner != "" && sl.owner == l.Owner && sl.token == l.Token
}

// tokenKey holds the token epoch: the number of times the store was opened.
// The tokens of an open start at the epoch times 2^40.
var tokenKey = []byte{prefixMeta, 't'}

// startTokens increments the token epoch and starts the store's tokens
// above every token that an earlier open of the store granted.
func (s *Store) startTokens() error {
	var epoch uint64
	err := s.update(context.Background(), func(txn *badgerdb.Txn) error {
		epoch = 0
		if _, err := value(txn, tokenKey, func(v []byte) error {
			d := decoder{b: v}
			epoch = d.uint()
			return d.done()
		}); err != nil {
			return err
		}
		epoch++
		return txn.Set(tokenKey, encoder(nil).uint(epoch))
	})
	if err != nil {
		return fmt.Errorf("lease tokens: %w", err)
	}
	s.leases = leases{slots: map[string]*slot{}, recent: map[string]header{}}
	s.leases.last.Store(epoch << 40)
	return nil
}

// dropLeaseRecords removes the lease records that stores written by
// earlier versions of aguic kept under prefixLease: leases are no longer
// stored, and those records belong to a process that is gone.
func (s *Store) dropLeaseRecords() error {
	if left, err := s.hasPrefix(prefixLease); err != nil || !left {
		return err
	}
	if _, err := s.deleteKeys(context.Background(), []byte{prefixLease}, nil); err != nil {
		return fmt.Errorf("drop lease records: %w", err)
	}
	return nil
}

// Acquire takes the thread's lease, creating the thread when it does not
// exist. The owner of an unexpired lease may acquire it again; that
// fences out its previous lease.
func (s *Store) Acquire(ctx context.Context, k store.Key, owner string, ttl time.Duration) (store.Lease, error) {
	return s.take(ctx, "acquire", k, owner, ttl, func(tk []byte, sl *slot, now time.Time) (header, bool, error) {
		h, err := s.ensureThread(ctx, tk, sl, now)
		return h, err == nil, err
	})
}

// take grants the lease of thread k to owner under the lock of the
// thread's slot, unless another owner holds it unexpired (ErrBusy) or
// thread, called first, says there is nothing to take: it returns the
// thread's header and whether to grant. op names the operation in errors.
func (s *Store) take(ctx context.Context, op string, k store.Key, owner string, ttl time.Duration,
	thread func(tk []byte, sl *slot, now time.Time) (header, bool, error)) (store.Lease, error) {
	fail := func(err error) (store.Lease, error) {
		return store.Lease{}, fmt.Errorf("%s %s: %w", op, keyName(k), err)
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
	err := s.leases.with(tk, func(sl *slot) error {
		now := time.Now().UTC()
		if sl.owner != "" && sl.owner != owner && sl.expires.After(now) {
			return store.ErrBusy
		}
		h, grant, err := thread(tk, sl, now)
		if err != nil || !grant {
			return err
		}
		sl.owner, sl.token, sl.expires = owner, s.leases.last.Add(1), now.Add(ttl)
		out = store.Lease{Key: k, Owner: owner, Token: sl.token, Expires: sl.expires, Version: h.Version}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return out, nil
}

// ensureThread returns the header of thread tk, creating the thread when
// it does not exist, and keeps it in the thread's slot sl.
func (s *Store) ensureThread(ctx context.Context, tk []byte, sl *slot, now time.Time) (header, error) {
	if sl.head != nil {
		return *sl.head, nil
	}
	var h header
	var found bool
	err := s.db.View(func(txn *badgerdb.Txn) (err error) {
		h, found, err = readHeader(txn, tk)
		return err
	})
	if err == nil && !found {
		err = s.update(ctx, func(txn *badgerdb.Txn) (err error) {
			if h, found, err = readHeader(txn, tk); err != nil || found {
				return err
			}
			// A generation larger than every commit timestamp so far.
			h = header{Gen: txn.ReadTs() + 1, Created: now, Updated: now}
			return txn.Set(key(prefixThread, tk), encodeHeader(&h))
		})
	}
	if err != nil {
		return header{}, err
	}
	sl.head = &h
	return h, nil
}

// Renew extends the lease to now+ttl while it is the thread's current one.
func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := s.enter(ctx); err != nil {
		return store.Lease{}, fmt.Errorf("renew %s: %w", keyName(l.Key), err)
	}
	defer s.leave()
	out := l
	err := s.leases.with(threadKey(l.Key), func(sl *slot) error {
		if !sl.held(l) {
			return store.ErrLeaseLost
		}
		sl.expires = time.Now().UTC().Add(ttl)
		out.Expires = sl.expires
		return nil
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("renew %s: %w", keyName(l.Key), err)
	}
	return out, nil
}

// Release gives the lease up while it is the thread's current one.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("release %s: %w", keyName(l.Key), err)
	}
	defer s.leave()
	err := s.leases.with(threadKey(l.Key), func(sl *slot) error {
		if !sl.held(l) {
			return store.ErrLeaseLost
		}
		sl.owner = ""
		return nil
	})
	if err != nil {
		return fmt.Errorf("release %s: %w", keyName(l.Key), err)
	}
	s.hub.Changed(l.Key)
	return nil
}

// holds reports whether a lease on thread tk is held and unexpired at now.
func (ls *leases) holds(tk []byte, now time.Time) bool {
	ls.mu.Lock()
	sl := ls.slots[string(tk)]
	ls.mu.Unlock()
	if sl == nil {
		return false
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return !sl.gone && sl.owner != "" && sl.expires.After(now)
}
