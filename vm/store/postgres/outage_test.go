package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aguic/aguic/internal/pgtest"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/postgres"
)

// proxy forwards TCP connections from a local address to the server, and
// can be stopped (its connections cut, new ones refused) and started
// again on the same address: the database going away and coming back.
type proxy struct {
	t        *testing.T
	addr     string
	upstream string
	mu       sync.Mutex
	ln       net.Listener
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
}

func newProxy(t *testing.T, upstream string) *proxy {
	p := &proxy{t: t, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.listen("127.0.0.1:0")
	p.addr = p.ln.Addr().String()
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatalf("proxy: %v", err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.upstream)
			if err != nil {
				c.Close()
				continue
			}
			if !p.track(c, up) {
				return
			}
			for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
				p.wg.Go(func() {
					_, _ = io.Copy(pair[0], pair[1])
					pair[0].Close()
					pair[1].Close()
				})
			}
		}
	})
}

// track records the connections of a pair, unless the proxy is stopped.
func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// stop closes the listener and cuts every connection.
func (p *proxy) stop() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	p.mu.Unlock()
	p.wg.Wait()
}

// start listens again on the proxy's address.
func (p *proxy) start() { p.listen(p.addr) }

// withHost returns the test server's URL with another host and port, and
// query parameters set.
func withHost(t *testing.T, host string, params map[string]string) string {
	t.Helper()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Skipf("%s is not a postgres:// URL", pgtest.Env)
	}
	if host != "" {
		u.Host = host
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// serverAddr is the host:port of the test server.
func serverAddr(t *testing.T) string {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil || u.Host == "" {
		t.Skipf("%s is not a postgres:// URL with a host", pgtest.Env)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "5432")
	}
	return u.Host
}

// woken waits for a watch, failing the test after a bound.
func woken(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: the watch was not woken within 15s", what)
	}
}

func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// eventually calls f on a ticker until it returns true, failing the test
// after a bound.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not the case after 15s", what)
		}
		<-tick.C
	}
}

var (
	k1 = store.Key{Scope: "acme", Workflow: "chat", Thread: "t1"}
	k2 = store.Key{Scope: "acme", Workflow: "chat", Thread: "t2"}
)

func events(n int) []store.Event {
	evs := make([]store.Event, n)
	for i := range evs {
		evs[i] = store.Event{RunID: "r1", Time: time.Now().UTC().Truncate(time.Microsecond), Data: fmt.Appendf(nil, `{"i":%d}`, i)}
	}
	return evs
}

// TestServerGoesAway cuts the store's connections to the server and
// refuses new ones: every call fails with ErrUnavailable, soon, and once
// the server is back the calls succeed again, the listening connection is
// back and the watchers are woken (they may have missed changes).
func TestServerGoesAway(t *testing.T) {
	schema := pgtest.Schema(t)
	p := newProxy(t, serverAddr(t))
	s, err := postgres.Open(t.Context(), postgres.Options{
		URL: withHost(t, p.addr, map[string]string{"connect_timeout": "2"}), Schema: schema, MaxConns: 2, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other := open(t, schema) // another process, which keeps its connection
	defer other.Close()
	ctx := t.Context()
	l, err := s.Acquire(ctx, k1, "owner", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, l, store.Commit{Events: events(2)}); err != nil {
		t.Fatal(err)
	}
	ch, stop := s.Watch(k1)
	defer stop()
	ch2, stop2 := s.Watch(k2)
	defer stop2()

	p.stop()
	drain(ch)
	calls := []struct {
		name string
		f    func(ctx context.Context) error
	}{
		{"Thread", func(ctx context.Context) error { _, err := s.Thread(ctx, k1); return err }},
		{"Commit", func(ctx context.Context) error {
			_, err := s.Commit(ctx, l, store.Commit{Events: events(1)})
			return err
		}},
		{"Acquire", func(ctx context.Context) error { _, err := s.Acquire(ctx, k2, "owner", time.Hour); return err }},
		{"Events", func(ctx context.Context) error { _, err := s.Events(ctx, k1, 0, 10); return err }},
		{"Sync", s.Sync},
		{"TakeTask", func(ctx context.Context) error { _, err := s.TakeTask(ctx, "sweep", time.Hour); return err }},
		{"Cancel", func(ctx context.Context) error { return s.Cancel(ctx, k1, "r1") }},
		{"Stranded", func(ctx context.Context) error { _, err := s.Stranded(ctx, 10); return err }},
	}
	for _, c := range calls {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := c.f(cctx)
		cancel()
		t.Logf("%s while the server is away: %v", c.name, err)
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s while the server is away: got error %v, want ErrUnavailable", c.name, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s while the server is away: it hung until the caller's deadline: %v", c.name, err)
		}
	}

	p.start()
	eventually(t, "Thread succeeding once the server is back", func() bool {
		_, err := s.Thread(ctx, k1)
		if err != nil && !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Thread while the server comes back: %v, want nil or ErrUnavailable", err)
		}
		return err == nil
	})
	woken(t, "a watch after the listening connection came back", ch)
	th, err := s.Commit(ctx, l, store.Commit{Events: events(1)})
	if err != nil {
		t.Fatalf("Commit once the server is back: %v", err)
	}
	if th.LastSeq != 3 {
		t.Errorf("Commit once the server is back: LastSeq %d, want 3 (the failed commit wrote nothing)", th.LastSeq)
	}
	// The other process's changes reach the store again.
	drain(ch2)
	lo, err := other.Acquire(ctx, k2, "other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Commit(ctx, lo, store.Commit{Events: events(1)}); err != nil {
		t.Fatal(err)
	}
	woken(t, "a watch of a thread the other process changed, after the listening connection came back", ch2)
}

