package badger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/vm/store"
)

// Commit writes c in one transaction: it checks the lease and c.Expect,
// appends the events after the thread's last sequence number, marks the
// events of c.Hide hidden, replaces the checkpoint, edits the frame's
// deltas, writes the run, and increments the thread's Version. It returns
// when the transaction is on disk (see the package comment), unless c.Lazy.
//
// c.Run.Key may be left zero: the run belongs to the lease's thread. Hide
// may name events of this commit; it skips events retention removed and
// fails on sequence numbers the thread never had.
func (s *Store) Commit(ctx context.Context, l store.Lease, c store.Commit) (store.Thread, error) {
	fail := func(err error) (store.Thread, error) {
		return store.Thread{}, fmt.Errorf("commit %s: %w", keyName(l.Key), err)
	}
	if r := c.Run; r != nil {
		if r.ID == "" {
			return fail(errors.New("the run has no id"))
		}
		if r.Key != (store.Key{}) && r.Key != l.Key {
			return fail(fmt.Errorf("run %q belongs to thread %s", r.ID, keyName(r.Key)))
		}
	}
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	defer s.leave()
	tk := threadKey(l.Key)
	syncs := !c.Lazy && s.logs != nil
	if syncs {
		s.syncs.writingOne()
	}
	var out store.Thread
	err := s.leases.with(tk, func(sl *slot) error {
		if !sl.held(l) {
			return store.ErrLeaseLost
		}
		var h header
		err := s.update(ctx, func(txn *badgerdb.Txn) error {
			return s.commit(txn, tk, &c, sl.head, &h)
		})
		if err != nil {
			sl.head = nil
			return err
		}
		sl.head = &h
		out = thread(l.Key, &h)
		if c.Release {
			sl.owner = ""
		}
		return nil
	})
	if err != nil {
		if syncs {
			s.syncs.wrote()
		}
		return fail(err)
	}
	if syncs {
		if err := s.sync(true); err != nil {
			return fail(err)
		}
	}
	s.hub.Changed(l.Key)
	return out, nil
}

// Sync makes every commit that returned before it durable.
func (s *Store) Sync(ctx context.Context) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	defer s.leave()
	return s.sync(false)
}

