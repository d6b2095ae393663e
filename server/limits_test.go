package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/vm/store"
)

// problemErrors is the errors list of a problem, as "location: message".
func problemErrors(p map[string]any) []string {
	var out []string
	list, _ := p["errors"].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		out = append(out, str(m["location"])+": "+str(m["message"]))
	}
	return out
}

// TestIDLimits sends ids over MaxIDBytes to every route that takes one:
// 400, naming the field and the limit, without echoing the id, and nothing
// is stored.
func TestIDLimits(t *testing.T) {
	e := newEnv(t, nil)
	long := func(n int) string { return strings.Repeat("x", n) }
	over := long(server.MaxIDBytes + 1)
	huge := long(70000)
	msg := func(id string) string { return `{"id": "` + id + `", "role": "user", "content": "hi"}` }
	tests := []struct {
		name, method, path, body string
		want                     string // the error, "location: message"
	}{
		{"threadId", "POST", "/agui/workflows/echo", `{"threadId": "` + huge + `", "messages": [` + msg("m1") + `]}`,
			"body.threadId: threadId is 70000 bytes long; the limit is 256"},
		{"runId", "POST", "/agui/workflows/echo", `{"threadId": "t-limits", "runId": "` + long(1<<20) + `", "messages": [` + msg("m1") + `]}`,
			"body.runId: runId is 1048576 bytes long; the limit is 256"},
		{"parentRunId", "POST", "/agui/workflows/echo", `{"threadId": "t-limits", "parentRunId": "` + over + `"}`,
			"body.parentRunId: parentRunId is 257 bytes long; the limit is 256"},
		{"message id", "POST", "/agui/workflows/echo", `{"threadId": "t-limits", "messages": [` + msg("m1") + `, ` + msg(over) + `]}`,
			"body.messages[1].id: messages[1].id is 257 bytes long; the limit is 256"},
		{"toolCallId", "POST", "/agui/workflows/refund", `{"threadId": "t-limits", "messages": [{"id": "t1", "role": "tool", "toolCallId": "` + over + `", "content": "ok"}]}`,
			"body.messages[0].toolCallId: messages[0].toolCallId is 257 bytes long; the limit is 256"},
		{"tool call id", "POST", "/agui/workflows/echo", `{"threadId": "t-limits", "messages": [{"id": "a1", "role": "assistant", "toolCalls": [{"id": "` + over + `", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]}`,
			"body.messages[0].toolCalls[0].id: messages[0].toolCalls[0].id is 257 bytes long; the limit is 256"},
		{"interruptId", "POST", "/agui/workflows/approve", `{"threadId": "t-limits", "resume": [{"interruptId": "` + over + `", "status": "cancelled"}]}`,
			"body.resume[0].interruptId: resume[0].interruptId is 257 bytes long; the limit is 256"},
		{"threadId of POST /agui", "POST", "/agui", `{"threadId": "` + huge + `", "forwardedProps": {"workflowId": "echo"}}`,
			"body.threadId: threadId is 70000 bytes long; the limit is 256"},
		{"thread of a run on a thread", "POST", "/agui/threads/" + huge + "/runs", `{"messages": [` + msg("m1") + `]}`,
			"path.threadId: threadId is 70000 bytes long; the limit is 256"},
		{"runId of a run on a thread", "POST", "/agui/threads/t-limits/runs", `{"runId": "` + over + `"}`,
			"body.runId: runId is 257 bytes long; the limit is 256"},
		{"cancel", "POST", "/agui/cancel", `{"threadId": "` + huge + `"}`,
			"body.threadId: threadId is 70000 bytes long; the limit is 256"},
		{"interrupt", "POST", "/agui/threads/" + huge + "/interrupt", ``,
			"path.threadId: threadId is 70000 bytes long; the limit is 256"},
		{"replay", "GET", "/agui/threads/" + huge + "/replay", ``,
			"path.threadId: threadId is 70000 bytes long; the limit is 256"},
		{"messages", "GET", "/agui/threads/" + huge + "/messages", ``,
			"path.threadId: threadId is 70000 bytes long; the limit is 256"},
		{"history", "POST", "/agui/history", `{"threadId": "` + huge + `", "workflowId": "counter"}`,
			"body.threadId: threadId is 70000 bytes long; the limit is 256"},
	}
	outer := e.t
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			defer func() { e.t = outer }()
			var resp *http.Response
			if tt.method == "GET" {
				resp = e.get(tt.path)
			} else {
				resp = e.post(tt.path, tt.body)
			}
			p := e.problem(resp, http.StatusBadRequest)
			if got := problemErrors(p); len(got) != 1 || got[0] != tt.want {
				t.Errorf("errors %q, want [%q]", got, tt.want)
			}
			if all, _ := json.Marshal(p); len(all) > 1000 {
				t.Errorf("the problem is %d bytes long: it echoes the id", len(all))
			}
		})
	}
	for _, wf := range []string{"echo", "refund", "approve"} {
		if _, err := e.store.Thread(context.Background(), store.Key{Scope: "default", Workflow: wf, Thread: "t-limits"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("workflow %s has a thread t-limits after the refused requests: %v", wf, err)
		}
	}
}

