package compiler

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/aguic/aguic/server/agui"
)

// TestAgentShape builds $agent from AG-UI requests that have every part
// $agent can hold and checks that each field they give is one the
// compiler's shape of $agent documents, so that no field the server fills
// is reported as a misspelling.
func TestAgentShape(t *testing.T) {
	requests := []string{
		// The last message is a user message of text and an image.
		`{"messages": [
			{"id": "s", "role": "system", "content": "Be brief.", "name": "ops"},
			{"id": "a", "role": "assistant", "content": "Hi", "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
			{"id": "t", "role": "tool", "content": "{}", "toolCallId": "c1", "error": "no"},
			{"id": "u", "role": "user", "name": "ada", "content": [{"type": "text", "text": "look"}, {"type": "image", "source": {"type": "url", "value": "https://example.com/a.png"}}]}
		],
		"state": {"a": 1}, "context": [{"description": "d", "value": "v"}],
		"tools": [{"name": "t", "description": "d", "parameters": {}}], "forwardedProps": {"x": 1}}`,
		// The last message is a tool result.
		`{"messages": [
			{"id": "a", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
			{"id": "t", "role": "tool", "content": "{\"v\": 1}", "toolCallId": "c1", "error": "failed", "encryptedValue": "e"}
		]}`,
	}
	seen := map[string]bool{}
	for _, req := range requests {
		var in struct {
			Messages       []agui.Message
			State          any
			Context        []agui.Context
			Tools          []agui.Tool
			ForwardedProps any
		}
		if err := json.Unmarshal([]byte(req), &in); err != nil {
			t.Fatal(err)
		}
		for _, conversation := range []bool{false, true} {
			agent, err := agui.BuildAgent(agui.Input{Messages: in.Messages, State: in.State, Context: in.Context, Tools: in.Tools, ForwardedProps: in.ForwardedProps}, conversation)
			if err != nil {
				t.Fatal(err)
			}
			checkShape(t, "$agent", agent, builtinShapes["agent"], seen)
		}
	}
	for _, want := range []string{"$agent.latestUserMessage.images", "$agent.latestUserMessage.name", "$agent.latestToolResult.value", "$agent.latestToolResult.error", "$agent.chat", "$agent._hidden.state", "$agent.forwardedProps"} {
		if !seen[want] {
			t.Errorf("no request gave %s", want)
		}
	}
}

// checkShape checks that every field of v, an object, is one of sh, and so
// on below the fields whose shape is fixed, and records the paths it saw.
func checkShape(t *testing.T, path string, v any, sh shape, seen map[string]bool) {
	t.Helper()
	obj, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s is %T, not an object", path, v)
		return
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		seen[path+"."+k] = true
		sub, known := sh[k]
		if !known {
			t.Errorf("%s.%s is not in the compiler's shape of %s", path, k, path)
			continue
		}
		if sub != nil {
			checkShape(t, path+"."+k, obj[k], sub, seen)
		}
	}
}
