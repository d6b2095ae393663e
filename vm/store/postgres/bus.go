package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aguic/aguic/vm/store"
)

// The processes that share a schema tell each other what changed with
// PostgreSQL's LISTEN and NOTIFY, on one channel per schema. Each Store
// listens on a connection of its own, outside its pool, and passes what
// it hears to its Hub; it wakes its own watchers and calls its own
// cancel handlers directly, and skips the notifications it sent itself.
//
// A payload is a JSON array of strings, which no key can be confused
// with: ["c", origin, scope, workflow, thread] says a thread changed;
// ["x", origin, scope, workflow, thread, run] asks to cancel a run; ["*",
// origin] says that any thread may have changed (a change whose payload
// would be too large, or a batch of too many).

const (
	// maxPayload is the largest payload sent; PostgreSQL takes less than
	// 8000 bytes.
	maxPayload = 7900
	// maxBatch is the most changes sent one by one: beyond, one "*".
	maxBatch = 1000
	// sendTimeout bounds one send of notifications.
	sendTimeout = 5 * time.Second
	// idlePing is how long the listening connection waits for a
	// notification before it checks, with a ping, that the server is
	// still there.
	idlePing = 30 * time.Second
	// maxBackoff bounds the pause between attempts to reconnect the
	// listening connection, or to send notifications again.
	maxBackoff = 2 * time.Second
)

// channelName is the notification channel of a schema: an identifier of
// at most 63 bytes, the schema's name when it fits.
func channelName(schema string) string {
	name := "aguic." + schema
	if len(name) > 63 {
		sum := sha256.Sum256([]byte(schema))
		name = "aguic." + hex.EncodeToString(sum[:16])
	}
	return name
}

// outbox holds the changes that wait to be sent, coalesced: a thread
// changed by several commits before the next send is sent once.
type outbox struct {
	mu    sync.Mutex
	keys  map[store.Key]struct{}
	all   bool          // send "*" instead of keys
	ready chan struct{} // has a value when there is something to send
}

func (o *outbox) init() {
	o.keys = map[store.Key]struct{}{}
	o.ready = make(chan struct{}, 1)
}

// add queues a change of k.
func (o *outbox) add(k store.Key) {
	o.mu.Lock()
	if !o.all {
		o.keys[k] = struct{}{}
		if len(o.keys) > maxBatch {
			o.all, o.keys = true, map[store.Key]struct{}{}
		}
	}
	o.mu.Unlock()
	o.signal()
}

// addAll queues a change of every thread.
func (o *outbox) addAll() {
	o.mu.Lock()
	o.all = true
	clear(o.keys)
	o.mu.Unlock()
	o.signal()
}

func (o *outbox) signal() {
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// take empties the outbox and returns what it held.
func (o *outbox) take() (keys []store.Key, all bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.keys {
		keys = append(keys, k)
	}
	all = o.all
	clear(o.keys)
	o.all = false
	return keys, all
}

// putBack returns to the outbox what a failed send took.
func (o *outbox) putBack(keys []store.Key, all bool) {
	o.mu.Lock()
	for _, k := range keys {
		o.keys[k] = struct{}{}
	}
	if o.all = o.all || all || len(o.keys) > maxBatch; o.all {
		clear(o.keys)
	}
	o.mu.Unlock()
}

// changed wakes the watchers of k in this process and queues the
// notification of the others. Callers call it after their transaction
// committed: a NOTIFY in the transaction would make every notifying
// commit wait for the one before it, its flush to disk included, on the
// server's lock of the notification queue.
func (s *Store) changed(k store.Key) {
	s.hub.Changed(k)
	s.notes.add(k)
}

// changedAll wakes every watcher in this process, and queues the
// notification that wakes those of the others: any thread may have
// changed.
func (s *Store) changedAll() {
	s.hub.ChangedAll()
	s.notes.addAll()
}

// payload encodes a notification.
func payload(fields ...string) string {
	b, err := json.Marshal(fields)
	if err != nil {
		panic(err) // strings only
	}
	return string(b)
}

// sendLoop sends what the outbox holds, as soon as it holds something:
// all of it in one statement (what accumulates during a send goes in the
// next). It retries a failed send after a pause, and sends what is left
// when Close stops it.
func (s *Store) sendLoop(ctx context.Context) {
	defer s.wg.Done()
	backoff := 50 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), time.Second)
			if keys, all := s.notes.take(); len(keys) > 0 || all {
				if err := s.send(final, keys, all); err != nil {
					s.log.Warn("could not send the last notifications before closing", "err", err)
				}
			}
			cancel()
			return
		case <-s.notes.ready:
		}
		keys, all := s.notes.take()
		if len(keys) == 0 && !all {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, sendTimeout)
		err := s.send(sctx, keys, all)
		cancel()
		if err == nil {
			backoff = 50 * time.Millisecond
			continue
		}
		if ctx.Err() == nil {
			s.log.Warn("could not notify the other processes of changes; trying again", "threads", len(keys), "err", err)
		}
		s.notes.putBack(keys, all)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
		s.notes.signal()
	}
}

