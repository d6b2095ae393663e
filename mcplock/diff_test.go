package mcplock_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aguic/aguic/mcplock"
)

// server reads a server's tools from JSON, as a lock file holds them.
func server(t *testing.T, tools string) *mcplock.Server {
	t.Helper()
	f, err := mcplock.Parse([]byte(`{"version": 1, "servers": {"s": {"tools": ` + tools + `}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return f.Servers["s"]
}

func TestDiff(t *testing.T) {
	const sum = `{"name": "sum", "description": "Adds", "inputSchema": {"type": "object",
		"properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}`
	tests := []struct {
		name         string
		locked, live string
		want         string // the changes, one a line
	}{
		{"same", `[` + sum + `]`, `[` + sum + `]`, ""},
		{"same in another order and spacing", `[{"name": "x", "inputSchema": {}}, ` + sum + `]`,
			`[` + strings.ReplaceAll(sum, " ", "") + `, {"name": "x", "inputSchema": {}}]`, ""},
		{"numbers by value", `[{"name": "n", "inputSchema": {"maximum": 10}}]`,
			`[{"name": "n", "inputSchema": {"maximum": 10.0}}]`, ""},
		{"absent schema is empty", `[{"name": "n", "inputSchema": {}}]`, `[{"name": "n"}]`, ""},
		{"added and removed", `[{"name": "old", "inputSchema": {}}, ` + sum + `]`, `[` + sum + `, {"name": "new", "inputSchema": {}}]`,
			"tool \"new\": added\ntool \"old\": removed"},
		{"description and title", `[` + sum + `]`,
			`[{"name": "sum", "title": "Sum", "description": "Adds two numbers", "inputSchema": ` + schemaOf(t, sum) + `}]`,
			"tool \"sum\": title changed\ntool \"sum\": description changed"},
		{"input schema", `[` + sum + `]`,
			`[{"name": "sum", "description": "Adds", "inputSchema": {"type": "object",
				"properties": {"a": {"type": "integer"}, "c/d": {"type": "number"}}, "required": ["a"],
				"additionalProperties": false}}]`,
			"tool \"sum\": input schema changed at /additionalProperties, /properties/a/type, /properties/b, /properties/c~1d, /required/1"},
		{"output schema and annotations", `[{"name": "w", "inputSchema": {}, "annotations": {"readOnlyHint": true}}]`,
			`[{"name": "w", "inputSchema": {}, "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": false}}]`,
			"tool \"w\": output schema changed at (the whole value)\ntool \"w\": annotations changed at /readOnlyHint"},
		{"a value of another type", `[{"name": "t", "inputSchema": {"enum": ["a"]}}]`,
			`[{"name": "t", "inputSchema": {"enum": {"a": 1}}}]`,
			"tool \"t\": input schema changed at /enum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range mcplock.Diff(server(t, tt.locked), server(t, tt.live)) {
				got = append(got, c.String())
			}
			if strings.Join(got, "\n") != tt.want {
				t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), tt.want)
			}
		})
	}
}

// schemaOf returns the input schema of a tool written as JSON.
func schemaOf(t *testing.T, tool string) string {
	var v struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal([]byte(tool), &v); err != nil {
		t.Fatal(err)
	}
	return string(v.InputSchema)
}

func TestDiffNil(t *testing.T) {
	live := &mcplock.Server{Tools: []mcplock.Tool{{Name: "a"}}}
	got := fmt.Sprint(mcplock.Diff(nil, live), mcplock.Diff(live, nil), mcplock.Diff(nil, nil))
	if want := `[tool "a": added] [tool "a": removed] []`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
