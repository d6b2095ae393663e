package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The backup format, version 2. A backup is a header line, then records,
// the last of them the end record:
//
//	backup  = header record* end
//	header  = "aguic store backup 2\n"
//	record  = kind length payload crc
//	kind    = 1 byte: 'S' source, 'T' thread, 'E' event, 'R' run, 'Z' end
//	length  = the payload's length in bytes, a uint, at most 1 GiB
//	crc     = 4 bytes, big-endian: the CRC-32C (Castagnoli) of kind, length and payload
//
// A payload is its record's fields, in the order below, and nothing after
// the last. A field is one of
//
//	uint    an unsigned varint (encoding/binary's uvarint) in its shortest form
//	bytes   a uint length, then that many bytes as they are; a string is the same
//	time    0 for the zero time; or 1, the Unix seconds as a signed varint
//	        (zig-zag, shortest form) and the nanoseconds (below 10⁹) as a uint;
//	        from year 1 to year 9999, read back in UTC
//
// and the records hold
//
//	S source  hash string, source bytes
//	T thread  scope, workflow and thread id strings; status, hash and run id
//	          strings; frame bytes; the number of deltas, a uint, then each
//	          delta as bytes; wait bytes; wake time; FirstSeq, LastSeq and
//	          Version uints; created and updated times
//	E event   seq uint; flags uint (1 silent, 2 hidden); run id string;
//	          time; data bytes
//	R run     id and status strings; started and finished times; outcome
//	          bytes; error string; input bytes
//	Z end     the number of source, thread, event and run records, uints;
//	          the 32 bytes of the SHA-256 of every byte before the end
//	          record, header included
//
// The records come in the order Sink describes: sources by hash, then each
// thread by key, followed by its events FirstSeq..LastSeq and then its runs
// by id; an event or a run belongs to the thread before it, and carries no
// key. Nothing may follow the end record. An empty byte field reads back as
// nil.
//
// Why binary rather than JSON lines: every field comes back byte for byte,
// strings included (JSON would turn a string that is not valid UTF-8 into
// another, and costs a third more for bytes in base64); the length before
// each payload lets a reader bound what it allocates and skip nothing; the
// CRC of each record names the record that is damaged, and the counts and
// the SHA-256 of the end record tell a whole backup from one cut short at a
// record's end or altered. A record holds one item, so a backup streams in
// and out with one record in memory: a thread with 100,000 events is
// 100,001 records. The encoding is canonical (one item, one encoding), and
// its description above is all a program needs to read it.
//
// Stability: users keep backups for years. Any change to the records is a
// new version in the header; a reader refuses a version newer than its
// own, and reads the older ones. Version 1 was Badger's own backup stream
// after the line "aguic store backup 1": only a Badger store restores it
// (package badger), and converts it to this format.
const (
	backupMagic   = "aguic store backup "
	backupVersion = 2
	backupHeader  = "aguic store backup 2\n"

	kindSource = 'S'
	kindThread = 'T'
	kindEvent  = 'E'
	kindRun    = 'R'
	kindEnd    = 'Z'

	// maxRecord bounds the payload of a record.
	maxRecord = 1 << 30

	flagSilent = 1
	flagHidden = 2
)

// The range of the times a backup holds: years 1 to 9999.
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix() - 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encoder is a Sink that writes records.
type encoder struct {
	ctx context.Context
	w   *bufio.Writer
	sum hash.Hash // of everything written
	p   []byte    // the payload being built
}

func newEncoder(ctx context.Context, w io.Writer) *encoder {
	return &encoder{ctx: ctx, w: bufio.NewWriterSize(w, bufSize), sum: sha256.New()}
}

func (e *encoder) write(b []byte) error {
	e.sum.Write(b)
	_, err := e.w.Write(b)
	return err
}

func (e *encoder) header() error {
	if err := e.ctx.Err(); err != nil {
		return err
	}
	return e.write([]byte(backupHeader))
}

