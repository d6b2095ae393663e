package mcpclient_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aguic/aguic/internal/mcptest"
	"github.com/aguic/aguic/mcpclient"
	"github.com/aguic/aguic/vm"
)

// record is one log record with its attributes as text.
type record struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// logs is a slog.Handler that keeps what is logged, and lets a test act
// on a record as it is logged.
type logs struct {
	mu      sync.Mutex
	records []record
	attrs   []slog.Attr
	on      func(record) // called for each record, outside the lock
	parent  *logs
}

func (l *logs) root() *logs {
	if l.parent != nil {
		return l.parent.root()
	}
	return l
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }

func (l *logs) Handle(_ context.Context, r slog.Record) error {
	rec := record{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range l.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	root := l.root()
	root.mu.Lock()
	root.records = append(root.records, rec)
	on := root.on
	root.mu.Unlock()
	if on != nil {
		on(rec)
	}
	return nil
}

func (l *logs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logs{parent: l, attrs: append(slices.Clone(l.attrs), attrs...)}
}

func (l *logs) WithGroup(string) slog.Handler { return l }

// find returns the records with the message.
func (l *logs) find(msg string) []record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []record
	for _, r := range l.records {
		if r.Msg == msg {
			out = append(out, r)
		}
	}
	return out
}

// setOn sets the function called for each record.
func (l *logs) setOn(f func(record)) {
	l.mu.Lock()
	l.on = f
	l.mu.Unlock()
}

// newPool returns a pool that logs to the returned logs, closed when the
// test ends.
func newPool(t *testing.T) (*mcpclient.Pool, *logs) {
	t.Helper()
	l := &logs{}
	p := mcpclient.NewPool(mcpclient.Options{Logger: slog.New(l), Version: "test"})
	t.Cleanup(func() { _ = p.Close() })
	return p, l
}

// everything declares the reference server over stdio.
func everything(t *testing.T) *vm.Server {
	t.Helper()
	cmd, args := mcptest.Everything(t)
	return mcptest.Stdio("everything", cmd, args...)
}

// wrapped declares the reference server started through sh, which first
// runs prelude and appends its own pid to the returned file; sh then
// becomes the server (exec), so that pid is the server's and the leader
// of its process group.
func wrapped(t *testing.T, prelude string) (*vm.Server, string) {
	t.Helper()
	cmd, args := mcptest.Everything(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	quoted := make([]string, 0, len(args)+1)
	for _, a := range append([]string{cmd}, args...) {
		quoted = append(quoted, "'"+a+"'")
	}
	script := prelude + "\necho $$ >> '" + pidfile + "'\nexec " + strings.Join(quoted, " ")
	return mcptest.Stdio("everything", "sh", "-c", script), pidfile
}

// pids reads the pids a wrapped server wrote, one per start.
func pids(t *testing.T, pidfile string) []int {
	t.Helper()
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %v", pidfile, err)
		}
		out = append(out, n)
	}
	return out
}

// groupMembers lists the live processes (not zombies) of the process
// group pgid, from /proc.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp …: comm may hold spaces, so read
		// after its closing parenthesis.
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 3 || fields[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(fields[2]); g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// sum calls get-sum and returns its text, failing the test on an error.
func sum(t *testing.T, p *mcpclient.Pool, s *vm.Server, a, b int) string {
	t.Helper()
	r, err := p.Call(context.Background(), s, "get-sum", map[string]any{"a": a, "b": b})
	if err != nil {
		t.Fatalf("get-sum: %v", err)
	}
	if r.IsError {
		t.Fatalf("get-sum: isError: %s", r.Text())
	}
	return r.Text()
}
