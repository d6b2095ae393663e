package server_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/vm/store"
)

// lifecycleLines renders a stream compactly: an activity of the node
// lifecycle as "node <id> <phase>" (with "-> next" once it ended), any
// other event as its type. It checks what every lifecycle event must be.
func lifecycleLines(t *testing.T, evs []event, runID string) []string {
	t.Helper()
	var lines []string
	sent := false
	for _, ev := range evs {
		typ := ev.typ()
		if typ != "ACTIVITY_SNAPSHOT" && typ != "ACTIVITY_DELTA" {
			lines = append(lines, typ)
			continue
		}
		if ev.data["activityType"] != server.NodeLifecycleActivity || ev.data["messageId"] != "activity:lifecycle-"+runID {
			t.Errorf("activity %v, want %s of activity:lifecycle-%s", ev.data, server.NodeLifecycleActivity, runID)
		}
		if ev.id != "" {
			t.Errorf("lifecycle frame with id %q; it is not stored", ev.id)
		}
		var node map[string]any
		switch typ {
		case "ACTIVITY_SNAPSHOT":
			if sent {
				t.Errorf("a second snapshot %v", ev.data)
			}
			content, _ := ev.data["content"].(map[string]any)
			node, _ = content["node"].(map[string]any)
		case "ACTIVITY_DELTA":
			if !sent {
				t.Errorf("a delta %v before the snapshot", ev.data)
			}
			patch, _ := ev.data["patch"].([]any)
			if len(patch) != 1 {
				t.Fatalf("patch %v, want one operation", ev.data["patch"])
			}
			op, _ := patch[0].(map[string]any)
			if op["op"] != "add" || op["path"] != "/node" {
				t.Errorf("patch %v, want add /node", op)
			}
			node, _ = op["value"].(map[string]any)
		}
		sent = true
		if str(node["nodeId"]) == "" || str(node["kind"]) == "" || str(node["text"]) == "" {
			t.Errorf("node %v: nodeId, kind and text are required", node)
		}
		line := "node " + str(node["nodeId"]) + " " + str(node["phase"])
		if next := str(node["next"]); next != "" {
			line += " -> " + next
		}
		if node["phase"] == "error" && str(node["error"]) == "" {
			t.Errorf("node %v: an error phase without the error", node)
		}
		lines = append(lines, line)
	}
	return lines
}

func TestNodeLifecycle(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.NodeLifecycle = true })
	evs := e.stream(e.post("/agui/workflows/echo", `{"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hello"}]}`))
	got := strings.Join(lifecycleLines(t, evs, "r1"), "\n")
	want := strings.Join([]string{
		"RUN_STARTED",
		"node 1 start",
		"STEP_STARTED",
		"node 1 complete -> 1.1",
		"node 1.1 start",
		"TEXT_MESSAGE_START",
		"TEXT_MESSAGE_CONTENT",
		"TEXT_MESSAGE_END",
		"node 1.1 complete -> 1.end",
		"node 1.end start",
		"STEP_FINISHED",
		"node 1.end complete -> 2",
		"node 2 start",
		"node 2 complete",
		"RUN_FINISHED",
	}, "\n")
	if got != want {
		t.Errorf("stream:\n%s\nwant:\n%s", got, want)
	}
	for _, ev := range evs {
		if ev.typ() == "ACTIVITY_SNAPSHOT" {
			node := ev.data["content"].(map[string]any)["node"].(map[string]any)
			if node["kind"] != "step" || node["text"] != `step "think"` {
				t.Errorf("first node %v, want the step", node)
			}
		}
	}

	// A node that suspends the run stays started; the next run on the
	// thread starts it again under its own activity message.
	evs = e.stream(e.post("/agui/workflows/approve", `{"threadId": "i1", "runId": "a1", "messages": [{"id": "m1", "role": "user", "content": "A-1"}]}`))
	if got, want := strings.Join(lifecycleLines(t, evs, "a1"), "\n"), "RUN_STARTED\nnode approve start\nRUN_FINISHED"; got != want {
		t.Errorf("interrupt:\n%s\nwant:\n%s", got, want)
	}
	in := outcome(t, evs)["interrupts"].([]any)[0].(map[string]any)
	evs = e.stream(e.post("/agui/workflows/approve", `{"threadId": "i1", "runId": "a2", "messages": [], "resume": [{"interruptId": "`+str(in["id"])+`", "status": "resolved"}]}`))
	lines := lifecycleLines(t, evs, "a2")
	if len(lines) < 3 || lines[1] != "node approve start" || lines[2] != "node approve complete -> 2" {
		t.Errorf("resumed run:\n%s", strings.Join(lines, "\n"))
	}

	// Live only: replay has none of it.
	resp := e.get("/agui/threads/t1/replay")
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "ACTIVITY") || !strings.Contains(string(body), "TEXT_MESSAGE_CONTENT") {
		t.Errorf("replay %d:\n%s\nwant the run's events without the lifecycle", resp.StatusCode, body)
	}
}

