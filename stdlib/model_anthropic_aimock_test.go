package stdlib_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/aimock"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/vmtest"
)

// The tests of this file run the model node end to end with the Anthropic
// provider: a workflow compiled and run by the VM, whose model node calls
// the provider, which talks to aimock's Messages API. They use the helpers
// of model_aimock_test.go.

// anthropicMachine compiles src with the "anthropic" provider talking to s.
func anthropicMachine(t *testing.T, s *aimock.Server, src string) *vm.Machine {
	t.Helper()
	p := llm.NewAnthropic(llm.AnthropicOptions{APIKey: "sk-ant-aimock-test", BaseURL: s.AnthropicBaseURL()})
	return machine(t, src, stdlib.Options{
		Models: llm.Resolver(map[string]llm.Provider{"anthropic": p}),
		Getenv: func(string) string { return "" },
	})
}

// TestModelAnthropicAimockThinking: a thinking block becomes REASONING_*
// events and the text block one text message of several
// TEXT_MESSAGE_CONTENT events; the request carries the system prompt,
// the prompt and max_tokens, and the result the usage.
func TestModelAnthropicAimockThinking(t *testing.T) {
	s := aimock.Start(t, aimock.Fixture{
		Match: aimock.Match{UserMessage: "hello", SystemMessage: "Be brief."},
		Response: aimock.Response{
			Reasoning: "The user greets me.",
			Content:   "Hello from Claude.",
			Usage:     &aimock.Usage{PromptTokens: 11, CompletionTokens: 7},
		},
		ChunkSize: 10,
	})
	m := anthropicMachine(t, s, modelFlow(`model = "anthropic/claude-sonnet-4-5"`, `system = "Be brief."`, `prompt = "hello"`, `max_tokens = 256`, `user_event = false`))
	f, o, rec := vmtest.Run(t, m, "test", nil)
	if o.Status != vm.Finished {
		t.Fatalf("outcome %s %+v", o.Status, o.Err)
	}
	want := `REASONING_START msg=reason:msg-f1-1
REASONING_MESSAGE_START msg=reason:msg-f1-1
REASONING_MESSAGE_CONTENT msg=reason:msg-f1-1 delta="The user g"
REASONING_MESSAGE_CONTENT msg=reason:msg-f1-1 delta="reets me."
REASONING_MESSAGE_END msg=reason:msg-f1-1
REASONING_END msg=reason:msg-f1-1
TEXT_MESSAGE_START msg=msg-f1-2 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-2 delta="Hello from"
TEXT_MESSAGE_CONTENT msg=msg-f1-2 delta=" Claude."
TEXT_MESSAGE_END msg=msg-f1-2
`
	if got := streamed(rec.Events); got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
	checkLifecycles(t, rec.Events)
	reply := f.Context["reply"].(map[string]any)
	if reply["text"] != "Hello from Claude." || vm.Text(reply["usage"]) != `{"inputTokens":11,"outputTokens":7}` {
		t.Errorf("$reply = %s, want the text and the usage aimock reported", vm.Text(reply))
	}
	reqs := s.MessagesRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "claude-sonnet-4-5" || r.MaxTokens == nil || *r.MaxTokens != 256 || len(r.Messages) != 2 ||
		r.Messages[0].Role != "system" || r.Messages[0].Content.Text != "Be brief." ||
		r.Messages[1].Role != "user" || r.Messages[1].Content.Text != "hello" {
		t.Errorf("request %+v", r)
	}
}

// TestModelAnthropicAimockToolRoundTrip: the model calls a backend tool
// with a tool_use block, the node runs it and sends the result back as a
// tool_result block; aimock answers that second request with text.
func TestModelAnthropicAimockToolRoundTrip(t *testing.T) {
	s := aimock.Start(t,
		aimock.Fixture{
			Match:     aimock.Match{HasToolResult: new(false)},
			Response:  aimock.Response{ToolCalls: []aimock.ToolCall{{ID: "toolu_add", Name: "add", Arguments: `{"a":1,"b":2}`}}},
			ChunkSize: 7,
		},
		aimock.Fixture{
			Match:    aimock.Match{ToolCallID: "toolu_add", ToolResultContains: "3"},
			Response: aimock.Response{Content: "1 + 2 = 3."},
		},
	)
	m := anthropicMachine(t, s, modelFlow(`model = "anthropic/claude-sonnet-4-5"`, `prompt = "What is 1 + 2?"`, `tools = [add]`, `user_event = false`))
	f, o, rec := vmtest.Run(t, m, "test", nil)
	if o.Status != vm.Finished {
		t.Fatalf("outcome %s %+v", o.Status, o.Err)
	}
	want := `TOOL_CALL_START call=toolu_add tool=add
TOOL_CALL_ARGS delta="{\"a\":1," call=toolu_add
TOOL_CALL_ARGS delta="\"b\":2}" call=toolu_add
TOOL_CALL_END call=toolu_add
TOOL_CALL_RESULT msg=tool:toolu_add call=toolu_add content="3"
TEXT_MESSAGE_START msg=msg-f1-1 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta="1 + 2 = 3."
TEXT_MESSAGE_END msg=msg-f1-1
`
	if got := streamed(rec.Events); got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
	checkLifecycles(t, rec.Events)
	reply := f.Context["reply"].(map[string]any)
	if got := vm.Text(reply["tool_calls"]); got != `[{"arguments":{"a":1,"b":2},"id":"toolu_add","name":"add"}]` || reply["text"] != "1 + 2 = 3." {
		t.Errorf("$reply = %s", vm.Text(reply))
	}

	reqs := s.MessagesRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if len(r.Tools) != 1 || r.Tools[0].Function.Name != "add" || r.Tools[0].Function.Description != "Add two numbers" ||
			vm.Text(r.Tools[0].Function.Parameters) != `{"properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"type":"object"}` {
			t.Errorf("request %d offers tools %+v", i+1, r.Tools)
		}
	}
	second := reqs[1].Messages
	if len(second) != 3 {
		t.Fatalf("the second request has %d messages, want 3: %+v", len(second), second)
	}
	if m := second[0]; m.Role != "user" || m.Content.Text != "What is 1 + 2?" {
		t.Errorf("message 1 %+v", m)
	}
	if m := second[1]; m.Role != "assistant" || len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "toolu_add" ||
		m.ToolCalls[0].Function.Name != "add" || m.ToolCalls[0].Function.Arguments != `{"a":1,"b":2}` {
		t.Errorf("message 2, the assistant's tool_use: %+v", m)
	}
	if m := second[2]; m.Role != "tool" || m.ToolCallID != "toolu_add" || m.Content.Text != "3" {
		t.Errorf("message 3, the tool_result: %+v", m)
	}
}

