// Package badger is the embedded default store.Store: threads, event logs,
// runs and workflow sources in a Badger database in one directory, or in
// memory for tests, and the threads' leases in memory.
//
// Open takes a directory that no other process (and no other Open) uses;
// the Store it returns is safe for concurrent use until Close. An
// operation reads and writes a thread in one Badger transaction, retried
// when it conflicts with a concurrent one (DeleteThread and Sweep use
// several, each complete in itself), so what the store package promises
// holds: sequence numbers are gap-free and a commit is all or nothing. A
// commit holds its thread's lease slot for the whole of its transaction,
// so a lease taken over fences out every commit of its former holder.
// Since only one process opens the directory, a lease never outlives the
// process that holds it: leases are not stored (lease.go), and a store
// opens with every lease free. keys.go describes the layout of keys.
//
// Durability: a Commit that returned has been synced to disk, unless it
// was Lazy, so a power loss cannot lose it (a lazy one survives a crash of
// the process, not a power loss). Concurrent commits share one sync (group
// commit). PutSource is not synced on its own; it becomes durable with the
// next commit, or at Close, and a process crash (unlike a power loss)
// loses none of it. Options.SyncWrites makes every write sync before it
// returns instead.
//
// Beyond store.Store, a Store streams online backups in the portable format
// (Backup, over Dump), restores them into an empty store (Restore, over
// Load; backups of format 1, Badger's own stream, too), turns a backup of
// format 1 into the portable format (Convert) and reclaims value-log space
// (RunGC, StartGC). The layout of keys and records is versioned: Open refuses a
// directory written in another format.
package badger

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/ristretto/v2/z"

	"github.com/aguic/aguic/vm/store"
)

// Errors of this package, beyond those of package store.
var (
	// ErrInUse is returned by Open when another process, or another Store
	// in this one, has the directory open.
	ErrInUse = errors.New("the directory is in use by another aguic process")
	// ErrClosed is returned by every operation after Close.
	ErrClosed = errors.New("the store is closed")
)

// Options configure Open.
type Options struct {
	// Dir is the database directory, created when missing. Ignored when
	// InMemory.
	Dir string
	// InMemory keeps everything in memory and nothing on disk (tests).
	InMemory bool
	// SyncWrites syncs every write before it returns, leases and sources
	// included, instead of syncing once per Commit.
	SyncWrites bool
	// Logger receives Badger's warnings and errors (its informational
	// messages at debug level); nil means slog.Default().
	Logger *slog.Logger
}

// Store is a store.Store on a Badger database.
type Store struct {
	db   *badgerdb.DB
	name string // the directory, for messages
	log  *slog.Logger
	// logs, when not nil, are the files a Commit syncs (on disk, without
	// SyncWrites).
	logs   *logFiles
	syncs  syncGroup
	leases leases
	hub    store.Hub // watches, cancel requests and tasks: the process is the only one (bus.go)
	// maxValue is the largest value Badger takes: in memory, values must
	// fit its value threshold; on disk, a value-log file.
	maxValue int

	// mu is held shared by every operation and exclusively by Close and
	// Restore, which must not run beside anything else.
	mu     sync.RWMutex
	closed bool
	done   chan struct{} // closed by Close
}

var _ store.Store = (*Store)(nil)

// Open opens the store in opts.Dir, or in memory. It fails with ErrInUse
// when the directory is open elsewhere, and when the directory holds a
// store of another format or something that is not a store.
func Open(opts Options) (*Store, error) {
	s := &Store{name: opts.Dir, log: opts.Logger, done: make(chan struct{})}
	if s.log == nil {
		s.log = slog.Default()
	}
	if opts.InMemory {
		s.name = "(in memory)"
		s.maxValue = 1 << 20
	} else {
		s.maxValue = valueLogFileSize
		if opts.Dir == "" {
			return nil, errors.New("open store: no directory given")
		}
	}
	db, err := badgerdb.Open(tuned(opts, logger{s.log}))
	if err != nil && (errors.Is(err, z.NewFile) || strings.HasSuffix(err.Error(), z.NewFile.Error())) {
		// A crash between creating a memtable or value-log file and its
		// first write leaves it empty, and Badger's Open fails on it
		// (dgraph-io/badger#2207) after giving the file its size: the
		// second Open reads it as the empty file it is.
		db, err = badgerdb.Open(tuned(opts, logger{s.log}))
	}
	if err != nil {
		// Badger's message for a held lock is not a sentinel error.
		if strings.Contains(err.Error(), "Another process is using this Badger database") {
			return nil, fmt.Errorf("open store %s: %w", s.name, ErrInUse)
		}
		return nil, fmt.Errorf("open store %s: %w", s.name, err)
	}
	s.db = db
	if err := s.checkFormat(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", s.name, err)
	}
	if err := s.startTokens(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", s.name, err)
	}
	if !opts.InMemory && !opts.SyncWrites {
		if s.logs, err = openLogFiles(opts.Dir); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", s.name, err)
		}
	}
	return s, nil
}

