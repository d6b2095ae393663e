package store

import (
	"testing"

	"github.com/aguic/aguic/vm"
)

// TestStoredResume: a resume stored before resumes carried their tool
// results gets them from its $agent; one that carries them keeps its own.
func TestStoredResume(t *testing.T) {
	msg := map[string]any{"id": "m1", "role": "tool", "toolCallId": "c1", "content": "42"}
	old := &vm.Resume{Agent: map[string]any{"messages": []any{msg}, "latestToolResult": msg}}
	if r, ok := storedResume(old).ToolResult("c1"); !ok || r.Content != "42" || r.MessageID != "m1" || len(old.ToolResults) != 1 {
		t.Errorf("tool results of an old resume: %+v", old.ToolResults)
	}
	own := &vm.Resume{Agent: old.Agent, ToolResults: []vm.ToolResult{{ToolCallID: "c2"}}}
	if got := storedResume(own).ToolResults; len(got) != 1 || got[0].ToolCallID != "c2" {
		t.Errorf("a resume's own tool results: %+v", got)
	}
	if storedResume(nil) != nil {
		t.Error("a nil resume changed")
	}
}
