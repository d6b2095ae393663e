// Package mcptest runs the reference MCP server of the npm package
// @modelcontextprotocol/server-everything for tests, over stdio or over
// streamable HTTP, and builds the vm.Server declarations that reach it.
//
// The server is a devDependency of e2e/package.json, run by node from
// e2e/node_modules. When node or the package is missing, a test that
// needs it is skipped with a message that says to run `cd e2e && npm ci`;
// with AGUIC_REQUIRE_AIMOCK=1, as CI sets it, it fails instead.
package mcptest

import (
	"bufio"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/expr-lang/expr"

	"github.com/aguic/aguic/internal/syncbuf"
	"github.com/aguic/aguic/vm"
)

// RequireEnv is the environment variable that, set to 1, turns a missing
// node or server package from a skipped test into a failed one. It is
// the one the tests of internal/aimock read.
const RequireEnv = "AGUIC_REQUIRE_AIMOCK"

// EverythingEntry is the reference server's entry point, relative to the
// repository: node runs it with "stdio" or "streamableHttp".
const EverythingEntry = "e2e/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

// startTimeout bounds how long the HTTP server may take to listen.
const startTimeout = 30 * time.Second

// Everything returns the command and arguments that run the reference
// server over stdio: node, and the server's entry point with "stdio".
// It skips the test (or fails it, see RequireEnv) when node or the
// package is missing.
func Everything(t testing.TB) (command string, args []string) {
	t.Helper()
	node, entry := locate(t)
	return node, []string{entry, "stdio"}
}

// HTTPServer is the reference server over streamable HTTP, on a port of
// the loopback interface.
type HTTPServer struct {
	// URL is the MCP endpoint, such as "http://127.0.0.1:40123/mcp".
	URL string

	t           testing.TB
	node, entry string
	port        int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	stderr *syncbuf.Buffer
}

// EverythingHTTP starts the reference server over streamable HTTP on a
// free port and waits until it listens. It stops when the test ends.
func EverythingHTTP(t testing.TB) *HTTPServer {
	t.Helper()
	node, entry := locate(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mcptest: no free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &HTTPServer{
		URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port),
		t:   t, node: node, entry: entry, port: port,
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			if e := s.lastStderr(); e != "" {
				t.Logf("server-everything stderr:\n%s", e)
			}
		}
	})
	s.Start()
	return s
}

// Start starts the server again on its port after Stop; it does nothing
// while the server runs.
func (s *HTTPServer) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command(s.node, s.entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(s.port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := &syncbuf.Buffer{}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatalf("mcptest: %v", err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("mcptest: start node: %v", err)
	}
	// The server says on stderr when it listens; the rest of its stderr
	// is kept for a failing test's log.
	listening := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		said := false
		for sc.Scan() {
			fmt.Fprintln(stderr, sc.Text())
			if !said && strings.Contains(sc.Text(), "listening on port") {
				said = true
				close(listening)
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited, s.stderr = cmd, exited, stderr
	select {
	case <-listening:
	case <-exited:
		s.cmd = nil
		s.t.Fatalf("mcptest: server-everything exited before it listened:\n%s", stderr.String())
	case <-time.After(startTimeout):
		s.t.Fatalf("mcptest: server-everything did not listen within %s:\n%s", startTimeout, stderr.String())
	}
}

// Stop stops the server; requests to its URL are refused until Start.
func (s *HTTPServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

func (s *HTTPServer) lastStderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stderr == nil {
		return ""
	}
	return s.stderr.String()
}

// Stdio declares a stdio server named name that runs command with args,
// as `mcp name { command = "…" args = […] }` does.
func Stdio(name, command string, args ...string) *vm.Server {
	s := &vm.Server{Name: name, Command: Value(command)}
	if len(args) > 0 {
		list := make([]any, len(args))
		for i, a := range args {
			list[i] = a
		}
		s.Args = Value(list)
	}
	return s
}

// HTTP declares a server named name reached at url, with headers (nil
// for none), as `mcp name { url = "…" headers = {…} }` does.
func HTTP(name, url string, headers map[string]string) *vm.Server {
	s := &vm.Server{Name: name, URL: Value(url)}
	if headers != nil {
		obj := map[string]any{}
		for k, v := range headers {
			obj[k] = v
		}
		s.Headers = Value(obj)
	}
	return s
}

// Value is the vm.Value of a literal: a string, a list or an object of
// them, written as a .wf file writes it and compiled as an expression.
func Value(v any) *vm.Value {
	src := literal(v)
	prog, err := expr.Compile(src)
	if err != nil {
		panic(fmt.Sprintf("mcptest: %s does not compile: %v", src, err))
	}
	return &vm.Value{Source: src, Expr: &vm.Expr{Source: src, Program: prog}}
}

// literal writes v as an expression.
func literal(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = literal(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			parts = append(parts, strconv.Quote(k)+": "+literal(x[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// locate finds node and the server's entry point.
func locate(t testing.TB) (node, entry string) {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		unavailable(t, "node is not on PATH: install Node 20 or newer, then run `cd e2e && npm ci`")
	}
	entry = filepath.Join(root, filepath.FromSlash(EverythingEntry))
	if _, err := os.Stat(entry); err != nil {
		unavailable(t, "the server-everything package is not installed (%s is missing): run `cd e2e && npm ci`", entry)
	}
	return node, entry
}

// unavailable skips the test, or fails it when RequireEnv is 1.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := "mcptest: " + fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg + " (" + RequireEnv + "=1: the tests of MCP servers may not be skipped)")
	}
	t.Skip(msg)
}

// repoRoot walks up from the working directory to the directory of go.mod.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod in %s or a directory above it", wd)
		}
	}
}
