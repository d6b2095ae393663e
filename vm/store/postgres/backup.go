package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aguic/aguic/vm/store"
)

// Backups are in the format of package store, the same for every store:
// Backup writes it (store.WriteBackup of Dump), and Restore reads it
// (store.ReadBackup into Load), so a backup of this store restores into
// any other, a Badger store's into this one, and store.Copy copies one
// store into the other without a backup.
//
// Dump reads in one REPEATABLE READ transaction, read only: every page it
// reads sees the database as of its first statement, while commits go on
// beside it and do not wait for it. It reads page by page (keyset pages,
// each one statement read whole before the sink sees it), so it holds one
// page at a time, and a sink that is slow (a backup written to a slow
// network) makes no statement run long.
//
// Load writes in one transaction, which it commits only once fill
// returned nil: it locks the tables threads and sources first, so that
// no thread and no source can appear beside it (another Load, an Acquire
// that creates a thread, a PutSource, in any process, waits for it), and
// then checks that both are empty. It buffers the rows as the items come
// and writes them with COPY, a few thousand rows at a time.

var (
	_ store.Dumper   = (*Store)(nil)
	_ store.Restorer = (*Store)(nil)
)

// The pages of Dump: how many rows one statement reads.
const (
	dumpSources = 16
	dumpThreads = 100
	dumpEvents  = 1000
	dumpRuns    = 100
)

// Load's buffer: it writes its rows once it holds this many, or this many
// bytes; and how many thread ids it takes from their sequence at once.
const (
	loadRows  = 5000
	loadBytes = 4 << 20
	loadIDs   = 256
)

// Backup writes a full backup of the store to w while it keeps serving: a
// consistent snapshot as of the call, in the format of package store.
func (s *Store) Backup(ctx context.Context, w io.Writer) error {
	if err := store.WriteBackup(ctx, w, dumpFunc(s.dump)); err != nil {
		return fmt.Errorf("backup (schema %q): %w", s.schema, err)
	}
	return nil
}

// Restore loads a backup of any store, in the format of package store,
// into this one, which must hold no thread and no source: Load describes
// it. A malformed or truncated backup, or a cancelled ctx, leaves the
// store empty and usable.
func (s *Store) Restore(ctx context.Context, r io.Reader) error {
	if err := store.ReadBackup(ctx, r, loadFunc(s.load)); err != nil {
		return fmt.Errorf("restore (schema %q): %w", s.schema, err)
	}
	return nil
}

// Dump gives sink everything the store holds, in the order store.Sink
// describes, from one REPEATABLE READ transaction: a consistent snapshot
// while the store goes on serving. It holds one page of rows at a time.
func (s *Store) Dump(ctx context.Context, sink store.Sink) error {
	if err := s.dump(ctx, sink); err != nil {
		return fmt.Errorf("dump (schema %q): %w", s.schema, err)
	}
	return nil
}

// Load fills the store, which must hold no thread and no source, with
// what fill gives its sink, in one transaction that it commits only when
// fill returns nil; store.Restorer describes it. Threads, sources and
// their writers in every process wait for it (up to the statement
// timeout); readers see the store empty until it commits.
func (s *Store) Load(ctx context.Context, fill func(store.Sink) error) error {
	if err := s.load(ctx, fill); err != nil {
		return fmt.Errorf("restore (schema %q): %w", s.schema, err)
	}
	return nil
}

// dumpFunc is a store.Dumper that is a function.
type dumpFunc func(ctx context.Context, sink store.Sink) error

func (f dumpFunc) Dump(ctx context.Context, sink store.Sink) error { return f(ctx, sink) }

// loadFunc is a store.Restorer that is a function.
type loadFunc func(ctx context.Context, fill func(store.Sink) error) error

func (f loadFunc) Load(ctx context.Context, fill func(store.Sink) error) error { return f(ctx, fill) }

// rollback ends a transaction that is not to be committed. The caller's
// context may be done: it has a short one of its own. When the connection
// broke, the server rolled back already.
func rollback(tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	_ = tx.Rollback(ctx)
}

// noIdleTimeout lifts, for the transaction, a server's
// idle_in_transaction_session_timeout: between its statements, a backup's
// transaction waits for the writer or the reader of the backup, which ctx
// bounds.
const noIdleTimeout = `SELECT set_config('idle_in_transaction_session_timeout', '0', true)`

func (s *Store) dump(ctx context.Context, sink store.Sink) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return classify(ctx, err)
	}
	defer rollback(tx)
	if _, err := tx.Exec(ctx, noIdleTimeout); err != nil {
		return classify(ctx, err)
	}
	d := &dumping{ctx: ctx, tx: tx, sink: sink}
	if err := d.sources(); err != nil {
		return err
	}
	return d.threads()
}