// record writes a record of kind with the payload e.p; what names it in
// errors.
func (e *encoder) record(kind byte, what func() string) error {
	if err := e.ctx.Err(); err != nil {
		return err
	}
	if len(e.p) > maxRecord {
		return fmt.Errorf("%s: its record would have %d bytes, more than a backup's records hold (%d)", what(), len(e.p), maxRecord)
	}
	head := binary.AppendUvarint([]byte{kind}, uint64(len(e.p)))
	crc := crc32.Update(crc32.Update(0, castagnoli, head), castagnoli, e.p)
	for _, b := range [][]byte{head, e.p, binary.BigEndian.AppendUint32(nil, crc)} {
		if err := e.write(b); err != nil {
			return err
		}
	}
	return nil
}

func (e *encoder) Source(hash string, src []byte) error {
	e.p = appendBytes(appendString(e.p[:0], hash), src)
	return e.record(kindSource, func() string { return fmt.Sprintf("source %q", hash) })
}

func (e *encoder) Thread(t Thread) error {
	what := func() string { return "thread " + keyName(t.Key) }
	if err := checkTimes(what, t.WakeAt, t.Created, t.Updated); err != nil {
		return err
	}
	b := appendString(appendString(appendString(e.p[:0], t.Scope), t.Workflow), t.Thread)
	b = appendString(appendString(appendString(b, string(t.Status)), t.Hash), t.RunID)
	b = appendUint(appendBytes(b, t.Frame), uint64(len(t.Deltas)))
	for _, d := range t.Deltas {
		b = appendBytes(b, d)
	}
	b = appendTime(appendBytes(b, t.Wait), t.WakeAt)
	b = appendUint(appendUint(appendUint(b, t.FirstSeq), t.LastSeq), t.Version)
	e.p = appendTime(appendTime(b, t.Created), t.Updated)
	return e.record(kindThread, what)
}

func (e *encoder) Event(ev Event) error {
	what := func() string { return fmt.Sprintf("event %d", ev.Seq) }
	if err := checkTimes(what, ev.Time); err != nil {
		return err
	}
	var flags uint64
	if ev.Silent {
		flags |= flagSilent
	}
	if ev.Hidden {
		flags |= flagHidden
	}
	b := appendString(appendUint(appendUint(e.p[:0], ev.Seq), flags), ev.RunID)
	e.p = appendBytes(appendTime(b, ev.Time), ev.Data)
	return e.record(kindEvent, what)
}

func (e *encoder) Run(r Run) error {
	what := func() string { return fmt.Sprintf("run %q of thread %s", r.ID, keyName(r.Key)) }
	if err := checkTimes(what, r.Started, r.Finished); err != nil {
		return err
	}
	b := appendString(appendString(e.p[:0], r.ID), string(r.Status))
	b = appendTime(appendTime(b, r.Started), r.Finished)
	e.p = appendBytes(appendString(appendBytes(b, r.Outcome), r.Error), r.Input)
	return e.record(kindRun, what)
}

// end writes the end record and flushes.
func (e *encoder) end(n counts) error {
	b := appendUint(appendUint(appendUint(appendUint(e.p[:0], n.sources), n.threads), n.events), n.runs)
	e.p = e.sum.Sum(b)
	if err := e.record(kindEnd, func() string { return "the end" }); err != nil {
		return err
	}
	return e.w.Flush()
}

// checkTimes reports an error when a time is outside what a backup holds.
func checkTimes(what func() string, ts ...time.Time) error {
	for _, t := range ts {
		if s := t.Unix(); !t.IsZero() && (s < minTime || s > maxTime) {
			return fmt.Errorf("%s: the time %v is outside the years 1 to 9999 that a backup holds", what(), t)
		}
	}
	return nil
}

func appendUint(b []byte, n uint64) []byte { return binary.AppendUvarint(b, n) }

func appendBytes(b, p []byte) []byte { return append(appendUint(b, uint64(len(p))), p...) }

func appendString(b []byte, s string) []byte { return append(appendUint(b, uint64(len(s))), s...) }

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	return appendUint(binary.AppendVarint(append(b, 1), t.Unix()), uint64(t.Nanosecond()))
}

// decoder reads a backup.
type decoder struct {
	ctx context.Context
	r   *bufio.Reader
	sum hash.Hash // of everything read before the record being read
	rec uint64    // the number of the record being read, from 1
	p   []byte    // its payload
	// The item of the last record read, for messages.
	kind     byte
	decoded  bool   // its fields were read
	inThread bool   // a thread came
	thread   Key    // the current thread
	seq      uint64 // an event's
	name     string // a source's hash, a run's id
}

