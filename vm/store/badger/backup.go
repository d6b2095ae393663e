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
)

// backupMagic starts every backup: what it is and the version of its
// envelope. Badger's backup stream follows, the store's format version
// among its keys.
const backupMagic = "aguic store backup 1\n"

// Backup writes a full backup of the store to w while it keeps serving: a
// consistent snapshot as of the call.
func (s *Store) Backup(ctx context.Context, w io.Writer) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("backup %s: %w", s.name, err)
	}
	defer s.leave()
	cw := ctxWriter{ctx, w}
	if _, err := io.WriteString(cw, backupMagic); err != nil {
		return fmt.Errorf("backup %s: %w", s.name, err)
	}
	if _, err := s.db.Backup(cw, 0); err != nil {
		return fmt.Errorf("backup %s: %w", s.name, err)
	}
	return nil
}

// Restore loads a backup that Backup wrote into the store, which must be
// empty (fresh from Open on a new directory, or in memory): it refuses a
// store that holds anything. It first copies the backup into a temporary
// file, checking every record and the format version, so that a malformed
// or truncated backup, or a cancelled ctx, leaves the store empty and
// usable; only then does it load the copy. Operations called while it
// loads wait for it.
func (s *Store) Restore(ctx context.Context, r io.Reader) error {
	fail := func(err error) error { return fmt.Errorf("restore %s: %w", s.name, err) }
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	err := s.checkEmpty()
	s.leave()
	if err != nil {
		return fail(err)
	}
	f, err := spool(ctx, r)
	if err != nil {
		return fail(err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fail(ErrClosed)
	}
	if err := s.checkEmpty(); err != nil {
		return fail(err)
	}
	// The format version that Open wrote comes back with the backup.
	if err := s.db.DropAll(); err != nil {
		return fail(err)
	}
	if err := s.db.Load(f, 256); err != nil {
		return fail(err)
	}
	if err := s.checkFormat(); err != nil { // a backup of format 1 is migrated
		return fail(err)
	}
	// Tokens go on above those of the store the backup was taken from.
	if err := s.startTokens(); err != nil {
		return fail(err)
	}
	if err := s.db.Sync(); err != nil {
		return fail(err)
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
		return errors.New("the store is not empty: restore into a new directory")
	}
	return nil
}

// maxChunk bounds the size of one record of a backup stream.
const maxChunk = 1 << 30

// spool copies the Badger stream of a backup into a temporary file,
// checking its envelope, the framing and decoding of every record and the
// store format, and returns the file positioned at its start. A failing
// DB.Load leaves Badger's transaction timestamps waiting forever, so
// nothing it could fail on may reach it.
func spool(ctx context.Context, r io.Reader) (_ *os.File, err error) {
	br := bufio.NewReaderSize(ctxReader{ctx, r}, 64<<10)
	magic := make([]byte, len(backupMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != backupMagic {
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
	case format != 1 && format != formatVersion:
		return nil, fmt.Errorf("the backup has format %d, this aguic reads formats 1 and %d", format, formatVersion)
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

// ctxWriter fails its writes once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (w ctxWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	return w.w.Write(p)
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
