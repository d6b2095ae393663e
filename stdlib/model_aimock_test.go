package stdlib_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/aimock"
	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// The tests of this file run the model node end to end: a workflow
// compiled and run by the VM, whose model node calls the OpenAI provider,
// which talks to aimock, a real OpenAI-compatible server.

// aimockMachine compiles src with the "openai" provider talking to s.
func aimockMachine(t *testing.T, s *aimock.Server, src string) *vm.Machine {
	t.Helper()
	return providerMachine(t, "openai", llm.NewOpenAI(llm.OpenAIOptions{APIKey: "sk-aimock-test", BaseURL: s.OpenAIBaseURL()}), src)
}

// providerMachine compiles src with p as the provider name, the only one.
func providerMachine(t *testing.T, name string, p llm.Provider, src string) *vm.Machine {
	t.Helper()
	return machine(t, src, stdlib.Options{
		Models: llm.Resolver(map[string]llm.Provider{name: p}),
		Getenv: func(string) string { return "" },
	})
}

// modelProvider is what the tests shared by the providers need of one:
// the model the workflows name, how to compile a workflow that talks to
// aimock through it, and the requests aimock saw in its API's shape.
type modelProvider struct {
	name     string // as its errors start: "openai"
	model    string // as the model node names it: "openai/gpt-4o-mini"
	machine  func(t *testing.T, s *aimock.Server, src string) *vm.Machine
	requests func(s *aimock.Server) []aimock.ChatRequest
}

var openAIModel = modelProvider{name: "openai", model: "openai/gpt-4o-mini", machine: aimockMachine, requests: (*aimock.Server).ChatRequests}

// runFinished runs the workflow "test" of m, which must finish with its
// messages and tool calls each opened and closed once, and compares its
// text, reasoning and tool call events with want.
func runFinished(t *testing.T, m *vm.Machine, want string) *vm.Frame {
	t.Helper()
	f, o, rec := vmtest.Run(t, m, "test", nil)
	if o.Status != vm.Finished {
		t.Fatalf("outcome %s %+v", o.Status, o.Err)
	}
	if got := streamed(rec.Events); got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
	checkLifecycles(t, rec.Events)
	return f
}

// checkTextAndUsage fails the test unless $reply has the text and the
// usage the fixtures of the tests report, 11 tokens in and 7 out.
func checkTextAndUsage(t *testing.T, f *vm.Frame, text string) {
	t.Helper()
	reply := f.Context["reply"].(map[string]any)
	if reply["text"] != text || vm.Text(reply["usage"]) != `{"inputTokens":11,"outputTokens":7}` {
		t.Errorf("$reply = %s, want the text and the usage aimock reported", vm.Text(reply))
	}
}

// onlyRequest is the one request aimock saw in p's API.
func onlyRequest(t *testing.T, p modelProvider, s *aimock.Server) aimock.ChatRequest {
	t.Helper()
	reqs := p.requests(s)
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	return reqs[0]
}

// briefHello reports whether the messages of r are the system message
// "Be brief." and the prompt "hello".
func briefHello(r aimock.ChatRequest) bool {
	return len(r.Messages) == 2 &&
		r.Messages[0].Role == "system" && r.Messages[0].Content.Text == "Be brief." &&
		r.Messages[1].Role == "user" && r.Messages[1].Content.Text == "hello"
}

// modelFlow is a workflow "test" whose model node "answer" has the keys,
// one per line, and writes its result to $reply.
func modelFlow(keys ...string) string {
	return `wf 1

workflow test {
  tool add {
    description = "Add two numbers"
    parameters  = {type: "object", properties: {a: {type: "number"}, b: {type: "number"}}, required: ["a", "b"]}
    result      = $args.a + $args.b
  }
  flow {
    answer: model {
      ` + strings.Join(keys, "\n      ") + `
    } -> $reply
  }
}
`
}

