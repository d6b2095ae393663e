package badger

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	badgerdb "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"google.golang.org/protobuf/proto"

	"github.com/aguic/aguic/vm/store"
)

// Backups are in the format of package store, the same for every store:
// Backup writes it (store.WriteBackup of Dump), and Restore reads it
// (store.ReadBackup into Load), so a backup of this store restores into
// any other, and the other way round. Restore also reads the backups that
// earlier versions of aguic wrote, of format 1: legacyMagic, then Badger's
// own backup stream; Convert turns one into the portable format.

// legacyMagic starts a backup of format 1. Badger's backup stream follows,
// the store's format version among its keys.
const legacyMagic = "aguic store backup 1\n"

var (
	_ store.Dumper   = (*Store)(nil)
	_ store.Restorer = (*Store)(nil)
)

// Backup writes a full backup of the store to w while it keeps serving: a
// consistent snapshot as of the call, in the format of package store.
func (s *Store) Backup(ctx context.Context, w io.Writer) error {
	if err := store.WriteBackup(ctx, w, s); err != nil {
		return fmt.Errorf("backup %s: %w", s.name, err)
	}
	return nil
}

// Dump gives sink everything the store holds, in the order store.Sink
// describes, from one read transaction: a consistent snapshot while the
// store goes on serving. It holds one item at a time.
func (s *Store) Dump(ctx context.Context, sink store.Sink) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.leave()
	return s.db.View(func(txn *badgerdb.Txn) error {
		if err := dumpSources(ctx, txn, sink); err != nil {
			return err
		}
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte{prefixThread}, PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			k, h, err := itemThread(it.Item())
			if err != nil {
				return fmt.Errorf("thread header %q: %w", it.Item().Key(), err)
			}
			if err := dumpThread(ctx, txn, k, &h, sink); err != nil {
				return err
			}
		}
		return nil
	})
}

// dumpSources gives sink the workflow sources, in order of hash.
func dumpSources(ctx context.Context, txn *badgerdb.Txn, sink store.Sink) error {
	it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte{prefixSource}, PrefetchValues: true, PrefetchSize: 16})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		src, err := it.Item().ValueCopy(nil)
		if err != nil {
			return err
		}
		if err := sink.Source(string(it.Item().Key()[1:]), src); err != nil {
			return err
		}
	}
	return nil
}

// dumpThread gives sink a thread, its events from FirstSeq on (those
// before it are retention's, being removed) and its runs.
func dumpThread(ctx context.Context, txn *badgerdb.Txn, k store.Key, h *header, sink store.Sink) error {
	tk := threadKey(k)
	t, err := readThread(txn, k, tk, h)
	if err != nil {
		return fmt.Errorf("thread %s: %w", keyName(k), err)
	}
	if err := sink.Thread(t); err != nil {
		return err
	}
	if h.LastSeq >= h.FirstSeq && h.FirstSeq > 0 {
		prefix := eventPrefix(tk, h.Gen)
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Seek(eventKey(prefix, h.FirstSeq)); it.Valid(); it.Next() {
			seq := eventSeq(it.Item().Key())
			if seq > h.LastSeq {
				break
			}
			if seq%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			var e store.Event
			if err := it.Item().Value(func(v []byte) (err error) {
				e, err = decodeEvent(seq, v)
				return err
			}); err != nil {
				return fmt.Errorf("event %d of thread %s: %w", seq, keyName(k), err)
			}
			if err := sink.Event(e); err != nil {
				return err
			}
		}
	}
	runs := runPrefix(tk, h.Gen)
	it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: runs, PrefetchValues: true, PrefetchSize: 16})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		id := string(it.Item().Key()[len(runs):])
		var r store.Run
		if err := it.Item().Value(func(v []byte) (err error) {
			r, err = decodeRun(k, id, v)
			return err
		}); err != nil {
			return fmt.Errorf("run %q of thread %s: %w", id, keyName(k), err)
		}
		if err := sink.Run(r); err != nil {
			return err
		}
	}
	return nil
}

