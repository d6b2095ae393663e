package badger

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/aguic/aguic/vm/store"
)

// formatVersion is the version of the key layout and the record encodings
// below, kept under metaKey. Change it with every incompatible change; Open
// refuses a store written in another format.
const formatVersion = 3

// Records are encoded as a sequence of fields: unsigned integers as
// uvarints, strings and byte slices length-prefixed, times as a presence
// byte followed by Unix nanoseconds as a varint. Decoded byte slices are
// copies: Badger's value buffers live only as long as their transaction.

// header is a thread's bookkeeping, kept apart from its checkpoint so that
// listing, leasing and sweeping never read frames.
type header struct {
	Status   store.Status
	Hash     string
	RunID    string
	Wait     []byte // what a suspended run waits for
	Deltas   uint64 // how many frame deltas follow the frame
	LastSeq  uint64
	FirstSeq uint64
	Version  uint64
	Gen      uint64
	Created  time.Time
	Updated  time.Time
	WakeAt   uint64 // Unix milliseconds; 0 for none. Headers written before it end at Updated.
}

var errBadRecord = errors.New("malformed record")

type encoder []byte

func (e encoder) uint(n uint64) encoder { return binary.AppendUvarint(e, n) }

func (e encoder) bytes(b []byte) encoder {
	return append(binary.AppendUvarint(e, uint64(len(b))), b...)
}

func (e encoder) str(s string) encoder {
	return append(binary.AppendUvarint(e, uint64(len(s))), s...)
}

func (e encoder) time(t time.Time) encoder {
	if t.IsZero() {
		return append(e, 0)
	}
	return binary.AppendVarint(append(e, 1), t.UnixNano())
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	d.err, d.b = errBadRecord, nil
}

func (d *decoder) uint() uint64 {
	n, size := binary.Uvarint(d.b)
	if size <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[size:]
	return n
}

func (d *decoder) raw() []byte {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b
}

func (d *decoder) bytes() []byte {
	b := d.raw()
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func (d *decoder) str() string { return string(d.raw()) }

func (d *decoder) time() time.Time {
	if len(d.b) == 0 {
		d.fail()
		return time.Time{}
	}
	present := d.b[0]
	d.b = d.b[1:]
	if present == 0 {
		return time.Time{}
	}
	n, size := binary.Varint(d.b)
	if size <= 0 {
		d.fail()
		return time.Time{}
	}
	d.b = d.b[size:]
	return time.Unix(0, n).UTC()
}

// done reports the first error, or errBadRecord when bytes are left over.
func (d *decoder) done() error {
	if d.err == nil && len(d.b) > 0 {
		return errBadRecord
	}
	return d.err
}

func encodeHeader(h *header) []byte {
	return encoder(make([]byte, 0, 64+len(h.Hash)+len(h.RunID)+len(h.Wait))).
		str(string(h.Status)).str(h.Hash).str(h.RunID).bytes(h.Wait).uint(h.Deltas).
		uint(h.LastSeq).uint(h.FirstSeq).uint(h.Version).uint(h.Gen).
		time(h.Created).time(h.Updated).uint(h.WakeAt)
}

func decodeHeader(b []byte) (header, error) {
	d := decoder{b: b}
	h := header{
		Status: store.Status(d.str()), Hash: d.str(), RunID: d.str(), Wait: d.bytes(), Deltas: d.uint(),
		LastSeq: d.uint(), FirstSeq: d.uint(), Version: d.uint(), Gen: d.uint(),
		Created: d.time(), Updated: d.time(),
	}
	if len(d.b) > 0 {
		h.WakeAt = d.uint()
	}
	return h, d.done()
}

const (
	flagSilent = 1 << iota
	flagHidden
)

// encodeEvent encodes an event without its Seq, which is in its key.
func encodeEvent(e *store.Event) []byte {
	var flags uint64
	if e.Silent {
		flags |= flagSilent
	}
	if e.Hidden {
		flags |= flagHidden
	}
	return encoder(make([]byte, 0, 24+len(e.RunID)+len(e.Data))).
		uint(flags).str(e.RunID).time(e.Time).bytes(e.Data)
}

func decodeEvent(seq uint64, b []byte) (store.Event, error) {
	d := decoder{b: b}
	flags := d.uint()
	e := store.Event{
		Seq: seq, RunID: d.str(), Time: d.time(), Data: d.bytes(),
		Silent: flags&flagSilent != 0, Hidden: flags&flagHidden != 0,
	}
	return e, d.done()
}

// encodeRun encodes a run without its thread and id, which are in its key.
func encodeRun(r *store.Run) []byte {
	return encoder(make([]byte, 0, 32+len(r.Outcome)+len(r.Error)+len(r.Input))).
		str(string(r.Status)).time(r.Started).time(r.Finished).
		bytes(r.Outcome).str(r.Error).bytes(r.Input)
}

func decodeRun(k store.Key, id string, b []byte) (store.Run, error) {
	d := decoder{b: b}
	r := store.Run{ID: id, Key: k}
	r.Status = store.Status(d.str())
	r.Started, r.Finished = d.time(), d.time()
	r.Outcome, r.Error, r.Input = d.bytes(), d.str(), d.bytes()
	return r, d.done()
}