// checkLifecycles fails the test when a message or a tool call the events
// open is not closed, or is closed twice.
func checkLifecycles(t *testing.T, events []vm.Event) {
	t.Helper()
	open := map[string]bool{}
	for _, e := range events {
		var key string
		var start bool
		switch e.Type {
		case vm.TextStart, vm.TextEnd:
			key, start = "text "+e.MessageID, e.Type == vm.TextStart
		case vm.ReasoningStart, vm.ReasoningEnd:
			key, start = "reasoning "+e.MessageID, e.Type == vm.ReasoningStart
		case vm.ReasoningMsgStart, vm.ReasoningMsgEnd:
			key, start = "reasoning message "+e.MessageID, e.Type == vm.ReasoningMsgStart
		case vm.ToolCallStart, vm.ToolCallEnd:
			key, start = "tool call "+e.ToolCallID, e.Type == vm.ToolCallStart
		default:
			continue
		}
		if open[key] == start {
			t.Errorf("%s: %s is already %s", e.Type, key, map[bool]string{true: "open", false: "closed"}[start])
		}
		open[key] = start
	}
	for key, isOpen := range open {
		if isOpen {
			t.Errorf("%s is never closed", key)
		}
	}
}

// streamed renders the text, reasoning and tool call events one per line,
// as vmtest.Format does; the tests of this file are about those.
func streamed(events []vm.Event) string {
	var b strings.Builder
	for _, e := range events {
		switch t := string(e.Type); {
		case strings.HasPrefix(t, "TEXT_MESSAGE_"), strings.HasPrefix(t, "REASONING_"), strings.HasPrefix(t, "TOOL_CALL_"):
			b.WriteString(vmtest.Format(e))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// assistantText joins the deltas of the assistant's text messages.
func assistantText(events []vm.Event) string {
	assistant := map[string]bool{}
	var b strings.Builder
	for _, e := range events {
		switch {
		case e.Type == vm.TextStart && e.Role == llm.RoleAssistant:
			assistant[e.MessageID] = true
		case e.Type == vm.TextContent && assistant[e.MessageID]:
			b.WriteString(e.Delta)
		}
	}
	return b.String()
}

// TestModelAimockText: the answer streams as one text message of several
// TEXT_MESSAGE_CONTENT events; the request carries the system message,
// the prompt and the temperature, and the result the usage.
func TestModelAimockText(t *testing.T) {
	s := aimock.Start(t, aimock.Fixture{
		Match:     aimock.Match{UserMessage: "hello"},
		Response:  aimock.Response{Content: "Hello from aimock, in chunks.", Usage: &aimock.Usage{PromptTokens: 11, CompletionTokens: 7}},
		ChunkSize: 8,
	})
	m := aimockMachine(t, s, modelFlow(`model = "openai/gpt-4o-mini"`, `system = "Be brief."`, `prompt = "hello"`, `temperature = 0.5`))
	f := runFinished(t, m, `TEXT_MESSAGE_START msg=msg-f1-1 role=user silent
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta="hello" silent
TEXT_MESSAGE_END msg=msg-f1-1 silent
TEXT_MESSAGE_START msg=msg-f1-2 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-2 delta="Hello fr"
TEXT_MESSAGE_CONTENT msg=msg-f1-2 delta="om aimoc"
TEXT_MESSAGE_CONTENT msg=msg-f1-2 delta="k, in ch"
TEXT_MESSAGE_CONTENT msg=msg-f1-2 delta="unks."
TEXT_MESSAGE_END msg=msg-f1-2
`)
	checkTextAndUsage(t, f, "Hello from aimock, in chunks.")
	if r := onlyRequest(t, openAIModel, s); r.Model != "gpt-4o-mini" || r.Temperature == nil || *r.Temperature != 0.5 || !briefHello(r) {
		t.Errorf("request %+v", r)
	}
}

// TestModelAimockReasoning: reasoning_content deltas become REASONING_*
// events before the text message.
func TestModelAimockReasoning(t *testing.T) {
	s := aimock.Start(t, aimock.Fixture{
		Response:  aimock.Response{Reasoning: "The user greets me.", Content: "Hi!"},
		ChunkSize: 10,
	})
	m := aimockMachine(t, s, modelFlow(`model = "openai/o4-mini"`, `prompt = "hello"`, `user_event = false`))
	f := runFinished(t, m, `REASONING_START msg=reason:msg-f1-1
REASONING_MESSAGE_START msg=reason:msg-f1-1
REASONING_MESSAGE_CONTENT msg=reason:msg-f1-1 delta="The user g"
REASONING_MESSAGE_CONTENT msg=reason:msg-f1-1 delta="reets me."
REASONING_MESSAGE_END msg=reason:msg-f1-1
REASONING_END msg=reason:msg-f1-1
TEXT_MESSAGE_START msg=msg-f1-2 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-2 delta="Hi!"
TEXT_MESSAGE_END msg=msg-f1-2
`)
	if got := f.Context["reply"].(map[string]any)["text"]; got != "Hi!" {
		t.Errorf("$reply.text = %v", got)
	}
}

// TestModelAimockToolRoundTrip: the model calls a backend tool, the node
// runs it and sends the result back; aimock answers the second request,
// the one with a tool result, with text.
func TestModelAimockToolRoundTrip(t *testing.T) {
	testModelToolRoundTrip(t, openAIModel, "call_add", aimock.Match{HasToolResult: new(true)})
}

// testModelToolRoundTrip: the model of p calls the backend tool add with
// the id callID, the node runs it and sends the result back; aimock
// answers the request that matches result, the one with the tool
// result, with text.
func testModelToolRoundTrip(t *testing.T, p modelProvider, callID string, result aimock.Match) {
	t.Helper()
	s := aimock.Start(t,
		aimock.Fixture{
			Match:     aimock.Match{HasToolResult: new(false)},
			Response:  aimock.Response{ToolCalls: []aimock.ToolCall{{ID: callID, Name: "add", Arguments: `{"a":1,"b":2}`}}},
			ChunkSize: 7,
		},
		aimock.Fixture{
			Match:    result,
			Response: aimock.Response{Content: "1 + 2 = 3."},
		},
	)
	m := p.machine(t, s, modelFlow(`model = "`+p.model+`"`, `prompt = "What is 1 + 2?"`, `tools = [add]`, `user_event = false`))
	f := runFinished(t, m, fmt.Sprintf(`TOOL_CALL_START call=%[1]s tool=add
TOOL_CALL_ARGS delta="{\"a\":1," call=%[1]s
TOOL_CALL_ARGS delta="\"b\":2}" call=%[1]s
TOOL_CALL_END call=%[1]s
TOOL_CALL_RESULT msg=tool:%[1]s call=%[1]s content="3"
TEXT_MESSAGE_START msg=msg-f1-1 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-1 delta="1 + 2 = 3."
TEXT_MESSAGE_END msg=msg-f1-1
`, callID))
	reply := f.Context["reply"].(map[string]any)
	if got := vm.Text(reply["tool_calls"]); got != `[{"arguments":{"a":1,"b":2},"id":"`+callID+`","name":"add"}]` || reply["text"] != "1 + 2 = 3." {
		t.Errorf("$reply = %s", vm.Text(reply))
	}

	reqs := p.requests(s)
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
	if m := second[1]; m.Role != "assistant" || len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != callID ||
		m.ToolCalls[0].Function.Name != "add" || m.ToolCalls[0].Function.Arguments != `{"a":1,"b":2}` {
		t.Errorf("message 2, the assistant's tool call: %+v", m)
	}
	if m := second[2]; m.Role != "tool" || m.ToolCallID != callID || m.Content.Text != "3" {
		t.Errorf("message 3, the tool result: %+v", m)
	}
}

// TestModelAimockRetry: a call that fails with 429 or 5xx is tried again
// as retry says and the run succeeds; a 400 is not tried again, and when
// the tries run out the node fails with the last error.
func TestModelAimockRetry(t *testing.T) {
	fail := func(status, seq int) aimock.Fixture {
		return aimock.Fixture{
			Match:    aimock.Match{UserMessage: "hello", SequenceIndex: new(seq)},
			Response: aimock.Response{Error: &aimock.Error{Message: fmt.Sprintf("status %d on try %d", status, seq+1)}, Status: status},
		}
	}
	ok := retryOK
	testModelRetry(t, openAIModel, []modelRetryCase{
		{name: "429 then success", fixtures: []aimock.Fixture{fail(429, 0), ok(1)}, statuses: []int{429, 200}},
		{name: "503 then success", fixtures: []aimock.Fixture{fail(503, 0), ok(1)}, statuses: []int{503, 200}},
		{name: "queued 500 then success", fixtures: []aimock.Fixture{ok(0)}, queue: 500, statuses: []int{500, 200}},
		{
			name:     "400 is not tried again",
			fixtures: []aimock.Fixture{fail(400, 0), ok(1)},
			statuses: []int{400},
			wantErr:  `model "openai/gpt-4o-mini": model API status 400: status 400 on try 1`,
		},
		{
			name:     "the tries run out",
			fixtures: []aimock.Fixture{fail(503, 0), fail(429, 1), fail(500, 2), ok(3)},
			statuses: []int{503, 429, 500},
			wantErr:  `model "openai/gpt-4o-mini" failed after 3 tries: model API status 500: status 500 on try 3`,
		},
	})
}

// retryOK is the fixture that answers "ok" to the try seq, from 0.
func retryOK(seq int) aimock.Fixture {
	return aimock.Fixture{Match: aimock.Match{UserMessage: "hello", SequenceIndex: new(seq)}, Response: aimock.Response{Content: "ok"}}
}

// modelRetryCase is a case of testModelRetry.
type modelRetryCase struct {
	name     string
	fixtures []aimock.Fixture
	queue    int // a status QueueError makes the first request fail with
	statuses []int
	wantErr  string // the node's error message; the run succeeds when empty
}

// testModelRetry runs each case with p and retry = 2: the server answers
// the statuses, and the run fails with wantErr or answers "ok".
func testModelRetry(t *testing.T, p modelProvider, tests []modelRetryCase) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := aimock.Start(t, tt.fixtures...)
			if tt.queue != 0 {
				s.QueueError(tt.queue, "queued failure")
			}
			m := p.machine(t, s, modelFlow(`model = "`+p.model+`"`, `prompt = "hello"`, `retry = 2`, `backoff = "10ms..20ms"`))
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

// TestModelAimockDisconnect: a connection torn down mid-stream fails the
// node with an error that says so, without a retry since text went out,
// and the text message it opened is closed.
func TestModelAimockDisconnect(t *testing.T) {
	testModelDisconnect(t, openAIModel, 4)
}

// testModelDisconnect: the connection to p's API is torn down after
// truncateAfter chunks of the answer: the node fails with an error that
// says so, without a retry since text went out, and the text message it
// opened is closed.
func testModelDisconnect(t *testing.T, p modelProvider, truncateAfter int) {
	t.Helper()
	const answer = "This answer never arrives in full."
	s := aimock.Start(t, aimock.Fixture{
		Response:            aimock.Response{Content: answer},
		ChunkSize:           5,
		Latency:             5 * time.Millisecond,
		TruncateAfterChunks: truncateAfter,
	})
	m := p.machine(t, s, modelFlow(`model = "`+p.model+`"`, `prompt = "hello"`, `retry = 2`, `backoff = "10ms..20ms"`))
	f, o, rec := vmtest.Run(t, m, "test", nil)
	if o.Status != vm.Failed || o.Err.Code != vm.ErrNode || o.Err.NodeID != "answer" ||
		o.Err.Message != `model "`+p.model+`": `+p.name+`: the connection closed in the middle of the answer: unexpected EOF` {
		t.Fatalf("outcome %s %+v, want the node failed with the broken stream", o.Status, o.Err)
	}
	text := assistantText(rec.Events)
	if text == "" || text == answer || !strings.HasPrefix(answer, text) {
		t.Errorf("streamed %q, want a strict, non-empty prefix of %q", text, answer)
	}
	checkLifecycles(t, rec.Events)
	if lines := strings.Split(strings.TrimSpace(streamed(rec.Events)), "\n"); !strings.HasPrefix(lines[len(lines)-1], "TEXT_MESSAGE_END ") {
		t.Errorf("the stream ends with %s, want TEXT_MESSAGE_END", lines[len(lines)-1])
	}
	if n := len(s.Journal()); n != 1 {
		t.Errorf("%d requests, want 1: text went out, so the call is not tried again", n)
	}
	if f.Context["reply"] != nil {
		t.Errorf("$reply = %v", f.Context["reply"])
	}
}

// TestModelAimockCancel: cancelling the run mid-stream ends it as
// cancelled before the slow stream finished, with the text message it
// opened closed.
func TestModelAimockCancel(t *testing.T) {
	const answer = "A slow answer that streams one character at a time."
	s := aimock.Start(t, aimock.Fixture{
		Response:  aimock.Response{Content: answer},
		ChunkSize: 1,
		Profile:   &aimock.StreamingProfile{TPS: 20},
	})
	m := aimockMachine(t, s, modelFlow(`model = "openai/gpt-4o-mini"`, `prompt = "hello"`, `retry = 2`))
	f, err := m.NewFrame("test", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rec := &vmtest.Recorder{}
	o := m.Run(ctx, f, nil, vm.Observer{Events: vm.SinkFunc(func(e vm.Event) error {
		if e.Type == vm.TextContent && !e.Silent {
			cancel()
		}
		return rec.Emit(e)
	})})
	if o.Status != vm.Cancelled {
		t.Fatalf("outcome %s %+v, want cancelled", o.Status, o.Err)
	}
	text := assistantText(rec.Events)
	if text == "" || text == answer || !strings.HasPrefix(answer, text) {
		t.Errorf("streamed %q, want a strict, non-empty prefix of %q", text, answer)
	}
	checkLifecycles(t, rec.Events)
	if n := len(s.Journal()); n != 1 {
		t.Errorf("%d requests, want 1: a cancelled call is not tried again", n)
	}
	if f.Context["reply"] != nil {
		t.Errorf("$reply = %v", f.Context["reply"])
	}
}

// TestModelAimockUnansweredToolCalls: a stateless history where the user
// ignored a frontend tool call and wrote again reaches the model API with
// an error result for that call right after it, as the API requires; a
// follow-up that answers one of two calls and says nothing new makes no
// request and waits for the other.
func TestModelAimockUnansweredToolCalls(t *testing.T) {
	s := aimock.Start(t, aimock.Fixture{Response: aimock.Response{Content: "Noon."}})
	src := modelFlow(`model = "openai/gpt-4o-mini"`, `prompt = "<<$agent.latestUserMessage?.content>>"`, `chat_in = $agent.chat`, `tools = $agent.tools`, `user_event = false`)
	m := aimockMachine(t, s, src)
	tools := []any{map[string]any{"name": "pick_color"}, map[string]any{"name": "pick_font"}}
	asked := map[string]any{"role": "assistant", "content": "Let me ask.", "toolCalls": []any{
		map[string]any{"id": "call_color", "name": "pick_color", "arguments": "{}"},
		map[string]any{"id": "call_font", "name": "pick_font", "arguments": "{}"},
	}}
	colour := map[string]any{"role": "tool", "toolCallId": "call_color", "content": "blue"}

	_, o, _ := vmtest.Run(t, m, "test", map[string]any{"agent": map[string]any{
		"chat":             []any{map[string]any{"role": "user", "content": "Set up my page"}, asked, colour},
		"latestToolResult": colour,
		"tools":            tools,
	}})
	if o.Status != vm.Suspended || o.Wait == nil || fmt.Sprint(o.Wait.ToolCallIDs) != "[call_font]" {
		t.Fatalf("outcome %s %+v %+v, want waiting for call_font", o.Status, o.Wait, o.Err)
	}
	if n := len(s.ChatRequests()); n != 0 {
		t.Fatalf("%d requests, want none while a call is open", n)
	}

	f, o, _ := vmtest.Run(t, m, "test", map[string]any{"agent": map[string]any{
		"chat":              []any{map[string]any{"role": "user", "content": "Set up my page"}, asked, colour},
		"latestUserMessage": map[string]any{"role": "user", "content": "Never mind. What time is it?"},
		"tools":             tools,
	}})
	if o.Status != vm.Finished || f.Context["reply"].(map[string]any)["text"] != "Noon." {
		t.Fatalf("outcome %s %+v, $reply %v", o.Status, o.Err, f.Context["reply"])
	}
	reqs := s.ChatRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	var got []string
	for _, msg := range reqs[0].Messages {
		line := msg.Role + ": " + msg.Content.Text
		for _, tc := range msg.ToolCalls {
			line += " calls " + tc.ID
		}
		if msg.ToolCallID != "" {
			line += " for " + msg.ToolCallID
		}
		got = append(got, line)
	}
	want := []string{
		"user: Set up my page",
		"assistant: Let me ask. calls call_color calls call_font",
		"tool: blue for call_color",
		"tool: error: the tool call got no result for call_font",
		"user: Never mind. What time is it?",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the request's messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
