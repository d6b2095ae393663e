package agui

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/vm"
)

const goldenDir = "testdata/events"

func ptr[T any](v T) *T { return &v }

func fromVM(t *testing.T, e vm.Event) Event {
	t.Helper()
	ev, ok := FromVM(e)
	if !ok {
		t.Fatalf("FromVM(%s) = false", e.Type)
	}
	return ev
}

// goldenCases are the events of testdata/events: every type, with every
// optional field and without, and the events FromVM and RunFinished make.
// validate.mjs checks each file against @ag-ui/core's schemas.
func goldenCases(t *testing.T) []struct {
	name string
	e    Event
} {
	stamp := time.UnixMilli(1767950998788)
	interrupt := vm.Interrupt{
		ID:             "int-1",
		Reason:         "approval",
		Message:        "Send the email?",
		ToolCallID:     "call-9",
		ResponseSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
		ExpiresAt:      1767950998788,
		Metadata:       map[string]any{"nodeId": "confirm", "nothing": nil},
	}
	return []struct {
		name string
		e    Event
	}{
		// Run lifecycle.
		{"run_started", RunStarted("thread-1", "run-1", "", nil)},
		{"run_started_full", WithTimestamp(RunStarted("thread-1", "run-2", "run-1", map[string]any{
			"threadId": "thread-1", "runId": "run-2", "messages": []any{map[string]any{"id": "u1", "role": "user", "content": "Hi"}},
			"state": map[string]any{}, "tools": []any{}, "context": []any{}, "forwardedProps": map[string]any{},
		}), stamp)},
		{"run_finished_success", RunFinished("thread-1", "run-1", vm.Outcome{Status: vm.Finished, Result: map[string]any{"answer": json.Number("42")}}, nil)},
		{"run_finished_no_result", RunFinished("thread-1", "run-1", vm.Outcome{Status: vm.Finished}, nil)},
		{"run_finished_pending_tools", RunFinished("thread-1", "run-1", vm.Outcome{Status: vm.Suspended, Wait: &vm.Wait{Kind: vm.WaitTool, ToolCallIDs: []string{"call-1", "call-2"}}}, nil)},
		{"run_finished_interrupt", RunFinished("thread-1", "run-1", vm.Outcome{Status: vm.Suspended, Wait: &vm.Wait{Kind: vm.WaitInterrupt, Interrupts: []vm.Interrupt{interrupt, {ID: "int-2", Reason: "input"}}}}, nil)},
		{"run_finished_interrupt_subagent", RunFinishedEvent{ThreadID: "thread-1", RunID: "run-1", Outcome: &Outcome{Type: OutcomeInterrupt, Interrupts: []Interrupt{
			{ID: "int-1", Reason: "approval", SubagentRunID: "sub-1"}, {ID: "int-2", Reason: "input"},
		}}}},
		{"run_finished_user_turn", RunFinished("thread-1", "run-1", vm.Outcome{Status: vm.Suspended, Wait: &vm.Wait{Kind: vm.WaitUser}}, nil)},
		{"run_finished_cancelled", RunFinished("thread-1", "run-1", vm.Outcome{Status: vm.Cancelled}, nil)},
		{"run_finished_usage", RunFinished("thread-1", "run-1", vm.Outcome{Status: vm.Finished, Result: "done"}, []TokenUsage{
			{Provider: "openai", Model: "gpt-4o", InputTokens: 120, OutputTokens: 4, TotalTokens: 124, ReasoningTokens: 2, CachedInputTokens: 100, CacheWriteInputTokens: 20},
			{Model: "small"},
		})},
		{"run_error", RunError("the model timed out", "timeout")},
		{"run_error_no_code", RunError("failed", "")},
		{"run_error_outcome", RunFinished("thread-1", "run-1", vm.Outcome{Status: vm.Failed, Err: &vm.Error{Code: vm.ErrExpr, Message: `unknown name "x"`, NodeID: "n3"}}, []TokenUsage{{InputTokens: 1}})},

		// Steps.
		{"step_started", fromVM(t, vm.Event{Type: vm.StepStarted, Name: "search", NodeID: "n1"})},
		{"step_finished", fromVM(t, vm.Event{Type: vm.StepFinished, Name: "search"})},

		// Text messages.
		{"text_message_start", fromVM(t, vm.Event{Type: vm.TextStart, MessageID: "msg-1", Role: "assistant"})},
		{"text_message_start_min", TextMessageStartEvent{MessageID: "msg-1"}},
		{"text_message_start_full", TextMessageStartEvent{MessageID: "msg-1", Role: "user", Name: "ada", SubagentRunID: "sub-1"}},
		{"text_message_content", fromVM(t, vm.Event{Type: vm.TextContent, MessageID: "msg-1", Delta: "Hi <b>&</b> \"you\"\n\u2028é"})},
		{"text_message_content_empty", TextMessageContentEvent{MessageID: "msg-1"}},
		{"text_message_end", fromVM(t, vm.Event{Type: vm.TextEnd, MessageID: "msg-1"})},

		// Tool calls.
		{"tool_call_start", fromVM(t, vm.Event{Type: vm.ToolCallStart, ToolCallID: "call-1", ToolCallName: "weather", ParentMessageID: "msg-1"})},
		{"tool_call_start_min", ToolCallStartEvent{ToolCallID: "call-1", ToolCallName: "weather"}},
		{"tool_call_args", fromVM(t, vm.Event{Type: vm.ToolCallArgs, ToolCallID: "call-1", Delta: `{"city":"Sydney"}`})},
		{"tool_call_end", fromVM(t, vm.Event{Type: vm.ToolCallEnd, ToolCallID: "call-1"})},
		{"tool_call_result", fromVM(t, vm.Event{Type: vm.ToolCallResult, MessageID: "tool:call-1", ToolCallID: "call-1", Content: `{"temp":21}`})},
		{"tool_call_result_parts", ToolCallResultEvent{MessageID: "tool:call-3", ToolCallID: "call-3", Content: Content{Parts: []Part{
			{Type: PartText, Text: "the chart"},
			{Type: PartImage, Source: &Source{Type: SourceURL, Value: "https://example.com/c.png", MimeType: "image/png"}},
		}}}},

		// State.
		{"state_snapshot", fromVM(t, vm.Event{Type: vm.StateSnapshot, Value: map[string]any{"count": json.Number("1"), "items": []any{"a", nil}}})},
		{"state_snapshot_null", fromVM(t, vm.Event{Type: vm.StateSnapshot})},
		{"state_delta", fromVM(t, vm.Event{Type: vm.StateDelta, Patch: []any{
			map[string]any{"op": "add", "path": "/a", "value": nil},
			map[string]any{"op": "replace", "path": "/b~1c", "value": []any{}},
			map[string]any{"op": "remove", "path": "/d"},
			map[string]any{"op": "move", "from": "/e", "path": "/f"},
			map[string]any{"op": "copy", "from": "/f", "path": "/g"},
			map[string]any{"op": "test", "path": "", "value": map[string]any{}},
		}})},
		{"state_delta_empty", fromVM(t, vm.Event{Type: vm.StateDelta})},

		// Messages.
		{"messages_snapshot", MessagesSnapshotEvent{Messages: []Message{
			{ID: "u1", Role: RoleUser, Content: Text("What's the weather?")},
			{ID: "a1", Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call-1", Function: FunctionCall{Name: "weather", Arguments: `{"city":"Sydney"}`}}}},
			{ID: "tool:call-1", Role: RoleTool, Content: Text(`{"temp":21}`), ToolCallID: "call-1"},
			{ID: "reason:r1", Role: RoleReasoning, Content: Text("Thinking")},
			{ID: "activity:plan", Role: RoleActivity, ActivityType: "PLAN", ActivityContent: map[string]any{"steps": []any{}}},
			{ID: "a2", Role: RoleAssistant, Content: Text("It is 21°C.")},
		}}},
		{"messages_snapshot_empty", MessagesSnapshotEvent{}},

		// Activities.
		{"activity_snapshot", fromVM(t, vm.Event{Type: vm.ActivitySnapshot, MessageID: "activity:plan", ActivityType: "PLAN", Value: map[string]any{"steps": []any{map[string]any{"title": "Search", "done": false}}}, Replace: ptr(false)})},
		{"activity_snapshot_no_content", fromVM(t, vm.Event{Type: vm.ActivitySnapshot, MessageID: "activity:plan", ActivityType: "PLAN"})},
		{"activity_delta", fromVM(t, vm.Event{Type: vm.ActivityDelta, MessageID: "activity:plan", ActivityType: "PLAN", Patch: []any{
			map[string]any{"op": "replace", "path": "/steps/0/done", "value": true},
			map[string]any{"op": "add", "path": "/interrupt", "value": nil},
		}})},
		{"activity_delta_empty", fromVM(t, vm.Event{Type: vm.ActivityDelta, MessageID: "activity:plan", ActivityType: "PLAN"})},

		// Custom.
		{"custom", fromVM(t, vm.Event{Type: vm.Custom, Name: "progress", Value: map[string]any{"percent": json.Number("50")}})},
		{"custom_null_value", fromVM(t, vm.Event{Type: vm.Custom, Name: "ping"})},
		{"custom_false_value", fromVM(t, vm.Event{Type: vm.Custom, Name: "flag", Value: false})},

		// Reasoning.
		{"reasoning_start", fromVM(t, vm.Event{Type: vm.ReasoningStart, MessageID: "reason:r1"})},
		{"reasoning_message_start", fromVM(t, vm.Event{Type: vm.ReasoningMsgStart, MessageID: "reason:r1"})},
		{"reasoning_message_content", fromVM(t, vm.Event{Type: vm.ReasoningContent, MessageID: "reason:r1", Delta: "Let me think."})},
		{"reasoning_message_end", fromVM(t, vm.Event{Type: vm.ReasoningMsgEnd, MessageID: "reason:r1"})},
		{"reasoning_end", fromVM(t, vm.Event{Type: vm.ReasoningEnd, MessageID: "reason:r1"})},

		// Subagents.
		{"subagent_started", fromVM(t, vm.Event{Type: vm.SubagentStarted, SubagentRunID: "sub-1", Name: "lookup", NodeID: "n2"})},
		{"subagent_started_full", SubagentStartedEvent{SubagentRunID: "sub-2", Name: "writer", Description: "writes", ParentSubagentRunID: "sub-1", ParentToolCallID: "call-1", ParentMessageID: "msg-1"}},
		{"subagent_finished", fromVM(t, vm.Event{Type: vm.SubagentFinished, SubagentRunID: "sub-1", Name: "lookup"})},
		{"subagent_finished_full", SubagentFinishedEvent{SubagentRunID: "sub-2", Result: []any{"x"}, Outcome: &SubagentOutcome{Type: SubagentSuspended, InterruptIDs: []string{"int-1"}}}},
		{"subagent_finished_success", SubagentFinishedEvent{SubagentRunID: "sub-2", Outcome: &SubagentOutcome{Type: SubagentSuccess}}},
		{"subagent_error", fromVM(t, vm.Event{Type: vm.SubagentError, SubagentRunID: "sub-1", Name: "lookup", Content: "it broke"})},
		{"subagent_error_code", SubagentErrorEvent{SubagentRunID: "sub-1", Message: "it broke", Code: "call"}},

		// The fields every event may carry.
		{"base_fields", TextMessageContentEvent{MessageID: "msg-1", Delta: "x", SubagentRunID: "sub-1", Base: Base{
			Timestamp: 1767950998788,
			RawEvent:  map[string]any{"provider": "openai", "chunk": json.Number("3")},
			Metadata:  map[string]any{"nodeId": "n1", "nothing": nil},
		}}},
		{"base_empty_metadata", CustomEvent{Name: "x", Value: "y", Base: Base{Metadata: map[string]any{}}}},
		{"base_timestamp_run_error", WithTimestamp(RunError("x", ""), stamp)},
	}
}

// TestGolden marshals every case and compares it with its file in
// testdata/events (go test -update rewrites them). Each file is one line
// of compact JSON.
func TestGolden(t *testing.T) {
	cases := goldenCases(t)
	seen := map[string]bool{}
	types := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if seen[c.name] {
				t.Fatalf("two cases named %q", c.name)
			}
			seen[c.name] = true
			types[c.e.EventType()] = true
			got, err := c.e.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			checkWire(t, c.e, got)
			golden.Check(t, filepath.Join(goldenDir, c.name+".json"), append(got, '\n'))
		})
	}
	for _, typ := range eventTypes() {
		if !types[typ] {
			t.Errorf("no golden case of %s", typ)
		}
	}
	// No file without a case.
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if !seen[name] {
			if golden.Update() {
				if err := os.Remove(f); err != nil {
					t.Error(err)
				}
				continue
			}
			t.Errorf("%s has no case (go test -update removes it)", f)
		}
	}
}

