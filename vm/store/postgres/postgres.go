package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aguic/aguic/vm/store"
)

// ErrClosed is returned by every operation after Close.
var ErrClosed = errors.New("the store is closed")

// The defaults of Options.
const (
	DefaultSchema           = "aguic"
	DefaultMaxConns         = 8
	DefaultStatementTimeout = 10 * time.Second
	// defaultConnectTimeout bounds a connection attempt when the URL sets
	// no connect_timeout: a server that does not answer makes calls fail
	// with store.ErrUnavailable rather than hang.
	defaultConnectTimeout = 5 * time.Second
	// defaultPingTimeout bounds the ping with which the pool checks a
	// connection that was idle before handing it out.
	defaultPingTimeout = 5 * time.Second
)

// Options configure Open. Where a field is zero, a setting of the URL
// applies (pool_max_conns, statement_timeout), then the default; a field
// that is set wins over the URL.
type Options struct {
	// URL is the connection string: a postgres:// URL or key=value
	// pairs, with anything pgx and pgxpool read in it (sslmode,
	// connect_timeout, application_name, pool_min_conns,
	// pool_max_conn_idle_time…). search_path is always the schema.
	URL string
	// Schema is the PostgreSQL schema that holds the store's tables;
	// created when missing. Default "aguic".
	Schema string
	// MaxConns is the size of the connection pool. Default: the URL's
	// pool_max_conns, else 8. The store opens one more connection, to
	// listen for the notifications of the other processes.
	MaxConns int
	// StatementTimeout is how long the server lets one statement run
	// (each connection's statement_timeout); a statement that runs
	// longer fails with store.ErrUnavailable. Default: the URL's
	// statement_timeout, else 10s; negative for none.
	StatementTimeout time.Duration
	// Logger receives what the store does in the background (migrations
	// applied, the listening connection lost and regained, notifications
	// that could not be sent); nil means slog.Default().
	Logger *slog.Logger
}

// Store is a store.Store on PostgreSQL.
type Store struct {
	pool    *pgxpool.Pool
	schema  string
	channel string // the channel of the schema's notifications
	origin  string // this Store's id in the notifications it sends
	log     *slog.Logger
	hub     store.Hub

	notes  outbox
	listen *pgx.ConnConfig // the listening connection's configuration

	closed atomic.Bool
	stop   context.CancelFunc // stops the background goroutines
	wg     sync.WaitGroup
	once   sync.Once
}

var _ store.Store = (*Store)(nil)

// Open connects to the database, creates the schema and applies the
// migrations this aguic has that the database lacks, and starts
// listening for the notifications of the other processes that share the
// schema. It fails when the database's schema needs a newer aguic
// (migrate.go), and with store.ErrUnavailable when the server cannot be
// reached.
func Open(ctx context.Context, opts Options) (*Store, error) {
	return open(ctx, opts, nil)
}

// open is Open, with tune, when not nil, changing the pool's
// configuration (the tests trace the queries).
func open(ctx context.Context, opts Options, tune func(*pgxpool.Config)) (*Store, error) {
	if opts.Schema == "" {
		opts.Schema = DefaultSchema
	}
	fail := func(err error) (*Store, error) {
		return nil, fmt.Errorf("open store (schema %q): %w", opts.Schema, err)
	}
	if opts.URL == "" {
		return fail(errors.New("no database URL given"))
	}
	cfg, err := poolConfig(opts)
	if err != nil {
		return fail(err)
	}
	if tune != nil {
		tune(cfg)
	}
	s := &Store{
		schema:  opts.Schema,
		channel: channelName(opts.Schema),
		origin:  newOrigin(),
		log:     opts.Logger,
		listen:  cfg.ConnConfig.Copy(),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("component", "store", "schema", opts.Schema)
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return fail(classify(ctx, err))
	}
	if err := s.migrate(ctx); err != nil {
		s.pool.Close()
		return fail(err)
	}
	conn, err := s.connectListener(ctx)
	if err != nil {
		s.pool.Close()
		return fail(classify(ctx, err))
	}
	bg, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.notes.init()
	s.wg.Add(2)
	go s.listenLoop(bg, conn)
	go s.sendLoop(bg)
	return s, nil
}

// poolConfig reads the URL and applies opts to it.
func poolConfig(opts Options) (*pgxpool.Config, error) {
	// pgxpool drops the pool_ settings it reads: look for them first.
	raw, err := pgconn.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("the database URL: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("the database URL: %w", err)
	}
	switch _, inURL := raw.RuntimeParams["pool_max_conns"]; {
	case opts.MaxConns > 0:
		cfg.MaxConns = int32(opts.MaxConns)
	case !inURL:
		cfg.MaxConns = DefaultMaxConns
	}
	if _, inURL := raw.RuntimeParams["pool_ping_timeout"]; !inURL {
		cfg.PingTimeout = defaultPingTimeout
	}
	params := cfg.ConnConfig.RuntimeParams
	switch _, inURL := params["statement_timeout"]; {
	case opts.StatementTimeout < 0:
		params["statement_timeout"] = "0"
	case opts.StatementTimeout > 0:
		params["statement_timeout"] = strconv.FormatInt(max(opts.StatementTimeout.Milliseconds(), 1), 10)
	case !inURL:
		params["statement_timeout"] = strconv.FormatInt(DefaultStatementTimeout.Milliseconds(), 10)
	}
	params["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	if _, ok := params["application_name"]; !ok {
		params["application_name"] = "aguic"
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	return cfg, nil
}

// newOrigin returns a random id for a Store: a process skips the
// notifications it sent itself, whose watchers it woke already.
func newOrigin() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Close stops listening, sends the notifications still waiting, and
// closes the connections, after the operations under way. A second
// Close does nothing.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.closed.Store(true)
		s.stop()
		s.wg.Wait()
		s.pool.Close()
	})
	return nil
}

// enter starts an operation: it fails when ctx is done or the store
// closed.
func (s *Store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}