// dumping is a Dump under way. Its methods return the errors of the
// database classified, and those of the sink as they are.
type dumping struct {
	ctx  context.Context
	tx   pgx.Tx
	sink store.Sink
}

// sources gives the sink the sources, in pages by hash.
func (d *dumping) sources() error {
	type source struct {
		hash string
		src  []byte
	}
	var page []source
	for {
		var rows pgx.Rows
		var err error
		if page == nil {
			rows, err = d.tx.Query(d.ctx, `SELECT hash, src FROM sources ORDER BY hash LIMIT $1`, dumpSources)
		} else {
			rows, err = d.tx.Query(d.ctx, `SELECT hash, src FROM sources WHERE hash > $2 ORDER BY hash LIMIT $1`,
				dumpSources, page[len(page)-1].hash)
		}
		if err == nil {
			page, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (source, error) {
				var s source
				err := row.Scan(&s.hash, &s.src)
				return s, err
			})
		}
		if err != nil {
			return fmt.Errorf("sources: %w", classify(d.ctx, err))
		}
		for _, s := range page {
			if err := d.sink.Source(s.hash, s.src); err != nil {
				return err
			}
		}
		if len(page) < dumpSources {
			return nil
		}
	}
}

// dumpThreadsSQL reads a page of threads in key order (byte order: the
// key's columns are COLLATE "C"), each with its id and whether it has
// runs; the page after a key adds dumpAfterSQL.
const (
	dumpThreadsSQL = `SELECT ` + threadColumns + `, t.id, EXISTS (SELECT 1 FROM runs r WHERE r.thread_id = t.id)
		FROM threads t`
	dumpAfterSQL = ` WHERE (t.scope, t.workflow, t.thread) > ($2, $3, $4)`
	dumpOrderSQL = ` ORDER BY t.scope, t.workflow, t.thread LIMIT $1`
)

// dumpThread is a thread of a page, with what else Dump needs of it.
type dumpThread struct {
	store.Thread
	id      int64
	hasRuns bool
}

// threads gives the sink the threads, in pages by key, each followed by
// its events and runs.
func (d *dumping) threads() error {
	var page []dumpThread
	for {
		if err := d.ctx.Err(); err != nil {
			return err
		}
		var rows pgx.Rows
		var err error
		if page == nil {
			rows, err = d.tx.Query(d.ctx, dumpThreadsSQL+dumpOrderSQL, dumpThreads)
		} else {
			k := page[len(page)-1].Key
			rows, err = d.tx.Query(d.ctx, dumpThreadsSQL+dumpAfterSQL+dumpOrderSQL, dumpThreads, k.Scope, k.Workflow, k.Thread)
		}
		if err == nil {
			page, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (dumpThread, error) {
				var t dumpThread
				var err error
				t.Thread, err = scanThread(row, &t.id, &t.hasRuns)
				return t, err
			})
		}
		if err != nil {
			return fmt.Errorf("threads: %w", classify(d.ctx, err))
		}
		for i := range page {
			if err := d.thread(&page[i]); err != nil {
				return err
			}
			page[i].Thread = store.Thread{Key: page[i].Key} // the sink has it: let it go
		}
		if len(page) < dumpThreads {
			return nil
		}
	}
}

// The pages of a thread's events and runs.
const (
	dumpEventsSQL = `SELECT seq, run_id, time, silent, hidden, data FROM events
		WHERE thread_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`
	dumpRunsSQL = `SELECT id, status, started, finished, outcome, error, input FROM runs
		WHERE thread_id = $1 ORDER BY id LIMIT $2`
	dumpRunsAfterSQL = `SELECT id, status, started, finished, outcome, error, input FROM runs
		WHERE thread_id = $1 AND id > $3 ORDER BY id LIMIT $2`
)

