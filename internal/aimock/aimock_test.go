package aimock_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/aimock"
)

func TestFixtureJSON(t *testing.T) {
	tests := []struct {
		name    string
		fixture aimock.Fixture
		want    string
	}{
		{
			name:    "empty text",
			fixture: aimock.Fixture{Match: aimock.Match{UserMessage: "hi"}},
			want:    `{"match":{"userMessage":"hi"},"response":{"content":""}}`,
		},
		{
			name: "text with reasoning, usage and physics",
			fixture: aimock.Fixture{
				Match:     aimock.Match{Model: "gpt-4o", SequenceIndex: new(0)},
				Response:  aimock.Response{Content: "Hello", Reasoning: "greet", Usage: &aimock.Usage{PromptTokens: 3, CompletionTokens: 1}},
				ChunkSize: 2,
				Latency:   5 * time.Millisecond,
				Profile:   &aimock.StreamingProfile{TTFT: 100 * time.Millisecond, TPS: 20},
			},
			want: `{"match":{"model":"gpt-4o","sequenceIndex":0},"response":{"content":"Hello","reasoning":"greet","usage":{"prompt_tokens":3,"completion_tokens":1}},"chunkSize":2,"latency":5,"streamingProfile":{"ttft":100,"tps":20}}`,
		},
		{
			name: "tool calls",
			fixture: aimock.Fixture{
				Match:    aimock.Match{HasToolResult: new(false)},
				Response: aimock.Response{ToolCalls: []aimock.ToolCall{{ID: "call_1", Name: "add", Arguments: `{"a":1}`}, {Name: "now"}}},
			},
			want: `{"match":{"hasToolResult":false},"response":{"toolCalls":[{"id":"call_1","name":"add","arguments":"{\"a\":1}"},{"name":"now","arguments":"{}"}]}}`,
		},
		{
			name: "text and tool calls",
			fixture: aimock.Fixture{
				Response: aimock.Response{Content: "Let me add.", ToolCalls: []aimock.ToolCall{{Name: "add"}}},
			},
			want: `{"match":{},"response":{"content":"Let me add.","toolCalls":[{"name":"add","arguments":"{}"}]}}`,
		},
		{
			name: "error",
			fixture: aimock.Fixture{
				Match:    aimock.Match{ToolCallID: "call_1"},
				Response: aimock.Response{Content: "ignored", Error: &aimock.Error{Message: "slow down", Type: "rate_limit_error"}, Status: 429, RetryAfter: 2 * time.Second},
			},
			want: `{"match":{"toolCallId":"call_1"},"response":{"error":{"message":"slow down","type":"rate_limit_error"},"status":429,"retryAfter":2}}`,
		},
		{
			name: "disconnects and chaos",
			fixture: aimock.Fixture{
				TruncateAfterChunks: 3,
				DisconnectAfter:     time.Second,
				Chaos:               &aimock.Chaos{DisconnectRate: 0.5, Latency: time.Millisecond},
			},
			want: `{"match":{},"response":{"content":""},"truncateAfterChunks":3,"disconnectAfterMs":1000,"chaos":{"disconnectRate":0.5,"latencyMs":1}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.fixture)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestContentJSON(t *testing.T) {
	tests := []struct {
		in   string
		want aimock.Content
	}{
		{`"hello"`, aimock.Content{Text: "hello"}},
		{`null`, aimock.Content{}},
		{`[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]`, aimock.Content{Parts: []aimock.Part{
			{Type: "text", Text: "look"},
			{Type: "image_url", ImageURL: &aimock.ImageURL{URL: "https://x/y.png"}},
		}}},
	}
	for _, tt := range tests {
		var got aimock.Content
		if err := json.Unmarshal([]byte(tt.in), &got); err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(tt.want)
		if string(g) != string(w) {
			t.Errorf("%s: got %s, want %s", tt.in, g, w)
		}
	}
}

// post sends a chat completions request without streaming and returns
// the status and the body.
func post(t *testing.T, s *aimock.Server, user string) (int, string) {
	t.Helper()
	body := `{"model":"gpt-4o","messages":[{"role":"system","content":"be brief"},{"role":"user","content":` + quote(user) + `}]}`
	resp, err := http.Post(s.OpenAIBaseURL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func quote(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// TestServer: fixtures answer, the journal records, and the control API
// queues errors and switches chaos on and off.
func TestServer(t *testing.T) {
	s := aimock.Start(t, aimock.Fixture{Match: aimock.Match{UserMessage: "hello"}, Response: aimock.Response{Content: "Hi there!"}})
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || s.OpenAIBaseURL() != s.URL+"/v1" {
		t.Fatalf("URL %q, OpenAIBaseURL %q", s.URL, s.OpenAIBaseURL())
	}
	s.Add(aimock.Fixture{Response: aimock.Response{Content: "fallback"}})

	steps := []struct {
		name       string
		before     func()
		user       string
		wantStatus int
		wantBody   string
	}{
		{"fixture", nil, "hello you", 200, "Hi there!"},
		{"added fixture", nil, "other", 200, "fallback"},
		{"queued error", func() { s.QueueError(503, "overloaded") }, "hello", 503, "overloaded"},
		{"after the queued error", nil, "hello", 200, "Hi there!"},
		{"chaos", func() { s.SetChaos(aimock.Chaos{RateLimitRate: 1}) }, "hello", 429, ""},
		{"chaos cleared", s.ClearChaos, "hello", 200, "Hi there!"},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		status, body := post(t, s, st.user)
		if status != st.wantStatus || !strings.Contains(body, st.wantBody) {
			t.Errorf("%s: got %d %s, want %d with %q", st.name, status, body, st.wantStatus, st.wantBody)
		}
	}

	journal := s.Journal()
	if len(journal) != len(steps) {
		t.Fatalf("journal has %d entries, want %d", len(journal), len(steps))
	}
	if e := journal[2]; e.Response.Status != 503 || e.Path != "/v1/chat/completions" {
		t.Errorf("journal[2] = %+v", e)
	}
	if e := journal[4]; e.Response.ChaosAction != "rateLimit" {
		t.Errorf("journal[4].Response = %+v", e.Response)
	}
	reqs := s.ChatRequests()
	if len(reqs) != len(steps) {
		t.Fatalf("%d chat requests, want %d", len(reqs), len(steps))
	}
	if r := reqs[0]; r.Model != "gpt-4o" || len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[1].Content.Text != "hello you" {
		t.Errorf("chat request 0 = %+v", r)
	}
}

// TestStartFiles: fixture files load in both of aimock's shapes.
func TestStartFiles(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "list.json")
	object := filepath.Join(dir, "object.json")
	if err := os.WriteFile(list, []byte(`[{"match":{"userMessage":"a"},"response":{"content":"from the list"}}]`), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(object, []byte(`{"fixtures":[{"match":{"userMessage":"b"},"response":{"content":"from the object"}}]}`), 0o666); err != nil {
		t.Fatal(err)
	}
	s := aimock.StartFiles(t, list, object)
	for user, want := range map[string]string{"a": "from the list", "b": "from the object"} {
		if status, body := post(t, s, user); status != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: got %d %s, want %q", user, status, body, want)
		}
	}
}