// valueLogFileSize is the size of a value-log file, small so that RunGC
// finds files worth rewriting.
const valueLogFileSize = 64 << 20

// The sizes of Badger's memtables and tables on disk. Badger builds every
// table (a memtable flushed, or the output of a compaction) in a buffer in
// memory that holds the table's blocks before and after compression, and
// keeps up to eight of these buffers pooled for the next tables, each as
// large as the largest table it built; it frees one for every two seconds
// in which no table was built. Tables of Badger's default sizes double at each level, so that
// memory grew with the database, about 4.6 KB of RSS per parked conversation
// (docs/performance.md, "Parked conversations"). With tables of one size at
// every level and a small memtable, a buffer stays under 7 MiB whatever the
// size of the database.
const (
	// diskMemTableSize is the memtable on disk: a transaction may hold
	// about 15% of it (600 KB) in keys and values up to 4 KiB; larger values
	// go to the value log and count for a few bytes only.
	diskMemTableSize = 4 << 20
	// memoryMemTableSize is the memtable in memory, where values of up to
	// 1 MiB stay in the memtable, which must hold them.
	memoryMemTableSize = 8 << 20
	// tableSize is the size of a table on disk, compressed, at every level.
	tableSize = 512 << 10
)

// tuned returns Badger options for a small footprint: a small memtable
// (two of them), small tables of one size at every level, small caches and
// value-log files, two compactors and no metrics. The tables a close
// flushes are compacted before it returns, rather than by the next open
// while the server starts to serve. Badger's defaults take
// about 90 MB of heap and 16 goroutines; these a fraction of it, bounded
// whatever the size of the database. In memory there is no value log, and
// a value may have up to 1 MiB.
func tuned(opts Options, log badgerdb.Logger) badgerdb.Options {
	o := badgerdb.DefaultOptions(opts.Dir)
	memTable := int64(diskMemTableSize)
	if opts.InMemory {
		o = badgerdb.DefaultOptions("")
		memTable = memoryMemTableSize
	} else {
		o = o.WithValueThreshold(valueThreshold)
	}
	// Badger has no With method for it: tables of one size at every level,
	// rather than twice as large at each level down.
	o.TableSizeMultiplier = 1
	return o.
		WithInMemory(opts.InMemory).
		WithSyncWrites(opts.SyncWrites && !opts.InMemory).
		WithLogger(log).
		WithMetricsEnabled(false).
		WithMemTableSize(memTable).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithBaseTableSize(tableSize).
		WithBaseLevelSize(8 << 20).
		WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(4 << 20).
		WithNumCompactors(2).
		WithCompactL0OnClose(true).
		WithNumGoroutines(2).
		WithValueLogFileSize(valueLogFileSize)
}