// TestModelAnthropicAimockRetry: an overloaded (529) or rate limited call
// is tried again and the run succeeds; a 400 is not tried again.
func TestModelAnthropicAimockRetry(t *testing.T) {
	fail := func(status, seq int, typ string) aimock.Fixture {
		return aimock.Fixture{
			Match:    aimock.Match{UserMessage: "hello", SequenceIndex: new(seq)},
			Response: aimock.Response{Error: &aimock.Error{Message: fmt.Sprintf("%s on try %d", typ, seq+1), Type: typ}, Status: status},
		}
	}
	ok := func(seq int) aimock.Fixture {
		return aimock.Fixture{Match: aimock.Match{UserMessage: "hello", SequenceIndex: new(seq)}, Response: aimock.Response{Content: "ok"}}
	}
	tests := []struct {
		name     string
		fixtures []aimock.Fixture
		statuses []int
		wantErr  string // the node's error message; the run succeeds when empty
	}{
		{name: "529 and 429 then success", fixtures: []aimock.Fixture{fail(529, 0, "overloaded_error"), fail(429, 1, "rate_limit_error"), ok(2)}, statuses: []int{529, 429, 200}},
		{
			name:     "400 is not tried again",
			fixtures: []aimock.Fixture{fail(400, 0, "invalid_request_error"), ok(1)},
			statuses: []int{400},
			wantErr:  `model "anthropic/claude-sonnet-4-5": model API status 400: invalid_request_error on try 1`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := aimock.Start(t, tt.fixtures...)
			m := anthropicMachine(t, s, modelFlow(`model = "anthropic/claude-sonnet-4-5"`, `prompt = "hello"`, `retry = 2`, `backoff = "10ms..20ms"`))
			f, o, rec := vmtest.Run(t, m, "test", nil)
			var statuses []int
			for _, e := range s.Journal() {
				statuses = append(statuses, e.Response.Status)
			}
			if fmt.Sprint(statuses) != fmt.Sprint(tt.statuses) {
				t.Errorf("the server answered %v, want %v", statuses, tt.statuses)
			}
			checkLifecycles(t, rec.Events)
			if tt.wantErr != "" {
				if o.Status != vm.Failed || o.Err.Code != vm.ErrNode || o.Err.NodeID != "answer" || o.Err.Message != tt.wantErr {
					t.Errorf("outcome %s %+v, want failed: %s", o.Status, o.Err, tt.wantErr)
				}
				return
			}
			if o.Status != vm.Finished {
				t.Fatalf("outcome %s %+v", o.Status, o.Err)
			}
			if got := f.Context["reply"].(map[string]any)["text"]; got != "ok" {
				t.Errorf("$reply.text = %v", got)
			}
			if got := assistantText(rec.Events); got != "ok" {
				t.Errorf("streamed %q, want only the successful answer", got)
			}
		})
	}
}

// TestModelAnthropicAimockDisconnect: a connection torn down mid-stream
// fails the node with an error that says so, without a retry since text
// went out, and the text message it opened is closed.
func TestModelAnthropicAimockDisconnect(t *testing.T) {
	const answer = "This answer never arrives in full."
	s := aimock.Start(t, aimock.Fixture{
		Response:            aimock.Response{Content: answer},
		ChunkSize:           5,
		Latency:             5 * time.Millisecond,
		TruncateAfterChunks: 5,
	})
	m := anthropicMachine(t, s, modelFlow(`model = "anthropic/claude-sonnet-4-5"`, `prompt = "hello"`, `retry = 2`, `backoff = "10ms..20ms"`))
	f, o, rec := vmtest.Run(t, m, "test", nil)
	if o.Status != vm.Failed || o.Err.Code != vm.ErrNode || o.Err.NodeID != "answer" ||
		o.Err.Message != `model "anthropic/claude-sonnet-4-5": anthropic: the connection closed in the middle of the answer: unexpected EOF` {
		t.Fatalf("outcome %s %+v, want the node failed with the broken stream", o.Status, o.Err)
	}
	text := assistantText(rec.Events)
	if text == "" || text == answer || !strings.HasPrefix(answer, text) {
		t.Errorf("streamed %q, want a strict, non-empty prefix of %q", text, answer)
	}
	checkLifecycles(t, rec.Events)
	if n := len(s.Journal()); n != 1 {
		t.Errorf("%d requests, want 1: text went out, so the call is not tried again", n)
	}
	if f.Context["reply"] != nil {
		t.Errorf("$reply = %v", f.Context["reply"])
	}
}
