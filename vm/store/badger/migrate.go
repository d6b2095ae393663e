package badger

import (
	"context"
	"encoding/binary"
	"fmt"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/vm/store"
)

// The prefixes of format 1 that format 2 no longer uses.
const (
	v1Thread = 't' // header: status, hash, run id, sequence numbers, version, gen, times
	v1Frame  = 'f' // checkpoint: frame and wait
	v1Run    = 'r' // run by id: thread, gen, status, times, outcome, error
	v1Status = 'x' // index of runs by status: <status> <run id>
	v1Runs   = 'q' // index of a thread's runs: <tk> <gen> <run id>
)

// migrate1 moves a store of format 1 to format 2 (migrate2 then goes on
// to format 3). It copies every header,
// checkpoint and run to its format 2 keys, which no format 1 key shares,
// then records format 2, then drops the format 1 keys: a crash at any
// point leaves a store that the next Open migrates again, or, once the
// format says 2, whose leftover format 1 keys it drops. Runs of format 1
// have no input; recovery resumes a running one from its frame.
func (s *Store) migrate1() error {
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	err := s.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte{v1Thread}, PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			tk := it.Item().Key()[1:]
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			h, err := decodeHeader1(v)
			if err != nil {
				return fmt.Errorf("thread header %q: %w", tk, err)
			}
			var frame []byte
			if _, err := value(txn, append([]byte{v1Frame}, tk...), func(v []byte) error {
				d := decoder{b: v}
				frame, h.Wait = d.bytes(), d.bytes()
				return d.done()
			}); err != nil {
				return fmt.Errorf("thread checkpoint %q: %w", tk, err)
			}
			if err := wb.Set(key(prefixThread, tk), encodeHeader(&h)); err != nil {
				return err
			}
			if frame != nil {
				if err := wb.Set(key(prefixFrame, tk), frame); err != nil {
					return err
				}
			}
		}
		rt := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte{v1Run}, PrefetchValues: true, PrefetchSize: 100})
		defer rt.Close()
		for rt.Rewind(); rt.Valid(); rt.Next() {
			id := string(rt.Item().Key()[1:])
			v, err := rt.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			r, gen, err := decodeRun1(id, v)
			if err != nil {
				return fmt.Errorf("run %q: %w", id, err)
			}
			tk := threadKey(r.Key)
			if err := wb.Set(runKey(tk, gen, id), encodeRun(&r)); err != nil {
				return err
			}
			if err := wb.Set(statusKey(r.Status, tk, gen, id), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = wb.Flush()
	}
	if err != nil {
		return fmt.Errorf("migrate from format 1: %w", err)
	}
	if err := s.setFormat(2); err != nil {
		return fmt.Errorf("migrate from format 1: %w", err)
	}
	return s.dropFormat1()
}

// setFormat records the store's format version.
func (s *Store) setFormat(v uint64) error {
	return s.db.Update(func(txn *badgerdb.Txn) error {
		return txn.Set(metaKey, encoder(nil).uint(v))
	})
}

// migrate2 moves a store of format 2 to format 3: it writes the index of
// every thread's runs by start time, then records format 3. The index keys
// are derived from the run records alone, so a crash before the format is
// recorded leaves a store that the next Open migrates again.
func (s *Store) migrate2() error {
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	err := s.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte{prefixRun}, PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			ik := it.Item().Key()
			k, rest, err := parseThreadKey(ik[1:])
			if err != nil || len(rest) < 8 {
				return fmt.Errorf("malformed run key %q", ik)
			}
			gen, id := binary.BigEndian.Uint64(rest), string(rest[8:])
			var r store.Run
			if err := it.Item().Value(func(v []byte) (err error) {
				r, err = decodeRun(k, id, v)
				return err
			}); err != nil {
				return fmt.Errorf("run %q of %s: %w", id, keyName(k), err)
			}
			if err := wb.Set(startedKey(threadKey(k), gen, r.Started, id), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = wb.Flush()
	}
	if err == nil {
		err = s.setFormat(3)
	}
	if err != nil {
		return fmt.Errorf("migrate from format 2: %w", err)
	}
	return nil
}

// dropFormat1 removes the keys only format 1 used, if any are left.
func (s *Store) dropFormat1() error {
	for _, p := range []byte{v1Thread, v1Frame, v1Run, v1Status, v1Runs} {
		if _, err := s.deleteKeys(context.Background(), []byte{p}, nil); err != nil {
			return fmt.Errorf("drop the keys of format 1: %w", err)
		}
	}
	return nil
}

// decodeHeader1 decodes a thread header of format 1.
func decodeHeader1(b []byte) (header, error) {
	d := decoder{b: b}
	h := header{
		Status: store.Status(d.str()), Hash: d.str(), RunID: d.str(),
		LastSeq: d.uint(), FirstSeq: d.uint(), Version: d.uint(), Gen: d.uint(),
		Created: d.time(), Updated: d.time(),
	}
	return h, d.done()
}

// decodeRun1 decodes a run of format 1 and the generation of its thread.
func decodeRun1(id string, b []byte) (store.Run, uint64, error) {
	d := decoder{b: b}
	r := store.Run{ID: id}
	r.Key = store.Key{Scope: d.str(), Workflow: d.str(), Thread: d.str()}
	gen := d.uint()
	r.Status = store.Status(d.str())
	r.Started, r.Finished = d.time(), d.time()
	r.Outcome, r.Error = d.bytes(), d.str()
	return r, gen, d.done()
}

// hasPrefix reports whether any key starts with one of prefixes.
func (s *Store) hasPrefix(prefixes ...byte) (bool, error) {
	found := false
	err := s.db.View(func(txn *badgerdb.Txn) error {
		for _, p := range prefixes {
			it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte{p}})
			it.Rewind()
			found = found || it.Valid()
			it.Close()
		}
		return nil
	})
	return found, err
}
