package llm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/aimock"
	"github.com/aguic/aguic/stdlib/llm"
)

// The tests of this file run the Anthropic provider against aimock, which
// serves Anthropic's Messages API at /v1/messages: it converts each
// request to a chat completions request, matches the fixtures against
// that and streams the answer as Messages API events (message_start,
// content blocks of thinking, text and tool_use, message_delta with the
// usage, message_stop).

// claudeModel is a model aimock counts as able to think: it streams a
// fixture's reasoning as a thinking block only for such models.
const claudeModel = "claude-sonnet-4-5"

// anthropicAimock is an Anthropic provider that talks to s.
func anthropicAimock(s *aimock.Server) llm.Provider {
	return llm.NewAnthropic(llm.AnthropicOptions{APIKey: "sk-ant-aimock-test", BaseURL: s.AnthropicBaseURL()})
}

// requestRecorder is an http.RoundTripper that keeps the body of each
// request it sends.
type requestRecorder struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (r *requestRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		data, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, data)
		r.mu.Unlock()
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(data))
		req.ContentLength = int64(len(data))
	}
	return http.DefaultTransport.RoundTrip(req)
}

// body decodes the i-th body sent.
func (r *requestRecorder) body(t *testing.T, i int) map[string]any {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.bodies) {
		t.Fatalf("%d requests sent, want at least %d", len(r.bodies), i+1)
	}
	var m map[string]any
	if err := json.Unmarshal(r.bodies[i], &m); err != nil {
		t.Fatalf("request %d: %v", i, err)
	}
	return m
}

// TestAnthropicAimockText: the text block's deltas stream as several text
// chunks whose concatenation is the answer, with the usage of
// message_start and message_delta; the request streams, with the key and
// the API version the API requires and the default max_tokens.
func TestAnthropicAimockText(t *testing.T) {
	s := testAimockText(t, anthropicAimock, claudeModel, "The quick brown fox jumps over the lazy dog — café, naïve.")

	journal := s.Journal()
	if len(journal) != 1 {
		t.Fatalf("%d requests, want 1", len(journal))
	}
	e := journal[0]
	if e.Method != http.MethodPost || e.Path != "/v1/messages" || e.Response.Status != 200 {
		t.Errorf("request %s %s answered %d, want POST /v1/messages answered 200", e.Method, e.Path, e.Response.Status)
	}
	// aimock's journal redacts the key, but shows that one was sent.
	if e.Headers["x-api-key"] == "" || e.Headers["anthropic-version"] == "" || e.Headers["authorization"] != "" {
		t.Errorf("headers %v: want x-api-key and anthropic-version, no authorization", e.Headers)
	}
	reqs := s.MessagesRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d Messages API requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != claudeModel || !r.Stream || r.MaxTokens == nil || *r.MaxTokens != 4096 || r.Temperature != nil {
		t.Errorf("request: model %q, stream %v, max_tokens %v, temperature %v; want a stream of %s with max_tokens 4096",
			r.Model, r.Stream, r.MaxTokens, r.Temperature, claudeModel)
	}
	if len(r.Messages) != 1 || r.Messages[0].Role != "user" || r.Messages[0].Content.Text != "tell me about the fox" {
		t.Errorf("messages %+v", r.Messages)
	}
}

// TestAnthropicAimockThinking: a thinking block's thinking_delta events
// stream as reasoning chunks before the text; its signature_delta adds
// nothing to the reasoning.
func TestAnthropicAimockThinking(t *testing.T) {
	testAimockReasoning(t, anthropicAimock, claudeModel)
}