// Restore loads a backup into the store, which must be empty (fresh from
// Open on a new directory, or in memory): it refuses a store that holds
// anything. It reads the format of package store, whatever store wrote
// it, and the format 1 that earlier versions of aguic wrote. A malformed
// or truncated backup, or a cancelled ctx, leaves the store empty and
// usable. Operations called while it loads wait for it.
func (s *Store) Restore(ctx context.Context, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	if head, _ := br.Peek(len(legacyMagic)); string(head) == legacyMagic {
		err = s.restoreLegacy(ctx, br)
	} else {
		err = store.ReadBackup(ctx, br, loader(s.load))
	}
	if err != nil {
		return fmt.Errorf("restore %s: %w", s.name, err)
	}
	return nil
}

// Load fills the store, which must be empty, with what fill gives its
// sink; store.Restorer describes it. It writes in batches as the items
// come, and empties the store again when fill fails. Operations called
// while it loads wait for it.
func (s *Store) Load(ctx context.Context, fill func(store.Sink) error) error {
	if err := s.load(ctx, fill); err != nil {
		return fmt.Errorf("restore %s: %w", s.name, err)
	}
	return nil
}

// loader is a store.Restorer that is a function.
type loader func(ctx context.Context, fill func(store.Sink) error) error

func (l loader) Load(ctx context.Context, fill func(store.Sink) error) error { return l(ctx, fill) }

func (s *Store) load(ctx context.Context, fill func(store.Sink) error) (err error) {
	if err := s.enter(ctx); err != nil {
		return err
	}
	err = s.checkEmpty()
	s.leave()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.checkEmpty(); err != nil {
		return err
	}
	// Every restored thread gets one generation, newer than any before:
	// later generations come from commit timestamps that the load's
	// commits have passed it. A generation need only differ from the
	// other lives of its thread's key.
	txn := s.db.NewTransaction(false)
	gen := txn.ReadTs() + 1
	txn.Discard()
	l := &loading{s: s, wb: s.db.NewWriteBatch(), gen: gen}
	err = fill(l)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = l.wb.Flush()
	} else {
		l.wb.Cancel()
	}
	if err == nil {
		err = s.db.Sync()
	}
	if err != nil {
		if cerr := s.clear(); cerr != nil {
			return errors.Join(err, fmt.Errorf("empty the store after the failed restore: %w", cerr))
		}
		return err
	}
	return nil
}

// loading is the sink of a Load: it writes each item to a write batch.
// The items come checked and in order (store.Sink): events and runs are
// the current thread's.
type loading struct {
	s   *Store
	wb  *badgerdb.WriteBatch
	gen uint64
	tk  []byte // the current thread's key
}

// set writes k and v, after checking that Badger takes v.
func (l *loading) set(k, v []byte) error {
	if len(v) > l.s.maxValue {
		return fmt.Errorf("a value of %d bytes is more than the store takes (%d)", len(v), l.s.maxValue)
	}
	if len(v) >= valueThreshold && l.s.logs != nil {
		l.s.logs.bigValues.Store(true)
	}
	return l.wb.Set(k, v)
}

func (l *loading) Source(hash string, src []byte) error {
	return l.set(sourceKey(hash), src)
}

