package mcpclient

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aguic/aguic/vm"
)

// Result is what a tool call returned.
type Result struct {
	// Content are the result's content blocks as JSON objects, such as
	// {"type": "text", "text": "…"}, normalized as vm values are.
	Content []map[string]any
	// Structured is the result's structuredContent, normalized, or nil.
	Structured any
	// IsError says the tool failed: the content says why.
	IsError bool
}

// Text is the text of the result's text blocks, joined by newlines.
func (r *Result) Text() string {
	var parts []string
	for _, c := range r.Content {
		if c["type"] == "text" {
			if s, ok := c["text"].(string); ok {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// Value is the result as one value: its structured content when it has
// some, else its text parsed when the text is one JSON value, else nil.
func (r *Result) Value() any {
	if r.Structured != nil {
		return r.Structured
	}
	v, ok := parseJSON([]byte(r.Text()))
	if !ok {
		return nil
	}
	return v
}

// resultOf converts the SDK's result.
func resultOf(res *mcp.CallToolResult) *Result {
	r := &Result{IsError: res.IsError, Content: make([]map[string]any, 0, len(res.Content))}
	for _, c := range res.Content {
		if m, ok := toJSON(c).(map[string]any); ok {
			r.Content = append(r.Content, m)
		}
	}
	if res.StructuredContent != nil {
		r.Structured = toJSON(res.StructuredContent)
	}
	return r
}

// toJSON turns a value into the JSON value it encodes, normalized: ints
// stay ints, objects are maps. A value that does not encode is nil.
func toJSON(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	out, _ := parseJSON(data)
	return out
}

// parseJSON parses data when it is exactly one JSON value.
func parseJSON(data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return vm.Normalize(v), true
}
