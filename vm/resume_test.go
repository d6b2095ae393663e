package vm_test

import (
	"fmt"
	"testing"

	"github.com/aguic/aguic/vm"
)

// TestToolResults: the tool results of a turn are its tool messages with a
// toolCallId, in order, then its latestToolResult when it is not among
// them; other messages, and tool messages without an id, are not results.
func TestToolResults(t *testing.T) {
	tool := func(id, call string, content any) map[string]any {
		return map[string]any{"id": id, "role": "tool", "toolCallId": call, "content": content}
	}
	agent := map[string]any{
		"messages": []any{
			map[string]any{"id": "u", "role": "user", "content": "hi"},
			tool("m1", "c1", "one"),
			tool("m2", "", "no call"),
			tool("m3", "c3", []any{map[string]any{"type": "text", "text": "three"}}),
			tool("m4", "c1", "again"),
		},
		"latestToolResult": tool("m5", "c5", "five"),
	}
	r := &vm.Resume{ToolResults: vm.ToolResults(agent)}
	if got := fmt.Sprint(r.ToolResults); got != "[{c1 m1 one} {c3 m3 [map[text:three type:text]]} {c5 m5 five}]" {
		t.Errorf("tool results %s", got)
	}
	if res, ok := r.ToolResult("c3"); !ok || res.MessageID != "m3" {
		t.Errorf("ToolResult(c3) = %+v, %v", res, ok)
	}
	if _, ok := r.ToolResult("c2"); ok {
		t.Error("a result for a call the turn does not answer")
	}
	var none *vm.Resume
	if _, ok := none.ToolResult("c1"); ok {
		t.Error("a result from no resume")
	}
}
