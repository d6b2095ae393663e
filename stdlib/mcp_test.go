package stdlib

import (
	"reflect"
	"testing"
)

// TestMCPToolResult checks what a model gets of an mcp node's result when
// the node implements a tool: the value when there is one, else the text.
func TestMCPToolResult(t *testing.T) {
	tests := []struct {
		result, want any
	}{
		{map[string]any{"text": "3", "content": []any{}, "value": map[string]any{"sum": 3}}, map[string]any{"sum": 3}},
		{map[string]any{"text": "plain words", "content": []any{}, "value": nil}, "plain words"},
		{map[string]any{"text": "", "content": []any{}}, ""},
		{"not a result", "not a result"},
	}
	for _, tt := range tests {
		if got := mcpToolResult(tt.result); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("mcpToolResult(%v) = %v, want %v", tt.result, got, tt.want)
		}
	}
}