// TestAnthropicAimockToolUse: the input_json_delta events of tool_use
// blocks assemble into tool calls with their ids, names and arguments,
// indexed by their place among the calls whatever the index of their
// block; a call without arguments gets "{}"; text and thinking before
// the calls are kept.
func TestAnthropicAimockToolUse(t *testing.T) {
	tests := []struct {
		name     string
		response aimock.Response
		want     []llm.ToolCall
	}{
		{
			name: "calls",
			response: aimock.Response{ToolCalls: []aimock.ToolCall{
				{ID: "toolu_add", Name: "add", Arguments: `{"a":1,"b":2}`},
				{ID: "toolu_order", Name: "lookup_order", Arguments: `{"id":"A-1","verbose":true,"tags":["x","y"]}`},
			}},
			want: []llm.ToolCall{
				{ID: "toolu_add", Name: "add", Arguments: `{"a":1,"b":2}`},
				{ID: "toolu_order", Name: "lookup_order", Arguments: `{"id":"A-1","verbose":true,"tags":["x","y"]}`},
			},
		},
		{
			name: "text and a call",
			response: aimock.Response{Content: "Let me add.", ToolCalls: []aimock.ToolCall{
				{ID: "toolu_add", Name: "add", Arguments: `{"a":1,"b":2}`},
			}},
			want: []llm.ToolCall{{ID: "toolu_add", Name: "add", Arguments: `{"a":1,"b":2}`}},
		},
		{
			name: "thinking, text and calls",
			response: aimock.Response{Reasoning: "I need the sum.", Content: "Adding.", ToolCalls: []aimock.ToolCall{
				{ID: "toolu_add", Name: "add", Arguments: `{"a":1,"b":2}`},
				{ID: "toolu_now", Name: "now"},
			}},
			want: []llm.ToolCall{
				{ID: "toolu_add", Name: "add", Arguments: `{"a":1,"b":2}`},
				{ID: "toolu_now", Name: "now", Arguments: `{}`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := aimock.Start(t, aimock.Fixture{Response: tt.response, ChunkSize: 4})
			var c chunks
			resp, err := anthropicAimock(s).Stream(t.Context(), userRequest(claudeModel, "add 1 and 2"), c.on)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp.ToolCalls, tt.want) {
				t.Errorf("tool calls\n got %+v\nwant %+v", resp.ToolCalls, tt.want)
			}
			if resp.Text != tt.response.Content || resp.Reasoning != tt.response.Reasoning {
				t.Errorf("text %q, reasoning %q; want %q, %q", resp.Text, resp.Reasoning, tt.response.Content, tt.response.Reasoning)
			}
			checkToolDeltas(t, &c, tt.want)
			// Each call's first delta names it; the argument deltas follow.
			seen := map[int]bool{}
			for _, ch := range c.list {
				if d := ch.ToolCall; d != nil {
					if !seen[d.Index] && (d.ID == "" || d.Name == "" || d.Arguments != "") {
						t.Errorf("the first delta of call %d is %+v, want its id and name alone", d.Index, *d)
					}
					seen[d.Index] = true
				}
			}
		})
	}
}

