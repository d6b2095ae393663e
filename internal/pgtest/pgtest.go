// Package pgtest gives the tests that need PostgreSQL a server and a
// schema of their own.
//
// The server is the one the environment variable AGUIC_TEST_POSTGRES
// names, as a connection URL; a test that needs it is skipped when it is
// not set:
//
//	AGUIC_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test go test ./...
//
// Schema makes each test a schema of its own, with a unique name, and
// drops it (CASCADE) when the test ends: tests run in parallel on one
// database and leave nothing behind.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env is the environment variable that holds the server's URL.
const Env = "AGUIC_TEST_POSTGRES"

// URL returns the URL of the test server, and skips the test when
// AGUIC_TEST_POSTGRES is not set.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(Env)
	if url == "" {
		t.Skipf("needs PostgreSQL: run with %s=postgres://postgres@127.0.0.1:5432/test (a database the tests may create schemas in)", Env)
	}
	return url
}

// Schema creates a schema with a name of its own for the test, and drops
// it with everything in it when the test ends (after the cleanups the
// test registers later, such as closing a store on it). It skips the
// test as URL does.
func Schema(t testing.TB) string {
	t.Helper()
	url := URL(t)
	name, err := Create(url, t.Name())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := Drop(url, name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return name
}

// Create creates a schema with a name of its own, made from hint, on the
// server at url, for what is not a Go test (a script, say); Drop drops it.
func Create(url, hint string) (string, error) {
	name := schemaName(hint)
	return name, run(url, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize())
}

// Drop drops a schema Create made, with everything in it.
func Drop(url, name string) error {
	return run(url, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE")
}

// schemaName is "test_", the test's name in lower-case letters, digits
// and underscores, cut to fit, and a random suffix: at most 63 bytes, an
// identifier PostgreSQL keeps whole.
func schemaName(test string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	return "test_" + name + "_" + hex.EncodeToString(suffix[:])
}

// run runs one statement on a connection of its own.
func run(url, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", Env, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}