// thread gives the sink a thread, its events from FirstSeq to LastSeq
// (those before were removed) and its runs. The first page of its events
// and the first of its runs come in one round trip.
func (d *dumping) thread(t *dumpThread) error {
	if err := d.sink.Thread(t.Thread); err != nil {
		return err
	}
	hasEvents := t.FirstSeq > 0 && t.LastSeq >= t.FirstSeq
	if !hasEvents && !t.hasRuns {
		return nil
	}
	fail := func(err error) error {
		return fmt.Errorf("thread %s: %w", keyName(t.Key), classify(d.ctx, err))
	}
	b := &pgx.Batch{}
	if hasEvents {
		b.Queue(dumpEventsSQL, t.id, int64(t.FirstSeq-1), int64(t.LastSeq), dumpEvents)
	}
	if t.hasRuns {
		b.Queue(dumpRunsSQL, t.id, dumpRuns)
	}
	var events []store.Event
	var runs []store.Run
	var err error
	br := d.tx.SendBatch(d.ctx, b)
	if hasEvents {
		events, err = collectEvents(br.Query())
	}
	if t.hasRuns && err == nil {
		rows, qerr := br.Query()
		runs, err = collectDumpRuns(rows, qerr, t.Key)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(err)
	}

	for hasEvents {
		for _, e := range events {
			if err := d.sink.Event(e); err != nil {
				return err
			}
		}
		if len(events) < dumpEvents || events[len(events)-1].Seq >= t.LastSeq {
			break
		}
		if err := d.ctx.Err(); err != nil {
			return err
		}
		after := events[len(events)-1].Seq
		clear(events)
		if events, err = collectEvents(d.tx.Query(d.ctx, dumpEventsSQL, t.id, int64(after), int64(t.LastSeq), dumpEvents)); err != nil {
			return fail(err)
		}
	}
	for t.hasRuns {
		for _, r := range runs {
			if err := d.sink.Run(r); err != nil {
				return err
			}
		}
		if len(runs) < dumpRuns {
			break
		}
		after := runs[len(runs)-1].ID
		clear(runs)
		rows, qerr := d.tx.Query(d.ctx, dumpRunsAfterSQL, t.id, dumpRuns, after)
		if runs, err = collectDumpRuns(rows, qerr, t.Key); err != nil {
			return fail(err)
		}
	}
	return nil
}

// collectEvents reads the rows of dumpEventsSQL.
func collectEvents(rows pgx.Rows, err error) ([]store.Event, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Event, error) {
		var e store.Event
		var seq int64
		err := row.Scan(&seq, &e.RunID, &e.Time, &e.Silent, &e.Hidden, &e.Data)
		e.Seq, e.Time = uint64(seq), e.Time.UTC()
		return e, err
	})
}

// collectDumpRuns reads the rows of dumpRunsSQL, runs of the thread k.
func collectDumpRuns(rows pgx.Rows, err error, k store.Key) ([]store.Run, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Run, error) {
		r := store.Run{Key: k}
		var status string
		var finished *time.Time
		err := row.Scan(&r.ID, &status, &r.Started, &finished, &r.Outcome, &r.Error, &r.Input)
		r.Status, r.Started, r.Finished = store.Status(status), r.Started.UTC(), fromOptTime(finished)
		return r, err
	})
}

func (s *Store) load(ctx context.Context, fill func(store.Sink) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return classify(ctx, err)
	}
	committed := false
	defer func() {
		if !committed {
			rollback(tx)
		}
	}()
	// The lock conflicts with every write to these tables (ROW EXCLUSIVE)
	// and with itself, not with reads: an Acquire, a PutSource or another
	// Load waits for this transaction, and then finds the store full.
	// Writes to the other tables need a thread's row.
	// Two statements, without arguments: one round trip.
	if _, err := tx.Exec(ctx, noIdleTimeout+`; LOCK TABLE threads, sources IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("lock the tables: %w", classify(ctx, err))
	}
	var full bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM threads) OR EXISTS (SELECT 1 FROM sources)`).Scan(&full); err != nil {
		return classify(ctx, err)
	}
	if full {
		return fmt.Errorf("%w: it holds threads or sources; restore into a new schema", store.ErrNotEmpty)
	}
	l := &loading{ctx: ctx, tx: tx}
	if err := fill(l); err != nil {
		return err
	}
	if l.err != nil { // fill went on after its sink failed
		return l.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.flush(); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return classify(ctx, err)
	}
	committed = true
	if l.threads > 0 {
		s.changedAll()
	}
	return nil
}

// loading is the sink of a Load. It buffers the rows of each table and
// writes them with COPY when the buffer is full, and at the end. The
// items come checked and in order (store.Sink): events and runs are the
// current thread's. Its first error sticks.
type loading struct {
	ctx context.Context
	tx  pgx.Tx
	err error

	ids     []int64 // thread ids taken from their sequence, not yet used
	id      int64   // the current thread's; 0 before the first
	threads int     // how many came

	// The rows that wait to be written, of each table, in copyTables'
	// order; how many, and about how many bytes.
	rows  [len(copyTables)][][]any
	n     int
	bytes int
}

// copyTables are the tables Load writes, and their columns.
var copyTables = [...]struct {
	name    string
	columns []string
}{
	{"sources", []string{"hash", "src"}},
	// id is an identity column GENERATED ALWAYS: INSERT would need
	// OVERRIDING SYSTEM VALUE, COPY takes the ids it is given.
	{"threads", []string{"id", "scope", "workflow", "thread", "status", "hash", "wait", "wake_at", "run_id",
		"last_seq", "first_seq", "version", "deltas", "created", "updated"}},
	{"frames", []string{"thread_id", "frame"}},
	{"deltas", []string{"thread_id", "n", "data"}},
	{"events", []string{"thread_id", "seq", "run_id", "time", "silent", "hidden", "data"}},
	{"runs", []string{"thread_id", "id", "status", "started", "finished", "outcome", "error", "input"}},
}

