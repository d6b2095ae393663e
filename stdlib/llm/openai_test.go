package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// openAIServer is a fake chat completions API on loopback.
type openAIServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any // the request bodies received
	auth   []string         // their Authorization headers
}

// newOpenAIServer starts a server that records each request and answers it
// with reply.
func newOpenAIServer(t *testing.T, reply func(w http.ResponseWriter, r *http.Request)) *openAIServer {
	t.Helper()
	s := &openAIServer{}
	s.Server = newRecordingServer(t, "/v1/chat/completions", &s.mu, func(body map[string]any, r *http.Request) {
		s.bodies = append(s.bodies, body)
		s.auth = append(s.auth, r.Header.Get("Authorization"))
	}, reply)
	return s
}

func (s *openAIServer) provider() *OpenAI {
	return NewOpenAI(OpenAIOptions{APIKey: "sk-test", BaseURL: s.URL + "/v1", HTTPClient: s.Client()})
}

// hi sends the provider of s a request of the user message "hi".
func (s *openAIServer) hi(ctx context.Context, on func(Chunk) error) (*Response, error) {
	return s.provider().Stream(ctx, &Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, on)
}

// sse writes the chunks as server-sent events, flushing after each.
func sse(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		w.(http.Flusher).Flush()
	}
}

// delta is a chunk of the first choice with the given delta.
func delta(d string) string {
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + d + `,"finish_reason":null}]}`
}

// finish is the chunk that ends the first choice.
func finish(reason string) string {
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
}

