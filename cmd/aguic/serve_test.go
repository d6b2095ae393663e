package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aguic/aguic/internal/syncbuf"
	"github.com/aguic/aguic/vm/store"
)

// served is aguic serve running in the test's process.
type served struct {
	url    string
	stderr *syncbuf.Buffer
	stop   func() int // stops the server as a signal does; its exit status
}

// writeWorkflow writes src as the file name in the directory workflows of
// dir, and returns that directory.
func writeWorkflow(t *testing.T, dir, name, src string) string {
	t.Helper()
	wfDir := filepath.Join(dir, "workflows")
	if err := os.MkdirAll(wfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wfDir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return wfDir
}

// startServe runs serve with o (on a free loopback port) until the test
// stops it, and returns once it listens.
func startServe(t *testing.T, o serveOptions) *served {
	t.Helper()
	stderr := &syncbuf.Buffer{}
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr}
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	code := make(chan int, 1)
	o.addr = "127.0.0.1:0"
	o.ready = func(url string) { urls <- url }
	go func() { code <- serve(ctx, e, o) }()
	s := &served{stderr: stderr}
	select {
	case s.url = <-urls:
	case c := <-code:
		cancel()
		t.Fatalf("serve exited with %d: %s", c, stderr.String())
	}
	stopped := false
	s.stop = func() int {
		cancel()
		if stopped {
			return exitOK
		}
		stopped = true
		return <-code
	}
	t.Cleanup(func() { s.stop() })
	return s
}

// TestServe starts aguic serve on a free port, runs a workflow over HTTP,
// and stops it as a signal does: it exits with status 0, and the thread is
// in the data directory.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "hello.wf", "wf 1\n\nworkflow hello {\n  title = \"Hello\"\n  flow { say \"hello <<$agent.latestUserMessage.content>>\" }\n}\n")
	srv := startServe(t, serveOptions{dir: wfDir, where: where{data: filepath.Join(dir, "data")}, basePath: "/agui", deadline: -1})
	url := srv.url

	resp, err := http.Post(url+"/agui", "application/json", strings.NewReader(`{"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "world"}], "forwardedProps": {"aguic": {"workflowName": "Hello"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"delta":"hello world"`)) || !bytes.Contains(body, []byte(`"type":"RUN_FINISHED"`)) {
		t.Errorf("status %d, stream:\n%s", resp.StatusCode, body)
	}

	if c := srv.stop(); c != exitOK {
		t.Errorf("serve exited with %d: %s", c, srv.stderr.String())
	}
	logs := srv.stderr.String()
	for _, want := range []string{"msg=serving", "url=" + url + "/agui", `msg="run ended" workflow=hello thread=t1 run=r1 status=finished`, `msg="shutting down"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log has no %q:\n%s", want, logs)
		}
	}
	// The thread was kept: the store opens again and holds it.
	st, err := openData(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	th, err := st.Thread(context.Background(), store.Key{Scope: "default", Workflow: "hello", Thread: "t1"})
	if err != nil || th.Status != store.Finished || th.RunID != "r1" {
		t.Errorf("thread %+v, %v; want finished by r1", th, err)
	}
}