// The indexes of copyTables.
const (
	tSources = iota
	tThreads
	tFrames
	tDeltas
	tEvents
	tRuns
)

// errNoThread: Load's sink was given an event or a run before any thread,
// which ReadBackup and Copy never do.
var errNoThread = errors.New("an event or a run before any thread")

// add buffers a row of table, of about size bytes, and writes the buffer
// when it is full.
func (l *loading) add(table, size int, row ...any) error {
	l.rows[table] = append(l.rows[table], row)
	l.n++
	l.bytes += size
	if l.n >= loadRows || l.bytes >= loadBytes {
		return l.flush()
	}
	return nil
}

// flush writes the rows buffered, table by table.
func (l *loading) flush() error {
	if l.err != nil {
		return l.err
	}
	for i, rows := range l.rows {
		if len(rows) == 0 {
			continue
		}
		t := copyTables[i]
		if _, err := l.tx.CopyFrom(l.ctx, pgx.Identifier{t.name}, t.columns, pgx.CopyFromRows(rows)); err != nil {
			l.err = fmt.Errorf("write %s: %w", t.name, classify(l.ctx, err))
			return l.err
		}
		clear(rows) // the items they hold can go
		l.rows[i] = rows[:0]
	}
	l.n, l.bytes = 0, 0
	return nil
}

// nextID returns a new thread id, from the sequence of the identity
// column: ids are never reused, those of threads deleted before included.
func (l *loading) nextID() (int64, error) {
	if len(l.ids) == 0 {
		rows, err := l.tx.Query(l.ctx, `SELECT nextval(pg_get_serial_sequence('threads', 'id')) FROM generate_series(1, $1)`, loadIDs)
		if err == nil {
			l.ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		}
		if err != nil {
			return 0, classify(l.ctx, err)
		}
		if len(l.ids) == 0 {
			return 0, errors.New("no thread id from the sequence")
		}
	}
	id := l.ids[0]
	l.ids = l.ids[1:]
	return id, nil
}

func (l *loading) Source(hash string, src []byte) error {
	if l.err != nil {
		return l.err
	}
	if src == nil {
		src = []byte{}
	}
	return l.add(tSources, len(hash)+len(src), hash, src)
}

func (l *loading) Thread(t store.Thread) error {
	if l.err != nil {
		return l.err
	}
	for _, n := range []uint64{t.LastSeq, t.FirstSeq, t.Version} {
		if n > math.MaxInt64 {
			return fmt.Errorf("thread %s: the number %d is more than PostgreSQL's bigint holds", keyName(t.Key), n)
		}
	}
	if len(t.Deltas) > math.MaxInt32 {
		return fmt.Errorf("thread %s: %d frame deltas", keyName(t.Key), len(t.Deltas))
	}
	id, err := l.nextID()
	if err != nil {
		l.err = fmt.Errorf("thread %s: %w", keyName(t.Key), err)
		return l.err
	}
	l.id = id
	l.threads++
	size := len(t.Scope) + len(t.Workflow) + len(t.Thread) + len(t.Hash) + len(t.Wait) + len(t.RunID) + 100
	if err := l.add(tThreads, size, id, t.Scope, t.Workflow, t.Thread, string(t.Status), t.Hash, t.Wait, optTime(t.WakeAt),
		t.RunID, int64(t.LastSeq), int64(t.FirstSeq), int64(t.Version), int32(len(t.Deltas)), t.Created, t.Updated); err != nil {
		return err
	}
	if len(t.Frame) > 0 {
		if err := l.add(tFrames, len(t.Frame), id, t.Frame); err != nil {
			return err
		}
	}
	for n, d := range t.Deltas {
		if d == nil {
			d = []byte{}
		}
		if err := l.add(tDeltas, len(d)+16, id, int32(n), d); err != nil {
			return err
		}
	}
	return nil
}

func (l *loading) Event(e store.Event) error {
	switch {
	case l.err != nil:
		return l.err
	case l.id == 0:
		return errNoThread
	case e.Seq > math.MaxInt64:
		return fmt.Errorf("event %d: more than PostgreSQL's bigint holds", e.Seq)
	}
	return l.add(tEvents, len(e.RunID)+len(e.Data)+32, l.id, int64(e.Seq), e.RunID, e.Time, e.Silent, e.Hidden, e.Data)
}

func (l *loading) Run(r store.Run) error {
	switch {
	case l.err != nil:
		return l.err
	case l.id == 0:
		return errNoThread
	}
	size := len(r.ID) + len(r.Status) + len(r.Outcome) + len(r.Error) + len(r.Input) + 32
	return l.add(tRuns, size, l.id, r.ID, string(r.Status), r.Started, optTime(r.Finished), r.Outcome, r.Error, r.Input)
}