const usageChunk = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`

// oaCollect is an on callback that records the chunks.
type oaCollect struct{ chunks []Chunk }

func (c *oaCollect) on(ch Chunk) error {
	if ch.ToolCall != nil {
		d := *ch.ToolCall
		ch.ToolCall = &d
	}
	c.chunks = append(c.chunks, ch)
	return nil
}

func TestOpenAIText(t *testing.T) {
	s := newOpenAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w,
			delta(`{"role":"assistant","content":""}`),
			delta(`{"content":"Hel"}`),
			delta(`{"content":"lo, "}`),
			delta(`{"content":"world"}`),
			finish("stop"),
			usageChunk,
			"[DONE]")
	})
	var c oaCollect
	resp, err := s.provider().Stream(context.Background(), &Request{
		Model:    "gpt-test",
		Messages: []Message{{Role: RoleUser, Content: "hi"}},
	}, c.on)
	if err != nil {
		t.Fatal(err)
	}
	checkHelloWorld(t, c.chunks, resp)
	body := s.bodies[0]
	if body["model"] != "gpt-test" || body["stream"] != true {
		t.Errorf("body %v", body)
	}
	if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options %v", body["stream_options"])
	}
	for _, k := range []string{"tools", "response_format", "temperature", "max_completion_tokens"} {
		if _, ok := body[k]; ok {
			t.Errorf("unexpected %s: %v", k, body[k])
		}
	}
	if s.auth[0] != "Bearer sk-test" {
		t.Errorf("authorization %q", s.auth[0])
	}
}

func TestOpenAIReasoning(t *testing.T) {
	s := newOpenAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w,
			delta(`{"role":"assistant","content":null,"reasoning_content":"The user "}`),
			delta(`{"content":null,"reasoning_content":"greets me."}`),
			delta(`{"reasoning":" Ollama style."}`),
			delta(`{"content":"Hi!","reasoning_content":null}`),
			finish("stop"),
			"[DONE]")
	})
	var c oaCollect
	resp, err := s.provider().Stream(context.Background(), &Request{Model: "r1", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, c.on)
	if err != nil {
		t.Fatal(err)
	}
	want := []Chunk{{Reasoning: "The user "}, {Reasoning: "greets me."}, {Reasoning: " Ollama style."}, {Text: "Hi!"}}
	if !reflect.DeepEqual(c.chunks, want) {
		t.Errorf("chunks %+v, want %+v", c.chunks, want)
	}
	if resp.Reasoning != "The user greets me. Ollama style." || resp.Text != "Hi!" {
		t.Errorf("response %+v", resp)
	}
	if resp.Usage != (Usage{}) {
		t.Errorf("usage %+v", resp.Usage)
	}
}

func TestOpenAIToolCalls(t *testing.T) {
	s := newOpenAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w,
			delta(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"lookup","arguments":""}}]}`),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"id\":"}}]}`),
			delta(`{"tool_calls":[{"index":0,"function":{"arguments":"\"A-1\"}"}}]}`),
			delta(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"add","arguments":"{\"a\":1}"}}]}`),
			finish("tool_calls"),
			usageChunk,
			"[DONE]")
	})
	var c oaCollect
	temp := 0.25
	req := &Request{
		Model: "gpt-test",
		Messages: []Message{
			{Role: RoleSystem, Content: "Be brief.", Name: "dev"},
			{Role: RoleUser, Content: "What is this?", Images: []Image{{URL: "https://example.com/a.png"}, {Data: "AAAA", MimeType: "image/jpeg"}}},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_0", Name: "lookup", Arguments: `{"id":"A-0"}`}}},
			{Role: RoleTool, Content: `{"status":"shipped"}`, ToolCallID: "call_0"},
			{Role: RoleAssistant, Content: "It shipped."},
			{Role: RoleUser, Content: "And A-1?"},
		},
		Tools: []Tool{
			{Name: "lookup", Description: "Look up an order.", Parameters: map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}}},
			{Name: "add", Parameters: json.RawMessage(`{"type":"object"}`)},
		},
		Temperature: &temp,
		MaxTokens:   100,
		Schema:      map[string]any{"type": "object"},
	}
	resp, err := s.provider().Stream(context.Background(), req, c.on)
	if err != nil {
		t.Fatal(err)
	}
	want := []Chunk{
		{ToolCall: &ToolCallDelta{Index: 0, ID: "call_a", Name: "lookup"}},
		{ToolCall: &ToolCallDelta{Index: 0, Arguments: `{"id":`}},
		{ToolCall: &ToolCallDelta{Index: 0, Arguments: `"A-1"}`}},
		{ToolCall: &ToolCallDelta{Index: 1, ID: "call_b", Name: "add", Arguments: `{"a":1}`}},
	}
	if !reflect.DeepEqual(c.chunks, want) {
		t.Errorf("chunks %s, want %s", jsonText(c.chunks), jsonText(want))
	}
	wantCalls := []ToolCall{{ID: "call_a", Name: "lookup", Arguments: `{"id":"A-1"}`}, {ID: "call_b", Name: "add", Arguments: `{"a":1}`}}
	if !reflect.DeepEqual(resp.ToolCalls, wantCalls) || resp.Text != "" {
		t.Errorf("response %+v", resp)
	}
	if resp.Usage != (Usage{InputTokens: 12, OutputTokens: 5}) {
		t.Errorf("usage %+v", resp.Usage)
	}

	body := s.bodies[0]
	wantMsgs := `[
		{"role":"system","content":"Be brief.","name":"dev"},
		{"role":"user","content":[
			{"type":"text","text":"What is this?"},
			{"type":"image_url","image_url":{"url":"https://example.com/a.png"}},
			{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,AAAA"}}]},
		{"role":"assistant","tool_calls":[{"id":"call_0","type":"function","function":{"name":"lookup","arguments":"{\"id\":\"A-0\"}"}}]},
		{"role":"tool","content":"{\"status\":\"shipped\"}","tool_call_id":"call_0"},
		{"role":"assistant","content":"It shipped."},
		{"role":"user","content":"And A-1?"}]`
	sameJSON(t, "messages", body["messages"], wantMsgs)
	sameJSON(t, "tools", body["tools"], `[
		{"type":"function","function":{"name":"lookup","description":"Look up an order.","parameters":{"type":"object","properties":{"id":{"type":"string"}}}}},
		{"type":"function","function":{"name":"add","parameters":{"type":"object"}}}]`)
	sameJSON(t, "response_format", body["response_format"], `{"type":"json_schema","json_schema":{"name":"output","schema":{"type":"object"}}}`)
	if body["temperature"] != 0.25 || body["max_completion_tokens"] != 100.0 {
		t.Errorf("temperature %v, max_completion_tokens %v", body["temperature"], body["max_completion_tokens"])
	}
}

func jsonText(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// sameJSON reports whether got is the JSON value want.
func sameJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, jsonText(got), jsonText(w))
	}
}

