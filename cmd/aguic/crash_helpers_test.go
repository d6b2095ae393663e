package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// This file holds the machinery of the crash campaign (crash_test.go): a
// real `aguic serve` process that the campaign kills and starts again,
// and a reader of the run streams.

// crashServing is the log line serve writes once it listens, with the URL
// of its AG-UI routes (the base path included).
var crashServing = regexp.MustCompile(`msg=serving url=(http://\S+)\s`)

// crashProcLog collects the standard error of one serve process and
// notes its URL once the line that says it arrives.
type crashProcLog struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	url   string
	ready chan struct{} // closed once url is set
}

func (l *crashProcLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if l.url == "" {
		if m := crashServing.FindSubmatch(l.buf.Bytes()); m != nil {
			l.url = string(m[1])
			close(l.ready)
		}
	}
	return len(p), nil
}

func (l *crashProcLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// crashProc is one serve process.
type crashProc struct {
	cmd    *exec.Cmd
	log    *crashProcLog
	exited chan struct{} // closed once the process was waited for
	err    error         // how it exited, once exited is closed
	killed atomic.Bool   // the test killed it
}

// startCrashProc starts bin with args and env and returns once it
// listens. It never calls t.Fatal, so any goroutine may call it.
func startCrashProc(bin string, args, env []string) (*crashProc, error) {
	p := &crashProc{
		cmd:    exec.Command(bin, args...),
		log:    &crashProcLog{ready: make(chan struct{})},
		exited: make(chan struct{}),
	}
	p.cmd.Env = env
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = p.log
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case <-p.log.ready:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("serve exited before it listened: %v\n%s", p.err, p.log.String())
	case <-time.After(60 * time.Second): // a guard against a hang, not a timing
		p.kill()
		return nil, fmt.Errorf("serve did not listen within a minute:\n%s", p.log.String())
	}
}

// kill ends the process with SIGKILL and waits until it is gone.
func (p *crashProc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.killed.Store(true)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// crashServers is where the clients of a campaign send their requests:
// one server process at a time (crashServer), or several replicas on one
// store (crashCluster, crash_replicas_test.go). A generation names one
// process: an answer that came from the address of a process that is gone
// may come from another one that took its port since.
type crashServers interface {
	// current returns the URL of the process to send the next request to
	// and its generation, waiting while there is none.
	current(ctx context.Context) (url string, gen int, err error)
	// stale reports whether the process of generation gen is gone.
	stale(gen int) bool
	// settle waits until the process of generation gen is gone or d
	// passes.
	settle(ctx context.Context, gen int, d time.Duration)
}

// crashServer is the one serve process of a campaign at a time, on one
// data directory: the clients ask it for the URL of the live process,
// and the killer replaces the process. Every process listens on a port
// of its own choosing (127.0.0.1:0) and tells it in its log, so no port
// is ever guessed.
type crashServer struct {
	bin  string
	args []string
	env  []string

	mu      sync.Mutex
	proc    *crashProc // nil while down
	url     string     // the live process's URL, "" while down
	gen     int        // how many processes were started
	changed chan struct{}
	logs    []string // the logs of every process, by generation - 1
	kills   int
	deaths  []string // the processes that exited without being killed
}

func newCrashServer(bin string, args, env []string) *crashServer {
	return &crashServer{bin: bin, args: args, env: env, changed: make(chan struct{})}
}

// notify wakes the waiters; s.mu is held.
func (s *crashServer) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// start starts a new process on the data directory.
func (s *crashServer) start() error {
	p, err := startCrashProc(s.bin, s.args, s.env)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		return err
	}
	s.proc, s.url = p, p.log.url
	s.gen++
	s.logs = append(s.logs, "")
	s.notify()
	gen := s.gen
	go func() {
		<-p.exited
		if p.killed.Load() {
			return
		}
		log := p.log.String()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.logs[gen-1] = log
		s.deaths = append(s.deaths, fmt.Sprintf("server %d exited by itself (%v); its log ends:\n%s", gen, p.err, crashTail(log, 30)))
		if s.proc == p {
			s.proc, s.url = nil, ""
			s.notify()
		}
	}()
	return nil
}

// down reports whether no process serves.
func (s *crashServer) down() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc == nil
}

// died returns what is known of the processes that exited on their own.
func (s *crashServer) died() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deaths...)
}

