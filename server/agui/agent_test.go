package agui

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aguic/aguic/vm"
)

// messages decodes a JSON list of AG-UI messages.
func messages(t *testing.T, s string) []Message {
	t.Helper()
	var msgs []Message
	if err := json.Unmarshal([]byte(s), &msgs); err != nil {
		t.Fatalf("messages %s: %v", s, err)
	}
	return msgs
}

// jsonTree decodes JSON into the tree the context holds.
func jsonTree(t *testing.T, s string) any {
	t.Helper()
	v, err := decodeAny([]byte(s))
	if err != nil {
		t.Fatalf("json %s: %v", s, err)
	}
	return vm.Normalize(v)
}

func TestBuildAgent(t *testing.T) {
	tests := []struct {
		name         string
		messages     string
		state        string // JSON; "" for none
		props        string // forwardedProps, JSON; "" for none
		context      []Context
		tools        []Tool
		conversation bool
		want         string
	}{
		{
			name: "stateless: history to chat, latest user text kept out",
			messages: `[
				{"id":"s","role":"system","content":"Be brief."},
				{"id":"d","role":"developer","content":"Use metric units.","name":"policy"},
				{"id":"u1","role":"user","content":"Hi"},
				{"id":"a1","role":"assistant","content":"Hello!"},
				{"id":"u2","role":"user","content":"Weather?"}]`,
			state:   `{"mode":"chat","n":1}`,
			props:   `{"userId":"u-7","filters":{"region":"eu"},"aguic":{"nodeEvents":true}}`,
			context: []Context{{Description: "tier", Value: "gold"}},
			tools:   []Tool{{Name: "confirm", Description: "Ask the user", Parameters: json.RawMessage(`{"type":"object"}`)}},
			want: `{
				"latestUserMessage": {"id":"u2","role":"user","content":"Weather?"},
				"messages": [
					{"id":"s","role":"system","content":"Be brief."},
					{"id":"d","role":"developer","content":"Use metric units.","name":"policy"},
					{"id":"u1","role":"user","content":"Hi"},
					{"id":"a1","role":"assistant","content":"Hello!"},
					{"id":"u2","role":"user","content":"Weather?"}],
				"chat": [
					{"role":"system","content":"Be brief."},
					{"role":"system","content":"Use metric units.","name":"policy"},
					{"role":"user","content":"Hi"},
					{"role":"assistant","content":"Hello!"}],
				"state": {"mode":"chat","n":1},
				"_hidden": {"state": {"mode":"chat","n":1}},
				"context": [{"description":"tier","value":"gold"}],
				"tools": [{"name":"confirm","description":"Ask the user","parameters":{"type":"object"}}],
				"forwardedProps": {"userId":"u-7","filters":{"region":"eu"},"aguic":{"nodeEvents":true}}
			}`,
		},
		{
			name: "stateless: latest tool result with its JSON value; tool calls in chat",
			messages: `[
				{"id":"u1","role":"user","content":"Weather in Sydney?"},
				{"id":"a1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Sydney\"}"}}]},
				{"id":"t1","role":"tool","toolCallId":"c1","content":" {\"temp\": 21.5} "}]`,
			want: `{
				"latestToolResult": {"id":"t1","role":"tool","toolCallId":"c1","content":" {\"temp\": 21.5} ","value":{"temp":21.5}},
				"messages": [
					{"id":"u1","role":"user","content":"Weather in Sydney?"},
					{"id":"a1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Sydney\"}"}}]},
					{"id":"t1","role":"tool","toolCallId":"c1","content":" {\"temp\": 21.5} "}],
				"chat": [
					{"role":"user","content":"Weather in Sydney?"},
					{"role":"assistant","toolCalls":[{"id":"c1","name":"weather","arguments":"{\"city\":\"Sydney\"}"}]},
					{"role":"tool","content":" {\"temp\": 21.5} ","toolCallId":"c1"}]
			}`,
		},
		{
			name:     "tool result that is not JSON has no value",
			messages: `[{"id":"t1","role":"tool","toolCallId":"c1","content":"Sunny"}]`,
			want: `{
				"latestToolResult": {"id":"t1","role":"tool","toolCallId":"c1","content":"Sunny"},
				"messages": [{"id":"t1","role":"tool","toolCallId":"c1","content":"Sunny"}],
				"chat": [{"role":"tool","content":"Sunny","toolCallId":"c1"}]
			}`,
		},
		{
			name:         "empty tool result has no value",
			messages:     `[{"id":"t1","role":"tool","toolCallId":"c1","content":"  "}]`,
			conversation: true,
			want: `{
				"latestToolResult": {"id":"t1","role":"tool","toolCallId":"c1","content":"  "},
				"messages": [{"id":"t1","role":"tool","toolCallId":"c1","content":"  "}]
			}`,
		},
		{
			name:         "JSON scalars are values too",
			messages:     `[{"id":"t1","role":"tool","toolCallId":"c1","content":"true"}]`,
			conversation: true,
			want: `{
				"latestToolResult": {"id":"t1","role":"tool","toolCallId":"c1","content":"true","value":true},
				"messages": [{"id":"t1","role":"tool","toolCallId":"c1","content":"true"}]
			}`,
		},
		{
			name: "assistant messages with neither text nor tool calls are skipped; reasoning and activity ignored",
			messages: `[
				{"id":"u1","role":"user","content":"Plan it"},
				{"id":"reason:r","role":"reasoning","content":"hmm"},
				{"id":"a0","role":"assistant"},
				{"id":"a1","role":"assistant","content":""},
				{"id":"a2","role":"assistant","content":"","toolCalls":[]},
				{"id":"activity:p","role":"activity","activityType":"PLAN","content":{"steps":[]}},
				{"id":"a3","role":"assistant","content":"Done."}]`,
			want: `{
				"messages": [
					{"id":"u1","role":"user","content":"Plan it"},
					{"id":"reason:r","role":"reasoning","content":"hmm"},
					{"id":"a0","role":"assistant"},
					{"id":"a1","role":"assistant","content":""},
					{"id":"a2","role":"assistant","content":"","toolCalls":[]},
					{"id":"activity:p","role":"activity","activityType":"PLAN","content":{"steps":[]}},
					{"id":"a3","role":"assistant","content":"Done."}],
				"chat": [
					{"role":"user","content":"Plan it"},
					{"role":"assistant","content":"Done."}]
			}`,
		},
		{
			name: "empty tool call arguments read as {}",
			messages: `[
				{"id":"a1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"now","arguments":""}}]},
				{"id":"u1","role":"user","content":"ok"}]`,
			want: `{
				"latestUserMessage": {"id":"u1","role":"user","content":"ok"},
				"messages": [
					{"id":"a1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"now","arguments":""}}]},
					{"id":"u1","role":"user","content":"ok"}],
				"chat": [{"role":"assistant","toolCalls":[{"id":"c1","name":"now","arguments":"{}"}]}]
			}`,
		},
		{
			name: "conversation: only the latest message, no chat",
			messages: `[
				{"id":"u1","role":"user","content":"first"},
				{"id":"u2","role":"user","content":"second"}]`,
			state:        `{"step":2}`,
			conversation: true,
			want: `{
				"latestUserMessage": {"id":"u2","role":"user","content":"second"},
				"messages": [{"id":"u2","role":"user","content":"second"}],
				"state": {"step":2},
				"_hidden": {"state": {"step":2}}
			}`,
		},
		{
			name: "conversation: the tool results answering one assistant message together",
			messages: `[
				{"id":"u1","role":"user","content":"plan"},
				{"id":"a1","role":"assistant","toolCalls":[
					{"id":"c1","type":"function","function":{"name":"pick","arguments":"{}"}},
					{"id":"c2","type":"function","function":{"name":"pick","arguments":"{}"}}]},
				{"id":"t1","role":"tool","toolCallId":"c1","content":"1"},
				{"id":"t2","role":"tool","toolCallId":"c2","content":"2"}]`,
			conversation: true,
			want: `{
				"latestToolResult": {"id":"t2","role":"tool","toolCallId":"c2","content":"2","value":2},
				"messages": [
					{"id":"t1","role":"tool","toolCallId":"c1","content":"1"},
					{"id":"t2","role":"tool","toolCallId":"c2","content":"2"}]
			}`,
		},
		{
			name:         "conversation: no messages",
			messages:     `[]`,
			conversation: true,
			want:         `{"messages": []}`,
		},
		{
			name:     "stateless: no messages",
			messages: `[]`,
			state:    `[]`,
			want:     `{"messages": [], "chat": [], "state": [], "_hidden": {"state": []}}`,
		},
		{
			name:         "a user message of text and images is the latest user message",
			messages:     `[{"id":"u1","role":"user","content":[{"type":"text","text":"what is "},{"type":"image","source":{"type":"url","value":"https://x/cat.png"}},{"type":"text","text":"this?"},{"type":"image","source":{"type":"data","value":"aGk=","mimeType":"image/png"}}]}]`,
			conversation: true,
			want: `{
				"latestUserMessage": {"id":"u1","role":"user","content":"what is this?","images":[{"url":"https://x/cat.png"},{"data":"aGk=","mimeType":"image/png"}]},
				"messages": [{"id":"u1","role":"user","content":[{"type":"text","text":"what is "},{"type":"image","source":{"type":"url","value":"https://x/cat.png"}},{"type":"text","text":"this?"},{"type":"image","source":{"type":"data","value":"aGk=","mimeType":"image/png"}}]}]
			}`,
		},
		{
			name:     "images in the history reach the chat",
			messages: `[{"id":"u1","role":"user","content":[{"type":"image","source":{"type":"url","value":"https://x/cat.png","mimeType":"image/png"}}]},{"id":"a1","role":"assistant","content":"A cat."},{"id":"u2","role":"user","content":"and?"}]`,
			want: `{
				"latestUserMessage": {"id":"u2","role":"user","content":"and?"},
				"messages": [
					{"id":"u1","role":"user","content":[{"type":"image","source":{"type":"url","value":"https://x/cat.png","mimeType":"image/png"}}]},
					{"id":"a1","role":"assistant","content":"A cat."},
					{"id":"u2","role":"user","content":"and?"}
				],
				"chat": [{"role":"user","images":[{"url":"https://x/cat.png","mimeType":"image/png"}]},{"role":"assistant","content":"A cat."}]
			}`,
		},
		{
			name:     "latest message of another role exposes neither",
			messages: `[{"id":"a1","role":"assistant","content":"hi"}]`,
			want: `{
				"messages": [{"id":"a1","role":"assistant","content":"hi"}],
				"chat": [{"role":"assistant","content":"hi"}]
			}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Messages: messages(t, tt.messages), Context: tt.context, Tools: tt.tools}
			if tt.state != "" {
				in.State = jsonTree(t, tt.state)
			}
			if tt.props != "" {
				in.ForwardedProps = jsonTree(t, tt.props)
			}
			got, err := BuildAgent(in, tt.conversation)
			if err != nil {
				t.Fatalf("BuildAgent: %v", err)
			}
			want := jsonTree(t, tt.want)
			if !reflect.DeepEqual(any(got), want) {
				g, _ := json.MarshalIndent(got, "", "  ")
				w, _ := json.MarshalIndent(want, "", "  ")
				t.Errorf("got\n%s\nwant\n%s", g, w)
			}
			if !reflect.DeepEqual(vm.Normalize(got), any(got)) {
				t.Errorf("the agent object is not a normalized JSON tree")
			}
		})
	}
}

// TestBuildAgentCopies checks that the agent shares nothing with the input
// and that _hidden.state is a copy of state, not the same tree.
func TestBuildAgentCopies(t *testing.T) {
	state := map[string]any{"items": []any{"a"}}
	agent, err := BuildAgent(Input{State: state}, true)
	if err != nil {
		t.Fatal(err)
	}
	agent["state"].(map[string]any)["items"].([]any)[0] = "changed"
	if got := agent["_hidden"].(map[string]any)["state"].(map[string]any)["items"].([]any)[0]; got != "a" {
		t.Errorf("_hidden.state changed with state: %v", got)
	}
	if state["items"].([]any)[0] != "a" {
		t.Errorf("the input state changed")
	}
}

func TestBuildAgentErrors(t *testing.T) {
	tests := []struct {
		name, messages, want string
	}{
		{"unsupported role", `[{"id":"x","role":"critic","content":"no"},{"id":"u","role":"user","content":"hi"}]`,
			`message 1 (id "x"): unsupported role "critic"`},
		{"audio in history", `[{"id":"u1","role":"user","content":[{"type":"audio","source":{"type":"url","value":"https://x/y.mp3"}}]},{"id":"u2","role":"user","content":"hi"}]`,
			`message 1 (id "u1"): content part 1: audio content is not supported in chat history; user messages may hold text and images`},
		{"image from a provider file", `[{"id":"u1","role":"user","content":[{"type":"image","source":{"type":"file","value":"file-1"}}]},{"id":"u2","role":"user","content":"hi"}]`,
			`message 1 (id "u1"): content part 1: an image source of type "file" is not supported; send a url or base64 data`},
		{"latest user with a document", `[{"id":"u1","role":"user","content":[{"type":"text","text":"read"},{"type":"document","source":{"type":"url","value":"https://x/a.pdf"}}]}]`,
			`message 1 (id "u1"): content part 2: document content is not supported in chat history; user messages may hold text and images`},
		{"multimodal tool result", `[{"id":"t","role":"tool","toolCallId":"c","content":[{"type":"text","text":"x"}]}]`,
			`message 1 (id "t"): tool message content must be a string`},
		{"tool without toolCallId", `[{"id":"t","role":"tool","content":"x"}]`,
			`message 1 (id "t"): tool message has no toolCallId`},
		{"system without content", `[{"id":"s","role":"system"}]`,
			`message 1 (id "s"): system message has no content`},
		{"developer with parts", `[{"id":"d","role":"developer","content":[]}]`,
			`message 1 (id "d"): developer message content must be a string`},
		{"tool call without name", `[{"id":"a","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"","arguments":"{}"}}]}]`,
			`message 1 (id "a"): tool call 1 has no function name`},
		{"tool call arguments not an object", `[{"id":"a","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]`,
			`message 1 (id "a"): tool call 1 (f): arguments must be a JSON object as a string, found "[1]"`},
		{"tool call arguments not JSON", `[{"id":"a","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"city=x"}}]}]`,
			`arguments must be a JSON object as a string, found "city=x"`},
		{"tool call arguments null", `[{"id":"a","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"null"}}]}]`,
			`arguments must be a JSON object as a string, found "null"`},
		{"assistant with parts", `[{"id":"a","role":"assistant","content":[{"type":"text","text":"x"}]}]`,
			`message 1 (id "a"): assistant message content must be a string`},
		{"message without id", `[{"role":"critic","content":"x"}]`,
			`message 1: unsupported role "critic"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := BuildAgent(Input{Messages: messages(t, tt.messages)}, false)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
	// A conversation builds no chat, so the same messages are accepted.
	for _, tt := range tests {
		if _, err := BuildAgent(Input{Messages: messages(t, tt.messages)}, true); err != nil {
			t.Errorf("%s: conversation: %v", tt.name, err)
		}
	}
}

// TestPlainTree: a message whose fields are all strings becomes the same
// tree built directly as through its JSON.
func TestPlainTree(t *testing.T) {
	msgs := messages(t, `[
		{"id": "1", "role": "user", "content": "hi"},
		{"id": "2", "role": "user", "content": "", "name": "ann"},
		{"id": "3", "role": "assistant"},
		{"id": "4", "role": "assistant", "content": "ok", "encryptedValue": "e"},
		{"id": "5", "role": "tool", "content": "{\"a\":1}", "toolCallId": "c1", "error": "no"},
		{"id": "6", "role": "developer", "content": "x", "subagentRunId": "r"},
		{"id": "7", "role": "system", "content": "s"}
	]`)
	for _, m := range msgs {
		got, ok := plainTree(m)
		if !ok {
			t.Errorf("message %s: not plain", m.ID)
			continue
		}
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if want := jsonTree(t, string(data)); !vm.Equal(vm.Normalize(got), want) || !vm.Equal(got, want) {
			t.Errorf("message %s: %v, want %v", m.ID, got, want)
		}
	}
	for _, m := range messages(t, `[
		{"id": "1", "role": "user", "content": [{"type": "text", "text": "hi"}]},
		{"id": "2", "role": "assistant", "toolCalls": []},
		{"id": "3", "role": "user", "content": "hi", "metadata": {}},
		{"id": "4", "role": "user", "content": "hi", "later": 1},
		{"id": "5", "role": "activity", "activityType": "PLAN", "content": {}}
	]`) {
		if _, ok := plainTree(m); ok {
			t.Errorf("message %s is taken as plain", m.ID)
		}
	}
}
