package agui

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aguic/aguic/vm"
)

func TestReducer(t *testing.T) {
	no := false
	tests := []struct {
		name   string
		live   bool
		start  string // JSON messages already held; "" for none
		events []vm.Event
		want   string // JSON messages
		state  string // JSON state; "" for nil
	}{
		{
			name: "text deltas concatenate",
			events: []vm.Event{
				{Type: vm.TextStart, MessageID: "m1"},
				{Type: vm.TextContent, MessageID: "m1", Delta: "Hel"},
				{Type: vm.TextContent, MessageID: "m1", Delta: "lo"},
				{Type: vm.TextEnd, MessageID: "m1"},
			},
			want: `[{"id":"m1","role":"assistant","content":"Hello"}]`,
		},
		{
			name: "text messages keep their role; messages interleave",
			events: []vm.Event{
				{Type: vm.TextStart, MessageID: "u", Role: "user"},
				{Type: vm.TextStart, MessageID: "s", Role: "system"},
				{Type: vm.TextContent, MessageID: "u", Delta: "question"},
				{Type: vm.TextContent, MessageID: "s", Delta: "note"},
				{Type: vm.TextEnd, MessageID: "s"},
				{Type: vm.TextEnd, MessageID: "u"},
				{Type: vm.TextStart, MessageID: "e"},
				{Type: vm.TextEnd, MessageID: "e"},
			},
			want: `[{"id":"u","role":"user","content":"question"},{"id":"s","role":"system","content":"note"},{"id":"e","role":"assistant","content":""}]`,
		},
		{
			name: "content of an unknown message is ignored",
			events: []vm.Event{
				{Type: vm.TextContent, MessageID: "nope", Delta: "x"},
				{Type: vm.ReasoningContent, MessageID: "nope", Delta: "x"},
				{Type: vm.ToolCallArgs, ToolCallID: "nope", Delta: "x"},
				{Type: vm.ActivityDelta, MessageID: "nope", Patch: []any{map[string]any{"op": "add", "path": "/a", "value": 1}}},
			},
			want: `[]`,
		},
		{
			name: "tool call joins its parent message; its result follows it",
			events: []vm.Event{
				{Type: vm.TextStart, MessageID: "m1"},
				{Type: vm.TextContent, MessageID: "m1", Delta: "Let me check."},
				{Type: vm.TextEnd, MessageID: "m1"},
				{Type: vm.ToolCallStart, ToolCallID: "c1", ToolCallName: "weather", ParentMessageID: "m1"},
				{Type: vm.ToolCallArgs, ToolCallID: "c1", Delta: `{"city":`},
				{Type: vm.ToolCallArgs, ToolCallID: "c1", Delta: `"Sydney"}`},
				{Type: vm.ToolCallEnd, ToolCallID: "c1"},
				{Type: vm.ToolCallResult, MessageID: "tool:c1", ToolCallID: "c1", Content: "Sunny"},
			},
			want: `[
				{"id":"m1","role":"assistant","content":"Let me check.","toolCalls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Sydney\"}"}}]},
				{"id":"tool:c1","role":"tool","content":"Sunny","toolCallId":"c1"}]`,
		},
		{
			name: "tool call without parent starts an assistant message named by the call",
			events: []vm.Event{
				{Type: vm.ToolCallStart, ToolCallID: "c1", ToolCallName: "confirm"},
				{Type: vm.ToolCallEnd, ToolCallID: "c1"},
			},
			want: `[{"id":"c1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"confirm","arguments":""}}]}]`,
		},
		{
			name: "unknown parent becomes the new assistant message's id",
			events: []vm.Event{
				{Type: vm.ToolCallStart, ToolCallID: "c1", ToolCallName: "a", ParentMessageID: "p1"},
				{Type: vm.ToolCallStart, ToolCallID: "c2", ToolCallName: "b", ParentMessageID: "p1"},
			},
			want: `[{"id":"p1","role":"assistant","toolCalls":[
				{"id":"c1","type":"function","function":{"name":"a","arguments":""}},
				{"id":"c2","type":"function","function":{"name":"b","arguments":""}}]}]`,
		},
		{
			name:  "a parent that is not an assistant message is not used",
			start: `[{"id":"u1","role":"user","content":"hi"}]`,
			events: []vm.Event{
				{Type: vm.ToolCallStart, ToolCallID: "c1", ToolCallName: "a", ParentMessageID: "u1"},
			},
			want: `[{"id":"u1","role":"user","content":"hi"},{"id":"c1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"a","arguments":""}}]}]`,
		},
		{
			name: "a repeated start renames the call",
			events: []vm.Event{
				{Type: vm.ToolCallStart, ToolCallID: "c1", ToolCallName: "a"},
				{Type: vm.ToolCallStart, ToolCallID: "c1", ToolCallName: "b"},
			},
			want: `[{"id":"c1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"b","arguments":""}}]}]`,
		},
		{
			name: "results go after the call's message and the results before them",
			events: []vm.Event{
				{Type: vm.ToolCallStart, ToolCallID: "c1", ToolCallName: "a", ParentMessageID: "m1"},
				{Type: vm.ToolCallStart, ToolCallID: "c2", ToolCallName: "b", ParentMessageID: "m1"},
				{Type: vm.TextStart, MessageID: "m2"},
				{Type: vm.TextContent, MessageID: "m2", Delta: "after"},
				{Type: vm.ToolCallResult, MessageID: "tool:c1", ToolCallID: "c1", Content: "1"},
				{Type: vm.ToolCallResult, MessageID: "tool:c2", ToolCallID: "c2", Content: "2"},
				{Type: vm.ToolCallResult, MessageID: "tool:c9", ToolCallID: "c9", Content: "orphan"},
			},
			want: `[
				{"id":"m1","role":"assistant","toolCalls":[
					{"id":"c1","type":"function","function":{"name":"a","arguments":""}},
					{"id":"c2","type":"function","function":{"name":"b","arguments":""}}]},
				{"id":"tool:c1","role":"tool","content":"1","toolCallId":"c1"},
				{"id":"tool:c2","role":"tool","content":"2","toolCallId":"c2"},
				{"id":"m2","role":"assistant","content":"after"},
				{"id":"tool:c9","role":"tool","content":"orphan","toolCallId":"c9"}]`,
		},
		{
			name: "a second result of a call replaces the first",
			start: `[{"id":"c1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"confirm","arguments":"{}"}}]},
				{"id":"client-1","role":"tool","content":"yes","toolCallId":"c1"}]`,
			events: []vm.Event{
				{Type: vm.ToolCallResult, MessageID: "tool:c1", ToolCallID: "c1", Content: "yes"},
			},
			want: `[{"id":"c1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"confirm","arguments":"{}"}}]},
				{"id":"tool:c1","role":"tool","content":"yes","toolCallId":"c1"}]`,
		},
		{
			name: "reasoning becomes a reasoning message",
			events: []vm.Event{
				{Type: vm.ReasoningStart, MessageID: "reason:r1"},
				{Type: vm.ReasoningMsgStart, MessageID: "reason:r1"},
				{Type: vm.ReasoningContent, MessageID: "reason:r1", Delta: "The user"},
				{Type: vm.ReasoningContent, MessageID: "reason:r1", Delta: " greets me."},
				{Type: vm.ReasoningMsgEnd, MessageID: "reason:r1"},
				{Type: vm.ReasoningEnd, MessageID: "reason:r1"},
			},
			want: `[{"id":"reason:r1","role":"reasoning","content":"The user greets me."}]`,
		},
		{
			name: "activity snapshot then deltas",
			events: []vm.Event{
				{Type: vm.ActivitySnapshot, MessageID: "activity:plan", ActivityType: "PLAN", Value: map[string]any{"steps": []any{map[string]any{"title": "Search", "status": "in_progress"}}}},
				{Type: vm.ActivityDelta, MessageID: "activity:plan", ActivityType: "PLAN", Patch: []any{map[string]any{"op": "replace", "path": "/steps/0/status", "value": "done"}}},
				{Type: vm.ActivityDelta, MessageID: "activity:plan", ActivityType: "PLAN", Patch: []any{map[string]any{"op": "add", "path": "/steps/-", "value": map[string]any{"title": "Answer"}}}},
			},
			want: `[{"id":"activity:plan","role":"activity","activityType":"PLAN","content":{"steps":[{"title":"Search","status":"done"},{"title":"Answer"}]}}]`,
		},
		{
			name: "snapshots replace unless replace is false",
			events: []vm.Event{
				{Type: vm.ActivitySnapshot, MessageID: "activity:a", ActivityType: "T", Value: map[string]any{"v": 1}},
				{Type: vm.ActivitySnapshot, MessageID: "activity:a", ActivityType: "T", Value: map[string]any{"v": 2}, Replace: &no},
				{Type: vm.ActivitySnapshot, MessageID: "activity:b", ActivityType: "T", Value: map[string]any{"v": 1}},
				{Type: vm.ActivitySnapshot, MessageID: "activity:b", ActivityType: "U", Value: map[string]any{"v": 3}},
			},
			want: `[{"id":"activity:a","role":"activity","activityType":"T","content":{"v":1}},
				{"id":"activity:b","role":"activity","activityType":"U","content":{"v":3}}]`,
		},
		{
			name: "state snapshot then delta",
			events: []vm.Event{
				{Type: vm.StateSnapshot, Value: map[string]any{"mode": "assistant", "count": 1}},
				{Type: vm.StateDelta, Patch: []any{map[string]any{"op": "replace", "path": "/mode", "value": "review"}, map[string]any{"op": "add", "path": "/tags", "value": nil}}},
			},
			want:  `[]`,
			state: `{"mode":"review","count":1,"tags":null}`,
		},
		{
			name: "a delta without a snapshot patches {}",
			events: []vm.Event{
				{Type: vm.StateDelta, Patch: []any{map[string]any{"op": "add", "path": "/n", "value": 1}}},
			},
			want:  `[]`,
			state: `{"n":1}`,
		},
		{
			name: "steps, custom events, subagents change nothing",
			events: []vm.Event{
				{Type: vm.StepStarted, Name: "search"},
				{Type: vm.Custom, Name: "progress", Value: 1},
				{Type: vm.SubagentStarted, SubagentRunID: "s", Name: "sub"},
				{Type: vm.SubagentFinished, SubagentRunID: "s", Name: "sub"},
				{Type: vm.StepFinished, Name: "search"},
			},
			want: `[]`,
		},
		{
			name: "live: silent events never arrive, hidden ones do, HIDE_TOOL_CALL is not sent",
			live: true,
			events: []vm.Event{
				{Type: vm.TextStart, MessageID: "p", Role: "user", Silent: true},
				{Type: vm.TextContent, MessageID: "p", Delta: "prompt", Silent: true},
				{Type: vm.TextEnd, MessageID: "p", Silent: true},
				{Type: vm.TextStart, MessageID: "h", Hidden: true},
				{Type: vm.TextContent, MessageID: "h", Delta: "only live", Hidden: true},
				{Type: vm.ToolCallStart, ToolCallID: "c1", ToolCallName: "confirm"},
				{Type: vm.ToolCallResult, MessageID: "tool:c1", ToolCallID: "c1", Content: "ok"},
				{Type: vm.HideToolCall, ToolCallID: "c1"},
			},
			want: `[{"id":"h","role":"assistant","content":"only live"},
				{"id":"c1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"confirm","arguments":""}}]},
				{"id":"tool:c1","role":"tool","content":"ok","toolCallId":"c1"}]`,
		},
		{
			name: "history: silent events count, hidden ones do not, HIDE_TOOL_CALL removes the call and its result",
			events: []vm.Event{
				{Type: vm.TextStart, MessageID: "p", Role: "user", Silent: true},
				{Type: vm.TextContent, MessageID: "p", Delta: "prompt", Silent: true},
				{Type: vm.TextEnd, MessageID: "p", Silent: true},
				{Type: vm.TextStart, MessageID: "h", Hidden: true},
				{Type: vm.TextContent, MessageID: "h", Delta: "only live", Hidden: true},
				{Type: vm.ToolCallStart, ToolCallID: "c1", ToolCallName: "confirm"},
				{Type: vm.ToolCallResult, MessageID: "tool:c1", ToolCallID: "c1", Content: "ok"},
				{Type: vm.TextStart, MessageID: "m"},
				{Type: vm.TextContent, MessageID: "m", Delta: "Checking"},
				{Type: vm.ToolCallStart, ToolCallID: "c2", ToolCallName: "a", ParentMessageID: "m"},
				{Type: vm.ToolCallStart, ToolCallID: "c3", ToolCallName: "b", ParentMessageID: "m"},
				{Type: vm.HideToolCall, ToolCallID: "c1"},
				{Type: vm.HideToolCall, ToolCallID: "c2"},
				{Type: vm.HideToolCall, ToolCallID: "c3"},
			},
			want: `[{"id":"p","role":"user","content":"prompt"},{"id":"m","role":"assistant","content":"Checking"}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reducer{Live: tt.live}
			if tt.start != "" {
				r.Messages = messages(t, tt.start)
			}
			for _, e := range tt.events {
				if err := r.Add(e); err != nil {
					t.Fatalf("Add(%v): %v", e.Type, err)
				}
			}
			got := jsonTree(t, string(mustJSON(t, r.Messages)))
			if !reflect.DeepEqual(got, jsonTree(t, tt.want)) {
				t.Errorf("messages\n got %s\nwant %s", mustJSON(t, r.Messages), tt.want)
			}
			var wantState any
			if tt.state != "" {
				wantState = jsonTree(t, tt.state)
			}
			if !reflect.DeepEqual(r.State, wantState) {
				t.Errorf("state %v, want %v", r.State, wantState)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	if msgs, ok := v.([]Message); ok && msgs == nil {
		v = []Message{}
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReducerBadPatch checks that a patch that does not apply is reported
// and changes nothing.
func TestReducerBadPatch(t *testing.T) {
	r := &Reducer{}
	must(t, r.Add(vm.Event{Type: vm.StateSnapshot, Value: map[string]any{"a": 1}}))
	err := r.Add(vm.Event{Type: vm.StateDelta, Patch: []any{map[string]any{"op": "replace", "path": "/missing/deep", "value": 2}}})
	if err == nil || !strings.HasPrefix(err.Error(), "state delta: ") {
		t.Errorf("error %v, want a state delta error", err)
	}
	if !reflect.DeepEqual(r.State, map[string]any{"a": 1}) {
		t.Errorf("state changed: %v", r.State)
	}
	must(t, r.Add(vm.Event{Type: vm.ActivitySnapshot, MessageID: "activity:x", ActivityType: "T", Value: map[string]any{"a": 1}}))
	err = r.Add(vm.Event{Type: vm.ActivityDelta, MessageID: "activity:x", ActivityType: "T", Patch: []any{map[string]any{"op": "bogus", "path": "/a"}}})
	if err == nil || !strings.Contains(err.Error(), `activity delta of "activity:x"`) {
		t.Errorf("error %v, want an activity delta error", err)
	}
	if got := r.Message("activity:x").ActivityContent; !reflect.DeepEqual(got, map[string]any{"a": 1}) {
		t.Errorf("activity changed: %v", got)
	}
}

// TestReducerAppend checks the client's own messages: appended once.
func TestReducerAppend(t *testing.T) {
	r := &Reducer{Live: true}
	u := Message{ID: "u1", Role: RoleUser, Content: Text("hi")}
	r.Append(u)
	r.Append(u, Message{ID: "u2", Role: RoleUser, Content: Text("again")})
	if len(r.Messages) != 2 || r.Messages[1].ID != "u2" {
		t.Errorf("messages %s, want u1 then u2", mustJSON(t, r.Messages))
	}
	if r.ToolCall("none") != nil || r.Message("none") != nil {
		t.Errorf("lookups of unknown ids found something")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
