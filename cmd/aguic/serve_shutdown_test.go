package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestShutdownCancelsRunsWithTheirTerminalEvent stops the server while a
// run waits on a slow model, past the shutdown grace: the run is
// cancelled, its stream still ends with RUN_FINISHED (outcome cancelled),
// and serve exits with status 0.
func TestShutdownCancelsRunsWithTheirTerminalEvent(t *testing.T) {
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "slow.wf", "wf 1\n\nworkflow slow {\n  flow { model { prompt = \"hi\" } }\n}\n")
	script := filepath.Join(dir, "slow.script")
	if err := os.WriteFile(script, []byte("reply repeat\ndelay: 1m\ntext: too late\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, serveOptions{
		dir: wfDir, where: where{data: filepath.Join(dir, "data")}, script: script,
		basePath: "/agui", deadline: -1, grace: 200 * time.Millisecond,
	})

	resp, err := http.Post(srv.url+"/agui/workflows/slow", "application/json", strings.NewReader(`{"threadId": "t1", "runId": "r1", "protocolVersion": "1.0", "messages": [{"id": "m1", "role": "user", "content": "hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	var events []string
	next := func() bool {
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events = append(events, data)
				return true
			}
		}
		return false
	}
	if !next() || !strings.Contains(events[0], `"type":"RUN_STARTED"`) {
		t.Fatalf("the stream does not start with RUN_STARTED: %q (%v)", events, sc.Err())
	}

	start := time.Now()
	code := make(chan int, 1)
	go func() { code <- srv.stop() }()
	for next() {
	}
	var last struct {
		Type    string
		Outcome struct{ Type string }
	}
	if len(events) < 2 {
		t.Errorf("the stream ended after RUN_STARTED (%v)", sc.Err())
	} else if err := json.Unmarshal([]byte(events[len(events)-1]), &last); err != nil || last.Type != "RUN_FINISHED" || last.Outcome.Type != "cancelled" {
		t.Errorf("the stream ends with %s, want RUN_FINISHED with outcome cancelled; stream:\n%s", events[len(events)-1], strings.Join(events, "\n"))
	}
	if c := <-code; c != exitOK {
		t.Errorf("serve exited with %d: %s", c, srv.stderr.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the shutdown took %v with a grace of 200ms", d)
	}
	if logs := srv.stderr.String(); !strings.Contains(logs, "status=cancelled") {
		t.Errorf("the logs do not show the cancelled run:\n%s", logs)
	}
}

// TestSecondSignalEndsServe starts the real binary, stops it with SIGINT
// while a run waits on a slow model, and sends SIGINT again: the second
// signal ends the process at once instead of waiting out the 30 seconds
// of grace.
func TestSecondSignalEndsServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := buildAguic(t, dir)
	wfDir := writeWorkflow(t, dir, "slow.wf", "wf 1\n\nworkflow slow {\n  flow { model { prompt = \"hi\" } }\n}\n")
	script := filepath.Join(dir, "slow.script")
	if err := os.WriteFile(script, []byte("reply repeat\ndelay: 1m\ntext: too late\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--model-script", script, wfDir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	}()
	logs := readLines(stderr)
	logs.waitFor(t, "msg=serving")
	m := regexp.MustCompile(`url=(http://\S+)`).FindStringSubmatch(logs.text())
	if m == nil {
		t.Fatalf("no URL in the logs:\n%s", logs.text())
	}

	resp, err := http.Post(m[1]+"/workflows/slow", "application/json", strings.NewReader(`{"threadId": "t1", "runId": "r1", "protocolVersion": "1.0", "messages": [{"id": "m1", "role": "user", "content": "hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(line, "RUN_STARTED") {
		t.Fatalf("the stream does not start with RUN_STARTED: %q, %v", line, err)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	logs.waitFor(t, "shutting down")
	start := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("serve still runs %v after the second signal:\n%s", time.Since(start), logs.text())
	}
}
