package agui

import (
	"fmt"
	"testing"

	"github.com/aguic/aguic/vm"
)

// BenchmarkReducer replays the events of a long thread: 200 turns of a
// streamed answer with a tool call and its result.
func BenchmarkReducer(b *testing.B) {
	var events []vm.Event
	for i := range 200 {
		id, call := fmt.Sprintf("m%d", i), fmt.Sprintf("c%d", i)
		events = append(events, vm.Event{Type: vm.TextStart, MessageID: id})
		for range 20 {
			events = append(events, vm.Event{Type: vm.TextContent, MessageID: id, Delta: " word"})
		}
		events = append(events,
			vm.Event{Type: vm.TextEnd, MessageID: id},
			vm.Event{Type: vm.ToolCallStart, ToolCallID: call, ToolCallName: "f", ParentMessageID: id},
			vm.Event{Type: vm.ToolCallArgs, ToolCallID: call, Delta: `{"a":1}`},
			vm.Event{Type: vm.ToolCallEnd, ToolCallID: call},
			vm.Event{Type: vm.ToolCallResult, MessageID: "tool:" + call, ToolCallID: call, Content: "ok"},
		)
	}
	b.ReportAllocs()
	for b.Loop() {
		var r Reducer
		for _, e := range events {
			if err := r.Add(e); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkBuildAgent builds the $agent of a stateless request with 100
// messages of history.
func BenchmarkBuildAgent(b *testing.B) {
	var msgs []Message
	for i := range 50 {
		msgs = append(msgs,
			Message{ID: fmt.Sprintf("u%d", i), Role: RoleUser, Content: Text("a question of some length")},
			Message{ID: fmt.Sprintf("a%d", i), Role: RoleAssistant, Content: Text("an answer of some more length")},
		)
	}
	in := Input{Messages: msgs, State: map[string]any{"n": 1}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildAgent(in, false); err != nil {
			b.Fatal(err)
		}
	}
}