// crashTail is the last n lines of a log.
func crashTail(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// kill kills the live process with SIGKILL and keeps its log; it counts
// as a kill even when the process was already gone. The clients learn
// that the server is down only once the process is gone, as real clients
// would: their requests meanwhile fail or break.
func (s *crashServer) kill() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p != nil {
		p.kill()
	}
	s.mu.Lock()
	if p != nil && s.proc == p {
		s.proc, s.url = nil, ""
		s.logs[s.gen-1] = p.log.String()
	}
	s.kills++
	s.notify()
	s.mu.Unlock()
}

// stale reports whether the process of generation gen is gone: an answer
// that came from its port may come from another process that took the
// port since.
func (s *crashServer) stale(gen int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen != gen || s.url == ""
}

// waitKills waits until the server was killed n times.
func (s *crashServer) waitKills(ctx context.Context, n int) {
	for {
		s.mu.Lock()
		kills, ch := s.kills, s.changed
		s.mu.Unlock()
		if kills >= n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

func (s *crashServer) killed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kills
}

// current returns the live process's URL and generation, waiting while
// the server is down.
func (s *crashServer) current(ctx context.Context) (string, int, error) {
	for {
		s.mu.Lock()
		url, gen, ch := s.url, s.gen, s.changed
		s.mu.Unlock()
		if url != "" {
			return url, gen, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return "", 0, ctx.Err()
		}
	}
}

// settle waits until the server changes from generation gen or d passes:
// after a request failed to connect, the process it went to is probably
// gone and the next one is not up yet.
func (s *crashServer) settle(ctx context.Context, gen int, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		s.mu.Lock()
		moved, ch := s.gen != gen || s.url == "", s.changed
		s.mu.Unlock()
		if moved {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// allLogs returns the log of every process so far, by generation.
func (s *crashServer) allLogs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]string(nil), s.logs...)
	if s.proc != nil {
		out[s.gen-1] = s.proc.log.String()
	}
	return out
}

// crashEvent is what the campaign reads of an AG-UI event.
type crashEvent struct {
	Type      string          `json:"type"`
	MessageID string          `json:"messageId"`
	Role      string          `json:"role"`
	Delta     string          `json:"delta"`
	RunID     string          `json:"runId"`
	Message   string          `json:"message"`
	Code      string          `json:"code"`
	Outcome   json.RawMessage `json:"outcome"`
}

// short is the event in a few words, for the reports.
func (e crashEvent) short() string {
	switch e.Type {
	case "TEXT_MESSAGE_START":
		return fmt.Sprintf("%s %s %s", e.Type, e.MessageID, e.Role)
	case "TEXT_MESSAGE_CONTENT":
		return fmt.Sprintf("%s %s %q", e.Type, e.MessageID, e.Delta)
	case "TEXT_MESSAGE_END":
		return fmt.Sprintf("%s %s", e.Type, e.MessageID)
	case "RUN_STARTED":
		return fmt.Sprintf("%s %s", e.Type, e.RunID)
	case "RUN_FINISHED":
		return fmt.Sprintf("%s %s outcome=%s", e.Type, e.RunID, e.Outcome)
	case "RUN_ERROR":
		return fmt.Sprintf("%s code=%s %q", e.Type, e.Code, e.Message)
	}
	return e.Type
}

// terminal reports whether e ends a run's stream.
func (e crashEvent) terminal() bool { return e.Type == "RUN_FINISHED" || e.Type == "RUN_ERROR" }

// readCrashStream reads the events of an SSE stream and hands each to
// seen as it arrives. It returns nil when the stream ended after a
// terminal event, and the reason otherwise (the stream broke).
func readCrashStream(r io.Reader, seen func(crashEvent)) error {
	br := bufio.NewReader(r)
	var data []string
	ended := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if ended && errors.Is(err, io.EOF) && line == "" {
				return nil
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if len(data) == 0 {
				continue
			}
			var e crashEvent
			if err := json.Unmarshal([]byte(strings.Join(data, "\n")), &e); err != nil {
				return fmt.Errorf("an event that is not JSON: %q: %v", data, err)
			}
			data = data[:0]
			seen(e)
			if e.terminal() {
				ended = true
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case strings.HasPrefix(line, ":"), strings.HasPrefix(line, "id:"), strings.HasPrefix(line, "event:"), strings.HasPrefix(line, "retry:"):
		default:
			return fmt.Errorf("a line that is not SSE: %q", line)
		}
	}
}

// crashEnv is the environment of the serve processes: the test's, without
// the AGUIC_ variables that would change the server, plus extra.
func crashEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGUIC_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}