// checkFormat writes the format version into a new store, checks it in
// an existing one, and migrates a store of an earlier format.
func (s *Store) checkFormat() error {
	var format uint64
	err := s.update(context.Background(), func(txn *badgerdb.Txn) error {
		item, err := txn.Get(metaKey)
		if errors.Is(err, badgerdb.ErrKeyNotFound) {
			if empty, err := isEmpty(txn); err != nil {
				return err
			} else if !empty {
				return errors.New("the directory holds a Badger database that is not an aguic store")
			}
			return txn.Set(metaKey, encoder(nil).uint(formatVersion))
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			d := decoder{b: v}
			if format = d.uint(); d.done() != nil || format < 1 || format > formatVersion {
				return fmt.Errorf("the store has format %d, this aguic reads formats 1 to %d", format, formatVersion)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if format == 1 {
		err = s.migrate1()
	} else if left, err1 := s.hasPrefix(v1Thread, v1Frame, v1Run, v1Status, v1Runs); err1 != nil || left {
		err = cmp.Or(err1, s.dropFormat1())
	}
	if err != nil {
		return err
	}
	if format >= 1 && format <= 2 {
		if err := s.migrate2(); err != nil {
			return err
		}
	}
	return s.dropLeaseRecords()
}

// isEmpty reports whether the database holds no key but the store's own
// (metaKey, tokenKey).
func isEmpty(txn *badgerdb.Txn) (bool, error) {
	it := txn.NewIterator(badgerdb.IteratorOptions{})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		if it.Item().Key()[0] != prefixMeta {
			return false, nil
		}
	}
	return true, nil
}

// ReleaseMemory asks the kernel to take back the pages of the store's
// files that the process holds resident: Badger maps its tables and logs
// into memory, and what it read or wrote of them stays resident until the
// kernel needs the memory. A server calls it when it idles, so that its
// RSS follows what it holds in memory rather than the size of the data
// directory; what is read next comes from the page cache or the disk.
// It does nothing for a store in memory, and on systems other than Linux.
func (s *Store) ReleaseMemory() error {
	if s.db.Opts().InMemory {
		return nil
	}
	if _, err := releaseMapped(s.name); err != nil {
		return fmt.Errorf("release the mapped pages of %s: %w", s.name, err)
	}
	return nil
}

// Close closes the database, after the operations under way.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.done)
	if s.logs != nil {
		s.logs.close()
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.name, err)
	}
	return nil
}

// enter starts an operation: it fails when ctx is done or the store
// closed, and otherwise holds s.mu shared until the caller's s.leave.
func (s *Store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (s *Store) leave() { s.mu.RUnlock() }

// maxAttempts bounds how often update runs a transaction that conflicts.
const maxAttempts = 50

// update runs fn in a read-write transaction and commits it, again when it
// conflicts with a concurrent transaction. fn must not change anything
// outside the transaction that a second run would see.
func (s *Store) update(ctx context.Context, fn func(txn *badgerdb.Txn) error) error {
	for attempt := 1; ; attempt++ {
		txn := s.db.NewTransaction(true)
		err := fn(txn)
		if err == nil {
			err = txn.Commit()
		}
		txn.Discard()
		if err == nil {
			return nil
		}
		if !errors.Is(err, badgerdb.ErrConflict) {
			if errors.Is(err, badgerdb.ErrTxnTooBig) {
				return fmt.Errorf("the write is larger than one transaction can hold: %w", err)
			}
			if msg, _, dump := strings.Cut(err.Error(), ":\n"); dump && strings.Contains(msg, " exceeded ") {
				// Badger's messages about keys and values too large
				// end in a hex dump of them.
				return errors.New(msg)
			}
			return err
		}
		if attempt == maxAttempts {
			return fmt.Errorf("gave up after %d conflicting attempts: %w", attempt, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// A short random pause lets the transactions that collided finish
		// in some order.
		time.Sleep(rand.N(time.Duration(attempt) * 20 * time.Microsecond))
	}
}

// set sets a value that may be large, after checking that Badger takes it.
func (s *Store) set(txn *badgerdb.Txn, k, v []byte) error {
	if len(v) > s.maxValue {
		return fmt.Errorf("a value of %d bytes is more than the store takes (%d)", len(v), s.maxValue)
	}
	if len(v) >= valueThreshold && s.logs != nil {
		s.logs.bigValues.Store(true)
	}
	return txn.Set(k, v)
}

// value reads the value under k into decode; found is false when there is
// no such key.
func value(txn *badgerdb.Txn, k []byte, decode func(v []byte) error) (found bool, err error) {
	item, err := txn.Get(k)
	if errors.Is(err, badgerdb.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, item.Value(decode)
}

// itemThread decodes an item of the thread headers: the thread's key and
// its header.
func itemThread(item *badgerdb.Item) (store.Key, header, error) {
	k, _, err := parseThreadKey(item.Key()[1:])
	if err != nil {
		return store.Key{}, header{}, err
	}
	var h header
	err = item.Value(func(v []byte) (err error) {
		h, err = decodeHeader(v)
		return err
	})
	return k, h, err
}

// threadHeader reads the header of a thread that must exist:
// store.ErrNotFound when it does not.
func threadHeader(txn *badgerdb.Txn, tk []byte) (header, error) {
	h, found, err := readHeader(txn, tk)
	if err == nil && !found {
		err = store.ErrNotFound
	}
	return h, err
}

func readHeader(txn *badgerdb.Txn, tk []byte) (h header, found bool, err error) {
	found, err = value(txn, key(prefixThread, tk), func(v []byte) (err error) {
		h, err = decodeHeader(v)
		return err
	})
	return h, found, err
}

// readRun reads run id of generation gen of thread tk.
func readRun(txn *badgerdb.Txn, tk []byte, gen uint64, id string) (r store.Run, found bool, err error) {
	found, err = value(txn, runKey(tk, gen, id), func(v []byte) (err error) {
		k, _, err := parseThreadKey(tk)
		if err != nil {
			return err
		}
		r, err = decodeRun(k, id, v)
		return err
	})
	return r, found, err
}

// readThread reads the whole thread: its header, its frame and the
// frame's deltas.
func readThread(txn *badgerdb.Txn, k store.Key, tk []byte, h *header) (store.Thread, error) {
	t := thread(k, h)
	if _, err := value(txn, key(prefixFrame, tk), func(v []byte) error {
		t.Frame = bytes.Clone(v)
		return nil
	}); err != nil {
		return t, err
	}
	if h.Deltas == 0 {
		return t, nil
	}
	prefix := deltaPrefix(tk, h.Gen)
	t.Deltas = make([][]byte, h.Deltas)
	for n := range t.Deltas {
		found, err := value(txn, deltaKey(prefix, uint64(n)), func(v []byte) error {
			t.Deltas[n] = bytes.Clone(v)
			return nil
		})
		if err == nil && !found {
			err = errors.New("missing")
		}
		if err != nil {
			return t, fmt.Errorf("frame delta %d: %w", n, err)
		}
	}
	return t, nil
}

// thread is a thread without its frame and deltas.
func thread(k store.Key, h *header) store.Thread {
	return store.Thread{
		Key: k, Status: h.Status, Hash: h.Hash, RunID: h.RunID, Wait: bytes.Clone(h.Wait),
		LastSeq: h.LastSeq, FirstSeq: h.FirstSeq, Version: h.Version,
		Created: h.Created, Updated: h.Updated, WakeAt: wakeTime(h.WakeAt),
	}
}

// wakeTime is a header's WakeAt as a time; zero for none.
func wakeTime(ms uint64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}

// keyName is how messages name a thread, cut short when long.
func keyName(k store.Key) string {
	name := k.Scope + "/" + k.Workflow + "/" + k.Thread
	if len(name) > 100 {
		name = strings.ToValidUTF8(name[:100], "") + "…"
	}
	return fmt.Sprintf("%q", name)
}

// logger passes Badger's messages to slog, its informational ones at debug
// level: they report routine work (replaying, compacting).
type logger struct{ l *slog.Logger }

func (l logger) logf(level slog.Level, format string, args ...any) {
	ctx := context.Background()
	if l.l.Enabled(ctx, level) {
		l.l.Log(ctx, level, strings.TrimSpace(fmt.Sprintf(format, args...)), "component", "badger")
	}
}

func (l logger) Errorf(format string, args ...any)   { l.logf(slog.LevelError, format, args...) }
func (l logger) Warningf(format string, args ...any) { l.logf(slog.LevelWarn, format, args...) }
func (l logger) Infof(format string, args ...any)    { l.logf(slog.LevelDebug, format, args...) }
func (l logger) Debugf(format string, args ...any)   { l.logf(slog.LevelDebug-4, format, args...) }