// TestAnthropicAimockRequest: the request has the system messages as its
// system prompt, tool calls as tool_use blocks, tool results as
// tool_result blocks of one user turn, images as image blocks, the tools
// with their input_schema, max_tokens and the temperature. aimock accepts
// it and matches a fixture by the tool call the result answers. The
// journal holds aimock's conversion of the request, which drops images,
// so the bytes sent are checked too.
func TestAnthropicAimockRequest(t *testing.T) {
	s := aimock.Start(t, aimock.Fixture{
		Match:    aimock.Match{ToolCallID: "toolu_2", HasToolResult: new(true)},
		Response: aimock.Response{Content: "A cat."},
	})
	rec := &requestRecorder{}
	p := llm.NewAnthropic(llm.AnthropicOptions{APIKey: "sk-ant-aimock-test", BaseURL: s.AnthropicBaseURL(), HTTPClient: &http.Client{Transport: rec}})
	temp := 0.25
	params := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}, "required": []any{"a", "b"}}
	req := &llm.Request{
		Model: claudeModel,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You describe pictures."},
			{Role: llm.RoleSystem, Content: "Be brief."},
			{Role: llm.RoleUser, Content: "What is in these pictures?", Images: []llm.Image{
				{URL: "https://example.com/cat.png"},
				{Data: "iVBORw0KGgo=", MimeType: "image/png"},
				{URL: "data:image/jpeg;base64,/9j/4AAQ"},
			}},
			{Role: llm.RoleAssistant, Content: "Let me count first.", ToolCalls: []llm.ToolCall{
				{ID: "toolu_1", Name: "add", Arguments: `{"a":1,"b":2}`},
				{ID: "toolu_2", Name: "add", Arguments: ` {"a": 3, "b": 4} `},
			}},
			{Role: llm.RoleTool, Content: "3", ToolCallID: "toolu_1"},
			{Role: llm.RoleTool, Content: "7", ToolCallID: "toolu_2"},
		},
		Tools:       []llm.Tool{{Name: "add", Description: "Add two numbers", Parameters: params}},
		Temperature: &temp,
		MaxTokens:   100,
	}
	resp, err := p.Stream(t.Context(), req, func(llm.Chunk) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "A cat." {
		t.Errorf("answered %q: the fixture for the tool result did not match", resp.Text)
	}

	// What aimock made of the request.
	reqs := s.MessagesRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Model != claudeModel || got.Temperature == nil || *got.Temperature != 0.25 || got.MaxTokens == nil || *got.MaxTokens != 100 {
		t.Errorf("model %q, temperature %v, max_tokens %v; want %s, 0.25, 100", got.Model, got.Temperature, got.MaxTokens, claudeModel)
	}
	if len(got.Tools) != 1 {
		t.Fatalf("tools %+v", got.Tools)
	}
	if tool := got.Tools[0].Function; tool.Name != "add" || tool.Description != "Add two numbers" || !reflect.DeepEqual(tool.Parameters, params) {
		t.Errorf("tool %+v, want add with its input_schema %v", tool, params)
	}
	var roles []string
	for _, m := range got.Messages {
		roles = append(roles, m.Role)
	}
	if want := []string{"system", "user", "assistant", "tool", "tool"}; !slices.Equal(roles, want) {
		t.Fatalf("messages %+v have the roles %v, want %v", got.Messages, roles, want)
	}
	if m := got.Messages[0]; m.Content.Text != "You describe pictures.\n\nBe brief." {
		t.Errorf("system message %+v", m)
	}
	if m := got.Messages[1]; m.Content.Text != "What is in these pictures?" {
		t.Errorf("user message %+v", m)
	}
	if m := got.Messages[2]; m.Content.Text != "Let me count first." || len(m.ToolCalls) != 2 ||
		m.ToolCalls[0].ID != "toolu_1" || m.ToolCalls[0].Function.Name != "add" || m.ToolCalls[0].Function.Arguments != `{"a":1,"b":2}` ||
		m.ToolCalls[1].ID != "toolu_2" || m.ToolCalls[1].Function.Name != "add" || m.ToolCalls[1].Function.Arguments != `{"a":3,"b":4}` {
		t.Errorf("assistant message with tool calls %+v", m)
	}
	if m := got.Messages[3]; m.ToolCallID != "toolu_1" || m.Content.Text != "3" {
		t.Errorf("tool result %+v", m)
	}
	if m := got.Messages[4]; m.ToolCallID != "toolu_2" || m.Content.Text != "7" {
		t.Errorf("tool result %+v", m)
	}

	// What was sent: the blocks aimock flattens.
	body := rec.body(t, 0)
	wantSystem := []any{map[string]any{"type": "text", "text": "You describe pictures.\n\nBe brief."}}
	if !reflect.DeepEqual(body["system"], wantSystem) {
		t.Errorf("system %v, want %v", body["system"], wantSystem)
	}
	if body["max_tokens"] != 100.0 || body["stream"] != true {
		t.Errorf("max_tokens %v, stream %v", body["max_tokens"], body["stream"])
	}
	wantTools := []any{map[string]any{"name": "add", "description": "Add two numbers", "input_schema": params}}
	if !reflect.DeepEqual(body["tools"], wantTools) {
		t.Errorf("tools %v\nwant %v", body["tools"], wantTools)
	}
	wantMessages := []any{
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "What is in these pictures?"},
			map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "https://example.com/cat.png"}},
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}},
		}},
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "Let me count first."},
			map[string]any{"type": "tool_use", "id": "toolu_1", "name": "add", "input": map[string]any{"a": 1.0, "b": 2.0}},
			map[string]any{"type": "tool_use", "id": "toolu_2", "name": "add", "input": map[string]any{"a": 3.0, "b": 4.0}},
		}},
		// The results of both calls are one user turn.
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "text", "text": "3"}}},
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_2", "content": []any{map[string]any{"type": "text", "text": "7"}}},
		}},
	}
	if !reflect.DeepEqual(body["messages"], wantMessages) {
		g, _ := json.MarshalIndent(body["messages"], "", "  ")
		w, _ := json.MarshalIndent(wantMessages, "", "  ")
		t.Errorf("messages\n%s\nwant\n%s", g, w)
	}
}

// TestAnthropicAimockStatus: an error answer, {"type": "error", "error":
// {type, message}} with a failing status, is a *llm.StatusError with the
// status and the message; 429, 500 and 529 (overloaded) are worth another
// try, 400 and 401 are not. The SDK does not retry: the model node does.
func TestAnthropicAimockStatus(t *testing.T) {
	tests := []struct {
		status    int
		typ       string
		message   string
		retryable bool
	}{
		{429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", true},
		{500, "api_error", "Internal server error", true},
		{529, "overloaded_error", "Overloaded", true},
		{400, "invalid_request_error", "max_tokens: Field required", false},
		{401, "authentication_error", "invalid x-api-key", false},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			testAimockStatus(t, anthropicAimock, claudeModel, tt.status, tt.typ, tt.message, tt.retryable)
		})
	}
}

