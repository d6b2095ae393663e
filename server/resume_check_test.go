package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aguic/aguic/vm/store"
)

// TestResumeRefused answers interrupts on threads that do not wait for
// interrupt answers: 409, saying what the thread waits for, and the
// thread is left as it was; the turn it waits for still goes through.
func TestResumeRefused(t *testing.T) {
	const answers = `"resume": [{"interruptId": "int-1", "status": "resolved", "payload": {"ok": true}}]`
	user := func(id string) string { return `"messages": [{"id": "` + id + `", "role": "user", "content": "hi"}]` }
	tests := []struct {
		name     string
		workflow string
		thread   string
		first    string // the body of the first turn; "" for none
		refused  string // the path and body of the refused request
		path     string
		detail   string // in the 409's detail
		next     string // the body of the turn the thread waits for; "" for none
	}{
		{name: "a thread at suspend", workflow: "counter", thread: "rs1", first: `{"threadId": "rs1", ` + user("m1") + `}`,
			path: "/agui/workflows/counter", refused: `{"threadId": "rs1", "messages": [], ` + answers + `}`,
			detail: `thread "rs1" of workflow "counter" waits for the next user message, not for interrupt answers`,
			next:   `{"threadId": "rs1", ` + user("m2") + `}`},
		{name: "a message and answers", workflow: "counter", thread: "rs2", first: `{"threadId": "rs2", ` + user("m1") + `}`,
			path: "/agui/workflows/counter", refused: `{"threadId": "rs2", ` + user("m2") + `, ` + answers + `}`,
			detail: `waits for the next user message, not for interrupt answers`,
			next:   `{"threadId": "rs2", ` + user("m2") + `}`},
		{name: "a run on the thread", workflow: "counter", thread: "rs3", first: `{"threadId": "rs3", ` + user("m1") + `}`,
			path: "/agui/threads/rs3/runs", refused: `{` + answers + `}`,
			detail: `waits for the next user message, not for interrupt answers`,
			next:   `{"threadId": "rs3", ` + user("m2") + `}`},
		{name: "a thread at a frontend tool", workflow: "refund", thread: "rs4", first: `{"threadId": "rs4", ` + user("m1") + `}`,
			path: "/agui/workflows/refund", refused: `{"threadId": "rs4", ` + answers + `}`,
			detail: `thread "rs4" of workflow "refund" waits for the result of the frontend tool call "call-`},
		{name: "a thread that does not exist", workflow: "approve", thread: "rs5",
			path: "/agui/workflows/approve", refused: `{"threadId": "rs5", ` + answers + `}`,
			detail: `workflow "approve" has no thread "rs5" yet`},
		{name: "a stateless workflow", workflow: "echo", thread: "rs6",
			path: "/agui/workflows/echo", refused: `{"threadId": "rs6", ` + user("m1") + `, ` + answers + `}`,
			detail: `workflow "echo" is not a conversation`},
	}
	e := newEnv(t, nil)
	outer := e.t
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			defer func() { e.t = outer }()
			key := store.Key{Scope: "default", Workflow: tt.workflow, Thread: tt.thread}
			if tt.first != "" {
				e.stream(e.post("/agui/workflows/"+tt.workflow, tt.first))
			}
			before, beforeErr := e.store.Thread(context.Background(), key)
			p := e.problem(e.post(tt.path, tt.refused), http.StatusConflict)
			if d := str(p["detail"]); !strings.Contains(d, tt.detail) {
				t.Errorf("detail %q, want it to say %q", d, tt.detail)
			}
			after, afterErr := e.store.Thread(context.Background(), key)
			if after.Version != before.Version || (beforeErr == nil) != (afterErr == nil) {
				t.Errorf("the refused request changed the thread: version %d (%v), then %d (%v)", before.Version, beforeErr, after.Version, afterErr)
			}
			if tt.next != "" {
				if o := outcome(t, e.stream(e.post("/agui/workflows/"+tt.workflow, tt.next))); o["type"] != "success" {
					t.Errorf("the turn the thread waits for: outcome %v", o)
				}
			}
		})
	}
}

// TestBusyRetryAfter: the 409 of a thread a run holds says when to try
// again.
func TestBusyRetryAfter(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker(t)
	first := e.post("/agui/workflows/slow", slowBody("r1", b.srv.URL))
	<-b.entered
	resp := e.post("/agui/workflows/slow", slowBody("r2", b.srv.URL))
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
	e.problem(resp, http.StatusConflict)
	b.release()
	e.stream(first)
}
