package aimock_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aguic/aguic/internal/aimock"
)

// TestMessages: the server answers the Anthropic Messages API at
// AnthropicBaseURL + "/v1/messages", and MessagesRequests decodes what the
// journal keeps of those requests, leaving the chat completions requests
// to ChatRequests.
func TestMessages(t *testing.T) {
	s := aimock.Start(t, aimock.Fixture{Match: aimock.Match{UserMessage: "hello"}, Response: aimock.Response{Content: "Hi from Claude."}})
	if s.AnthropicBaseURL() != s.URL {
		t.Fatalf("AnthropicBaseURL %q, want %q", s.AnthropicBaseURL(), s.URL)
	}
	body := `{"model":"claude-sonnet-4-5","max_tokens":64,"system":[{"type":"text","text":"be brief"}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}],` +
		`"tools":[{"name":"add","input_schema":{"type":"object"}}]}`
	req, err := http.NewRequest(http.MethodPost, s.AnthropicBaseURL()+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "sk-ant-test")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(data), `"text":"Hi from Claude."`) {
		t.Fatalf("got %d %s", resp.StatusCode, data)
	}
	post(t, s, "hello") // a chat completions request beside it

	reqs := s.MessagesRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d Messages API requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "claude-sonnet-4-5" || r.MaxTokens == nil || *r.MaxTokens != 64 || len(r.Messages) != 2 ||
		r.Messages[0].Role != "system" || r.Messages[0].Content.Text != "be brief" ||
		r.Messages[1].Role != "user" || r.Messages[1].Content.Text != "hello" ||
		len(r.Tools) != 1 || r.Tools[0].Function.Name != "add" || r.Tools[0].Function.Parameters["type"] != "object" {
		t.Errorf("Messages API request %+v", r)
	}
	if chats := s.ChatRequests(); len(chats) != 1 || chats[0].Model != "gpt-4o" {
		t.Errorf("chat requests %+v, want the one chat completions request", chats)
	}
}