// checkWire checks what every marshalled event must be: compact JSON of an
// object with "type" first, no HTML escapes, and the same bytes again
// after decoding it into its type. (internal/aguitest checks that its
// DecodeEvent finds that type from "type".)
func checkWire(t *testing.T, e Event, got []byte) {
	t.Helper()
	var compact bytes.Buffer
	if err := json.Compact(&compact, got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, got)
	}
	if !bytes.Equal(compact.Bytes(), got) {
		t.Errorf("not compact:\n%s", got)
	}
	if prefix := `{"type":"` + e.EventType() + `"`; !bytes.HasPrefix(got, []byte(prefix)) {
		t.Errorf("does not start with %s:\n%s", prefix, got)
	}
	for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
		if bytes.Contains(got, []byte(esc)) {
			t.Errorf("HTML escape %s in %s", esc, got)
		}
	}
	back, err := decodeLike(e, got)
	if err != nil {
		t.Fatalf("decoding: %v", err)
	}
	again, err := back.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, got) {
		t.Errorf("decoded and marshalled again differs:\n got %s\nwant %s", again, got)
	}
}

// TestZeroValues pins the null-versus-omitted rules on the zero value of
// every type: optional fields absent, required ones present, any-JSON
// fields null, lists [], activity content {}.
func TestZeroValues(t *testing.T) {
	tests := []struct {
		e    Event
		want string
	}{
		{RunStartedEvent{}, `{"type":"RUN_STARTED","threadId":"","runId":""}`},
		{RunFinishedEvent{}, `{"type":"RUN_FINISHED","threadId":"","runId":""}`},
		{RunErrorEvent{}, `{"type":"RUN_ERROR","message":""}`},
		{StepStartedEvent{}, `{"type":"STEP_STARTED","stepName":""}`},
		{StepFinishedEvent{}, `{"type":"STEP_FINISHED","stepName":""}`},
		{TextMessageStartEvent{}, `{"type":"TEXT_MESSAGE_START","messageId":""}`},
		{TextMessageContentEvent{}, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"","delta":""}`},
		{TextMessageEndEvent{}, `{"type":"TEXT_MESSAGE_END","messageId":""}`},
		{ToolCallStartEvent{}, `{"type":"TOOL_CALL_START","toolCallId":"","toolCallName":""}`},
		{ToolCallArgsEvent{}, `{"type":"TOOL_CALL_ARGS","toolCallId":"","delta":""}`},
		{ToolCallEndEvent{}, `{"type":"TOOL_CALL_END","toolCallId":""}`},
		{ToolCallResultEvent{}, `{"type":"TOOL_CALL_RESULT","messageId":"","toolCallId":"","content":""}`},
		{StateSnapshotEvent{}, `{"type":"STATE_SNAPSHOT","snapshot":null}`},
		{StateDeltaEvent{}, `{"type":"STATE_DELTA","delta":[]}`},
		{MessagesSnapshotEvent{}, `{"type":"MESSAGES_SNAPSHOT","messages":[]}`},
		{ActivitySnapshotEvent{}, `{"type":"ACTIVITY_SNAPSHOT","messageId":"","activityType":"","content":{}}`},
		{ActivityDeltaEvent{}, `{"type":"ACTIVITY_DELTA","messageId":"","activityType":"","patch":[]}`},
		{CustomEvent{}, `{"type":"CUSTOM","name":"","value":null}`},
		{ReasoningStartEvent{}, `{"type":"REASONING_START","messageId":""}`},
		{ReasoningMessageStartEvent{}, `{"type":"REASONING_MESSAGE_START","messageId":"","role":"reasoning"}`},
		{ReasoningMessageContentEvent{}, `{"type":"REASONING_MESSAGE_CONTENT","messageId":"","delta":""}`},
		{ReasoningMessageEndEvent{}, `{"type":"REASONING_MESSAGE_END","messageId":""}`},
		{ReasoningEndEvent{}, `{"type":"REASONING_END","messageId":""}`},
		{SubagentStartedEvent{}, `{"type":"SUBAGENT_STARTED","subagentRunId":"","name":""}`},
		{SubagentFinishedEvent{}, `{"type":"SUBAGENT_FINISHED","subagentRunId":""}`},
		{SubagentErrorEvent{}, `{"type":"SUBAGENT_ERROR","subagentRunId":"","message":""}`},
	}
	var types []string
	for _, tt := range tests {
		types = append(types, tt.e.EventType())
		t.Run(tt.e.EventType(), func(t *testing.T) {
			got, err := tt.e.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			// json.Marshal uses the same method, on values and pointers.
			for _, v := range []any{tt.e, &tt.e} {
				b, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != tt.want {
					t.Errorf("json.Marshal(%T) = %s", v, b)
				}
			}
		})
	}
	slices.Sort(types)
	all := eventTypes()
	slices.Sort(all)
	if !slices.Equal(types, all) {
		t.Errorf("zero-value cases cover %v,\nevents.go declares %v", types, all)
	}
}

// TestNullNeverOptional checks that values JSON writes as null — typed nil
// maps, slices and pointers, a null RawMessage — leave optional fields out
// and keep required ones null.
func TestNullNeverOptional(t *testing.T) {
	nulls := []any{nil, map[string]any(nil), []any(nil), (*int)(nil), json.RawMessage(nil), json.RawMessage("null"), json.RawMessage(" null ")}
	for _, n := range nulls {
		tests := []struct {
			e    Event
			want string
		}{
			{RunStartedEvent{ThreadID: "t", RunID: "r", Input: n, Base: Base{RawEvent: n}}, `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`},
			{RunFinishedEvent{ThreadID: "t", RunID: "r", Result: n}, `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`},
			{SubagentFinishedEvent{SubagentRunID: "s", Result: n}, `{"type":"SUBAGENT_FINISHED","subagentRunId":"s"}`},
			{ActivitySnapshotEvent{MessageID: "m", ActivityType: "A", Content: n}, `{"type":"ACTIVITY_SNAPSHOT","messageId":"m","activityType":"A","content":{}}`},
			{CustomEvent{Name: "c", Base: Base{RawEvent: n}}, `{"type":"CUSTOM","name":"c","value":null}`},
		}
		for _, tt := range tests {
			got, err := tt.e.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("%T with %#v:\n got %s\nwant %s", tt.e, n, got, tt.want)
			}
		}
	}
	// Required any-JSON fields keep a null they are given.
	got, _ := CustomEvent{Name: "c", Value: json.RawMessage("null")}.MarshalJSON()
	if string(got) != `{"type":"CUSTOM","name":"c","value":null}` {
		t.Errorf("custom null RawMessage: %s", got)
	}
}

func TestPatchOp(t *testing.T) {
	tests := []struct {
		op   PatchOp
		want string
	}{
		{PatchOp{Op: "add", Path: "/a"}, `{"op":"add","path":"/a","value":null}`},
		{PatchOp{Op: "replace", Path: "/a", Value: 1}, `{"op":"replace","path":"/a","value":1}`},
		{PatchOp{Op: "test", Path: "", Value: false}, `{"op":"test","path":"","value":false}`},
		{PatchOp{Op: "remove", Path: "/a", Value: 1}, `{"op":"remove","path":"/a"}`},
		{PatchOp{Op: "move", From: "/a", Path: "/b", Value: 1}, `{"op":"move","from":"/a","path":"/b"}`},
		{PatchOp{Op: "copy", From: "/a", Path: "/b"}, `{"op":"copy","from":"/a","path":"/b"}`},
		{PatchOp{Op: "frob", Path: "/a", From: "/b", Value: "<x>"}, `{"op":"frob","path":"/a","from":"/b","value":"<x>"}`},
	}
	for _, tt := range tests {
		got, err := tt.op.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%+v: got %s, want %s", tt.op, got, tt.want)
		}
	}

	type jsondiffOp struct {
		Type  string `json:"op"`
		From  string `json:"from,omitempty"`
		Path  string `json:"path"`
		Value any    `json:"value,omitempty"`
	}
	ops := PatchOps([]any{
		map[string]any{"op": "add", "path": "/a"},
		PatchOp{Op: "remove", Path: "/b"},
		jsondiffOp{Type: "move", From: "/c", Path: "/d"},
	})
	want := []PatchOp{{Op: "add", Path: "/a"}, {Op: "remove", Path: "/b"}, {Op: "move", From: "/c", Path: "/d"}}
	if !slices.Equal(ops, want) {
		t.Errorf("PatchOps = %+v, want %+v", ops, want)
	}
	if PatchOps(nil) != nil {
		t.Error("PatchOps(nil) is not nil")
	}
}

// TestFromVM maps one event of every type the VM emits.
func TestFromVM(t *testing.T) {
	tests := []struct {
		e    vm.Event
		want string // "" when the event is not sent
	}{
		{vm.Event{Type: vm.TextStart, MessageID: "m1", Role: "assistant", NodeID: "n"}, `{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}`},
		{vm.Event{Type: vm.TextStart, MessageID: "m1"}, `{"type":"TEXT_MESSAGE_START","messageId":"m1"}`},
		{vm.Event{Type: vm.TextContent, MessageID: "m1", Delta: "a<b"}, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"a<b"}`},
		{vm.Event{Type: vm.TextEnd, MessageID: "m1"}, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`},
		{vm.Event{Type: vm.ToolCallStart, ToolCallID: "c1", ToolCallName: "f", ParentMessageID: "m1"}, `{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f","parentMessageId":"m1"}`},
		{vm.Event{Type: vm.ToolCallStart, ToolCallID: "c1", ToolCallName: "f"}, `{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f"}`},
		{vm.Event{Type: vm.ToolCallArgs, ToolCallID: "c1", Delta: `{"a":1}`}, `{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\"a\":1}"}`},
		{vm.Event{Type: vm.ToolCallEnd, ToolCallID: "c1"}, `{"type":"TOOL_CALL_END","toolCallId":"c1"}`},
		{vm.Event{Type: vm.ToolCallResult, MessageID: "tool:c1", ToolCallID: "c1", Content: "ok"}, `{"type":"TOOL_CALL_RESULT","messageId":"tool:c1","toolCallId":"c1","content":"ok","role":"tool"}`},
		{vm.Event{Type: vm.ToolCallResult, ToolCallID: "c2"}, `{"type":"TOOL_CALL_RESULT","messageId":"tool:c2","toolCallId":"c2","content":"","role":"tool"}`},
		{vm.Event{Type: vm.StateSnapshot, Value: map[string]any{"a": 1}}, `{"type":"STATE_SNAPSHOT","snapshot":{"a":1}}`},
		{vm.Event{Type: vm.StateSnapshot}, `{"type":"STATE_SNAPSHOT","snapshot":null}`},
		{vm.Event{Type: vm.StateDelta, Patch: []any{map[string]any{"op": "replace", "path": "/a", "value": nil}}}, `{"type":"STATE_DELTA","delta":[{"op":"replace","path":"/a","value":null}]}`},
		{vm.Event{Type: vm.StateDelta, Patch: []any{}}, `{"type":"STATE_DELTA","delta":[]}`},
		{vm.Event{Type: vm.ActivitySnapshot, MessageID: "activity:a", ActivityType: "PLAN", Value: map[string]any{}, Replace: ptr(true)}, `{"type":"ACTIVITY_SNAPSHOT","messageId":"activity:a","activityType":"PLAN","content":{},"replace":true}`},
		{vm.Event{Type: vm.ActivitySnapshot, MessageID: "activity:a", ActivityType: "PLAN", Value: map[string]any{"x": nil}}, `{"type":"ACTIVITY_SNAPSHOT","messageId":"activity:a","activityType":"PLAN","content":{"x":null}}`},
		{vm.Event{Type: vm.ActivityDelta, MessageID: "activity:a", ActivityType: "PLAN", Patch: []any{map[string]any{"op": "remove", "path": "/x"}}}, `{"type":"ACTIVITY_DELTA","messageId":"activity:a","activityType":"PLAN","patch":[{"op":"remove","path":"/x"}]}`},
		{vm.Event{Type: vm.StepStarted, Name: "s"}, `{"type":"STEP_STARTED","stepName":"s"}`},
		{vm.Event{Type: vm.StepFinished, Name: "s"}, `{"type":"STEP_FINISHED","stepName":"s"}`},
		{vm.Event{Type: vm.Custom, Name: "c", Value: []any{1, "<"}}, `{"type":"CUSTOM","name":"c","value":[1,"<"]}`},
		{vm.Event{Type: vm.Custom, Name: "c"}, `{"type":"CUSTOM","name":"c","value":null}`},
		{vm.Event{Type: vm.ReasoningStart, MessageID: "reason:r"}, `{"type":"REASONING_START","messageId":"reason:r"}`},
		{vm.Event{Type: vm.ReasoningMsgStart, MessageID: "reason:r"}, `{"type":"REASONING_MESSAGE_START","messageId":"reason:r","role":"reasoning"}`},
		{vm.Event{Type: vm.ReasoningContent, MessageID: "reason:r", Delta: "hm"}, `{"type":"REASONING_MESSAGE_CONTENT","messageId":"reason:r","delta":"hm"}`},
		{vm.Event{Type: vm.ReasoningMsgEnd, MessageID: "reason:r"}, `{"type":"REASONING_MESSAGE_END","messageId":"reason:r"}`},
		{vm.Event{Type: vm.ReasoningEnd, MessageID: "reason:r"}, `{"type":"REASONING_END","messageId":"reason:r"}`},
		{vm.Event{Type: vm.SubagentStarted, SubagentRunID: "sub-1", Name: "w"}, `{"type":"SUBAGENT_STARTED","subagentRunId":"sub-1","name":"w"}`},
		{vm.Event{Type: vm.SubagentFinished, SubagentRunID: "sub-1", Name: "w"}, `{"type":"SUBAGENT_FINISHED","subagentRunId":"sub-1"}`},
		{vm.Event{Type: vm.SubagentFinished, SubagentRunID: "sub-1", Value: map[string]any{"n": 1}}, `{"type":"SUBAGENT_FINISHED","subagentRunId":"sub-1","result":{"n":1}}`},
		{vm.Event{Type: vm.SubagentError, SubagentRunID: "sub-1", Name: "w", Content: "boom"}, `{"type":"SUBAGENT_ERROR","subagentRunId":"sub-1","message":"boom"}`},
		{vm.Event{Type: vm.SubagentError, SubagentRunID: "sub-1", Content: "<x> failed", Code: "timeout"}, `{"type":"SUBAGENT_ERROR","subagentRunId":"sub-1","message":"<x> failed","code":"timeout"}`},
		{vm.Event{Type: vm.SubagentError, SubagentRunID: "sub-1"}, `{"type":"SUBAGENT_ERROR","subagentRunId":"sub-1","message":""}`},
		{vm.Event{Type: vm.TextContent, MessageID: "m1", Delta: "x", SubagentRunID: "sub-1"}, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"x","subagentRunId":"sub-1"}`},
		{vm.Event{Type: vm.ToolCallResult, ToolCallID: "c3", Content: "ok", SubagentRunID: "sub-1"}, `{"type":"TOOL_CALL_RESULT","messageId":"tool:c3","toolCallId":"c3","content":"ok","role":"tool","subagentRunId":"sub-1"}`},
		{vm.Event{Type: vm.HideToolCall, ToolCallID: "c1"}, ``},
		{vm.Event{Type: "SOMETHING_NEW"}, ``},
	}
	covered := map[vm.EventType]bool{}
	for _, tt := range tests {
		covered[tt.e.Type] = true
		ev, ok := FromVM(tt.e)
		if tt.want == "" {
			if ok {
				t.Errorf("FromVM(%s) = %T, want nothing", tt.e.Type, ev)
			}
			continue
		}
		if !ok {
			t.Errorf("FromVM(%s) = false", tt.e.Type)
			continue
		}
		if ev.EventType() != string(tt.e.Type) {
			t.Errorf("FromVM(%s) is a %s", tt.e.Type, ev.EventType())
		}
		got, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("FromVM(%+v):\n got %s\nwant %s", tt.e, got, tt.want)
		}
	}
	// Every event type of the VM: vm/event.go lists them.
	for _, typ := range []vm.EventType{
		vm.TextStart, vm.TextContent, vm.TextEnd, vm.ToolCallStart, vm.ToolCallArgs, vm.ToolCallEnd,
		vm.ToolCallResult, vm.StateSnapshot, vm.StateDelta, vm.ActivitySnapshot, vm.ActivityDelta,
		vm.StepStarted, vm.StepFinished, vm.Custom, vm.ReasoningStart, vm.ReasoningMsgStart,
		vm.ReasoningContent, vm.ReasoningMsgEnd, vm.ReasoningEnd, vm.SubagentStarted,
		vm.SubagentFinished, vm.SubagentError, vm.HideToolCall,
	} {
		if !covered[typ] {
			t.Errorf("no FromVM case of %s", typ)
		}
	}
}

// TestFromVMSilentHidden: flags of the event log do not change the event.
func TestFromVMSilentHidden(t *testing.T) {
	for _, e := range []vm.Event{
		{Type: vm.TextContent, MessageID: "m", Delta: "x", Silent: true},
		{Type: vm.TextContent, MessageID: "m", Delta: "x", Hidden: true},
	} {
		ev, ok := FromVM(e)
		if !ok {
			t.Fatalf("FromVM(%+v) = false", e)
		}
		got, _ := ev.MarshalJSON()
		if want := `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`; string(got) != want {
			t.Errorf("FromVM(%+v) = %s, want %s", e, got, want)
		}
	}
}

// TestRunFinished maps every outcome of a run to its terminal event.
func TestRunFinished(t *testing.T) {
	usage := []TokenUsage{{InputTokens: 3, OutputTokens: 4}}
	tests := []struct {
		name  string
		o     vm.Outcome
		usage []TokenUsage
		want  string
	}{
		{"finished", vm.Outcome{Status: vm.Finished, Result: map[string]any{"a": 1}},
			nil, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":{"a":1},"outcome":{"type":"success"}}`},
		{"finished result false", vm.Outcome{Status: vm.Finished, Result: false},
			nil, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":false,"outcome":{"type":"success"}}`},
		{"finished no result", vm.Outcome{Status: vm.Finished},
			usage, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"},"usage":[{"inputTokens":3,"outputTokens":4}]}`},
		{"frontend tools", vm.Outcome{Status: vm.Suspended, Wait: &vm.Wait{Kind: vm.WaitTool, ToolCallIDs: []string{"c1", "c2"}}},
			nil, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","pendingToolCallIds":["c1","c2"]}}`},
		{"frontend tools none", vm.Outcome{Status: vm.Suspended, Wait: &vm.Wait{Kind: vm.WaitTool}},
			nil, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"}}`},
		{"interrupt", vm.Outcome{Status: vm.Suspended, Wait: &vm.Wait{Kind: vm.WaitInterrupt, Interrupts: []vm.Interrupt{
			{ID: "i1", Reason: "approval", Message: "ok?", ToolCallID: "c1", ResponseSchema: map[string]any{"type": "object"}, ExpiresAt: 1767950998788, Metadata: map[string]any{"k": nil}},
			{ID: "i2", Reason: "input"},
		}}}, nil, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[` +
			`{"id":"i1","reason":"approval","message":"ok?","toolCallId":"c1","responseSchema":{"type":"object"},"expiresAt":"2026-01-09T09:29:58.788Z","metadata":{"k":null}},` +
			`{"id":"i2","reason":"input"}]}}`},
		{"interrupt none", vm.Outcome{Status: vm.Suspended, Wait: &vm.Wait{Kind: vm.WaitInterrupt}},
			nil, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"}}`},
		{"user turn", vm.Outcome{Status: vm.Suspended, Wait: &vm.Wait{Kind: vm.WaitUser}},
			nil, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"}}`},
		{"suspended without wait", vm.Outcome{Status: vm.Suspended},
			nil, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"}}`},
		{"cancelled", vm.Outcome{Status: vm.Cancelled},
			nil, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}`},
		{"failed", vm.Outcome{Status: vm.Failed, Err: &vm.Error{Code: vm.ErrFail, Message: "no <way>", NodeID: "n1"}},
			usage, `{"type":"RUN_ERROR","message":"no <way>","code":"fail","usage":[{"inputTokens":3,"outputTokens":4}]}`},
		{"failed without error", vm.Outcome{Status: vm.Failed},
			nil, `{"type":"RUN_ERROR","message":"the run failed","code":"internal"}`},
		{"unknown status", vm.Outcome{Status: "paused"},
			nil, `{"type":"RUN_ERROR","message":"the run ended with an unknown status \"paused\"","code":"internal"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RunFinished("t", "r", tt.o, tt.usage).MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRunStartedAndError(t *testing.T) {
	tests := []struct {
		e    Event
		want string
	}{
		{RunStarted("t", "r", "", nil), `{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}`},
		{RunStarted("t", "r", "p", json.RawMessage(`{"threadId":"t","runId":"r","messages":[]}`)), `{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0","parentRunId":"p","input":{"threadId":"t","runId":"r","messages":[]}}`},
		{RunStarted("t", "r", "", map[string]any(nil)), `{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}`},
		{RunError("bad <input>", ""), `{"type":"RUN_ERROR","message":"bad <input>"}`},
		{RunError("bad", "invalid_resume"), `{"type":"RUN_ERROR","message":"bad","code":"invalid_resume"}`},
		{WithTimestamp(RunError("x", ""), time.UnixMilli(42)), `{"type":"RUN_ERROR","message":"x","timestamp":42}`},
	}
	for _, tt := range tests {
		got, err := tt.e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

// TestWithTimestamp stamps every type and leaves the original alone.
func TestWithTimestamp(t *testing.T) {
	for _, c := range goldenCases(t) {
		stamped := WithTimestamp(c.e, time.UnixMilli(1700000000123))
		if stamped.EventType() != c.e.EventType() {
			t.Fatalf("%s: stamped is a %s", c.name, stamped.EventType())
		}
		b, err := stamped.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`"timestamp":1700000000123`)) {
			t.Errorf("%s: no timestamp in %s", c.name, b)
		}
	}
	e := TextMessageEndEvent{MessageID: "m"}
	_ = WithTimestamp(e, time.Now())
	if e.Timestamp != 0 {
		t.Error("WithTimestamp changed its argument")
	}
}

// decodeLike reads data as an event of the type of e, numbers kept exact
// as json.Number.
func decodeLike(e Event, data []byte) (Event, error) {
	back := reflect.New(reflect.TypeOf(e))
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(back.Interface()); err != nil {
		return nil, err
	}
	return back.Elem().Interface().(Event), nil
}

func BenchmarkMarshalTextContent(b *testing.B) {
	e := TextMessageContentEvent{MessageID: "msg-1", Delta: "Hello, this is a token or two."}
	for b.Loop() {
		if _, err := e.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}
