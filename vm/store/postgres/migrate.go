package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The migrations are the files migrations/NNNN_name.sql, applied in the
// order of their numbers; the number is the schema version the file
// makes. Each file starts with a line "-- compatible: N": the oldest
// schema version that an aguic must know to use the database once the
// file is applied. A migration that only adds (a table, a column with a
// default, a function) leaves it where it was, so that the aguic before
// the upgrade, sharing the database during a rolling upgrade, goes on
// working; one that changes what the aguic before it relies on raises it
// to its own version.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one file of migrations/.
type migration struct {
	version    int
	compatible int
	name       string
	sql        string
}

// migrations reads the embedded migrations, in order; it panics on a
// malformed file, which the tests would have caught.
func migrations() []migration {
	paths, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	var ms []migration
	for _, p := range paths {
		data, err := migrationFiles.ReadFile(p)
		if err != nil {
			panic(err)
		}
		m, err := parseMigration(path.Base(p), string(data))
		if err != nil {
			panic(fmt.Sprintf("postgres: migration %s: %v", p, err))
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			panic(fmt.Sprintf("postgres: migration %s: version %d, want %d (no gaps)", m.name, m.version, i+1))
		}
	}
	return ms
}

// parseMigration reads the version from a migration's name and its
// compatible version from its first line.
func parseMigration(name, sql string) (migration, error) {
	num, _, ok := strings.Cut(name, "_")
	v, err := strconv.Atoi(num)
	if !ok || err != nil || v < 1 {
		return migration{}, errors.New("the name does not start with a version number and \"_\"")
	}
	first, _, _ := strings.Cut(sql, "\n")
	c, ok := strings.CutPrefix(strings.TrimSpace(first), "-- compatible:")
	compat, err := strconv.Atoi(strings.TrimSpace(c))
	if !ok || err != nil || compat < 1 || compat > v {
		return migration{}, fmt.Errorf("the first line is %q, want \"-- compatible: N\" with N from 1 to %d", first, v)
	}
	return migration{version: v, compatible: compat, name: name, sql: sql}, nil
}

// SchemaVersion is the version of the schema this aguic writes: the
// number of its last migration.
func SchemaVersion() int { return len(migrations()) }

// migrate brings the schema to this aguic's version, or checks that it can
// use a newer one. It holds an advisory lock of the schema for the whole
// of one transaction, so that of several processes that start at once,
// one applies the migrations and the others find them applied.
func (s *Store) migrate(ctx context.Context) error {
	ms := migrations()
	mine := len(ms)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", classify(ctx, err))
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // a no-op after Commit
	schema := pgx.Identifier{s.schema}.Sanitize()
	step := func(what, sql string, args ...any) error {
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			return fmt.Errorf("migrate: %s: %w", what, classify(ctx, err))
		}
		return nil
	}
	if err := step("lock", `SET LOCAL statement_timeout = 0`); err != nil {
		return err
	}
	if err := step("lock", `SELECT pg_advisory_xact_lock(hashtext('aguic migrate ' || $1::text))`, s.schema); err != nil {
		return err
	}
	// Only create what is missing: a user without the right to create
	// schemas can use one made for it.
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, s.schema).Scan(&exists); err != nil {
		return fmt.Errorf("migrate: %w", classify(ctx, err))
	}
	if !exists {
		if err := step("create the schema", `CREATE SCHEMA `+schema); err != nil {
			return err
		}
	}
	if err := step("set the schema", `SET LOCAL search_path TO `+schema); err != nil {
		return err
	}
	if err := step("create the table of migrations", `CREATE TABLE IF NOT EXISTS migrations (
		version    integer PRIMARY KEY,
		compatible integer NOT NULL,
		name       text NOT NULL,
		applied    timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return err
	}
	var have, needs int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0), coalesce(max(compatible), 0) FROM migrations`).Scan(&have, &needs); err != nil {
		return fmt.Errorf("migrate: %w", classify(ctx, err))
	}
	if needs > mine {
		return fmt.Errorf("the database's schema is at version %d, which needs an aguic of schema version %d or later; "+
			"this aguic is of schema version %d: run a newer aguic (the one that migrated the database, or later)", have, needs, mine)
	}
	if have >= mine {
		if have > mine {
			s.log.Info("the database's schema is newer than this aguic's, and compatible with it",
				"database", have, "aguic", mine, "compatible", needs)
		}
		return tx.Commit(ctx)
	}
	for _, m := range ms[have:] {
		if err := step("apply "+m.name, m.sql); err != nil {
			return err
		}
		if err := step("record "+m.name, `INSERT INTO migrations (version, compatible, name) VALUES ($1, $2, $3)`,
			m.version, m.compatible, m.name); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: %w", classify(ctx, err))
	}
	for _, m := range ms[have:] {
		s.log.Info("applied a migration", "migration", m.name, "version", m.version)
	}
	return nil
}