// TestBackendsTerminated kills the store's server processes, its pool's
// and its listening connection's: calls fail with ErrUnavailable or
// succeed (the pool replaces the connections), never anything else, and
// the watchers are woken when the listening connection is back.
func TestBackendsTerminated(t *testing.T) {
	schema := pgtest.Schema(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	app := "aguic-test-" + hex.EncodeToString(b[:])
	s, err := postgres.Open(t.Context(), postgres.Options{
		URL: withHost(t, "", map[string]string{"application_name": app}), Schema: schema, MaxConns: 3, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other := open(t, schema)
	defer other.Close()
	ctx := t.Context()
	l, err := s.Acquire(ctx, k1, "owner", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ch, stop := s.Watch(k1)
	defer stop()
	ch2, stop2 := s.Watch(k2)
	defer stop2()
	// Use a few of the pool's connections.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { _, _ = s.Thread(ctx, k1) })
	}
	wg.Wait()
	drain(ch)

	if n := sql(t, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app); n.(int64) < 2 {
		t.Fatalf("terminated %v server processes of the store, want its pool's and its listening connection's", n)
	}
	seq := uint64(0)
	eventually(t, "a commit succeeding after the server processes were terminated", func() bool {
		th, err := s.Commit(ctx, l, store.Commit{Events: events(1)})
		if err != nil && !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Commit after the server processes were terminated: %v, want nil or ErrUnavailable", err)
		}
		seq = th.LastSeq
		return err == nil
	})
	if seq != 1 {
		t.Errorf("the commit after the terminations: LastSeq %d, want 1", seq)
	}
	woken(t, "a watch after the listening connection was terminated and came back", ch)
	eventually(t, "the listening connection back", func() bool {
		return sql(t, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'`, app).(int64) == 1
	})
	drain(ch2)
	lo, err := other.Acquire(ctx, k2, "other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Commit(ctx, lo, store.Commit{Events: events(1)}); err != nil {
		t.Fatal(err)
	}
	woken(t, "a watch of a thread the other process changed, after the terminations", ch2)
}

// TestStatementTimeout: a commit that waits longer than the statement
// timeout for the thread's row fails with ErrUnavailable and writes
// nothing.
func TestStatementTimeout(t *testing.T) {
	schema := pgtest.Schema(t)
	s, err := postgres.Open(t.Context(), postgres.Options{
		URL: pgtest.URL(t), Schema: schema, MaxConns: 2, StatementTimeout: 100 * time.Millisecond, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	l, err := s.Acquire(ctx, k1, "owner", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{schema, "threads"}.Sanitize()+` WHERE thread = 't1' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	_, err = s.Commit(ctx, l, store.Commit{Events: events(2)})
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "statement timeout") {
		t.Errorf("Commit while another transaction holds the thread past the statement timeout: got error %v, want ErrUnavailable naming the statement timeout", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	th, err := s.Commit(ctx, l, store.Commit{Events: events(1)})
	if err != nil {
		t.Fatal(err)
	}
	if th.LastSeq != 1 || th.Version != 1 {
		t.Errorf("the commit after one that timed out: LastSeq %d Version %d, want 1 and 1", th.LastSeq, th.Version)
	}
}

// TestOpenUnreachable: Open of a server that is not there fails with
// ErrUnavailable, soon.
func TestOpenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a port nobody listens on
	_, err = postgres.Open(t.Context(), postgres.Options{URL: withHost(t, addr, nil), Schema: "aguic", Logger: quiet})
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), addr) {
		t.Errorf("Open of a closed port: got error %v, want ErrUnavailable naming %s", err, addr)
	}
}

// TestCloseStopsEverything: Close stops the store's goroutines and
// closes its connections, and calls after it fail with ErrClosed.
func TestCloseStopsEverything(t *testing.T) {
	schema := pgtest.Schema(t)
	open(t, schema).Close() // migrated
	before := runtime.NumGoroutine()
	for range 3 {
		s := open(t, schema)
		ch, stop := s.Watch(k1)
		l, err := s.Acquire(t.Context(), k1, "owner", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Commit(t.Context(), l, store.Commit{Events: events(1)}); err != nil {
			t.Fatal(err)
		}
		<-ch
		stop()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("a second Close: %v", err)
		}
		if _, err := s.Thread(t.Context(), k1); !errors.Is(err, postgres.ErrClosed) {
			t.Errorf("Thread after Close: got error %v, want ErrClosed", err)
		}
	}
	eventually(t, fmt.Sprintf("the goroutines back to %d after closing the stores", before), func() bool {
		return runtime.NumGoroutine() <= before
	})
}
