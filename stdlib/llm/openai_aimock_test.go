package llm_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/aimock"
	"github.com/aguic/aguic/stdlib/llm"
)

// The tests of this file run the OpenAI provider against aimock, a real
// OpenAI-compatible server (see package aimock).

// aimockProvider is an OpenAI provider that talks to s.
func aimockProvider(s *aimock.Server) llm.Provider {
	return llm.NewOpenAI(llm.OpenAIOptions{APIKey: "sk-aimock-test", BaseURL: s.OpenAIBaseURL()})
}

// userRequest is a request of one user message.
func userRequest(model, text string) *llm.Request {
	return &llm.Request{Model: model, Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

// chunks records what a provider streams.
type chunks struct {
	list []llm.Chunk
}

func (c *chunks) on(ch llm.Chunk) error {
	if ch.ToolCall != nil {
		d := *ch.ToolCall
		ch.ToolCall = &d
	}
	c.list = append(c.list, ch)
	return nil
}

func (c *chunks) text() (text string, n int) {
	var b strings.Builder
	for _, ch := range c.list {
		if ch.Text != "" {
			b.WriteString(ch.Text)
			n++
		}
	}
	return b.String(), n
}

func (c *chunks) reasoning() (text string, n int) {
	var b strings.Builder
	for _, ch := range c.list {
		if ch.Reasoning != "" {
			b.WriteString(ch.Reasoning)
			n++
		}
	}
	return b.String(), n
}

// toolDeltas puts the tool call deltas of c together by their index.
func toolDeltas(c *chunks) (calls map[int]*llm.ToolCall, n int) {
	calls = map[int]*llm.ToolCall{}
	for _, ch := range c.list {
		d := ch.ToolCall
		if d == nil {
			continue
		}
		n++
		tc := calls[d.Index]
		if tc == nil {
			tc = &llm.ToolCall{}
			calls[d.Index] = tc
		}
		tc.ID += d.ID
		tc.Name += d.Name
		tc.Arguments += d.Arguments
	}
	return calls, n
}

// checkToolDeltas fails the test unless the tool call deltas of c, put
// together, are the calls want, their arguments in several deltas.
func checkToolDeltas(t *testing.T, c *chunks, want []llm.ToolCall) {
	t.Helper()
	got, deltas := toolDeltas(c)
	if len(got) != len(want) {
		t.Errorf("deltas of %d calls, want %d", len(got), len(want))
	}
	for i, w := range want {
		if g := got[i]; g == nil || *g != w {
			t.Errorf("deltas of call %d make %+v, want %+v", i, g, w)
		}
	}
	if deltas <= 2*len(want) {
		t.Errorf("%d tool call deltas; want the arguments in several", deltas)
	}
}

// The tests below run each provider against aimock: newProvider makes
// it talk to the server, and model is the model the requests name.

// testAimockText: text streams in several chunks whose concatenation is
// the answer, with the usage the server reports. It returns the server,
// whose journal has the one request.
func testAimockText(t *testing.T, newProvider func(*aimock.Server) llm.Provider, model, answer string) *aimock.Server {
	t.Helper()
	s := aimock.Start(t, aimock.Fixture{
		Match:     aimock.Match{UserMessage: "fox"},
		Response:  aimock.Response{Content: answer, Usage: &aimock.Usage{PromptTokens: 12, CompletionTokens: 9}},
		ChunkSize: 5,
	})
	var c chunks
	resp, err := newProvider(s).Stream(t.Context(), userRequest(model, "tell me about the fox"), c.on)
	if err != nil {
		t.Fatal(err)
	}
	text, n := c.text()
	if n < 2 || text != answer || resp.Text != answer {
		t.Errorf("streamed %q in %d chunks, answered %q; want %q in several chunks", text, n, resp.Text, answer)
	}
	if resp.Reasoning != "" || len(resp.ToolCalls) != 0 {
		t.Errorf("reasoning %q, tool calls %v; want none", resp.Reasoning, resp.ToolCalls)
	}
	if want := (llm.Usage{InputTokens: 12, OutputTokens: 9}); resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
	return s
}

// testAimockReasoning: the fixture's reasoning arrives as reasoning
// chunks, in several, before the text.
func testAimockReasoning(t *testing.T, newProvider func(*aimock.Server) llm.Provider, model string) {
	t.Helper()
	const thinking = "The user greets me; I greet back."
	s := aimock.Start(t, aimock.Fixture{
		Response:  aimock.Response{Reasoning: thinking, Content: "Hello!"},
		ChunkSize: 6,
	})
	var c chunks
	resp, err := newProvider(s).Stream(t.Context(), userRequest(model, "hi"), c.on)
	if err != nil {
		t.Fatal(err)
	}
	reasoning, n := c.reasoning()
	if n < 2 || reasoning != thinking || resp.Reasoning != thinking {
		t.Errorf("streamed reasoning %q in %d chunks, answered %q; want %q in several chunks", reasoning, n, resp.Reasoning, thinking)
	}
	if text, _ := c.text(); text != "Hello!" || resp.Text != "Hello!" {
		t.Errorf("text %q, answered %q", text, resp.Text)
	}
	firstText := slices.IndexFunc(c.list, func(ch llm.Chunk) bool { return ch.Text != "" })
	lastReasoning := -1
	for i, ch := range c.list {
		if ch.Reasoning != "" {
			lastReasoning = i
		}
	}
	if firstText < 0 || lastReasoning > firstText {
		t.Errorf("reasoning chunk %d comes after text chunk %d", lastReasoning, firstText)
	}
}

// testAimockStatus: an error answer with the status, the error type typ
// and the message is a *llm.StatusError with the status and the message,
// retryable or not, after no chunk and one request: the model node
// retries, not the SDK.
func testAimockStatus(t *testing.T, newProvider func(*aimock.Server) llm.Provider, model string, status int, typ, message string, retryable bool) {
	t.Helper()
	s := aimock.Start(t, aimock.Fixture{Response: aimock.Response{Error: &aimock.Error{Message: message, Type: typ}, Status: status}})
	var c chunks
	resp, err := newProvider(s).Stream(t.Context(), userRequest(model, "hi"), c.on)
	var se *llm.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, %v; want a *llm.StatusError", resp, err)
	}
	if se.StatusCode != status || se.Message != message {
		t.Errorf("got status %d message %q, want %d %q", se.StatusCode, se.Message, status, message)
	}
	if llm.IsRetryable(err) != retryable {
		t.Errorf("IsRetryable = %v, want %v", llm.IsRetryable(err), retryable)
	}
	if len(c.list) != 0 {
		t.Errorf("streamed %d chunks before the error", len(c.list))
	}
	if n := len(s.Journal()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// streamBroken streams the answer of the fixture f, which must fail with
// no response: it returns the server, the text streamed and the error.
func streamBroken(t *testing.T, newProvider func(*aimock.Server) llm.Provider, model string, f aimock.Fixture) (s *aimock.Server, text string, err error) {
	t.Helper()
	s = aimock.Start(t, f)
	var c chunks
	resp, err := newProvider(s).Stream(t.Context(), userRequest(model, "count"), c.on)
	text, _ = c.text()
	if err == nil {
		t.Fatalf("answered %+v with no error after streaming %q", resp, text)
	}
	if resp != nil {
		t.Errorf("answered %+v beside the error %v", resp, err)
	}
	return s, text, err
}

// testAimockCancel: cancelling the context mid-stream ends the call with
// context.Canceled at once, long before the slow stream would have
// finished.
func testAimockCancel(t *testing.T, newProvider func(*aimock.Server) llm.Provider, model string) {
	t.Helper()
	const answer = "A slow answer that streams one character at a time, twenty each second."
	s := aimock.Start(t, aimock.Fixture{
		Response:  aimock.Response{Content: answer},
		ChunkSize: 1,
		Profile:   &aimock.StreamingProfile{TPS: 20},
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var c chunks
	var cancelled time.Time
	resp, err := newProvider(s).Stream(ctx, userRequest(model, "slowly"), func(ch llm.Chunk) error {
		if ch.Text != "" && cancelled.IsZero() {
			cancelled = time.Now()
			cancel()
		}
		return c.on(ch)
	})
	if !errors.Is(err, context.Canceled) || resp != nil {
		t.Fatalf("got %+v, %v; want context.Canceled", resp, err)
	}
	if d := time.Since(cancelled); d > time.Second {
		t.Errorf("the call returned %s after the cancellation", d)
	}
	if text, _ := c.text(); text == "" || text == answer || !strings.HasPrefix(answer, text) {
		t.Errorf("streamed %q: want a strict, non-empty prefix of %q", text, answer)
	}
}

// TestOpenAIAimockText: text streams in several chunks whose concatenation
// is the answer's text, with the usage the server reports, which the
// provider asks for with stream_options.include_usage.
func TestOpenAIAimockText(t *testing.T) {
	s := testAimockText(t, aimockProvider, "gpt-4o-mini", "The quick brown fox jumps over the lazy dog.")
	reqs := s.ChatRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if r := reqs[0]; !r.Stream || r.StreamOptions == nil || !r.StreamOptions.IncludeUsage || r.Model != "gpt-4o-mini" {
		t.Errorf("request: model %q, stream %v, stream_options %+v; want a stream with include_usage", r.Model, r.Stream, r.StreamOptions)
	}
}

// TestOpenAIAimockReasoning: aimock streams reasoning as reasoning_content
// deltas before the text; they arrive as reasoning chunks.
func TestOpenAIAimockReasoning(t *testing.T) {
	testAimockReasoning(t, aimockProvider, "o4-mini")
}

// TestOpenAIAimockToolCalls: tool call deltas, the arguments split over
// several chunks, assemble into tool calls with their ids, names and
// arguments; text before them is kept.
func TestOpenAIAimockToolCalls(t *testing.T) {
	tests := []struct {
		name     string
		response aimock.Response
		text     string
	}{
		{
			name: "calls",
			response: aimock.Response{ToolCalls: []aimock.ToolCall{
				{ID: "call_add", Name: "add", Arguments: `{"a": 1, "b": 2}`},
				{ID: "call_order", Name: "lookup_order", Arguments: `{"id": "A-1", "verbose": true}`},
			}},
		},
		{
			name: "text and a call",
			response: aimock.Response{Content: "Let me add.", ToolCalls: []aimock.ToolCall{
				{ID: "call_add", Name: "add", Arguments: `{"a": 1, "b": 2}`},
			}},
			text: "Let me add.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := aimock.Start(t, aimock.Fixture{Response: tt.response, ChunkSize: 4})
			var c chunks
			resp, err := aimockProvider(s).Stream(t.Context(), userRequest("gpt-4o-mini", "add 1 and 2"), c.on)
			if err != nil {
				t.Fatal(err)
			}
			var want []llm.ToolCall
			for _, tc := range tt.response.ToolCalls {
				want = append(want, llm.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
			}
			if !reflect.DeepEqual(resp.ToolCalls, want) {
				t.Errorf("tool calls\n got %+v\nwant %+v", resp.ToolCalls, want)
			}
			if resp.Text != tt.text {
				t.Errorf("text %q, want %q", resp.Text, tt.text)
			}
			// The deltas of each call, put together, are the call.
			checkToolDeltas(t, &c, want)
		})
	}
}

// TestOpenAIAimockRequest: the request carries the system message, the
// history with tool calls and results, image parts, the tools and the
// sampling settings.
func TestOpenAIAimockRequest(t *testing.T) {
	s := aimock.Start(t, aimock.Fixture{Response: aimock.Response{Content: "A cat."}})
	temp := 0.25
	req := &llm.Request{
		Model: "gpt-4o-mini",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You describe pictures."},
			{Role: llm.RoleUser, Content: "What is 1+2?"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "add", Arguments: `{"a":1,"b":2}`}}},
			{Role: llm.RoleTool, Content: "3", ToolCallID: "call_1"},
			{Role: llm.RoleAssistant, Content: "3."},
			{Role: llm.RoleUser, Content: "What is in these pictures?", Images: []llm.Image{
				{URL: "https://example.com/cat.png"},
				{Data: "iVBORw0KGgo=", MimeType: "image/png"},
			}},
		},
		Tools: []llm.Tool{{
			Name:        "add",
			Description: "Add two numbers",
			Parameters:  map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}}},
		}},
		Temperature: &temp,
		MaxTokens:   100,
	}
	if _, err := aimockProvider(s).Stream(t.Context(), req, func(llm.Chunk) error { return nil }); err != nil {
		t.Fatal(err)
	}
	journal := s.Journal()
	if len(journal) != 1 {
		t.Fatalf("%d requests, want 1", len(journal))
	}
	// aimock's journal redacts the key, but shows that one was sent.
	if auth := journal[0].Headers["authorization"]; auth == "" {
		t.Error("no authorization header")
	}
	got, err := journal[0].Chat()
	if err != nil {
		t.Fatal(err)
	}
	if got.Temperature == nil || *got.Temperature != 0.25 {
		t.Errorf("temperature %v, want 0.25", got.Temperature)
	}
	if got.MaxCompletionTokens == nil || *got.MaxCompletionTokens != 100 {
		t.Errorf("max_completion_tokens %v, want 100", got.MaxCompletionTokens)
	}
	if len(got.Tools) != 1 {
		t.Fatalf("tools %+v", got.Tools)
	}
	if tool := got.Tools[0]; tool.Type != "function" || tool.Function.Name != "add" || tool.Function.Description != "Add two numbers" ||
		!reflect.DeepEqual(tool.Function.Parameters, map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}}}) {
		t.Errorf("tool %+v", tool)
	}
	if len(got.Messages) != len(req.Messages) {
		t.Fatalf("%d messages, want %d: %+v", len(got.Messages), len(req.Messages), got.Messages)
	}
	for i, want := range []string{"system", "user", "assistant", "tool", "assistant", "user"} {
		if got.Messages[i].Role != want {
			t.Errorf("message %d has role %q, want %q", i, got.Messages[i].Role, want)
		}
	}
	if m := got.Messages[0]; m.Content.Text != "You describe pictures." {
		t.Errorf("system message %+v", m)
	}
	if m := got.Messages[2]; len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "call_1" || m.ToolCalls[0].Type != "function" ||
		m.ToolCalls[0].Function.Name != "add" || m.ToolCalls[0].Function.Arguments != `{"a":1,"b":2}` {
		t.Errorf("assistant message with a tool call %+v", m)
	}
	if m := got.Messages[3]; m.ToolCallID != "call_1" || m.Content.Text != "3" {
		t.Errorf("tool message %+v", m)
	}
	wantParts := []aimock.Part{
		{Type: "text", Text: "What is in these pictures?"},
		{Type: "image_url", ImageURL: &aimock.ImageURL{URL: "https://example.com/cat.png"}},
		{Type: "image_url", ImageURL: &aimock.ImageURL{URL: "data:image/png;base64,iVBORw0KGgo="}},
	}
	if m := got.Messages[5]; !reflect.DeepEqual(m.Content.Parts, wantParts) {
		t.Errorf("user message with images has parts %+v, want %+v", m.Content.Parts, wantParts)
	}
}

