package agui

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestMessageRoundTrip reads messages of every role and shape and checks
// that they marshal back to exactly the JSON they came from.
func TestMessageRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		json string
	}{
		{"developer", `{"id":"d1","role":"developer","content":"Prefer short answers.","name":"policy","encryptedValue":"xyz"}`},
		{"system", `{"id":"s1","role":"system","content":"You are helpful."}`},
		{"assistant text", `{"id":"a1","role":"assistant","content":"Hello","name":"bot"}`},
		{"assistant tool calls", `{"id":"a2","role":"assistant","content":"Checking","toolCalls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Sydney\"}"}},{"id":"c2","type":"function","function":{"name":"time","arguments":""},"encryptedValue":"e","metadata":{"k":1}}]}`},
		{"assistant only tool calls", `{"id":"a3","role":"assistant","toolCalls":[{"id":"c3","type":"function","function":{"name":"x","arguments":"{}"}}]}`},
		{"assistant empty tool calls", `{"id":"a4","role":"assistant","toolCalls":[]}`},
		{"assistant no content", `{"id":"a5","role":"assistant"}`},
		{"user text", `{"id":"u1","role":"user","content":"Hi <b>&</b>","name":"ada"}`},
		{"user empty text", `{"id":"u2","role":"user","content":""}`},
		{"user parts", `{"id":"u3","role":"user","content":[` +
			`{"type":"text","text":"What is this?"},` +
			`{"type":"text","id":"p0","text":""},` +
			`{"type":"image","id":"p1","source":{"type":"data","value":"iVBORw0KGgo=","mimeType":"image/png"}},` +
			`{"type":"image","source":{"type":"url","value":"https://example.com/cat.png"},"metadata":{"detail":"high"}},` +
			`{"type":"audio","source":{"type":"file","value":"file-123","mimeType":"audio/wav","provider":"openai"}},` +
			`{"type":"video","source":{"type":"url","value":"https://example.com/v.mp4","mimeType":"video/mp4","fps":30}},` +
			`{"type":"document","source":{"type":"data","value":"JVBERi0=","mimeType":"application/pdf"},"title":"Invoice"}]}`},
		{"user empty parts", `{"id":"u4","role":"user","content":[]}`},
		{"tool text", `{"id":"t1","role":"tool","content":"{\"temp\":21}","toolCallId":"c1"}`},
		{"tool error", `{"id":"t2","role":"tool","content":"","toolCallId":"c2","error":"timed out"}`},
		{"tool parts", `{"id":"t3","role":"tool","content":[{"type":"text","text":"here"},{"type":"image","source":{"type":"url","value":"https://example.com/chart.png","mimeType":"image/png"}}],"toolCallId":"c3"}`},
		{"activity", `{"id":"activity:plan","role":"activity","content":{"big":12345678901234567890,"steps":[{"done":false,"title":"Search"}],"w":1.50},"activityType":"PLAN"}`},
		{"reasoning", `{"id":"reason:r1","role":"reasoning","content":"Thinking…","encryptedValue":"opaque"}`},
		{"attribution and metadata", `{"id":"m1","role":"assistant","content":"x","subagentRunId":"sub-1","metadata":{"a":[1,2]}}`},
		{"unknown keys", `{"id":"m2","role":"user","content":"x","another":null,"futureField":{"z":1}}`},
		{"unknown role", `{"id":"m3","role":"critic","content":"meh"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Message
			if err := json.Unmarshal([]byte(tt.json), &m); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			out, err := marshal(m)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if string(out) != tt.json {
				t.Errorf("round trip changed the JSON\n got %s\nwant %s", out, tt.json)
			}
			// A second round trip is stable too.
			var m2 Message
			if err := json.Unmarshal(out, &m2); err != nil {
				t.Fatalf("unmarshal again: %v", err)
			}
			if !reflect.DeepEqual(m, m2) {
				t.Errorf("second read differs:\n%#v\n%#v", m, m2)
			}
		})
	}
}

// marshal encodes v as the server writes it: without escaping HTML
// characters (json.Marshal writes < as \u003c, the same JSON string).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// TestMessageNoNull checks that optional fields given as null are read as
// absent and never written back as null.
func TestMessageNoNull(t *testing.T) {
	in := `{"id":"a1","role":"assistant","content":null,"name":null,"toolCalls":null,"metadata":null,"encryptedValue":null}`
	// A null part metadata and null source fields too.
	parts := `{"id":"u","role":"user","content":[{"type":"image","id":null,"source":{"type":"url","value":"v","mimeType":null},"metadata":null}]}`
	var p Message
	if err := json.Unmarshal([]byte(parts), &p); err != nil {
		t.Fatal(err)
	}
	if out, _ := json.Marshal(p); strings.Contains(string(out), "null") {
		t.Errorf("nulls written back: %s", out)
	}
	var m Message
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(m)
	if want := `{"id":"a1","role":"assistant"}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}

// TestMessageBuilt checks the JSON of messages built in Go: required fields
// present, empty optional ones left out.
func TestMessageBuilt(t *testing.T) {
	tests := []struct {
		name string
		msg  Message
		want string
	}{
		{"bare", Message{ID: "x", Role: RoleAssistant}, `{"id":"x","role":"assistant"}`},
		{"empty text", Message{ID: "x", Role: RoleUser, Content: Text("")}, `{"id":"x","role":"user","content":""}`},
		{"tool call default type", Message{ID: "x", Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Function: FunctionCall{Name: "f"}}}},
			`{"id":"x","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":""}}]}`},
		{"activity", Message{ID: "activity:a", Role: RoleActivity, ActivityType: "PLAN", ActivityContent: map[string]any{"n": 1}},
			`{"id":"activity:a","role":"activity","content":{"n":1},"activityType":"PLAN"}`},
		{"text part", Message{ID: "u", Role: RoleUser, Content: &Content{Parts: []Part{{Type: PartText}}}},
			`{"id":"u","role":"user","content":[{"type":"text","text":""}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := json.Marshal(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Errorf("got  %s\nwant %s", out, tt.want)
			}
		})
	}
}

func TestMessageErrors(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"not an object", `[1]`, "a message must be a JSON object, found a list"},
		{"content number", `{"id":"m","role":"user","content":5}`, `message "m": content must be a string or a list of parts, found a number`},
		{"role number", `{"id":"m","role":1}`, `message "m": "role" must be a string, found a number`},
		{"tool calls object", `{"id":"m","role":"assistant","toolCalls":{}}`, `message "m": "toolCalls": expected a list, found an object`},
		{"part without type", `{"id":"m","role":"user","content":[{"text":"x"}]}`, `message "m": content part has no type`},
		{"part not object", `{"id":"m","role":"user","content":["x"]}`, `message "m": a content part must be a JSON object, found a string`},
		{"source value number", `{"id":"m","role":"user","content":[{"type":"image","source":{"type":"url","value":1}}]}`, `"value" must be a string, found a number`},
		{"function name", `{"id":"m","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":2}}]}`, `"name" must be a string, found a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Message
			err := json.Unmarshal([]byte(tt.json), &m)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// FuzzMessage checks that whatever decodes as a message marshals to JSON
// that decodes to the same message.
func FuzzMessage(f *testing.F) {
	f.Add(`{"id":"u","role":"user","content":[{"type":"image","source":{"type":"url","value":"u"}}]}`)
	f.Add(`{"id":"a","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`)
	f.Add(`{"id":"x","role":"activity","content":{"a":1.5e3},"activityType":"T","x":null}`)
	f.Fuzz(func(t *testing.T, s string) {
		var m Message
		if json.Unmarshal([]byte(s), &m) != nil {
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshal %q: %v", s, err)
		}
		var m2 Message
		if err := json.Unmarshal(out, &m2); err != nil {
			t.Fatalf("re-read %s: %v", out, err)
		}
		out2, err := json.Marshal(m2)
		if err != nil || string(out) != string(out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
	})
}
