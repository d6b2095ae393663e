package llm

import (
	"context"
	"net/http"
	"testing"
)

// TestOpenAINoKey: without a key (a local server such as Ollama or
// llama.cpp) the provider sends no Authorization header and works.
func TestOpenAINoKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	s := newOpenAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, delta(`{"content":"hi"}`), `{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	})
	p := NewOpenAI(OpenAIOptions{BaseURL: s.URL + "/v1"})
	resp, err := p.Stream(context.Background(), &Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, func(Chunk) error { return nil })
	if err != nil || resp.Text != "hi" {
		t.Fatalf("answer %+v, %v", resp, err)
	}
	if len(s.auth) != 1 || s.auth[0] != "" {
		t.Errorf("Authorization headers %q, want none", s.auth)
	}
}
