package postgres

import (
	"strings"
	"testing"
	"time"
)

// TestPoolConfig: the options win over the URL, the URL over the
// defaults.
func TestPoolConfig(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      Options
		maxConns  int32
		timeout   string
		path      string
		app       string
		pingAfter time.Duration
	}{
		{"Defaults", Options{URL: "postgres://u@h/db", Schema: "aguic"}, 8, "10000", `"aguic"`, "aguic", defaultPingTimeout},
		{"URL", Options{URL: "postgres://u@h/db?pool_max_conns=3&statement_timeout=2500&application_name=app&pool_ping_timeout=1s", Schema: "aguic"},
			3, "2500", `"aguic"`, "app", time.Second},
		{"KeyValue", Options{URL: "host=h user=u pool_max_conns=2 statement_timeout=700", Schema: "aguic"}, 2, "700", `"aguic"`, "aguic", defaultPingTimeout},
		{"OptionsWin", Options{URL: "postgres://u@h/db?pool_max_conns=3&statement_timeout=2500", Schema: "aguic", MaxConns: 5, StatementTimeout: time.Second},
			5, "1000", `"aguic"`, "aguic", defaultPingTimeout},
		{"NoTimeout", Options{URL: "postgres://u@h/db?statement_timeout=2500", Schema: "aguic", StatementTimeout: -1}, 8, "0", `"aguic"`, "aguic", defaultPingTimeout},
		{"QuotedSchema", Options{URL: "postgres://u@h/db?search_path=public", Schema: `my "schema"`}, 8, "10000", `"my ""schema"""`, "aguic", defaultPingTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := poolConfig(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			params := cfg.ConnConfig.RuntimeParams
			if cfg.MaxConns != tc.maxConns || params["statement_timeout"] != tc.timeout || params["search_path"] != tc.path ||
				params["application_name"] != tc.app || cfg.PingTimeout != tc.pingAfter {
				t.Errorf("poolConfig(%+v): MaxConns %d, statement_timeout %q, search_path %q, application_name %q, PingTimeout %v; want %d, %q, %q, %q, %v",
					tc.opts, cfg.MaxConns, params["statement_timeout"], params["search_path"], params["application_name"], cfg.PingTimeout,
					tc.maxConns, tc.timeout, tc.path, tc.app, tc.pingAfter)
			}
			if cfg.ConnConfig.ConnectTimeout != defaultConnectTimeout {
				t.Errorf("ConnectTimeout %v, want %v", cfg.ConnConfig.ConnectTimeout, defaultConnectTimeout)
			}
		})
	}
	cfg, err := poolConfig(Options{URL: "postgres://u@h/db?connect_timeout=1", Schema: "aguic"})
	if err != nil || cfg.ConnConfig.ConnectTimeout != time.Second {
		t.Errorf("connect_timeout=1 in the URL: ConnectTimeout %v, %v; want 1s", cfg.ConnConfig.ConnectTimeout, err)
	}
	if _, err := poolConfig(Options{URL: "postgres://u@h/db?pool_max_conns=x", Schema: "aguic"}); err == nil ||
		!strings.HasPrefix(err.Error(), "the database URL: ") {
		t.Errorf("a malformed URL: got error %v, want one naming the database URL", err)
	}
}

func TestMigrations(t *testing.T) {
	ms := migrations()
	if len(ms) == 0 || SchemaVersion() != len(ms) {
		t.Fatalf("%d migrations, SchemaVersion %d", len(ms), SchemaVersion())
	}
	for i, m := range ms {
		if m.version != i+1 || m.compatible < 1 || m.compatible > m.version {
			t.Errorf("migration %s: version %d, compatible %d", m.name, m.version, m.compatible)
		}
		if i > 0 && m.compatible < ms[i-1].compatible {
			t.Errorf("migration %s: compatible %d is below the one before it (%d)", m.name, m.compatible, ms[i-1].compatible)
		}
	}
	for _, tc := range []struct{ name, sql, err string }{
		{"0002_x.sql", "-- compatible: 1\nSELECT 1;", ""},
		{"x.sql", "-- compatible: 1\n", "the name does not start with a version number"},
		{"0002_x.sql", "SELECT 1;", `the first line is "SELECT 1;"`},
		{"0002_x.sql", "-- compatible: 3\n", "with N from 1 to 2"},
	} {
		_, err := parseMigration(tc.name, tc.sql)
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseMigration(%q, %q): %v, want %q", tc.name, tc.sql, err, tc.err)
		}
	}
}

func TestChannelName(t *testing.T) {
	if got := channelName("aguic"); got != "aguic.aguic" {
		t.Errorf("channelName(aguic) = %q", got)
	}
	long := strings.Repeat("s", 100)
	if got := channelName(long); len(got) > 63 || got == channelName(long+"t") {
		t.Errorf("channelName of a long schema: %q", got)
	}
}