// TestOpenAIAimockStatus: a failing status is a *llm.StatusError with the
// server's message; 429 and 5xx are worth another try, 400 is not.
func TestOpenAIAimockStatus(t *testing.T) {
	tests := []struct {
		status    int
		message   string
		retryable bool
	}{
		{429, "Rate limit reached for requests", true},
		{500, "The server had an error while processing your request", true},
		{503, "The engine is currently overloaded", true},
		{400, "Invalid value for 'temperature'", false},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			testAimockStatus(t, aimockProvider, "gpt-4o-mini", tt.status, "server_error", tt.message, tt.retryable)
		})
	}
}

// TestOpenAIAimockBrokenStream: a stream that breaks off, or an answer that
// is not a stream at all, is an error, never a silently shortened answer;
// what was streamed before is a prefix of the answer.
func TestOpenAIAimockBrokenStream(t *testing.T) {
	const answer = "one two three four five six seven eight nine ten"
	const midAnswer = "openai: the connection closed in the middle of the answer: unexpected EOF"
	tests := []struct {
		name    string
		fixture aimock.Fixture
		wantErr string // a part of the error's message
	}{
		{"connection torn down after chunks", aimock.Fixture{ChunkSize: 4, Latency: 5 * time.Millisecond, TruncateAfterChunks: 5}, midAnswer},
		{"connection torn down after a time", aimock.Fixture{ChunkSize: 4, Latency: 20 * time.Millisecond, DisconnectAfter: 70 * time.Millisecond}, midAnswer},
		{"connection closed before the answer", aimock.Fixture{Chaos: &aimock.Chaos{DisconnectRate: 1}}, "openai: the model API cannot be reached: EOF"},
		{"an answer that is not a stream", aimock.Fixture{Chaos: &aimock.Chaos{MalformedRate: 1}}, "openai: the stream ended before the answer was complete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.fixture
			f.Response = aimock.Response{Content: answer}
			_, text, err := streamBroken(t, aimockProvider, "gpt-4o-mini", f)
			if !strings.HasPrefix(answer, text) || text == answer {
				t.Errorf("streamed %q: want a strict prefix of %q", text, answer)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got the error %q, want one with %q", err, tt.wantErr)
			}
		})
	}
}

// TestOpenAIAimockCancel: cancelling the context mid-stream ends the call
// with context.Canceled, before the slow stream would have finished.
func TestOpenAIAimockCancel(t *testing.T) {
	testAimockCancel(t, aimockProvider, "gpt-4o-mini")
}
