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
	"slices"
	"strings"
	"sync"
	"testing"
)

// anthropicServer is a fake Messages API on loopback.
type anthropicServer struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  []map[string]any // the request bodies received
	headers []http.Header    // their headers
}

// newAnthropicServer starts a server that records each request and
// answers it with reply.
func newAnthropicServer(t *testing.T, reply func(w http.ResponseWriter, r *http.Request)) *anthropicServer {
	t.Helper()
	s := &anthropicServer{}
	s.Server = newRecordingServer(t, "/v1/messages", &s.mu, func(body map[string]any, r *http.Request) {
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
	}, reply)
	return s
}

func (s *anthropicServer) provider() *Anthropic {
	return NewAnthropic(AnthropicOptions{APIKey: "sk-ant-test", BaseURL: s.URL, HTTPClient: s.Client()})
}

// hi sends the provider of s the smallest request, hi().
func (s *anthropicServer) hi(ctx context.Context, on func(Chunk) error) (*Response, error) {
	return s.provider().Stream(ctx, hi(), on)
}

// requests is how many requests the server has had.
func (s *anthropicServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// events writes the events, JSON objects with a "type", as server-sent
// events named by their type, flushing after each.
func events(w http.ResponseWriter, evs ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range evs {
		var head struct{ Type string }
		if err := json.Unmarshal([]byte(e), &head); err != nil {
			panic(fmt.Sprintf("bad event %s: %v", e, err))
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", head.Type, e)
		w.(http.Flusher).Flush()
	}
}

// The events of the Messages API's stream.
func messageStart(input, output int) string {
	return fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":%d}}}`, input, output)
}

func blockStart(i int, block string) string {
	return fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, block)
}

func blockDelta(i int, delta string) string {
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, delta)
}

func blockStop(i int) string { return fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i) }

func textDelta(i int, s string) string {
	return blockDelta(i, `{"type":"text_delta","text":`+jsonText(s)+`}`)
}

func messageDelta(stop, usage string) string {
	return `{"type":"message_delta","delta":{"stop_reason":"` + stop + `","stop_sequence":null},"usage":` + usage + `}`
}

const (
	textBlock   = `{"type":"text","text":""}`
	messageStop = `{"type":"message_stop"}`
	ping        = `{"type":"ping"}`
)

// hi is the smallest request.
func hi() *Request {
	return &Request{Model: "claude-test", Messages: []Message{{Role: RoleUser, Content: "hi"}}}
}

func TestAnthropicText(t *testing.T) {
	s := newAnthropicServer(t, func(w http.ResponseWriter, r *http.Request) {
		events(w,
			messageStart(12, 1),
			blockStart(0, textBlock),
			ping,
			textDelta(0, "Hel"),
			textDelta(0, "lo, "),
			textDelta(0, "world"),
			blockStop(0),
			messageDelta("end_turn", `{"output_tokens":5}`),
			messageStop)
	})
	var c oaCollect
	resp, err := s.provider().Stream(context.Background(), hi(), c.on)
	if err != nil {
		t.Fatal(err)
	}
	checkHelloWorld(t, c.chunks, resp)
	sameJSON(t, "body", s.bodies[0], `{
		"model":"claude-test",
		"max_tokens":4096,
		"stream":true,
		"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`)
	h := s.headers[0]
	if h.Get("X-Api-Key") != "sk-ant-test" || h.Get("Anthropic-Version") == "" || h.Get("Authorization") != "" {
		t.Errorf("headers %v", h)
	}
}