func newDecoder(ctx context.Context, r io.Reader) *decoder {
	return &decoder{ctx: ctx, r: bufio.NewReaderSize(ctxReader{ctx, r}, bufSize), sum: sha256.New()}
}

// header reads the header line and checks the version.
func (d *decoder) header() error {
	line := make([]byte, 0, 32)
	for len(line) < 32 {
		c, err := d.r.ReadByte()
		if err != nil {
			if cerr := d.ctx.Err(); cerr != nil {
				return cerr
			}
			if err != io.EOF {
				return err
			}
			break
		}
		line = append(line, c)
		if c == '\n' {
			break
		}
	}
	rest, ok := strings.CutPrefix(string(line), backupMagic)
	digits, nl := strings.CutSuffix(rest, "\n")
	v, err := strconv.Atoi(digits)
	if !ok || !nl || err != nil || v < 1 || strconv.Itoa(v) != digits {
		return errors.New("not an aguic store backup")
	}
	switch {
	case v == 1:
		return errors.New("the backup has format 1, Badger's own, which only a Badger store restores: restore it into a Badger data directory and take a new backup there")
	case v > backupVersion:
		return fmt.Errorf("the backup has format %d, newer than this aguic reads (%d)", v, backupVersion)
	}
	d.sum.Write(line)
	return nil
}

// records reads the records after the header into seq, and returns nil
// once the end record proved them all there.
func (d *decoder) records(seq *sequence) error {
	for d.rec = 1; ; d.rec++ {
		if err := d.ctx.Err(); err != nil {
			return err
		}
		kind, err := d.r.ReadByte()
		if err != nil {
			if d.rec == 1 {
				return d.cut(err, "the backup is cut short after its header")
			}
			return d.cut(err, fmt.Sprintf("the backup is cut short after record %d (%s): it has no end record", d.rec-1, d.item()))
		}
		if err := d.record(kind); err != nil {
			return err
		}
		f := fields{b: d.p}
		d.kind, d.decoded = kind, false
		switch kind {
		case kindSource:
			hash, src := f.string(), f.bytes()
			if err := f.done(); err != nil {
				return d.malformed(err)
			}
			d.name, d.decoded = hash, true
			err = seq.Source(hash, src)
		case kindThread:
			t, ferr := threadFields(&f)
			if ferr != nil {
				return d.malformed(ferr)
			}
			d.inThread, d.thread, d.decoded = true, t.Key, true
			err = seq.Thread(t)
		case kindEvent:
			e, ferr := eventFields(&f)
			if ferr != nil {
				return d.malformed(ferr)
			}
			d.seq, d.decoded = e.Seq, true
			err = seq.Event(e)
		case kindRun:
			r, ferr := runFields(&f)
			if ferr != nil {
				return d.malformed(ferr)
			}
			r.Key = d.thread
			d.name, d.decoded = r.ID, true
			err = seq.Run(r)
		case kindEnd:
			return d.end(seq, &f)
		default:
			return fmt.Errorf("%w: record %d is of an unknown kind (0x%02x)", ErrMalformedBackup, d.rec, kind)
		}
		if err != nil {
			if errors.As(err, new(*inconsistency)) {
				return d.malformed(err)
			}
			return fmt.Errorf("record %d (%s): %w", d.rec, d.item(), err)
		}
	}
}