// sync makes what the store wrote so far durable: on disk, without
// SyncWrites, it syncs Badger's logs, in a round shared with concurrent
// callers. announced says that the caller is a commit that announced
// itself to the round (syncGroup.writingOne).
func (s *Store) sync(announced bool) error {
	if s.logs == nil {
		return nil
	}
	if err := s.syncs.run(announced, s.logs.sync); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// commit writes c to thread tk in txn and sets out to the thread's header
// after it. head is the header before it when the thread's slot holds it,
// nil when it is to be read.
func (s *Store) commit(txn *badgerdb.Txn, tk []byte, c *store.Commit, head *header, out *header) error {
	var h header
	if head != nil {
		h = *head
	} else {
		var found bool
		var err error
		if h, found, err = readHeader(txn, tk); err != nil {
			return err
		}
		if !found { // the lease goes with the thread: not reached
			return store.ErrLeaseLost
		}
	}
	if c.Expect != 0 && c.Expect != h.Version {
		return fmt.Errorf("%w: version %d, expected %d", store.ErrConflict, h.Version, c.Expect)
	}
	now := time.Now().UTC()
	if err := s.appendEvents(txn, tk, &h, c.Events, c.Hide); err != nil {
		return err
	}
	if c.Run != nil {
		if err := s.putRun(txn, tk, h.Gen, c.Run, c.NewRun); err != nil {
			return err
		}
	}
	if cp := c.Checkpoint; cp != nil {
		h.Status, h.Hash, h.RunID, h.Wait = cp.Status, cp.Hash, cp.RunID, cp.Wait
		var wake uint64
		if !cp.WakeAt.IsZero() {
			wake = uint64(max(cp.WakeAt.UnixMilli(), 1))
		}
		if wake != h.WakeAt {
			if h.WakeAt != 0 {
				if err := txn.Delete(wakeKey(h.WakeAt, tk)); err != nil {
					return err
				}
			}
			if wake != 0 {
				if err := txn.Set(wakeKey(wake, tk), nil); err != nil {
					return err
				}
			}
			h.WakeAt = wake
		}
		if cp.Frame != nil {
			if err := s.set(txn, key(prefixFrame, tk), cp.Frame); err != nil {
				return err
			}
			if err := trimDeltas(txn, tk, &h, 0); err != nil {
				return err
			}
		}
	}
	if c.Trim {
		if err := trimDeltas(txn, tk, &h, c.Keep); err != nil {
			return err
		}
	}
	if c.Delta != nil {
		if err := s.set(txn, deltaKey(deltaPrefix(tk, h.Gen), h.Deltas), c.Delta); err != nil {
			return fmt.Errorf("frame delta: %w", err)
		}
		h.Deltas++
	}
	h.Version++
	h.Updated = now
	if err := s.set(txn, key(prefixThread, tk), encodeHeader(&h)); err != nil {
		return err
	}
	*out = h
	return nil
}

// appendEvents writes events after h.LastSeq, marks the events of hide
// hidden and updates h's sequence numbers.
func (s *Store) appendEvents(txn *badgerdb.Txn, tk []byte, h *header, events []store.Event, hide []uint64) error {
	prefix := eventPrefix(tk, h.Gen)
	first, last := h.LastSeq+1, h.LastSeq+uint64(len(events))
	if len(hide) > 0 {
		events = slices.Clone(events)
	}
	for _, seq := range hide {
		switch {
		case seq == 0 || seq > last:
			return fmt.Errorf("hide event %d: the thread has no such event", seq)
		case seq >= first:
			events[seq-first].Hidden = true
		case seq >= h.FirstSeq:
			if err := s.hideEvent(txn, eventKey(prefix, seq)); err != nil {
				return fmt.Errorf("hide event %d: %w", seq, err)
			}
		}
		// Below FirstSeq: removed by retention, nothing to hide.
	}
	for i := range events {
		e := &events[i]
		if err := s.set(txn, eventKey(prefix, first+uint64(i)), encodeEvent(e)); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	if len(events) > 0 {
		if h.FirstSeq == 0 {
			h.FirstSeq = first
		}
		h.LastSeq = last
	}
	return nil
}

// hideEvent sets the hidden flag of a stored event.
func (s *Store) hideEvent(txn *badgerdb.Txn, k []byte) error {
	var e store.Event
	found, err := value(txn, k, func(v []byte) (err error) {
		e, err = decodeEvent(0, v)
		return err
	})
	if err != nil || !found || e.Hidden {
		return err
	}
	e.Hidden = true
	return s.set(txn, k, encodeEvent(&e))
}

// putRun writes a run record of generation gen of thread tk and its
// entries in the index of runs by status and in the index of its thread's
// runs by start time, removing the entries of the record it replaces. With isNew, a record already there is store.ErrRunExists.
func (s *Store) putRun(txn *badgerdb.Txn, tk []byte, gen uint64, r *store.Run, isNew bool) error {
	old, found, err := readRun(txn, tk, gen, r.ID)
	if err != nil {
		return err
	}
	if found {
		if isNew {
			return fmt.Errorf("run %q: %w", r.ID, store.ErrRunExists)
		}
		if old.Status != r.Status {
			if err := txn.Delete(statusKey(old.Status, tk, gen, r.ID)); err != nil {
				return err
			}
		}
		if !old.Started.Equal(r.Started) {
			if err := txn.Delete(startedKey(tk, gen, old.Started, r.ID)); err != nil {
				return err
			}
		}
	}
	if err := s.set(txn, runKey(tk, gen, r.ID), encodeRun(r)); err != nil {
		return err
	}
	if !found || !old.Started.Equal(r.Started) {
		if err := txn.Set(startedKey(tk, gen, r.Started, r.ID), nil); err != nil {
			return err
		}
	}
	return txn.Set(statusKey(r.Status, tk, gen, r.ID), nil)
}

// trimDeltas removes the thread's frame deltas from keep on.
func trimDeltas(txn *badgerdb.Txn, tk []byte, h *header, keep int) error {
	if keep < 0 || uint64(keep) > h.Deltas {
		return fmt.Errorf("keep %d frame deltas: the thread has %d", keep, h.Deltas)
	}
	prefix := deltaPrefix(tk, h.Gen)
	for n := uint64(keep); n < h.Deltas; n++ {
		if err := txn.Delete(deltaKey(prefix, n)); err != nil {
			return err
		}
	}
	h.Deltas = uint64(keep)
	return nil
}
