package badger

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/aguic/aguic/vm/store"
)

// The key layout. Every key starts with one byte that says what it holds,
// so that each kind of record is one contiguous, ordered range:
//
//	m                        the store's format version
//	m t                      the lease token epoch (lease.go)
//	s <hash>                 a workflow source
//	h <tk>                   a thread's header (status, wait, sequence numbers, times)
//	g <tk>                   a thread's frame
//	d <tk> <gen> <n>         the frame's delta n (from 0); n is a big-endian uint64
//	e <tk> <gen> <seq>       an event; gen and seq are big-endian uint64
//	u <tk> <gen> <run id>    a run of a thread
//	y <status> <tk> <gen> <run id>  the index of runs by status (empty value)
//	v <tk> <gen> <newest> <run id>  the index of a thread's runs by start time (empty value)
//	z <tk> <gen>             a deleted thread whose events, deltas and runs are still being removed
//
// newest is a run's Started time, in Unix nanoseconds, as a big-endian
// uint64 that orders the latest first: a thread's runs by start time are
// one prefix range, newest first, then by run id, and a page of them costs
// what it lists however many runs the thread has (a conversation has one
// per turn, and a run record holds the turn's input).
//
// Leases are held in memory (lease.go); stores written by earlier versions
// kept them under l, which Open removes. Format 1 kept headers under t, checkpoints under f, runs under r by run
// id alone, their status index under x and a thread's runs under q; format
// 2 had no index of runs by start time. Open migrates such a store
// (migrate.go).
//
// tk is the thread key: scope, workflow and thread id, each escaped (a 0x00
// byte becomes 0x00 0xff) and ended by 0x00 0x01. The encoding is
// prefix-free and keeps byte order, so a scope's threads, or one workflow's,
// are a prefix range ordered by workflow then thread id, and no two keys can
// be confused whatever bytes the names hold. Statuses in the run index are
// encoded the same way.
//
// gen is the generation of a thread: a number that the thread gets when it
// is created, larger than every generation before it (the threads a
// restore loads share one). Events and the run index
// carry it so that a thread deleted and created again under the same key
// never sees, and never loses, the events of its previous life while those
// are still being removed.
const (
	prefixMeta    = 'm'
	prefixSource  = 's'
	prefixThread  = 'h'
	prefixFrame   = 'g'
	prefixLease   = 'l' // no longer written
	prefixEvent   = 'e'
	prefixDelta   = 'd'
	prefixRun     = 'u'
	prefixStatus  = 'y'
	prefixStarted = 'v'
	prefixDeleted = 'z'
	prefixWake    = 'w' // wake time (8 bytes, big-endian Unix milliseconds), then the thread key
)

var metaKey = []byte{prefixMeta}

// appendEscaped appends s, escaped and terminated.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		b = append(b, s[i])
		if s[i] == 0 {
			b = append(b, 0xff)
		}
	}
	return append(b, 0, 1)
}

var errBadKey = errors.New("malformed key")

// cutEscaped reads one escaped component from the start of b and returns it
// and what follows it.
func cutEscaped(b []byte) (string, []byte, error) {
	var s []byte
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			continue
		}
		if i+1 == len(b) {
			return "", nil, errBadKey
		}
		switch b[i+1] {
		case 1:
			s = append(s, b[:i]...)
			return string(s), b[i+2:], nil
		case 0xff:
			s = append(s, b[:i+1]...)
			b = b[i+2:]
			i = -1
		default:
			return "", nil, errBadKey
		}
	}
	return "", nil, errBadKey
}

// threadKey is the encoded key of a thread, without a prefix byte.
func threadKey(k store.Key) []byte {
	b := make([]byte, 0, len(k.Scope)+len(k.Workflow)+len(k.Thread)+6)
	b = appendEscaped(b, k.Scope)
	b = appendEscaped(b, k.Workflow)
	return appendEscaped(b, k.Thread)
}

// parseThreadKey reads a thread key from the start of b and returns what
// follows it.
func parseThreadKey(b []byte) (store.Key, []byte, error) {
	var k store.Key
	var err error
	if k.Scope, b, err = cutEscaped(b); err != nil {
		return k, nil, err
	}
	if k.Workflow, b, err = cutEscaped(b); err != nil {
		return k, nil, err
	}
	k.Thread, b, err = cutEscaped(b)
	return k, b, err
}

// key builds a key from a prefix byte and parts.
func key(prefix byte, parts ...[]byte) []byte {
	n := 1
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 1, n)
	b[0] = prefix
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func be64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// eventPrefix is the prefix of one generation of a thread's events.
func eventPrefix(tk []byte, gen uint64) []byte { return key(prefixEvent, tk, be64(gen)) }

// eventKey appends seq to an event prefix.
func eventKey(prefix []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(prefix[:len(prefix):len(prefix)], seq)
}

// deltaKey appends n to a delta prefix.
func deltaKey(prefix []byte, n uint64) []byte {
	return binary.BigEndian.AppendUint64(prefix[:len(prefix):len(prefix)], n)
}

// eventSeq is the sequence number at the end of an event key.
func eventSeq(k []byte) uint64 { return binary.BigEndian.Uint64(k[len(k)-8:]) }

func sourceKey(hash string) []byte { return append([]byte{prefixSource}, hash...) }

// deltaPrefix is the prefix of one generation of a thread's frame deltas.
func deltaPrefix(tk []byte, gen uint64) []byte { return key(prefixDelta, tk, be64(gen)) }

// runPrefix is the prefix of one generation of a thread's runs.
func runPrefix(tk []byte, gen uint64) []byte { return key(prefixRun, tk, be64(gen)) }

func runKey(tk []byte, gen uint64, id string) []byte { return append(runPrefix(tk, gen), id...) }

// startedPrefix is the prefix of the index of one generation of a
// thread's runs by start time.
func startedPrefix(tk []byte, gen uint64) []byte { return key(prefixStarted, tk, be64(gen)) }

// startedKey is the key of a run in the index of its thread's runs by
// start time.
func startedKey(tk []byte, gen uint64, started time.Time, id string) []byte {
	return append(binary.BigEndian.AppendUint64(startedPrefix(tk, gen), newest(started)), id...)
}

// newest orders start times the latest first: Unix nanoseconds with the
// sign bit flipped (so that unsigned order is time order), inverted.
func newest(t time.Time) uint64 { return ^(uint64(t.UnixNano()) ^ 1<<63) }

// statusPrefix is the prefix of the index of runs with a status.
func statusPrefix(status store.Status) []byte {
	return appendEscaped([]byte{prefixStatus}, string(status))
}

func statusKey(status store.Status, tk []byte, gen uint64, id string) []byte {
	return append(append(append(statusPrefix(status), tk...), be64(gen)...), id...)
}

// parseRunRef reads what follows a status prefix in the index of runs: the
// thread, its generation and the run id.
func parseRunRef(b []byte) (store.Key, uint64, string, error) {
	k, rest, err := parseThreadKey(b)
	if err != nil {
		return k, 0, "", err
	}
	if len(rest) < 8 {
		return k, 0, "", errBadKey
	}
	return k, binary.BigEndian.Uint64(rest), string(rest[8:]), nil
}