// record reads the rest of a record of kind: its length, its payload into
// d.p and its CRC, which it checks.
func (d *decoder) record(kind byte) error {
	head := []byte{kind}
	var n uint64
	for shift := 0; ; shift += 7 {
		c, err := d.r.ReadByte()
		if err != nil {
			return d.cut(err, fmt.Sprintf("the backup is cut short in record %d", d.rec))
		}
		head = append(head, c)
		if len(head) > 1+binary.MaxVarintLen64 || len(head) == 1+binary.MaxVarintLen64 && c > 1 {
			return fmt.Errorf("%w: record %d has a malformed length", ErrMalformedBackup, d.rec)
		}
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if c == 0 && len(head) > 2 {
				return fmt.Errorf("%w: record %d has a malformed length", ErrMalformedBackup, d.rec)
			}
			break
		}
	}
	if n > maxRecord {
		return fmt.Errorf("%w: record %d claims %d bytes, more than a record holds (%d)", ErrMalformedBackup, d.rec, n, maxRecord)
	}
	// The payload grows as it arrives, so a damaged length costs no more
	// memory than the bytes that are there.
	d.p = d.p[:0]
	for len(d.p) < int(n) {
		chunk := min(int(n)-len(d.p), 1<<20)
		d.p = slices.Grow(d.p, chunk)
		got, err := io.ReadFull(d.r, d.p[len(d.p):len(d.p)+chunk])
		d.p = d.p[:len(d.p)+got]
		if err != nil {
			return d.cut(err, fmt.Sprintf("the backup is cut short in record %d", d.rec))
		}
	}
	var crc [4]byte
	if _, err := io.ReadFull(d.r, crc[:]); err != nil {
		return d.cut(err, fmt.Sprintf("the backup is cut short in record %d", d.rec))
	}
	if binary.BigEndian.Uint32(crc[:]) != crc32.Update(crc32.Update(0, castagnoli, head), castagnoli, d.p) {
		return fmt.Errorf("%w: record %d is damaged (its checksum does not match)", ErrMalformedBackup, d.rec)
	}
	if kind != kindEnd {
		d.sum.Write(head)
		d.sum.Write(d.p)
		d.sum.Write(crc[:])
	}
	return nil
}

// end checks the end record against what came before it, and that nothing
// follows it.
func (d *decoder) end(seq *sequence, f *fields) error {
	want := counts{f.uint(), f.uint(), f.uint(), f.uint()}
	sum := f.fixed(sha256.Size)
	if err := f.done(); err != nil {
		return d.malformed(err)
	}
	if err := seq.finish(); err != nil {
		return d.malformed(err)
	}
	if got := seq.n; got != want {
		return fmt.Errorf("%w: the end record counts %d sources, %d threads, %d events and %d runs; the backup holds %d, %d, %d and %d",
			ErrMalformedBackup, want.sources, want.threads, want.events, want.runs, got.sources, got.threads, got.events, got.runs)
	}
	if !bytes.Equal(sum, d.sum.Sum(nil)) {
		return fmt.Errorf("%w: the backup's checksum does not match its end record: it was altered", ErrMalformedBackup)
	}
	if _, err := d.r.ReadByte(); err != io.EOF {
		if cerr := d.ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: data follows the end record", ErrMalformedBackup)
	}
	return nil
}

// cut explains a read that failed: ctx's error, the reader's, or msg when
// the backup ended.
func (d *decoder) cut(err error, msg string) error {
	if cerr := d.ctx.Err(); cerr != nil {
		return cerr
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: %s", ErrMalformedBackup, msg)
	}
	return err
}

// malformed says that the record being read holds err.
func (d *decoder) malformed(err error) error {
	return fmt.Errorf("%w: record %d (%s): %v", ErrMalformedBackup, d.rec, d.item(), err)
}

// item names the item of the last record read.
func (d *decoder) item() string {
	of := ""
	if d.inThread {
		of = " of thread " + keyName(d.thread)
	}
	switch {
	case d.kind == kindEnd:
		return "the end record"
	case !d.decoded:
		switch d.kind {
		case kindSource:
			return "a source"
		case kindThread:
			if d.inThread {
				return "a thread after thread " + keyName(d.thread)
			}
			return "a thread"
		case kindEvent:
			return "an event" + of
		case kindRun:
			return "a run" + of
		}
		return "a record"
	case d.kind == kindSource:
		return fmt.Sprintf("source %q", d.name)
	case d.kind == kindThread:
		return "thread " + keyName(d.thread)
	case d.kind == kindEvent:
		return fmt.Sprintf("event %d%s", d.seq, of)
	}
	return fmt.Sprintf("run %q%s", d.name, of)
}

