package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// slowWorkflow answers every turn after an HTTP call; the test's server
// decides when that call answers.
const slowWorkflow = `wf 1

workflow slow {
  conversation = true

  flow {
    top: say "you said <<$agent.latestUserMessage.content>>"
    http GET "<<env('SLOW_URL')>>/<<$agent.latestUserMessage.content>>" -> $r
    say "server said <<$r.body>>"
    wait: suspend
    goto top
  }
}
`

// TestKillMidRun starts the real binary, drives a conversation into the
// middle of a run, kills the process with SIGKILL, starts it again on the
// same data directory, and checks that the conversation's history is
// intact, that the interrupted run is finished from its last saved node,
// and that the conversation goes on.
func TestKillMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := buildAguic(t, dir)
	wf := filepath.Join(dir, "slow.wf")
	if err := os.WriteFile(wf, []byte(slowWorkflow), 0o644); err != nil {
		t.Fatal(err)
	}

	// The server answers at once, except the first request for /second,
	// which it holds until the test lets it go.
	arrived := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name == "second" {
			held := false
			once.Do(func() { held = true })
			if held {
				close(arrived)
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
		}
		fmt.Fprintf(w, "ok-%s", name)
	}))
	defer srv.Close()
	defer close(release)

	data := filepath.Join(dir, "data")
	start := func() (*exec.Cmd, io.WriteCloser, *lines) {
		cmd := exec.Command(bin, "run", "--thread", "t1", "--data", data, wf)
		cmd.Env = append(os.Environ(), "SLOW_URL="+srv.URL)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, stdin, readLines(stdout)
	}

	// First process: one whole turn, then a turn that stops in the middle.
	cmd, stdin, out := start()
	io.WriteString(stdin, "first\n")
	out.waitFor(t, "assistant: server said ok-first")
	io.WriteString(stdin, "second\n")
	out.waitFor(t, "assistant: you said second")
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never called the server for the second turn")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// Second process: the interrupted run resumes from its last node, the
	// history is all there, and the conversation goes on.
	cmd, stdin, out = start()
	out.waitFor(t, "recovered run")
	io.WriteString(stdin, "third\n")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("second process: %v\n%s", err, out.text())
	}
	got := out.text()
	for _, want := range []string{
		"recovered run ",
		"of thread t1: suspended",
		"thread t1: ",
		"  assistant: you said first",
		"  assistant: server said ok-first",
		"  assistant: you said second",
		"  assistant: server said ok-second",
		"assistant: you said third",
		"assistant: server said ok-third",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("second process output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "you said second"); n != 1 {
		t.Errorf("the interrupted turn's first message shows %d times, want once:\n%s", n, got)
	}
}

// lines collects a process's output lines as they come.
type lines struct {
	mu   sync.Mutex
	all  []string
	more chan struct{}
}

func readLines(r io.Reader) *lines {
	l := &lines{more: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			l.mu.Unlock()
			select {
			case l.more <- struct{}{}:
			default:
			}
		}
		close(l.more)
	}()
	return l
}

// waitFor waits until a line contains s, or the output ends.
func (l *lines) waitFor(t *testing.T, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		if strings.Contains(l.text(), s) {
			return
		}
		select {
		case _, ok := <-l.more:
			if !ok {
				if strings.Contains(l.text(), s) {
					return
				}
				t.Fatalf("the output ended before %q:\n%s", s, l.text())
			}
		case <-ctx.Done():
			t.Fatalf("no %q after a minute:\n%s", s, l.text())
		}
	}
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// buildAguic builds the aguic binary into dir and returns its path, for
// tests that signal or kill a real process.
func buildAguic(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "aguic")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}