func (l *loading) Thread(t store.Thread) error {
	l.tk = threadKey(t.Key)
	h := header{
		Status: t.Status, Hash: t.Hash, RunID: t.RunID, Wait: t.Wait, Deltas: uint64(len(t.Deltas)),
		LastSeq: t.LastSeq, FirstSeq: t.FirstSeq, Version: t.Version, Gen: l.gen,
		Created: t.Created, Updated: t.Updated,
	}
	if !t.WakeAt.IsZero() {
		h.WakeAt = uint64(max(t.WakeAt.UnixMilli(), 1)) // as Commit keeps it
		if err := l.set(wakeKey(h.WakeAt, l.tk), nil); err != nil {
			return err
		}
	}
	if err := l.set(key(prefixThread, l.tk), encodeHeader(&h)); err != nil {
		return err
	}
	if len(t.Frame) > 0 {
		if err := l.set(key(prefixFrame, l.tk), t.Frame); err != nil {
			return fmt.Errorf("frame: %w", err)
		}
	}
	prefix := deltaPrefix(l.tk, l.gen)
	for n, d := range t.Deltas {
		if err := l.set(deltaKey(prefix, uint64(n)), d); err != nil {
			return fmt.Errorf("frame delta %d: %w", n, err)
		}
	}
	return nil
}

// errNoThread: Load's sink was given an event or a run before any thread,
// which ReadBackup and Copy never do.
var errNoThread = errors.New("an event or a run before any thread")

func (l *loading) Event(e store.Event) error {
	if l.tk == nil {
		return errNoThread
	}
	return l.set(eventKey(eventPrefix(l.tk, l.gen), e.Seq), encodeEvent(&e))
}

func (l *loading) Run(r store.Run) error {
	if l.tk == nil {
		return errNoThread
	}
	if err := l.set(runKey(l.tk, l.gen, r.ID), encodeRun(&r)); err != nil {
		return err
	}
	if err := l.set(startedKey(l.tk, l.gen, r.Started, r.ID), nil); err != nil {
		return err
	}
	return l.set(statusKey(r.Status, l.tk, l.gen, r.ID), nil)
}

// clear empties the store: it drops everything, then writes the store's
// format and a token epoch no lower than the current one, so that tokens
// go on above those granted before. It runs with s.mu held exclusively.
func (s *Store) clear() error {
	if err := s.dropAll(); err != nil {
		return err
	}
	epoch := s.leases.last.Load() >> 40
	return s.update(context.Background(), func(txn *badgerdb.Txn) error {
		if err := txn.Set(metaKey, encoder(nil).uint(formatVersion)); err != nil {
			return err
		}
		return txn.Set(tokenKey, encoder(nil).uint(epoch))
	})
}

// dropAll drops everything the database holds. Badger starts its value
// log files again from the first, so the files that Commit syncs are
// looked up again.
func (s *Store) dropAll() error {
	if err := s.db.DropAll(); err != nil {
		return err
	}
	if s.logs != nil {
		s.logs.close()
		logs, err := openLogFiles(s.name)
		if err != nil {
			return err
		}
		s.logs = logs
	}
	return nil
}

func (s *Store) checkEmpty() error {
	var empty bool
	if err := s.db.View(func(txn *badgerdb.Txn) (err error) {
		empty, err = isEmpty(txn)
		return err
	}); err != nil {
		return err
	}
	if !empty {
		return fmt.Errorf("%w: restore into a new directory", store.ErrNotEmpty)
	}
	return nil
}

// Convert reads a backup of any format Restore reads and writes it to w in
// the format of package store, so that a backup of format 1, which only a
// Badger store restores, can be restored into any store. It restores the
// backup into a temporary store on disk, in a new directory under
// os.TempDir, which it removes after: that takes as much space as the
// store the backup was taken from.
func Convert(ctx context.Context, r io.Reader, w io.Writer) error {
	dir, err := os.MkdirTemp("", "aguic-convert-*")
	if err != nil {
		return fmt.Errorf("convert a backup: %w", err)
	}
	defer os.RemoveAll(dir)
	s, err := Open(Options{Dir: dir})
	if err != nil {
		return fmt.Errorf("convert a backup: %w", err)
	}
	err = s.Restore(ctx, r)
	if err == nil {
		err = s.Backup(ctx, w)
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("convert a backup: %w", err)
	}
	return nil
}