func TestAnthropicThinking(t *testing.T) {
	s := newAnthropicServer(t, func(w http.ResponseWriter, r *http.Request) {
		events(w,
			messageStart(20, 1),
			blockStart(0, `{"type":"thinking","thinking":"","signature":""}`),
			blockDelta(0, `{"type":"thinking_delta","thinking":"The user "}`),
			blockDelta(0, `{"type":"thinking_delta","thinking":"greets me."}`),
			blockDelta(0, `{"type":"signature_delta","signature":"c2ln"}`),
			blockStop(0),
			blockStart(1, `{"type":"redacted_thinking","data":"c2VjcmV0"}`),
			blockStop(1),
			blockStart(2, textBlock),
			textDelta(2, "Hi!"),
			blockStop(2),
			messageDelta("end_turn", `{"output_tokens":9}`),
			messageStop)
	})
	var c oaCollect
	resp, err := s.provider().Stream(context.Background(), hi(), c.on)
	if err != nil {
		t.Fatal(err)
	}
	want := []Chunk{{Reasoning: "The user "}, {Reasoning: "greets me."}, {Text: "Hi!"}}
	if !reflect.DeepEqual(c.chunks, want) {
		t.Errorf("chunks %+v, want %+v", c.chunks, want)
	}
	if resp.Reasoning != "The user greets me." || resp.Text != "Hi!" {
		t.Errorf("response %+v", resp)
	}
	if _, ok := s.bodies[0]["thinking"]; ok {
		t.Errorf("thinking was asked for: %v", s.bodies[0]["thinking"])
	}
}

func TestAnthropicToolUse(t *testing.T) {
	s := newAnthropicServer(t, func(w http.ResponseWriter, r *http.Request) {
		events(w,
			messageStart(30, 1),
			blockStart(0, textBlock),
			textDelta(0, "Let me look."),
			blockStop(0),
			blockStart(1, `{"type":"tool_use","id":"toolu_a","name":"lookup","input":{}}`),
			blockDelta(1, `{"type":"input_json_delta","partial_json":""}`),
			blockDelta(1, `{"type":"input_json_delta","partial_json":"{\"id\": \"A"}`),
			blockDelta(1, `{"type":"input_json_delta","partial_json":"-1\", \"deep\": {\"x\""}`),
			blockDelta(1, `{"type":"input_json_delta","partial_json":": [1, 2]}}"}`),
			blockStop(1),
			blockStart(2, `{"type":"tool_use","id":"toolu_b","name":"now","input":{}}`),
			blockStop(2),
			messageDelta("tool_use", `{"input_tokens":30,"cache_read_input_tokens":100,"cache_creation_input_tokens":7,"output_tokens":42}`),
			messageStop)
	})
	var c oaCollect
	resp, err := s.provider().Stream(context.Background(), hi(), c.on)
	if err != nil {
		t.Fatal(err)
	}
	want := []Chunk{
		{Text: "Let me look."},
		{ToolCall: &ToolCallDelta{Index: 0, ID: "toolu_a", Name: "lookup"}},
		{ToolCall: &ToolCallDelta{Index: 0, Arguments: `{"id": "A`}},
		{ToolCall: &ToolCallDelta{Index: 0, Arguments: `-1", "deep": {"x"`}},
		{ToolCall: &ToolCallDelta{Index: 0, Arguments: `: [1, 2]}}`}},
		{ToolCall: &ToolCallDelta{Index: 1, ID: "toolu_b", Name: "now"}},
		{ToolCall: &ToolCallDelta{Index: 1, Arguments: `{}`}},
	}
	if !reflect.DeepEqual(c.chunks, want) {
		t.Errorf("chunks %s, want %s", jsonText(c.chunks), jsonText(want))
	}
	wantCalls := []ToolCall{
		{ID: "toolu_a", Name: "lookup", Arguments: `{"id": "A-1", "deep": {"x": [1, 2]}}`},
		{ID: "toolu_b", Name: "now", Arguments: `{}`},
	}
	if !reflect.DeepEqual(resp.ToolCalls, wantCalls) || resp.Text != "Let me look." {
		t.Errorf("response %+v", resp)
	}
	if resp.Usage != (Usage{InputTokens: 137, OutputTokens: 42}) {
		t.Errorf("usage %+v", resp.Usage)
	}
}