func threadFields(f *fields) (Thread, error) {
	var t Thread
	t.Scope, t.Workflow, t.Thread = f.string(), f.string(), f.string()
	t.Status, t.Hash, t.RunID = Status(f.string()), f.string(), f.string()
	t.Frame = f.bytes()
	if n := f.uint(); n > uint64(len(f.b)) {
		f.fail("it claims more deltas than it holds")
	} else if n > 0 {
		t.Deltas = make([][]byte, n)
		for i := range t.Deltas {
			t.Deltas[i] = f.bytes()
		}
	}
	t.Wait, t.WakeAt = f.bytes(), f.time()
	t.FirstSeq, t.LastSeq, t.Version = f.uint(), f.uint(), f.uint()
	t.Created, t.Updated = f.time(), f.time()
	return t, f.done()
}

func eventFields(f *fields) (Event, error) {
	var e Event
	e.Seq = f.uint()
	flags := f.uint()
	if flags&^(flagSilent|flagHidden) != 0 {
		f.fail(fmt.Sprintf("unknown event flags %#x", flags))
	}
	e.Silent, e.Hidden = flags&flagSilent != 0, flags&flagHidden != 0
	e.RunID, e.Time, e.Data = f.string(), f.time(), f.bytes()
	return e, f.done()
}

func runFields(f *fields) (Run, error) {
	var r Run
	r.ID, r.Status = f.string(), Status(f.string())
	r.Started, r.Finished = f.time(), f.time()
	r.Outcome, r.Error, r.Input = f.bytes(), f.string(), f.bytes()
	return r, f.done()
}

// fields reads the fields of a payload; the first error sticks.
type fields struct {
	b   []byte
	err error
}

func (f *fields) fail(msg string) {
	if f.err == nil {
		f.err, f.b = errors.New(msg), nil
	}
}

// varint reads the bytes of a varint in its shortest form.
func (f *fields) varint() []byte {
	for i, c := range f.b {
		switch {
		case i == binary.MaxVarintLen64-1 && c > 1, i > 0 && c == 0:
			f.fail("a malformed number")
			return nil
		case c < 0x80:
			v := f.b[:i+1]
			f.b = f.b[i+1:]
			return v
		}
	}
	f.fail("a field runs past the end of its record")
	return nil
}

func (f *fields) uint() uint64 {
	if f.err != nil {
		return 0
	}
	n, _ := binary.Uvarint(f.varint())
	return n
}

func (f *fields) int() int64 {
	if f.err != nil {
		return 0
	}
	n, _ := binary.Varint(f.varint())
	return n
}

// raw reads a length-prefixed field, without copying it.
func (f *fields) raw() []byte {
	n := f.uint()
	if n > uint64(len(f.b)) {
		f.fail("a field runs past the end of its record")
	}
	if f.err != nil {
		return nil
	}
	b := f.b[:n]
	f.b = f.b[n:]
	return b
}

func (f *fields) bytes() []byte {
	if b := f.raw(); len(b) > 0 {
		return bytes.Clone(b)
	}
	return nil
}

func (f *fields) string() string { return string(f.raw()) }

// fixed reads n bytes.
func (f *fields) fixed(n int) []byte {
	if len(f.b) < n {
		f.fail("a field runs past the end of its record")
	}
	if f.err != nil {
		return nil
	}
	b := f.b[:n]
	f.b = f.b[n:]
	return b
}

func (f *fields) time() time.Time {
	if f.err != nil {
		return time.Time{}
	}
	if len(f.b) == 0 {
		f.fail("a field runs past the end of its record")
		return time.Time{}
	}
	present := f.b[0]
	f.b = f.b[1:]
	switch present {
	case 0:
		return time.Time{}
	case 1:
	default:
		f.fail("a malformed time")
		return time.Time{}
	}
	sec, nsec := f.int(), f.uint()
	if f.err != nil {
		return time.Time{}
	}
	if sec < minTime || sec > maxTime || nsec >= 1e9 || sec == minTime && nsec == 0 {
		f.fail("a malformed time")
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// done reports the first error, or one when bytes are left over.
func (f *fields) done() error {
	if f.err == nil && len(f.b) > 0 {
		f.fail("bytes follow the last field")
	}
	return f.err
}

// inconsistency is an item out of order, or at odds with its thread.
type inconsistency struct{ msg string }

func (e *inconsistency) Error() string { return e.msg }
