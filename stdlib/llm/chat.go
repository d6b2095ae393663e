package llm

import (
	"encoding/json"
	"fmt"
)

// The chat roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one provider-neutral chat message.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	Name       string     `json:"name,omitempty"`       // author name (a developer message's name)
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`  // assistant: the tools it calls
	ToolCallID string     `json:"toolCallId,omitempty"` // tool: the call this answers
	Images     []Image    `json:"images,omitempty"`     // user: image parts
}

// ToolCall is a model's call of a tool.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON object, as text
}

// Image is an image part of a user message: a URL or base64 data.
type Image struct {
	URL      string `json:"url,omitempty"`
	Data     string `json:"data,omitempty"` // base64
	MimeType string `json:"mimeType,omitempty"`
}

// FromValue reads chat history from a context value: a list of message
// objects, or nil for an empty history.
func FromValue(v any) ([]Message, error) {
	if v == nil {
		return nil, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("chat history: %w", err)
	}
	var msgs []Message
	if err := json.Unmarshal(data, &msgs); err != nil {
		return nil, fmt.Errorf("chat history must be a list of {role, content} objects: %w", err)
	}
	for i, m := range msgs {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		default:
			return nil, fmt.Errorf("chat history: message %d has role %q; want system, user, assistant or tool", i, m.Role)
		}
	}
	return msgs, nil
}

// ToValue converts messages into the JSON tree the context holds.
func ToValue(msgs []Message) []any {
	out := make([]any, 0, len(msgs))
	for _, m := range msgs {
		data, _ := json.Marshal(m)
		var v map[string]any
		_ = json.Unmarshal(data, &v)
		out = append(out, v)
	}
	return out
}