// TestNodeLifecycleError: the node that failed ends in the error phase
// before the run's RUN_ERROR.
func TestNodeLifecycleError(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.NodeLifecycle = true })
	evs := e.stream(e.post("/agui/workflows/slow", `{"threadId": "s1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "x"}], "state": {"url": "http://127.0.0.1:1/nothing"}}`))
	lines := lifecycleLines(t, evs, "r1")
	if n := len(lines); n < 3 || lines[n-1] != "RUN_ERROR" || !strings.HasPrefix(lines[n-2], "node 2 error") {
		t.Errorf("stream:\n%s\nwant the http node's error phase, then RUN_ERROR", strings.Join(lines, "\n"))
	}
}

func TestNodeLifecycleOff(t *testing.T) {
	e := newEnv(t, nil)
	evs := e.stream(e.post("/agui/workflows/echo", `{"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hello"}]}`))
	for _, ev := range evs {
		if strings.HasPrefix(ev.typ(), "ACTIVITY_") {
			t.Errorf("lifecycle event %v with the option off", ev.data)
		}
	}
}

// TestNodeLifecycleRequested: a run request may ask for the lifecycle of
// its nodes (forwardedProps.aguic.nodeEvents) on a server that streams
// none by default, on every run route; a value that is not a boolean is
// a 400, and nothing runs.
func TestNodeLifecycleRequested(t *testing.T) {
	e := newEnv(t, nil)
	ask := `"forwardedProps": {"aguic": {"nodeEvents": true}}`
	for _, tc := range []struct{ name, path, body, runID string }{
		{"workflow route", "/agui/workflows/echo", `{"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hi"}], ` + ask + `}`, "r1"},
		{"forwardedProps route", "/agui", `{"threadId": "t2", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hi"}], "forwardedProps": {"aguic": {"workflowId": "echo", "nodeEvents": true}}}`, "r1"},
		{"thread route", "/agui/threads/t1/runs", `{"runId": "r2", "messages": [{"id": "m1", "role": "user", "content": "hi"}], ` + ask + `}`, "r2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := lifecycleLines(t, e.stream(e.post(tc.path, tc.body)), tc.runID)
			if len(lines) < 4 || lines[1] != "node 1 start" || lines[len(lines)-2] != "node 2 complete" {
				t.Errorf("stream:\n%s\nwant the lifecycle of every node", strings.Join(lines, "\n"))
			}
		})
	}
	// Not asked, or asked not to: none.
	for _, props := range []string{`{}`, `{"aguic": {"nodeEvents": false}}`, `{"aguic": {"nodeEvents": null}}`, `{"aguic": "x"}`, `"x"`} {
		evs := e.stream(e.post("/agui/workflows/echo", `{"threadId": "t3", "messages": [{"id": "m1", "role": "user", "content": "hi"}], "forwardedProps": `+props+`}`))
		for _, ev := range evs {
			if strings.HasPrefix(ev.typ(), "ACTIVITY_") {
				t.Errorf("forwardedProps %s: lifecycle event %v", props, ev.data)
			}
		}
	}
	for _, v := range []string{`"yes"`, `1`, `{}`} {
		p := e.problem(e.post("/agui/workflows/echo", `{"threadId": "t4", "messages": [{"id": "m1", "role": "user", "content": "hi"}], "forwardedProps": {"aguic": {"nodeEvents": `+v+`}}}`), http.StatusBadRequest)
		if str(p["detail"]) != "forwardedProps.aguic.nodeEvents must be true or false" {
			t.Errorf("nodeEvents %s: %v", v, p)
		}
	}
	if _, err := e.store.Thread(t.Context(), store.Key{Scope: "default", Workflow: "echo", Thread: "t4"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused request ran: %v", err)
	}
}

// TestNodeLifecycleFollowed: a client that follows a run this process
// executes may ask for its node lifecycle (nodeEvents=true), which starts
// with the node that runs; the run's own stream, which did not ask, and
// another follower that did not, show none of it.
func TestNodeLifecycleFollowed(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker(t)
	first := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered
	next, stop := pull(t, e.get("/agui/threads/busy/runs/r1/events?nodeEvents=true"))
	defer stop()
	plain, stopPlain := pull(t, e.get("/agui/threads/busy/runs/r1/events"))
	defer stopPlain()
	head := until(t, next, "ACTIVITY_SNAPSHOT", nil)
	b.release()
	all := append(head, rest(next)...)
	got := strings.Join(lifecycleLines(t, all, "r1"), "\n")
	want := strings.Join([]string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"node 2 start", "node 2 complete -> 3", "node 3 start", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "node 3 complete", "RUN_FINISHED"}, "\n")
	if got != want {
		t.Errorf("the follower that asked read:\n%s\nwant:\n%s", got, want)
	}
	for name, evs := range map[string][]event{"the run's own stream": e.stream(first), "the follower that did not ask": rest(plain)} {
		for _, ev := range evs {
			if strings.HasPrefix(ev.typ(), "ACTIVITY_") {
				t.Errorf("%s holds %v", name, ev.data)
			}
		}
	}
}