// TestAnthropicToolInputAtStart: a server that sends a tool's whole input
// in content_block_start, with no deltas.
func TestAnthropicToolInputAtStart(t *testing.T) {
	s := newAnthropicServer(t, func(w http.ResponseWriter, r *http.Request) {
		events(w,
			messageStart(3, 1),
			blockStart(0, `{"type":"tool_use","id":"toolu_c","name":"add","input":{"a":1,"b":2}}`),
			blockStop(0),
			messageDelta("tool_use", `{"output_tokens":4}`),
			messageStop)
	})
	var c oaCollect
	resp, err := s.provider().Stream(context.Background(), hi(), c.on)
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{{ID: "toolu_c", Name: "add", Arguments: `{"a":1,"b":2}`}}
	if !reflect.DeepEqual(resp.ToolCalls, want) {
		t.Errorf("tool calls %+v", resp.ToolCalls)
	}
	if n := len(c.chunks); n != 2 || c.chunks[1].ToolCall.Arguments != `{"a":1,"b":2}` {
		t.Errorf("chunks %s", jsonText(c.chunks))
	}
}

func TestAnthropicRequest(t *testing.T) {
	reply := func(w http.ResponseWriter, r *http.Request) {
		events(w, messageStart(1, 1), blockStart(0, textBlock), textDelta(0, "{}"), blockStop(0),
			messageDelta("end_turn", `{"output_tokens":1}`), messageStop)
	}
	temp := 0.25
	lookup := map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []any{"id"}}
	for _, c := range []struct {
		name string
		req  Request
		want string // the request body
	}{{
		name: "conversation",
		req: Request{
			Model: "claude-test",
			Messages: []Message{
				{Role: RoleSystem, Content: "Be brief.", Name: "dev"},
				{Role: RoleUser, Content: "What is this?", Name: "ann", Images: []Image{
					{URL: "https://example.com/a.png"},
					{URL: "data:image/webp;base64,UklG"},
					{Data: "AAAA", MimeType: "image/jpeg"},
					{Data: "BBBB"},
				}},
				{Role: RoleAssistant, Content: "Let me look.", ToolCalls: []ToolCall{
					{ID: "toolu_0", Name: "lookup", Arguments: `{"id":"A-0"}`},
					{ID: "toolu_1", Name: "now"},
				}},
				{Role: RoleTool, Content: `{"status":"shipped"}`, ToolCallID: "toolu_0"},
				{Role: RoleTool, ToolCallID: "toolu_1"},
				{Role: RoleSystem, Content: "Answer in French."},
				{Role: RoleUser, Content: "And A-1?"},
				{Role: RoleAssistant},
				{Role: RoleAssistant, Content: "Il est parti."},
				{Role: RoleUser, Content: "Merci"},
			},
		},
		want: `{
			"model":"claude-test","max_tokens":4096,"stream":true,
			"system":[{"type":"text","text":"Be brief.\n\nAnswer in French."}],
			"messages":[
				{"role":"user","content":[
					{"type":"text","text":"What is this?"},
					{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}},
					{"type":"image","source":{"type":"base64","media_type":"image/webp","data":"UklG"}},
					{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"AAAA"}},
					{"type":"image","source":{"type":"base64","media_type":"image/png","data":"BBBB"}}]},
				{"role":"assistant","content":[
					{"type":"text","text":"Let me look."},
					{"type":"tool_use","id":"toolu_0","name":"lookup","input":{"id":"A-0"}},
					{"type":"tool_use","id":"toolu_1","name":"now","input":{}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"toolu_0","content":[{"type":"text","text":"{\"status\":\"shipped\"}"}]},
					{"type":"tool_result","tool_use_id":"toolu_1"},
					{"type":"text","text":"And A-1?"}]},
				{"role":"assistant","content":[{"type":"text","text":"Il est parti."}]},
				{"role":"user","content":[{"type":"text","text":"Merci"}]}]}`,
	}, {
		name: "tools and options",
		req: Request{
			Model:    "claude-test",
			Messages: []Message{{Role: RoleUser, Content: "hi"}},
			Tools: []Tool{
				{Name: "lookup", Description: "Look up an order.", Parameters: lookup},
				{Name: "add", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"}}}`)},
				{Name: "now"},
			},
			Temperature: &temp,
			MaxTokens:   100,
		},
		want: `{
			"model":"claude-test","max_tokens":100,"stream":true,"temperature":0.25,
			"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],
			"tools":[
				{"name":"lookup","description":"Look up an order.","input_schema":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}},
				{"name":"add","input_schema":{"type":"object","properties":{"a":{"type":"number"}}}},
				{"name":"now","input_schema":{"type":"object"}}]}`,
	}, {
		name: "output schema",
		req: Request{
			Model:    "claude-test",
			Messages: []Message{{Role: RoleUser, Content: "hi"}},
			Schema: map[string]any{
				"$schema":    "https://json-schema.org/draft/2020-12/schema",
				"type":       "object",
				"properties": map[string]any{"name": map[string]any{"type": "string", "minLength": 2}},
				"required":   []any{"name"},
			},
		},
		want: `{
			"model":"claude-test","max_tokens":4096,"stream":true,
			"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],
			"output_config":{"format":{"type":"json_schema","schema":{
				"type":"object",
				"properties":{"name":{"type":"string","description":"{minLength: 2}"}},
				"required":["name"],
				"additionalProperties":false}}}}`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			s := newAnthropicServer(t, reply)
			if _, err := s.provider().Stream(context.Background(), &c.req, (&oaCollect{}).on); err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "body", s.bodies[0], c.want)
		})
	}
}

