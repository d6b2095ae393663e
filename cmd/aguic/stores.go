package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
	"github.com/aguic/aguic/vm/store/postgres"
)

// where is the store a command opens: the PostgreSQL database --store
// names (AGUIC_STORE), else the Badger data directory --data names.
type where struct {
	data string
	url  string
}

// define defines --data and --store; of names what --data is for.
func (w *where) define(fs *flag.FlagSet, of string) {
	fs.StringVar(&w.data, "data", defaultData, "the data `dir`ectory"+of)
	checkedVar(fs, &w.url, "store", "", "keep the threads in the PostgreSQL database at this `url` (postgres://user@host/db; ?search_path=name picks the schema, default aguic), instead of the data directory", storeURL)
}

// storeURL checks the value of --store: a PostgreSQL URL.
func storeURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", errors.New("not a PostgreSQL URL such as postgres://aguic@db.example.com/aguic (a data directory is --data)")
	}
	return s, nil
}

// shared reports whether the store is one several processes share.
func (w where) shared() bool { return w.url != "" }

// String names the store for messages and logs: the directory, or the
// database's URL without its password.
func (w where) String() string {
	if w.url == "" {
		return w.data
	}
	u, err := url.Parse(w.url)
	if err != nil {
		return "the PostgreSQL database"
	}
	return u.Redacted()
}

// splitSchema takes the schema of the store's tables out of a URL: its
// search_path parameter, which names it ("" for the default, aguic). The
// rest of the query goes on as it was written: pgx reads it as libpq
// does, where a "+" is a plus, not a space.
func splitSchema(s string) (connect, schema string) {
	u, err := url.Parse(s)
	if err != nil {
		return s, ""
	}
	var kept []string
	for _, part := range strings.Split(u.RawQuery, "&") {
		name, value, _ := strings.Cut(part, "=")
		if name != "search_path" {
			if part != "" {
				kept = append(kept, part)
			}
			continue
		}
		if v, err := url.QueryUnescape(value); err == nil {
			schema = v
		}
	}
	if schema == "" {
		return s, ""
	}
	u.RawQuery = strings.Join(kept, "&")
	return u.String(), schema
}

// opened is a store a command opened, with what a server asks of it
// beyond store.Store.
type opened struct {
	store.Store
	// maintain are the store's own background tasks (Badger's value-log
	// GC); release gives its memory back at idle; both may be nil.
	maintain []func(context.Context) <-chan struct{}
	release  func() error
}

// open opens the store. A database that cannot be reached fails at once,
// with an error that names it.
func (w where) open(ctx context.Context, log *slog.Logger) (*opened, error) {
	if w.url == "" {
		st, err := openData(w.data)
		if err != nil {
			return nil, err
		}
		return &opened{
			Store:    st,
			maintain: []func(context.Context) <-chan struct{}{func(ctx context.Context) <-chan struct{} { return st.StartGC(ctx, 10*time.Minute) }},
			release:  st.ReleaseMemory,
		}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	connect, schema := splitSchema(w.url)
	st, err := postgres.Open(ctx, postgres.Options{URL: connect, Schema: schema, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", w, err)
	}
	return &opened{Store: st}, nil
}

// Backup writes a backup of the store (server.Backuper).
func (o *opened) Backup(ctx context.Context, w io.Writer) error {
	d, ok := o.Store.(store.Dumper)
	if !ok {
		return errors.New("this store cannot be backed up")
	}
	return store.WriteBackup(ctx, w, d)
}

// Restore loads a backup into the store, which must be empty. A Badger
// store reads every format it ever wrote; another store reads a backup of
// format 1 (Badger's own stream, from aguic before backups were portable)
// through badger.Convert.
func (o *opened) Restore(ctx context.Context, r io.Reader) error {
	if b, ok := o.Store.(*badger.Store); ok {
		return b.Restore(ctx, r)
	}
	dst, ok := o.Store.(store.Restorer)
	if !ok {
		return errors.New("this store cannot be restored into")
	}
	br := bufio.NewReader(r)
	head, _ := br.Peek(len(formatOne))
	if string(head) != formatOne {
		return store.ReadBackup(ctx, br, dst)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(badger.Convert(ctx, br, pw)) }()
	err := store.ReadBackup(ctx, pr, dst)
	pr.CloseWithError(err)
	return err
}

// formatOne starts a backup of format 1.
const formatOne = "aguic store backup 1\n"

// quietLog is the logger of the stores of commands that are not servers:
// warnings and errors, on standard error.
func quietLog(e *env) *slog.Logger {
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