// restoreLegacy restores a backup of format 1. It first copies the backup
// into a temporary file, checking every record and the format version, so
// that a malformed or truncated backup, or a cancelled ctx, leaves the
// store empty and usable; only then does it load the copy.
func (s *Store) restoreLegacy(ctx context.Context, r io.Reader) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	err := s.checkEmpty()
	s.leave()
	if err != nil {
		return err
	}
	f, err := spool(ctx, r)
	if err != nil {
		return err
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.checkEmpty(); err != nil {
		return err
	}
	// Tokens go on above those of this store and of the store the backup
	// was taken from.
	epoch := s.leases.last.Load() >> 40
	// The format version that Open wrote comes back with the backup.
	if err := s.dropAll(); err != nil {
		return err
	}
	if err := s.db.Load(f, 256); err != nil {
		return err
	}
	if err := s.checkFormat(); err != nil { // a backup of format 1 is migrated
		return err
	}
	if err := s.raiseEpoch(epoch); err != nil {
		return err
	}
	if err := s.startTokens(); err != nil {
		return err
	}
	return s.db.Sync()
}

// raiseEpoch sets the token epoch to epoch when it is lower.
func (s *Store) raiseEpoch(epoch uint64) error {
	return s.update(context.Background(), func(txn *badgerdb.Txn) error {
		var stored uint64
		if _, err := value(txn, tokenKey, func(v []byte) error {
			d := decoder{b: v}
			stored = d.uint()
			return d.done()
		}); err != nil {
			return err
		}
		if stored >= epoch {
			return nil
		}
		return txn.Set(tokenKey, encoder(nil).uint(epoch))
	})
}

// maxChunk bounds the size of one record of a backup stream.
const maxChunk = 1 << 30

// spool copies the Badger stream of a backup of format 1 into a temporary
// file, checking its envelope, the framing and decoding of every record and
// the store format, and returns the file positioned at its start. A failing
// DB.Load leaves Badger's transaction timestamps waiting forever, so
// nothing it could fail on may reach it.
func spool(ctx context.Context, r io.Reader) (_ *os.File, err error) {
	br := bufio.NewReaderSize(ctxReader{ctx, r}, 64<<10)
	magic := make([]byte, len(legacyMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != legacyMagic {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errors.New("not an aguic store backup")
	}
	f, err := os.CreateTemp("", "aguic-restore-*")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 64<<10)
	var size [8]byte
	var buf []byte
	format := -1
	for chunk := 1; ; chunk++ {
		if _, err := io.ReadFull(br, size[:]); err == io.EOF {
			break
		} else if err != nil {
			return nil, cutShort(ctx, chunk, err)
		}
		n := binary.LittleEndian.Uint64(size[:])
		if n > maxChunk {
			return nil, fmt.Errorf("malformed backup: record %d has a size of %d bytes", chunk, n)
		}
		buf = slices.Grow(buf[:0], int(n))[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, cutShort(ctx, chunk, err)
		}
		var list pb.KVList
		if err := proto.Unmarshal(buf, &list); err != nil {
			return nil, fmt.Errorf("malformed backup: record %d: %w", chunk, err)
		}
		for _, kv := range list.Kv {
			if len(kv.Key) == 0 {
				return nil, fmt.Errorf("malformed backup: record %d has an empty key", chunk)
			}
			if bytes.Equal(kv.Key, metaKey) && len(kv.Value) > 0 {
				d := decoder{b: kv.Value}
				format = int(d.uint())
				if d.done() != nil {
					return nil, fmt.Errorf("malformed backup: the format version %q", kv.Value)
				}
			}
		}
		w.Write(size[:])
		w.Write(buf)
	}
	switch {
	case format < 0:
		return nil, errors.New("malformed backup: no format version")
	case format < 1 || format > formatVersion:
		return nil, fmt.Errorf("the backup has format %d, this aguic reads formats 1 to %d", format, formatVersion)
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return f, nil
}

// cutShort explains why reading record chunk of a backup failed.
func cutShort(ctx context.Context, chunk int, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("the backup is cut short in record %d", chunk)
	}
	return err
}

// ctxReader fails its reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