func TestAnthropicStatusErrors(t *testing.T) {
	for _, c := range []struct {
		status    int
		body      string
		msg       string
		retryable bool
	}{
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`, "max_tokens: Field required", false},
		{401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, "invalid x-api-key", false},
		{429, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your rate limit"}}`, "Number of request tokens has exceeded your rate limit", true},
		{500, `upstream connect error`, "upstream connect error", true},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`, "Overloaded", true},
	} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			s := newAnthropicServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After-Ms", "0")
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			})
			called := false
			_, err := s.provider().Stream(context.Background(), hi(), func(Chunk) error { called = true; return nil })
			var se *StatusError
			if !errors.As(err, &se) {
				t.Fatalf("got %T %v, want a *StatusError", err, err)
			}
			if se.StatusCode != c.status || se.Message != c.msg {
				t.Errorf("got %+v", se)
			}
			if IsRetryable(err) != c.retryable {
				t.Errorf("retryable %v", IsRetryable(err))
			}
			if called {
				t.Error("on was called")
			}
			if n := s.requests(); n != 1 {
				t.Errorf("%d requests; the SDK must not retry", n)
			}
		})
	}
}

func TestAnthropicMaxRetries(t *testing.T) {
	s := newAnthropicServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After-Ms", "0")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	})
	p := NewAnthropic(AnthropicOptions{APIKey: "k", BaseURL: s.URL, HTTPClient: s.Client(), MaxRetries: 2})
	_, err := p.Stream(context.Background(), hi(), (&oaCollect{}).on)
	if !IsRetryable(err) {
		t.Errorf("got %v", err)
	}
	if n := s.requests(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// TestAnthropicBrokenStreams: a stream that fails after it began is an
// error, never a shorter answer.
func TestAnthropicBrokenStreams(t *testing.T) {
	begin := []string{messageStart(5, 1), blockStart(0, textBlock), textDelta(0, "Hel"), textDelta(0, "lo")}
	for _, c := range []struct {
		name      string
		rest      []string // the events after begin
		abort     bool     // then drop the connection
		status    int      // of the *StatusError; 0 for another error
		msg       string
		retryable bool
	}{{
		name:      "overloaded",
		rest:      []string{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		status:    529,
		msg:       "Overloaded",
		retryable: true,
	}, {
		name:      "api error",
		rest:      []string{`{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`},
		status:    500,
		msg:       "Internal server error",
		retryable: true,
	}, {
		name:   "invalid request",
		rest:   []string{`{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`},
		status: 400,
		msg:    "bad",
	}, {
		name: "no message_stop",
		rest: []string{blockStop(0), messageDelta("end_turn", `{"output_tokens":2}`)},
		msg:  "ended before the answer was complete",
	}, {
		name:      "disconnect",
		abort:     true,
		msg:       "the connection closed in the middle of the answer",
		retryable: true,
	}} {
		t.Run(c.name, func(t *testing.T) {
			s := newAnthropicServer(t, func(w http.ResponseWriter, r *http.Request) {
				events(w, append(slices.Clone(begin), c.rest...)...)
				if c.abort {
					panic(http.ErrAbortHandler)
				}
			})
			var col oaCollect
			resp, err := s.provider().Stream(context.Background(), hi(), col.on)
			if err == nil {
				t.Fatalf("no error; response %+v", resp)
			}
			var se *StatusError
			if isStatus := errors.As(err, &se); isStatus != (c.status != 0) || (isStatus && se.StatusCode != c.status) {
				t.Errorf("got %T %v, want status %d", err, err, c.status)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got %v, want %q", err, c.msg)
			}
			if IsRetryable(err) != c.retryable {
				t.Errorf("retryable %v: %v", IsRetryable(err), err)
			}
			if want := []Chunk{{Text: "Hel"}, {Text: "lo"}}; !reflect.DeepEqual(col.chunks, want) {
				t.Errorf("chunks %+v", col.chunks)
			}
		})
	}
}

func TestAnthropicCancel(t *testing.T) {
	s := newAnthropicServer(t, func(w http.ResponseWriter, r *http.Request) {
		events(w, messageStart(1, 1), blockStart(0, textBlock), textDelta(0, "Hel"))
		<-r.Context().Done() // hold the stream open until the client goes
	})
	testCancel(t, s.hi)
}

func TestAnthropicCallbackError(t *testing.T) {
	s := newAnthropicServer(t, func(w http.ResponseWriter, r *http.Request) {
		events(w, messageStart(1, 1), blockStart(0, textBlock), textDelta(0, "a"), textDelta(0, "b"), blockStop(0),
			messageDelta("end_turn", `{"output_tokens":2}`), messageStop)
	})
	testCallbackError(t, s.hi)
}

func TestAnthropicBadRequest(t *testing.T) {
	p := NewAnthropic(AnthropicOptions{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{Messages: []Message{{Role: "robot"}}}, `message 0: unknown role "robot"`},
		{Request{Tools: []Tool{{Name: "t", Parameters: []any{1}}}}, `tool "t": parameters: not a JSON object`},
		{Request{Schema: "text"}, "output schema: not a JSON object"},
		{Request{Messages: []Message{{Role: RoleUser, Content: "x"}, {Role: RoleTool, Content: "y"}}}, "message 1: a tool message needs the toolCallId"},
		{Request{Messages: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: "[1]"}}}}}, `tool call "f": the arguments are not a JSON object`},
	} {
		_, err := p.Stream(context.Background(), &c.req, (&oaCollect{}).on)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// TestAnthropicEnvironment: without options, the key and the server come
// from ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL.
func TestAnthropicEnvironment(t *testing.T) {
	s := newAnthropicServer(t, func(w http.ResponseWriter, r *http.Request) {
		events(w, messageStart(1, 1), messageDelta("end_turn", `{"output_tokens":0}`), messageStop)
	})
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env")
	t.Setenv("ANTHROPIC_BASE_URL", s.URL)
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "not-sent")
	if _, err := NewAnthropic(AnthropicOptions{}).Stream(context.Background(), hi(), (&oaCollect{}).on); err != nil {
		t.Fatal(err)
	}
	if h := s.headers[0]; h.Get("X-Api-Key") != "sk-ant-env" || h.Get("Authorization") != "" {
		t.Errorf("headers %v", h)
	}

	// Neither option nor variable: no key is sent.
	t.Setenv("ANTHROPIC_API_KEY", "")
	if _, err := NewAnthropic(AnthropicOptions{}).Stream(context.Background(), hi(), (&oaCollect{}).on); err != nil {
		t.Fatal(err)
	}
	if h := s.headers[1]; h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
		t.Errorf("headers %v", h)
	}
}