// TestIDAtTheLimit runs with ids of exactly MaxIDBytes: they are taken,
// and echoed whole.
func TestIDAtTheLimit(t *testing.T) {
	e := newEnv(t, nil)
	id := func(c string) string { return strings.Repeat(c, server.MaxIDBytes) }
	evs := e.stream(e.post("/agui/workflows/echo", `{"threadId": "`+id("t")+`", "runId": "`+id("r")+`", "parentRunId": "`+id("p")+`", "messages": [{"id": "`+id("m")+`", "role": "user", "content": "hi"}]}`))
	first, last := evs[0].data, evs[len(evs)-1].data
	if first["threadId"] != id("t") || first["runId"] != id("r") || first["parentRunId"] != id("p") || last["type"] != "RUN_FINISHED" {
		t.Errorf("RUN_STARTED %v, last %v", first, last["type"])
	}
}

// TestIDLimitsDocumented checks the OpenAPI document states the limit of
// the ids of a run request.
func TestIDLimitsDocumented(t *testing.T) {
	e := newEnv(t, nil)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	decode(t, e.get("/openapi.json"), &doc)
	want := fmt.Sprintf("At most %d bytes.", server.MaxIDBytes)
	for schema, props := range map[string][]string{"RunAgentInput": {"threadId", "runId", "parentRunId"}, "ResumeEntry": {"interruptId"}} {
		for _, p := range props {
			if d := doc.Components.Schemas[schema].Properties[p].Description; !strings.Contains(d, want) {
				t.Errorf("%s.%s: description %q does not say %q", schema, p, d, want)
			}
		}
	}
}

// FuzzIDLength sends a request whose one id has any length: it is a 400
// that names the field exactly when the id is over MaxIDBytes.
func FuzzIDLength(f *testing.F) {
	fields := []string{"threadId", "runId", "parentRunId", "messages[0].id", "messages[1].toolCallId", "resume[0].interruptId"}
	for i := range fields {
		for _, n := range []uint16{1, server.MaxIDBytes, server.MaxIDBytes + 1, 4000} {
			f.Add(uint8(i), n, byte('a'))
		}
	}
	f.Add(uint8(0), uint16(100), byte(0xe9)) // two bytes a character in UTF-8
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, field uint8, n uint16, c byte) {
		name := fields[int(field)%len(fields)]
		size := 1 + int(n)%4096
		ch := string(rune(' ' + c%95)) // printable ASCII
		if c >= 0xc0 {
			ch = "é" // two bytes: the limit counts bytes
		}
		id := strings.Repeat(ch, size)
		ids := map[string]string{"threadId": "fuzz-ids", "runId": "r", "parentRunId": "p", "messages[0].id": "m", "messages[1].toolCallId": "c", "resume[0].interruptId": "i"}
		ids[name] = id
		body, _ := json.Marshal(map[string]any{
			"threadId": ids["threadId"], "runId": ids["runId"], "parentRunId": ids["parentRunId"],
			"messages": []any{
				map[string]any{"id": ids["messages[0].id"], "role": "user", "content": "x"},
				map[string]any{"id": "t", "role": "tool", "toolCallId": ids["messages[1].toolCallId"], "content": "x"},
			},
			"resume": []any{map[string]any{"interruptId": ids["resume[0].interruptId"], "status": "cancelled"}},
		})
		rec := fuzzPost(h, "/agui/workflows/echo", "text/event-stream", body)
		var p map[string]any
		json.Unmarshal(rec.Body.Bytes(), &p)
		want := fmt.Sprintf("body.%s: %s is %d bytes long; the limit is %d", name, name, len(id), server.MaxIDBytes)
		switch tooLong := len(id) > server.MaxIDBytes; {
		case tooLong && rec.Code != http.StatusBadRequest:
			t.Fatalf("%s of %d bytes: status %d, want 400: %s", name, len(id), rec.Code, rec.Body)
		case tooLong && !strings.Contains(strings.Join(problemErrors(p), "\n"), want):
			t.Fatalf("%s of %d bytes: errors %q, want %q", name, len(id), problemErrors(p), want)
		case !tooLong && strings.Contains(rec.Body.String(), "the limit is"):
			t.Fatalf("%s of %d bytes is refused: %s", name, len(id), rec.Body)
		}
	})
}
