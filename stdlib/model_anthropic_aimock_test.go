package stdlib_test

import (
	"fmt"
	"testing"

	"github.com/aguic/aguic/internal/aimock"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// The tests of this file run the model node end to end with the Anthropic
// provider: a workflow compiled and run by the VM, whose model node calls
// the provider, which talks to aimock's Messages API. They use the helpers
// of model_aimock_test.go.

// anthropicMachine compiles src with the "anthropic" provider talking to s.
func anthropicMachine(t *testing.T, s *aimock.Server, src string) *vm.Machine {
	t.Helper()
	return providerMachine(t, "anthropic", llm.NewAnthropic(llm.AnthropicOptions{APIKey: "sk-ant-aimock-test", BaseURL: s.AnthropicBaseURL()}), src)
}

var anthropicModel = modelProvider{name: "anthropic", model: "anthropic/claude-sonnet-4-5", machine: anthropicMachine, requests: (*aimock.Server).MessagesRequests}

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
	f := runFinished(t, m, `REASONING_START msg=reason:msg-f1-1
REASONING_MESSAGE_START msg=reason:msg-f1-1
REASONING_MESSAGE_CONTENT msg=reason:msg-f1-1 delta="The user g"
REASONING_MESSAGE_CONTENT msg=reason:msg-f1-1 delta="reets me."
REASONING_MESSAGE_END msg=reason:msg-f1-1
REASONING_END msg=reason:msg-f1-1
TEXT_MESSAGE_START msg=msg-f1-2 role=assistant
TEXT_MESSAGE_CONTENT msg=msg-f1-2 delta="Hello from"
TEXT_MESSAGE_CONTENT msg=msg-f1-2 delta=" Claude."
TEXT_MESSAGE_END msg=msg-f1-2
`)
	checkTextAndUsage(t, f, "Hello from Claude.")
	if r := onlyRequest(t, anthropicModel, s); r.Model != "claude-sonnet-4-5" || r.MaxTokens == nil || *r.MaxTokens != 256 || !briefHello(r) {
		t.Errorf("request %+v", r)
	}
}

// TestModelAnthropicAimockToolRoundTrip: the model calls a backend tool
// with a tool_use block, the node runs it and sends the result back as a
// tool_result block; aimock answers that second request with text.
func TestModelAnthropicAimockToolRoundTrip(t *testing.T) {
	testModelToolRoundTrip(t, anthropicModel, "toolu_add", aimock.Match{ToolCallID: "toolu_add", ToolResultContains: "3"})
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
	ok := retryOK
	testModelRetry(t, anthropicModel, []modelRetryCase{
		{name: "529 and 429 then success", fixtures: []aimock.Fixture{fail(529, 0, "overloaded_error"), fail(429, 1, "rate_limit_error"), ok(2)}, statuses: []int{529, 429, 200}},
		{
			name:     "400 is not tried again",
			fixtures: []aimock.Fixture{fail(400, 0, "invalid_request_error"), ok(1)},
			statuses: []int{400},
			wantErr:  `model "anthropic/claude-sonnet-4-5": model API status 400: invalid_request_error on try 1`,
		},
	})
}

// TestModelAnthropicAimockDisconnect: a connection torn down mid-stream
// fails the node with an error that says so, without a retry since text
// went out, and the text message it opened is closed.
func TestModelAnthropicAimockDisconnect(t *testing.T) {
	testModelDisconnect(t, anthropicModel, 5)
}
