package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/pgtest"
)

// benchWorkflows are the workflows the bench tests serve: a stateless
// chat whose model answers from a script, and a conversation.
const benchWorkflows = `wf 1

workflow chat {
  flow {
    model {
      prompt  = "<<$agent.latestUserMessage.content>>"
      chat_in = $agent.chat
    } -> $reply
  }
}

workflow talk {
  conversation = true
  flow {
    top: say "you said <<$agent.latestUserMessage.content>>"
    wait: suspend
    goto top
  }
}
`

// benchRun runs aguic bench with args and --json, and returns its exit
// status, report and standard error.
func benchRun(t *testing.T, args ...string) (int, *benchReport, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append(append([]string{"bench"}, args...), "--json"), nil, &stdout, &stderr)
	if stdout.Len() == 0 {
		return code, nil, stderr.String()
	}
	var r benchReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("the report is not JSON: %v\n%s", err, stdout.String())
	}
	return code, &r, stderr.String()
}

// TestBench drives a real aguic serve: every turn is counted, none fails,
// the percentiles are ordered; without a token each turn is a 401.
func TestBench(t *testing.T) {
	for _, v := range []string{"AGUIC_TOKENS", "AGUIC_TOKENS_FILE", "AGUIC_URL", "AGUIC_CLIENTS", "AGUIC_TURNS", "AGUIC_DURATION", "AGUIC_MESSAGE", "AGUIC_TOKEN", "AGUIC_STATELESS"} {
		t.Setenv(v, "")
	}
	dir := t.TempDir()
	wfDir := filepath.Join(dir, "workflows")
	os.Mkdir(wfDir, 0o755)
	script := filepath.Join(dir, "chat.script")
	tokensFile := filepath.Join(dir, "tokens.txt")
	for name, text := range map[string]string{
		filepath.Join(wfDir, "bench.wf"): benchWorkflows,
		script:                           "reply repeat\ntext: A scripted answer, streamed.\n",
		tokensFile:                       "ada ada-token\n",
	} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	toks, err := loadTokens(tokensFile, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, serveOptions{dir: wfDir, where: where{data: filepath.Join(dir, "data")}, basePath: "/agui", deadline: -1, script: script, tokens: toks})

	for _, tc := range []struct {
		name     string
		workflow string
		args     []string
		text     bool // the turns stream text
	}{
		{"stateless", "chat", []string{"--stateless"}, true},
		{"conversation", "talk", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--url", srv.url + "/agui/workflows/" + tc.workflow, "--clients", "3", "--turns", "4", "--token", "ada-token"}, tc.args...)
			code, r, stderr := benchRun(t, args...)
			if code != exitOK || r == nil {
				t.Fatalf("exit status %d: %s", code, stderr)
			}
			if r.Turns != 12 || r.Conversations != 3 || r.ErrorCount != 0 || len(r.Errors) != 0 || r.TurnsPerSecond <= 0 {
				t.Errorf("report %+v, want 12 turns in 3 conversations, no errors", r)
			}
			if strings.Contains(stderr, "warning") {
				t.Errorf("a warning for the right mode: %s", stderr)
			}
			for name, p := range map[string]*percentiles{"turn": r.LatencyMs.Turn, "first event": r.LatencyMs.FirstEvent, "first text": r.LatencyMs.FirstText} {
				if p == nil {
					t.Errorf("no %s latencies", name)
					continue
				}
				if !(0 < p.P50 && p.P50 <= p.P90 && p.P90 <= p.P99 && p.P99 <= p.Max) {
					t.Errorf("%s latencies not ordered: %+v", name, p)
				}
			}
			if r.LatencyMs.FirstEvent.Max > r.LatencyMs.Turn.Max {
				t.Errorf("a first event after the end of its turn: %+v", r.LatencyMs)
			}
		})
	}

	t.Run("duration", func(t *testing.T) {
		code, r, stderr := benchRun(t, "--url", srv.url+"/agui/workflows/talk", "--clients", "2", "--turns", "2", "--duration", "200ms", "--token", "ada-token")
		if code != exitOK || r == nil || r.ErrorCount != 0 {
			t.Fatalf("exit status %d, %+v: %s", code, r, stderr)
		}
		if r.Seconds < 0.2 || r.Conversations < 2 || r.Turns < 2*r.Conversations-2 {
			t.Errorf("200ms of 2 clients: %+v", r)
		}
	})

	t.Run("a mode that does not fit", func(t *testing.T) {
		code, _, stderr := benchRun(t, "--url", srv.url+"/agui/workflows/chat", "--turns", "1", "--token", "ada-token")
		if code != exitOK || !strings.Contains(stderr, "aguic bench: warning: chat is a stateless workflow") {
			t.Errorf("exit status %d: %s", code, stderr)
		}
	})

	t.Run("401", func(t *testing.T) {
		code, r, stderr := benchRun(t, "--url", srv.url+"/agui/workflows/talk", "--clients", "2", "--turns", "3")
		if code != exitFound || r == nil {
			t.Fatalf("exit status %d: %s", code, stderr)
		}
		// A failed turn ends its conversation: one 401 per client.
		if r.Turns != 0 || r.ErrorCount != 2 || len(r.Errors) != 1 || r.Errors[0].Kind != "HTTP 401 Unauthorized" || r.Errors[0].Count != 2 || r.LatencyMs.Turn != nil {
			t.Errorf("report %+v, want two 401s", r)
		}
	})

	t.Run("unknown workflow", func(t *testing.T) {
		code, r, stderr := benchRun(t, "--url", srv.url+"/agui/workflows/nope", "--turns", "1", "--token", "ada-token")
		if code != exitUsage || r != nil || !strings.Contains(stderr, `/agui/workflows/nope: no workflow has the id "nope"`) {
			t.Errorf("exit status %d, report %+v: %s", code, r, stderr)
		}
	})

	t.Run("table", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := run([]string{"bench", "--url", srv.url + "/agui/workflows/talk", "--turns", "2", "--token", "ada-token"}, nil, &stdout, &stderr)
		if code != exitOK {
			t.Fatalf("exit status %d: %s", code, stderr.String())
		}
		for _, want := range []string{"turns          2 in ", "errors         0\n", "latency", "p50", "p99", "\nturn   ", "\nfirst event ", "\nfirst text "} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("the table has no %q:\n%s", want, stdout.String())
			}
		}
		if !strings.HasPrefix(stderr.String(), "aguic bench: 1 client, conversation mode, one conversation of 2 turns each, against http://") {
			t.Errorf("stderr %q", stderr.String())
		}
	})
}

