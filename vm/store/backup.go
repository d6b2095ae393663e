package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A backup is everything a store holds, as one stream that any backend
// writes and reads the same way (backupformat.go describes its bytes): the
// workflow sources, then each thread (its checkpoint and bookkeeping, every
// field of Thread) followed by its events and its runs. Leases are not part
// of it: a restored store starts with every lease free.
//
// A backend takes part by implementing Dumper, which gives its contents to
// a Sink, and Restorer, whose Load takes them from one into an empty store.
// WriteBackup, ReadBackup and Copy do the rest once for every backend: they
// put the items in order, check them, count them and frame them.

// Errors of backups, wrap-compatible with errors.Is.
var (
	// ErrNotEmpty: Load refuses a store that holds anything; a restore
	// never mixes two histories.
	ErrNotEmpty = errors.New("the store is not empty")
	// ErrMalformedBackup: ReadBackup found a backup damaged, cut short or
	// inconsistent; the error says where.
	ErrMalformedBackup = errors.New("malformed backup")
)

// Sink receives the contents of a store in backup order: every source, in
// increasing byte order of hash; then every thread, in increasing order of
// key (scope, then workflow, then thread id, each compared as bytes), each
// followed by its events, FirstSeq to LastSeq in order, and then by its
// runs, in increasing byte order of id. An event or a run belongs to the
// thread before it. A Thread comes with its Frame and Deltas; a Run's Key
// is its thread's.
//
// A sink may keep the slices it is given: whoever gives them changes them
// no more. Its methods are called from one goroutine, one at a time; the
// first error it returns ends the stream.
type Sink interface {
	Source(hash string, src []byte) error
	Thread(t Thread) error
	Event(e Event) error
	Run(r Run) error
}

// Dumper is a store that can be backed up.
type Dumper interface {
	// Dump gives sink everything the store holds, in the order Sink
	// describes, as of one consistent snapshot, while the store goes on
	// serving. It returns the first error of sink, or of ctx.
	Dump(ctx context.Context, sink Sink) error
}

// Restorer is a store that a backup can be restored into.
type Restorer interface {
	// Load calls fill once with a sink that writes into the store, which
	// must be empty: it fails with an error wrapping ErrNotEmpty, without
	// calling fill, when the store holds a source or a thread. The sink
	// receives the items in the order Sink describes, already checked
	// (ReadBackup, Copy), and writes them as they are: every field of a
	// thread (Version, FirstSeq, LastSeq, Created, Updated…), of an event
	// and of a run. What fill gives is kept only once fill returns nil;
	// when fill returns an error, or ctx is done, Load returns that error
	// and leaves the store empty and usable. Threads come back with their
	// leases free, and the store's next lease tokens are higher than any it
	// granted before.
	Load(ctx context.Context, fill func(Sink) error) error
}

// WriteBackup writes a backup of src to w: src's Dump, checked, counted
// and framed. A Dump that breaks the order or gives an inconsistent thread
// (an event missing, one after LastSeq) fails the backup, which then has no
// end record: no backup that fails can be restored.
func WriteBackup(ctx context.Context, w io.Writer, src Dumper) error {
	enc := newEncoder(ctx, w)
	if err := enc.header(); err != nil {
		return err
	}
	seq := &sequence{sink: enc}
	if err := src.Dump(ctx, seq); err != nil {
		return err
	}
	if err := seq.finish(); err != nil {
		return err
	}
	return enc.end(seq.n)
}

// ReadBackup restores a backup from r into dst, which must be empty. It
// reads the header before it calls dst.Load; Load's sink gets every item
// once checked, and fill returns only after the end record proved the
// backup whole. So a backup that is malformed, cut short or altered, or a
// cancelled ctx, leaves dst empty and usable, with an error that names the
// record (counted from 1 after the header) and the thread it was in. Such
// errors wrap ErrMalformedBackup; an unknown version of the format is an
// error of its own.
func ReadBackup(ctx context.Context, r io.Reader, dst Restorer) error {
	dec := newDecoder(ctx, r)
	if err := dec.header(); err != nil {
		return err
	}
	return dst.Load(ctx, func(sink Sink) error {
		return dec.records(&sequence{sink: sink})
	})
}

// Copy copies src into dst, which must be empty, as a backup would and
// without one: the items are checked on their way, and dst keeps them only
// when all of them came. src and dst must be different stores.
func Copy(ctx context.Context, dst Restorer, src Dumper) error {
	return dst.Load(ctx, func(sink Sink) error {
		seq := &sequence{sink: sink}
		if err := src.Dump(ctx, seq); err != nil {
			return err
		}
		return seq.finish()
	})
}

// counts are how many items of each kind a backup holds.
type counts struct {
	sources, threads, events, runs uint64
}