// TestAnthropicAimockChaos: the failures aimock's chaos injects before
// the answer: a 500 or a 429 in OpenAI's error shape, which the provider
// reads all the same, and a connection closed with no answer, which is a
// retryable connection error.
func TestAnthropicAimockChaos(t *testing.T) {
	tests := []struct {
		name    string
		chaos   aimock.Chaos
		status  int    // of the *llm.StatusError; 0 for none
		wantErr string // the error's message
	}{
		{"drop", aimock.Chaos{DropRate: 1}, 500, "model API status 500: Chaos: request dropped"},
		{"rate limit", aimock.Chaos{RateLimitRate: 1}, 429, "model API status 429: Chaos: rate limit exceeded"},
		{"disconnect", aimock.Chaos{DisconnectRate: 1}, 0, "anthropic: the model API cannot be reached: EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := aimock.Start(t, aimock.Fixture{Response: aimock.Response{Content: "never sent"}})
			s.SetChaos(tt.chaos)
			var c chunks
			resp, err := anthropicAimock(s).Stream(t.Context(), userRequest(claudeModel, "hi"), c.on)
			if err == nil || resp != nil || len(c.list) != 0 {
				t.Fatalf("got %+v, %v after %d chunks; want an error alone", resp, err, len(c.list))
			}
			if err.Error() != tt.wantErr {
				t.Errorf("got the error %q, want %q", err, tt.wantErr)
			}
			var se *llm.StatusError
			if errors.As(err, &se) != (tt.status != 0) || (se != nil && se.StatusCode != tt.status) {
				t.Errorf("got %#v, want a *llm.StatusError with status %d", err, tt.status)
			}
			if !llm.IsRetryable(err) {
				t.Errorf("%v is not retryable", err)
			}
			if n := len(s.Journal()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

// TestAnthropicAimockBrokenStream: a stream that breaks off, or an answer
// that is not a stream at all, is an error, never a silently shortened
// answer; what was streamed before is a prefix of the answer.
func TestAnthropicAimockBrokenStream(t *testing.T) {
	const answer = "one two three four five six seven eight nine ten"
	const midAnswer = "anthropic: the connection closed in the middle of the answer: unexpected EOF"
	tests := []struct {
		name     string
		fixture  aimock.Fixture
		response aimock.Response
		allText  bool // every text delta arrives; only the end of the message is missing
		wantErr  string
	}{
		{
			name:    "connection torn down after chunks",
			fixture: aimock.Fixture{ChunkSize: 4, Latency: 5 * time.Millisecond, TruncateAfterChunks: 6},
			wantErr: midAnswer,
		},
		{
			name:    "connection torn down after a time",
			fixture: aimock.Fixture{ChunkSize: 4, Latency: 20 * time.Millisecond, DisconnectAfter: 110 * time.Millisecond},
			wantErr: midAnswer,
		},
		{
			// The text block is complete, the message is not.
			name:    "connection torn down before message_stop",
			fixture: aimock.Fixture{ChunkSize: 100, Latency: 20 * time.Millisecond, TruncateAfterChunks: 5},
			allText: true,
			wantErr: midAnswer,
		},
		{
			name:     "connection torn down in a tool call's arguments",
			fixture:  aimock.Fixture{ChunkSize: 3, Latency: 5 * time.Millisecond, TruncateAfterChunks: 6},
			response: aimock.Response{ToolCalls: []aimock.ToolCall{{ID: "toolu_1", Name: "count", Arguments: `{"from":1,"to":10}`}}},
			wantErr:  midAnswer,
		},
		{
			name:    "an answer that is not a stream",
			fixture: aimock.Fixture{Chaos: &aimock.Chaos{MalformedRate: 1}},
			wantErr: "anthropic: the stream ended before the answer was complete",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.fixture
			f.Response = tt.response
			if f.Response.ToolCalls == nil {
				f.Response.Content = answer
			}
			s, text, err := streamBroken(t, anthropicAimock, claudeModel, f)
			if tt.allText && text != answer {
				t.Errorf("streamed %q, want %q", text, answer)
			}
			if !tt.allText && (!strings.HasPrefix(answer, text) || text == answer) {
				t.Errorf("streamed %q: want a strict prefix of %q", text, answer)
			}
			if err.Error() != tt.wantErr {
				t.Errorf("got the error %q, want %q", err, tt.wantErr)
			}
			if f.TruncateAfterChunks > 0 || f.DisconnectAfter > 0 {
				if e := s.Journal(); len(e) != 1 || !e[0].Response.Interrupted {
					t.Errorf("journal %+v: want one interrupted answer", e)
				}
			}
		})
	}
}

// TestAnthropicAimockCancel: cancelling the context mid-stream ends the
// call with context.Canceled at once, long before the slow stream would
// have finished.
func TestAnthropicAimockCancel(t *testing.T) {
	testAimockCancel(t, anthropicAimock, claudeModel)
}