// TestBenchProtocol checks what bench sends and how it counts failures,
// against a fake server: the history of a stateless client, the new
// message only in a conversation, each client its own thread; a 409, a
// RUN_ERROR and a stream that breaks off are errors of their kind.
func TestBenchProtocol(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []struct {
			ThreadID string `json:"threadId"`
			Messages []struct {
				ID, Role, Content string
			} `json:"messages"`
		}
	)
	frame := func(w http.ResponseWriter, format string, args ...any) {
		fmt.Fprintf(w, "data: "+format+"\n\n", args...)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			fmt.Fprintf(w, `{"id": "fake", "conversation": %v}`, r.URL.Path == "/conversation")
			return
		}
		var body struct {
			ThreadID string `json:"threadId"`
			Messages []struct {
				ID, Role, Content string
			} `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		bodies = append(bodies, body)
		n := len(body.Messages)
		mu.Unlock()
		if r.URL.Path == "/busy" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"status": 409, "title": "Conflict", "detail": "the thread has a run in progress"}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		frame(w, `{"type":"RUN_STARTED","threadId":%q,"runId":"r"}`, body.ThreadID)
		switch r.URL.Path {
		case "/error":
			frame(w, `{"type":"RUN_ERROR","message":"the model is down"}`)
			return
		case "/broken":
			return
		case "/tool":
			frame(w, `{"type":"RUN_FINISHED","threadId":%q,"runId":"r","outcome":{"type":"success","pendingToolCallIds":["c1"]}}`, body.ThreadID)
			return
		case "/interrupt":
			frame(w, `{"type":"RUN_FINISHED","threadId":%q,"runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"approval"}]}}`, body.ThreadID)
			return
		}
		frame(w, `{"type":"TEXT_MESSAGE_START","messageId":"a-%d","role":"assistant"}`, n)
		frame(w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"a-%d","delta":"answer "}`, n)
		frame(w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"a-%d","delta":"%d"}`, n, n)
		frame(w, `{"type":"TEXT_MESSAGE_END","messageId":"a-%d"}`, n)
		frame(w, `{"type":"RUN_FINISHED","threadId":%q,"runId":"r"}`, body.ThreadID)
	}))
	defer srv.Close()
	reset := func() {
		mu.Lock()
		bodies = nil
		mu.Unlock()
	}

	t.Run("waiting", func(t *testing.T) {
		for _, path := range []string{"/tool", "/interrupt"} {
			code, r, stderr := benchRun(t, "--url", srv.URL+path, "--stateless", "--turns", "2")
			if code != exitOK || r.Turns != 2 || r.Waiting != 2 || r.ErrorCount != 0 {
				t.Errorf("%s: exit status %d, report %+v: %s", path, code, r, stderr)
			}
		}
		var stdout bytes.Buffer
		if code := run([]string{"bench", "--url", srv.URL + "/tool", "--stateless", "--turns", "1"}, nil, &stdout, io.Discard); code != exitOK ||
			!strings.Contains(stdout.String(), "waiting        1 turn ended waiting for frontend tool results or interrupt answers, which bench does not send\n") {
			t.Errorf("exit status %d, table:\n%s", code, stdout.String())
		}
	})

	t.Run("stateless", func(t *testing.T) {
		reset()
		code, r, stderr := benchRun(t, "--url", srv.URL+"/stateless", "--stateless", "--clients", "2", "--turns", "3", "--message", "hi")
		if code != exitOK || r.Turns != 6 {
			t.Fatalf("exit status %d, %+v: %s", code, r, stderr)
		}
		threads := map[string][]int{}
		for _, b := range bodies {
			threads[b.ThreadID] = append(threads[b.ThreadID], len(b.Messages))
			last := b.Messages[len(b.Messages)-1]
			if last.Role != "user" || last.Content != "hi" {
				t.Errorf("the last message is %+v", last)
			}
			// The history holds the answers as they streamed.
			for i, m := range b.Messages {
				if i%2 == 1 && (m.Role != "assistant" || m.Content != fmt.Sprintf("answer %d", i)) {
					t.Errorf("message %d of the history: %+v", i, m)
				}
			}
		}
		if len(threads) != 2 {
			t.Errorf("%d threads, want one per client", len(threads))
		}
		for id, sizes := range threads {
			if fmt.Sprint(sizes) != "[1 3 5]" {
				t.Errorf("thread %s: histories of %v messages, want [1 3 5]", id, sizes)
			}
		}
	})

	t.Run("conversation", func(t *testing.T) {
		reset()
		code, r, stderr := benchRun(t, "--url", srv.URL+"/conversation", "--turns", "3")
		if code != exitOK || r.Turns != 3 || r.Mode != "conversation" {
			t.Fatalf("exit status %d, %+v: %s", code, r, stderr)
		}
		ids := map[string]bool{}
		for _, b := range bodies {
			if len(b.Messages) != 1 || ids[b.Messages[0].ID] {
				t.Errorf("a turn sent %+v, want one new message", b.Messages)
			}
			ids[b.Messages[0].ID] = true
		}
	})

	for _, tc := range []struct {
		path, kind, first string
	}{
		{"/busy", "HTTP 409 Conflict", "the thread has a run in progress"},
		{"/error", "RUN_ERROR", "the model is down"},
		{"/broken", "stream", "the stream ends before RUN_FINISHED or RUN_ERROR"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			code, r, stderr := benchRun(t, "--url", srv.URL+tc.path, "--clients", "3", "--turns", "2")
			if code != exitFound || r == nil {
				t.Fatalf("exit status %d: %s", code, stderr)
			}
			if r.Turns != 0 || r.ErrorCount != 3 || len(r.Errors) != 1 || r.Errors[0] != (benchError{Kind: tc.kind, Count: 3, First: tc.first}) {
				t.Errorf("errors %+v, want 3 of %s", r.Errors, tc.kind)
			}
		})
	}

	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String() + "/agui/workflows/chat"
		ln.Close()
		code, r, stderr := benchRun(t, "--url", url, "--clients", "4", "--duration", "1h")
		if code != exitUsage || r != nil || !strings.HasPrefix(stderr, "aguic bench: cannot reach "+url+": dial tcp ") {
			t.Errorf("exit status %d, report %+v, stderr %q", code, r, stderr)
		}
	})

	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{nil, {"--url", "127.0.0.1:8080/agui"}, {"--url", srv.URL, "extra"}, {"--url", srv.URL, "--turns", "0"}} {
			code, r, stderr := benchRun(t, args...)
			if code != exitUsage || r != nil || !strings.Contains(stderr, "usage: aguic bench ") {
				t.Errorf("%q: exit status %d: %s", args, code, stderr)
			}
		}
	})
}

