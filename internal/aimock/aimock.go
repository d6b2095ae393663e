package aimock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/syncbuf"
)

// RequireEnv is the environment variable that, set to 1, turns a missing
// node or aimock package from a skipped test into a failed one.
const RequireEnv = "AGUIC_REQUIRE_AIMOCK"

// entryFile is aimock's ES module entry point, relative to the repository.
const entryFile = "e2e/node_modules/@copilotkit/aimock/dist/index.js"

// scriptFile starts the server, relative to the repository.
const scriptFile = "internal/aimock/start.mjs"

// startTimeout bounds how long node may take to print the server's URL.
const startTimeout = 30 * time.Second

// Server is a running aimock server.
type Server struct {
	// URL is the server's root, such as "http://127.0.0.1:40123".
	URL string

	t      testing.TB
	client *http.Client
	stderr syncbuf.Buffer
}

// Start starts an aimock server that answers with the fixtures, and stops
// it when the test ends. It skips the test, or fails it when
// AGUIC_REQUIRE_AIMOCK=1, when node or the aimock package is missing.
func Start(t testing.TB, fixtures ...Fixture) *Server {
	t.Helper()
	s := start(t, nil)
	if len(fixtures) > 0 {
		s.Add(fixtures...)
	}
	return s
}

// StartFiles starts an aimock server that answers with the fixtures of
// the files: aimock's JSON fixture files, each a list of fixtures or an
// object {"fixtures": […]}. Relative paths are relative to the test's
// directory.
func StartFiles(t testing.TB, paths ...string) *Server {
	t.Helper()
	abs := make([]string, len(paths))
	for i, p := range paths {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatalf("aimock: fixture file %s: %v", p, err)
		}
		abs[i] = a
	}
	return start(t, abs)
}

// start runs node with start.mjs and waits for the URL it prints.
func start(t testing.TB, files []string) *Server {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("aimock: %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable(t, "node is not on PATH: install Node 20 or newer, then run `cd e2e && npm ci`")
	}
	entry := filepath.Join(root, filepath.FromSlash(entryFile))
	if _, err := os.Stat(entry); err != nil {
		unavailable(t, "the aimock package is not installed (%s is missing): run `cd e2e && npm ci`", entry)
	}

	s := &Server{t: t, client: &http.Client{Timeout: 30 * time.Second}}
	cmd := exec.Command(node, append([]string{filepath.Join(root, filepath.FromSlash(scriptFile)), entry}, files...)...)
	cmd.Stderr = &s.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("aimock: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("aimock: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("aimock: start node: %v", err)
	}

	// The first line of stdout is the URL; the rest is drained until the
	// process ends, and only then is it waited for, as exec requires.
	lines := make(chan string, 1)
	exited := make(chan struct{})
	var waitErr error
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, r)
		waitErr = cmd.Wait()
		close(exited)
	}()
	// stop ends node: it exits when its stdin closes, and is killed if it
	// does not within the grace period.
	stop := func(grace time.Duration) {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(grace):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	t.Cleanup(func() {
		stop(10 * time.Second)
		if t.Failed() && s.URL != "" && s.stderr.Len() > 0 {
			t.Logf("aimock stderr:\n%s", s.stderr.String())
		}
	})

	select {
	case line := <-lines:
		if !strings.HasPrefix(line, "http://") {
			stop(5 * time.Second)
			if line != "" {
				t.Fatalf("aimock: the server did not start: it printed %q instead of its URL:\n%s", line, s.stderr.String())
			}
			t.Fatalf("aimock: the server did not start (%v):\n%s", waitErr, s.stderr.String())
		}
		s.URL = line
	case <-time.After(startTimeout):
		stop(0)
		t.Fatalf("aimock: the server printed no URL within %s:\n%s", startTimeout, s.stderr.String())
	}
	return s
}

// unavailable skips the test because aimock cannot run, or fails it when
// AGUIC_REQUIRE_AIMOCK=1.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := "aimock: " + fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg + " (" + RequireEnv + "=1: the aimock tests may not be skipped)")
	}
	t.Skip(msg)
}

// repoRoot walks up from the working directory to the directory of go.mod.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod in %s or a directory above it", wd)
		}
		dir = parent
	}
}

// OpenAIBaseURL is the base URL of the OpenAI API the server mocks, the
// one OpenAI clients take: URL + "/v1".
func (s *Server) OpenAIBaseURL() string { return s.URL + "/v1" }

// AnthropicBaseURL is the base URL of the Anthropic API the server mocks,
// the one Anthropic clients take: the server's root, to which they add
// "/v1/messages".
func (s *Server) AnthropicBaseURL() string { return s.URL }

// Add adds fixtures after those the server has; they answer the requests
// none of those match.
func (s *Server) Add(fixtures ...Fixture) {
	s.t.Helper()
	s.control(http.MethodPost, "/fixtures", map[string]any{"fixtures": fixtures}, nil)
}

// Journal returns every request the server received, oldest first.
func (s *Server) Journal() []Entry {
	s.t.Helper()
	var entries []Entry
	s.control(http.MethodGet, "/journal", nil, &entries)
	return entries
}

// ChatRequests returns the bodies of the chat completions requests the
// server received, oldest first.
func (s *Server) ChatRequests() []ChatRequest {
	s.t.Helper()
	return s.requests((*Entry).isChat)
}

// MessagesRequests returns the bodies of the Anthropic Messages API
// requests the server received, oldest first. aimock keeps them as the
// chat completions requests it converts them to before it matches
// fixtures (see Entry.Chat), so what it drops in the conversion, such as
// image blocks, is missing.
func (s *Server) MessagesRequests() []ChatRequest {
	s.t.Helper()
	return s.requests((*Entry).isMessages)
}

// requests returns the chat requests of the journal's entries that keep
// says yes to, oldest first.
func (s *Server) requests(keep func(*Entry) bool) []ChatRequest {
	s.t.Helper()
	var out []ChatRequest
	for _, e := range s.Journal() {
		if !keep(&e) {
			continue
		}
		req, err := e.Chat()
		if err != nil {
			s.t.Fatalf("aimock: %v", err)
		}
		out = append(out, *req)
	}
	return out
}

// SetChaos sets the chaos of every request, replacing what was set before.
func (s *Server) SetChaos(c Chaos) {
	s.t.Helper()
	s.control(http.MethodPost, "/chaos", c, nil)
}

// ClearChaos turns the chaos SetChaos set off.
func (s *Server) ClearChaos() {
	s.t.Helper()
	s.control(http.MethodDelete, "/chaos", nil, nil)
}

// QueueError makes the next model request the server receives fail with
// the status and the message, before any fixture is consulted.
func (s *Server) QueueError(status int, message string) {
	s.t.Helper()
	body := map[string]any{"status": status, "body": Error{Message: message, Type: "server_error"}}
	s.control(http.MethodPost, "/error", body, nil)
}

// control calls the control API at /__aimock<path>, sending in as JSON
// when it is not nil and decoding the answer into out when it is not nil.
// Any failure fails the test.
func (s *Server) control(method, path string, in, out any) {
	s.t.Helper()
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			s.t.Fatalf("aimock: %s %s: %v", method, path, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.URL+"/__aimock"+path, body)
	if err != nil {
		s.t.Fatalf("aimock: %s %s: %v", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("aimock: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(resp.Status + ": " + strings.TrimSpace(string(data)))
	}
	if err == nil && out != nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		s.t.Fatalf("aimock: %s /__aimock%s: %v", method, path, err)
	}
}