// send notifies the other processes of changes to keys, or of changes to
// any thread when all.
func (s *Store) send(ctx context.Context, keys []store.Key, all bool) error {
	payloads := make([]string, 0, len(keys))
	for _, k := range keys {
		p := payload("c", s.origin, k.Scope, k.Workflow, k.Thread)
		if len(p) > maxPayload {
			all = true
			break
		}
		payloads = append(payloads, p)
	}
	if all {
		payloads = []string{payload("*", s.origin)}
	}
	_, err := s.pool.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, s.channel, payloads)
	return classify(ctx, err)
}

// connectListener opens the listening connection and listens on the
// schema's channel.
func (s *Store) connectListener(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.listen)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		closeQuietly(conn)
		return nil, err
	}
	return conn, nil
}

func closeQuietly(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// listenLoop passes the notifications of conn to the Hub until ctx is
// done. When the connection breaks, it connects again, with pauses that
// grow up to maxBackoff, and then wakes every watcher: it may have missed
// changes in between.
func (s *Store) listenLoop(ctx context.Context, conn *pgx.Conn) {
	defer s.wg.Done()
	for {
		err := s.receive(ctx, conn)
		closeQuietly(conn)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("lost the connection that listens for the other processes' changes; reconnecting", "err", err)
		backoff := 50 * time.Millisecond
		for conn = nil; conn == nil; {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			if conn, err = s.connectListener(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.Debug("could not reconnect the listening connection", "err", err, "retry", backoff)
				backoff = min(2*backoff, maxBackoff)
			}
		}
		s.log.Info("listening for the other processes' changes again")
		s.hub.ChangedAll()
	}
}

// receive dispatches the notifications of conn until ctx is done or the
// connection fails, checking it with a ping when it is idle.
func (s *Store) receive(ctx context.Context, conn *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, idlePing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			s.dispatch(n.Payload)
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case conn.IsClosed() || !(errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)):
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, sendTimeout)
		err = conn.Ping(pctx)
		cancel()
		if err != nil {
			return err
		}
	}
}

// dispatch passes a notification to the Hub.
func (s *Store) dispatch(p string) {
	var f []string
	if err := json.Unmarshal([]byte(p), &f); err != nil || len(f) < 2 {
		s.log.Warn("ignored a malformed notification", "payload", p)
		return
	}
	if f[1] == s.origin {
		return
	}
	switch {
	case f[0] == "c" && len(f) == 5:
		s.hub.Changed(store.Key{Scope: f[2], Workflow: f[3], Thread: f[4]})
	case f[0] == "x" && len(f) == 6:
		s.hub.Cancelled(store.Key{Scope: f[2], Workflow: f[3], Thread: f[4]}, f[5])
	case f[0] == "*":
		s.hub.ChangedAll()
	default:
		s.log.Warn("ignored a notification of an unknown kind", "payload", p)
	}
}

// Watch is store.Store.Watch: the Hub's, fed by the notifications.
func (s *Store) Watch(k store.Key) (<-chan struct{}, func()) { return s.hub.Watch(k) }

// OnCancel is store.Store.OnCancel.
func (s *Store) OnCancel(f func(store.Key, string)) func() { return s.hub.OnCancel(f) }

// Cancel calls the cancel handlers of this process and notifies the
// others; it returns once the notification is sent. A key and run id
// that do not fit in a notification (about 7,900 bytes) cannot be sent.
func (s *Store) Cancel(ctx context.Context, k store.Key, runID string) error {
	fail := func(err error) error { return fmt.Errorf("cancel run %q of %s: %w", runID, keyName(k), err) }
	if err := s.enter(ctx); err != nil {
		return fail(err)
	}
	p := payload("x", s.origin, k.Scope, k.Workflow, k.Thread, runID)
	if len(p) > maxPayload {
		return fail(fmt.Errorf("the key and run id take %d bytes, more than a notification carries (%d)", len(p), maxPayload))
	}
	s.hub.Cancelled(k, runID)
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel, p); err != nil {
		return fail(classify(ctx, err))
	}
	return nil
}

// TakeTask records that the caller takes task now, by the database's
// clock, unless a caller of any process took it within the last period:
// the row of the task is locked by the first, and the others find it
// taken.
func (s *Store) TakeTask(ctx context.Context, task string, period time.Duration) (bool, error) {
	if err := s.enter(ctx); err != nil {
		return false, fmt.Errorf("take task %q: %w", task, err)
	}
	var took bool
	err := s.pool.QueryRow(ctx, `INSERT INTO tasks AS t (name, taken) VALUES ($1, now())
		ON CONFLICT (name) DO UPDATE SET taken = excluded.taken
		WHERE t.taken + $2 * interval '1 microsecond' <= excluded.taken
		RETURNING true`, task, period.Microseconds()).Scan(&took)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("take task %q: %w", task, classify(ctx, err))
	}
	return took, nil
}