// benchFake is a fake AG-UI server that answers every turn at once and
// records, for each thread, the user messages it was sent.
type benchFake struct {
	*httptest.Server
	mu    sync.Mutex
	turns map[string][]string // thread: the ids of its user messages, in order
}

func newBenchFake(t *testing.T, status int) *benchFake {
	f := &benchFake{turns: map[string][]string{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			fmt.Fprint(w, `{"id": "talk", "conversation": true}`)
			return
		}
		var body struct {
			ThreadID string                `json:"threadId"`
			Messages []struct{ ID string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		for _, m := range body.Messages {
			f.turns[body.ThreadID] = append(f.turns[body.ThreadID], m.ID)
		}
		f.mu.Unlock()
		if status != http.StatusOK {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"status": %d, "detail": "not this one"}`, status)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":%q,\"runId\":\"r\"}\n\n", body.ThreadID)
		fmt.Fprintf(w, "data: {\"type\":\"RUN_FINISHED\",\"threadId\":%q,\"runId\":\"r\"}\n\n", body.ThreadID)
	}))
	t.Cleanup(f.Close)
	return f
}

// TestBenchServers: with several URLs, repeated, comma-separated or in
// AGUIC_URL, the turns of each conversation go to the servers in turn,
// and the conversations start at each server in turn; the report counts
// the turns and failures of each server.
func TestBenchServers(t *testing.T) {
	for _, form := range []string{"repeated", "comma-separated", "AGUIC_URL"} {
		t.Run(form, func(t *testing.T) {
			t.Setenv("AGUIC_URL", "")
			fakes := []*benchFake{newBenchFake(t, 200), newBenchFake(t, 200), newBenchFake(t, 200)}
			urls := []string{fakes[0].URL + "/talk", fakes[1].URL + "/talk", fakes[2].URL + "/talk"}
			args := []string{"--url", strings.Join(urls, " , ")}
			switch form {
			case "repeated":
				args = []string{"--url", urls[0], "--url", urls[1] + "," + urls[2]}
			case "AGUIC_URL":
				t.Setenv("AGUIC_URL", strings.Join(urls, ","))
				args = nil
			}
			code, r, stderr := benchRun(t, append(args, "--clients", "4", "--turns", "5")...)
			if code != exitOK || r == nil || r.Turns != 20 || r.ErrorCount != 0 {
				t.Fatalf("exit status %d, report %+v: %s", code, r, stderr)
			}
			if !strings.Contains(stderr, "against 3 servers in turn: "+strings.Join(urls, ", ")+"\n") {
				t.Errorf("stderr %q", stderr)
			}
			if r.URL != urls[0] || fmt.Sprint(r.URLs) != fmt.Sprint(urls) {
				t.Errorf("url %q, urls %q, want %q", r.URL, r.URLs, urls)
			}
			// Turn k (from 1) of a conversation went to server (first+k-1) % 3,
			// and the four conversations started at servers 0, 1, 2, 0 in
			// some order.
			where := map[string]map[int]int{} // thread: turn number: server
			for i, f := range fakes {
				for th, ids := range f.turns {
					for _, id := range ids {
						var k int
						fmt.Sscanf(id[strings.LastIndex(id, "-")+1:], "%d", &k)
						if where[th] == nil {
							where[th] = map[int]int{}
						}
						where[th][k] = i
					}
				}
			}
			firsts := map[int]int{}
			for th, turns := range where {
				if len(turns) != 5 {
					t.Errorf("thread %s: turns %v, want 5", th, turns)
					continue
				}
				for k := 2; k <= 5; k++ {
					if turns[k] != (turns[k-1]+1)%3 {
						t.Errorf("thread %s: turn %d on server %d after turn %d on %d", th, k, turns[k], k-1, turns[k-1])
					}
				}
				firsts[turns[1]]++
			}
			if len(where) != 4 || firsts[0] != 2 || firsts[1] != 1 || firsts[2] != 1 {
				t.Errorf("%d conversations starting at servers %v, want 4 starting at 0, 1, 2, 0", len(where), firsts)
			}
			want := []benchServer{{urls[0], 7, 0}, {urls[1], 7, 0}, {urls[2], 6, 0}}
			if fmt.Sprint(r.Servers) != fmt.Sprint(want) {
				t.Errorf("servers %+v, want %+v", r.Servers, want)
			}
		})
	}

	t.Run("one fails", func(t *testing.T) {
		good, bad := newBenchFake(t, 200), newBenchFake(t, http.StatusServiceUnavailable)
		urls := []string{good.URL + "/talk", bad.URL + "/talk"}
		var stdout bytes.Buffer
		code := run([]string{"bench", "--url", urls[0] + "," + urls[1], "--clients", "2", "--turns", "3"}, nil, &stdout, io.Discard)
		// The conversation that starts at the good server fails at its
		// second turn, the other at its first.
		if code != exitFound {
			t.Errorf("exit status %d", code)
		}
		for _, want := range []string{
			"turns          1 in ",
			"errors         2\n  HTTP 503 Service Unavailable: 2, the first: not this one\n",
			"servers        2, the turns of each conversation in turn\n",
			"  " + urls[0] + ": 1 turn, 0 errors\n",
			"  " + urls[1] + ": 0 turns, 2 errors\n",
		} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("the table has no %q:\n%s", want, stdout.String())
			}
		}
	})

	t.Run("one is unreachable", func(t *testing.T) {
		good := newBenchFake(t, 200)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "http://" + ln.Addr().String() + "/talk"
		ln.Close()
		code, r, stderr := benchRun(t, "--url", good.URL+"/talk", "--url", down)
		if code != exitUsage || r != nil || !strings.HasPrefix(stderr, "aguic bench: cannot reach "+down+": ") || len(good.turns) != 0 {
			t.Errorf("exit status %d, report %+v, %d turns sent, stderr %q", code, r, len(good.turns), stderr)
		}
	})

	t.Run("a bad one", func(t *testing.T) {
		good := newBenchFake(t, 200)
		code, _, stderr := benchRun(t, "--url", good.URL+"/talk,127.0.0.1:8080/agui")
		if code != exitUsage || !strings.Contains(stderr, `aguic bench: --url: "127.0.0.1:8080/agui" is not an http or https URL`) {
			t.Errorf("exit status %d: %s", code, stderr)
		}
	})
}

// TestBenchReplicas drives two aguic serve sharing one PostgreSQL schema
// (skipped without AGUIC_TEST_POSTGRES): every turn of conversations that
// alternate between them succeeds.
func TestBenchReplicas(t *testing.T) {
	store := pgStoreArg(t, pgtest.Schema(t), "")
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "park.wf", parkWorkflow)
	var urls []string
	for range 2 {
		srv := startServe(t, serveOptions{dir: wfDir, where: where{url: store}, basePath: "/agui", deadline: -1, leaseTTL: 10 * time.Second})
		urls = append(urls, srv.url+"/agui/workflows/park")
	}
	code, r, stderr := benchRun(t, "--url", strings.Join(urls, ","), "--clients", "3", "--turns", "4")
	if code != exitOK || r == nil || r.Turns != 12 || r.ErrorCount != 0 {
		t.Fatalf("exit status %d, report %+v: %s", code, r, stderr)
	}
	if len(r.Servers) != 2 || r.Servers[0].Turns != 6 || r.Servers[1].Turns != 6 {
		t.Errorf("servers %+v, want 6 turns each", r.Servers)
	}
}