func TestOpenAIStatusErrors(t *testing.T) {
	for _, c := range []struct {
		status    int
		body      string
		msg       string
		retryable bool
	}{
		{429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, "Rate limit reached", true},
		{503, `{"error":{"message":"The engine is overloaded"}}`, "The engine is overloaded", true},
		{400, `{"error":{"message":"Invalid 'messages'","type":"invalid_request_error","param":"messages"}}`, "Invalid 'messages'", false},
		{401, `not json`, "", false},
	} {
		s := newOpenAIServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(c.status)
			io.WriteString(w, c.body)
		})
		called := false
		_, err := s.provider().Stream(context.Background(), &Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}},
			func(Chunk) error { called = true; return nil })
		var se *StatusError
		if !errors.As(err, &se) {
			t.Errorf("%d: got %T %v, want a *StatusError", c.status, err, err)
			continue
		}
		if se.StatusCode != c.status || (c.msg != "" && se.Message != c.msg) {
			t.Errorf("%d: got %+v", c.status, se)
		}
		if IsRetryable(err) != c.retryable {
			t.Errorf("%d: retryable %v", c.status, IsRetryable(err))
		}
		if called {
			t.Errorf("%d: on was called", c.status)
		}
		if len(s.bodies) != 1 {
			t.Errorf("%d: %d requests; the SDK must not retry", c.status, len(s.bodies))
		}
	}
}

func TestOpenAIDisconnect(t *testing.T) {
	s := newOpenAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, delta(`{"content":"Hel"}`), delta(`{"content":"lo"}`))
		panic(http.ErrAbortHandler) // drop the connection mid-stream
	})
	var c oaCollect
	_, err := s.provider().Stream(context.Background(), &Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, c.on)
	if err == nil {
		t.Fatal("no error")
	}
	// Retryable: the model node tries again only while nothing of the
	// answer has reached the client.
	var cerr *ConnectionError
	if !errors.As(err, &cerr) || !cerr.Broken || !IsRetryable(err) {
		t.Errorf("got %T %v, want a retryable broken *ConnectionError", err, err)
	}
	if len(c.chunks) != 2 {
		t.Errorf("chunks %+v", c.chunks)
	}
}

func TestOpenAIEndsEarly(t *testing.T) {
	// A stream that ends cleanly but without a finish reason is cut short.
	s := newOpenAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, delta(`{"content":"Hel"}`))
	})
	_, err := s.provider().Stream(context.Background(), &Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, (&oaCollect{}).on)
	if err == nil || !strings.Contains(err.Error(), "ended before") {
		t.Fatalf("got %v", err)
	}
}

func TestOpenAIStreamError(t *testing.T) {
	s := newOpenAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, delta(`{"content":"Hel"}`), `{"error":{"message":"upstream failed"}}`)
	})
	_, err := s.provider().Stream(context.Background(), &Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, (&oaCollect{}).on)
	if err == nil || !strings.Contains(err.Error(), "upstream failed") {
		t.Fatalf("got %v", err)
	}
}

func TestOpenAICancel(t *testing.T) {
	s := newOpenAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, delta(`{"content":"Hel"}`))
		<-r.Context().Done() // hold the stream open until the client goes
	})
	testCancel(t, s.hi)
}

func TestOpenAICallbackError(t *testing.T) {
	s := newOpenAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, delta(`{"content":"a"}`), delta(`{"content":"b"}`), finish("stop"), "[DONE]")
	})
	testCallbackError(t, s.hi)
}

func TestOpenAIBadRequest(t *testing.T) {
	p := NewOpenAI(OpenAIOptions{BaseURL: "http://127.0.0.1:1/v1"})
	_, err := p.Stream(context.Background(), &Request{Model: "m", Messages: []Message{{Role: "robot"}}}, (&oaCollect{}).on)
	if err == nil || !strings.Contains(err.Error(), `unknown role "robot"`) {
		t.Errorf("role: %v", err)
	}
	_, err = p.Stream(context.Background(), &Request{Model: "m", Tools: []Tool{{Name: "t", Parameters: []any{1}}}}, (&oaCollect{}).on)
	if err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("tool: %v", err)
	}
}

func TestOpenAIUnreachable(t *testing.T) {
	// A server that drops the connection before it answers, and a port
	// nothing listens on: both are worth another try.
	dropped := newOpenAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler)
	})
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for name, p := range map[string]*OpenAI{
		"dropped": dropped.provider(),
		"refused": NewOpenAI(OpenAIOptions{APIKey: "k", BaseURL: closed.URL}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := p.Stream(context.Background(), &Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, func(Chunk) error { return nil })
			var cerr *ConnectionError
			if !errors.As(err, &cerr) || !IsRetryable(err) {
				t.Fatalf("error %v (%T), want a retryable *ConnectionError", err, err)
			}
			if !strings.HasPrefix(err.Error(), "openai: the model API cannot be reached: ") {
				t.Errorf("message %q", err)
			}
		})
	}
}