// sequence is a Sink that checks the order and consistency of the items
// it is given, counts them, and passes them on.
type sequence struct {
	sink Sink
	n    counts

	hash    string // the last source's
	threads bool   // a thread came: no more sources
	thread  Key    // the current thread
	next    uint64 // the Seq of its next event
	last    uint64 // its LastSeq
	run     string // the id of its last run; "" before the first
	runs    bool   // a run of it came: no more events
}

func (s *sequence) Source(hash string, src []byte) error {
	switch {
	case s.threads:
		return inconsistent("source %q after a thread: sources come first", hash)
	case s.n.sources > 0 && hash <= s.hash:
		return inconsistent("source %q after source %q: sources come in order of hash, once each", hash, s.hash)
	}
	s.hash = hash
	s.n.sources++
	return s.sink.Source(hash, src)
}

func (s *sequence) Thread(t Thread) error {
	if err := s.finish(); err != nil {
		return err
	}
	if s.n.threads > 0 && compareKeys(t.Key, s.thread) <= 0 {
		return inconsistent("thread %s after thread %s: threads come in order of key, once each", keyName(t.Key), keyName(s.thread))
	}
	switch {
	case t.LastSeq == 0 && t.FirstSeq != 0:
		return inconsistent("thread %s has FirstSeq %d and no events (LastSeq 0)", keyName(t.Key), t.FirstSeq)
	case t.LastSeq != 0 && (t.FirstSeq == 0 || t.FirstSeq > t.LastSeq+1):
		return inconsistent("thread %s has FirstSeq %d and LastSeq %d", keyName(t.Key), t.FirstSeq, t.LastSeq)
	}
	s.threads, s.thread = true, t.Key
	s.next, s.last = t.FirstSeq, t.LastSeq
	s.run, s.runs = "", false
	s.n.threads++
	return s.sink.Thread(t)
}

func (s *sequence) Event(e Event) error {
	switch {
	case !s.threads:
		return inconsistent("event %d before any thread", e.Seq)
	case s.runs:
		return inconsistent("event %d of thread %s after its runs: events come first", e.Seq, keyName(s.thread))
	case s.last == 0 || s.next > s.last:
		return inconsistent("event %d of thread %s, whose events end at LastSeq %d", e.Seq, keyName(s.thread), s.last)
	case e.Seq != s.next:
		return inconsistent("event %d of thread %s where event %d was due", e.Seq, keyName(s.thread), s.next)
	}
	s.next++
	s.n.events++
	return s.sink.Event(e)
}

func (s *sequence) Run(r Run) error {
	switch {
	case !s.threads:
		return inconsistent("run %q before any thread", r.ID)
	case r.Key != s.thread:
		return inconsistent("run %q of thread %s among the runs of thread %s", r.ID, keyName(r.Key), keyName(s.thread))
	case r.ID == "":
		return inconsistent("a run of thread %s has no id", keyName(s.thread))
	case s.runs && r.ID <= s.run:
		return inconsistent("run %q of thread %s after run %q: runs come in order of id, once each", r.ID, keyName(s.thread), s.run)
	}
	if err := s.eventsDone(); err != nil {
		return err
	}
	s.run, s.runs = r.ID, true
	s.n.runs++
	return s.sink.Run(r)
}

// eventsDone reports an error unless the current thread has had all its
// events.
func (s *sequence) eventsDone() error {
	if s.threads && s.last != 0 && s.next <= s.last {
		return inconsistent("thread %s ends at event %d, its LastSeq is %d", keyName(s.thread), s.next-1, s.last)
	}
	return nil
}

// finish reports an error unless the stream may end here.
func (s *sequence) finish() error { return s.eventsDone() }

// inconsistent is an inconsistency.
func inconsistent(format string, args ...any) error {
	return &inconsistency{fmt.Sprintf(format, args...)}
}

// compareKeys orders keys by scope, then workflow, then thread id, each
// compared as bytes.
func compareKeys(a, b Key) int {
	if c := strings.Compare(a.Scope, b.Scope); c != 0 {
		return c
	}
	if c := strings.Compare(a.Workflow, b.Workflow); c != 0 {
		return c
	}
	return strings.Compare(a.Thread, b.Thread)
}

// keyName is how messages name a thread: scope/workflow/thread, quoted,
// cut short when long.
func keyName(k Key) string {
	name := k.Scope + "/" + k.Workflow + "/" + k.Thread
	if len(name) > 100 {
		name = strings.ToValidUTF8(name[:100], "") + "…"
	}
	return fmt.Sprintf("%q", name)
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

// bufSize is the size of the buffers between a backup and its reader or
// writer.
const bufSize = 64 << 10
