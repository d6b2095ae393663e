package pgtest

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestSkipWithoutServer(t *testing.T) {
	t.Setenv(Env, "")
	var skipped bool
	t.Run("NeedsPostgres", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		URL(t)
		t.Error("URL returned without a server")
	})
	if !skipped {
		t.Errorf("a test that needs PostgreSQL was not skipped without %s", Env)
	}
}

func TestSchemaName(t *testing.T) {
	a, b := schemaName("TestX/Sub_test"), schemaName("TestX/Sub_test")
	if a == b || !strings.HasPrefix(a, "test_testx_sub_test_") {
		t.Errorf("schemaName: %q and %q", a, b)
	}
	if long := schemaName(strings.Repeat("Ü/", 100)); len(long) > 63 {
		t.Errorf("schemaName of a long test name: %q, %d bytes", long, len(long))
	}
}

// TestSchema: the schema exists during the test and is gone after it.
func TestSchema(t *testing.T) {
	url := URL(t)
	var name string
	t.Run("Sub", func(t *testing.T) {
		name = Schema(t)
		if !exists(t, url, name) {
			t.Errorf("schema %q does not exist during the test", name)
		}
	})
	if exists(t, url, name) {
		t.Errorf("schema %q is still there after the test", name)
	}
}

func exists(t *testing.T, url, schema string) bool {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}
