package badger

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// logFiles syncs the files that Badger appends a commit to: the write-ahead
// log of the memtable ("00042.mem") and, for values of valueThreshold
// bytes and more, the value log ("000007.vlog"). Badger numbers both kinds
// of file in the order it creates them, and only ever appends to the
// newest of each.
//
// Badger's own DB.Sync holds the database's lock while it syncs the
// memtable's log. Badger's writer takes that lock exclusively for each batch
// it writes, and readers queue behind the waiting writer, so for the length
// of each sync no commit could be written and no thread read: concurrent
// commits could not even reach the log that their shared sync was to write.
// Syncing the files through descriptors of its own, the store takes no lock
// of Badger's. A sync writes a file's pages whether they were written with
// write(2) or, as Badger writes them, through a shared memory mapping.
//
// Only the syncGroup's leader calls sync, one round at a time.
type logFiles struct {
	dir       string
	mem, vlog logFile
	// bigValues is set when a value went to the value log since the last
	// sync; then the value log is synced too.
	bigValues atomic.Bool
}

// logFile is the newest file of one kind that a sync reached.
type logFile struct {
	format string // the name of file n
	n      int
	f      *os.File // nil while there is none
}

// valueThreshold is Badger's ValueThreshold on disk: a value of this many
// bytes or more is written to the value log, and its key points to it.
const valueThreshold = 4 << 10

// openLogFiles finds the newest memtable log and value log in dir.
func openLogFiles(dir string) (*logFiles, error) {
	l := &logFiles{dir: dir, mem: logFile{format: "%05d.mem"}, vlog: logFile{format: "%06d.vlog"}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		for _, f := range []*logFile{&l.mem, &l.vlog} {
			ext := filepath.Ext(f.format)
			if n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ext)); err == nil && strings.HasSuffix(e.Name(), ext) && n > f.n {
				f.n = n
			}
		}
	}
	for _, f := range []*logFile{&l.mem, &l.vlog} {
		if f.n == 0 {
			continue
		}
		if f.f, err = os.Open(filepath.Join(dir, fmt.Sprintf(f.format, f.n))); err != nil {
			l.close()
			return nil, err
		}
	}
	return l, nil
}

// sync makes what Badger has written to its logs durable.
func (l *logFiles) sync() error {
	if err := l.mem.sync(l.dir); err != nil {
		return err
	}
	if l.bigValues.Swap(false) {
		if err := l.vlog.sync(l.dir); err != nil {
			l.bigValues.Store(true)
			return err
		}
	}
	return nil
}

// sync syncs the newest file of its kind, and first the one before it
// when Badger has moved on to a new one since the last sync.
func (f *logFile) sync(dir string) error {
	for {
		next, err := os.Open(filepath.Join(dir, fmt.Sprintf(f.format, f.n+1)))
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return err
		}
		if f.f != nil {
			if err := syncData(f.f); err != nil {
				next.Close()
				return fmt.Errorf("%s: %w", fmt.Sprintf(f.format, f.n), err)
			}
			f.f.Close()
		}
		f.f, f.n = next, f.n+1
	}
	if f.f == nil {
		return nil
	}
	if err := syncData(f.f); err != nil {
		return fmt.Errorf("%s: %w", fmt.Sprintf(f.format, f.n), err)
	}
	return nil
}

func (l *logFiles) close() {
	for _, f := range []*logFile{&l.mem, &l.vlog} {
		if f.f != nil {
			f.f.Close()
			f.f = nil
		}
	}
}
