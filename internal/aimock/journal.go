package aimock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Entry is one request the server received, as its journal keeps it.
type Entry struct {
	ID       string            `json:"id"`
	Method   string            `json:"method"`
	Path     string            `json:"path"`
	Headers  map[string]string `json:"headers"` // lower-case names
	Body     json.RawMessage   `json:"body"`    // the request's JSON body; null when it had none
	Response EntryResponse     `json:"response"`
}

// EntryResponse is what the server answered a request.
type EntryResponse struct {
	Status int `json:"status"`
	// Interrupted: the server tore the connection down mid-answer, and
	// InterruptReason says why ("truncateAfterChunks", "client aborted"…).
	Interrupted     bool   `json:"interrupted,omitempty"`
	InterruptReason string `json:"interruptReason,omitempty"`
	// ChaosAction is the failure chaos injected: "drop", "malformed",
	// "rateLimit" or "disconnect".
	ChaosAction string `json:"chaosAction,omitempty"`
}

// Chat decodes the body of a chat completions request. aimock journals
// the requests of the Anthropic Messages API (/v1/messages) as the chat
// completions requests it converts them to: system blocks joined into a
// system message, tool_result blocks as tool messages, tool_use blocks as
// tool calls, input_schema as parameters and max_tokens as MaxTokens; only
// the text of other content blocks is kept. Chat decodes those too.
func (e *Entry) Chat() (*ChatRequest, error) {
	var req ChatRequest
	if err := json.Unmarshal(e.Body, &req); err != nil {
		return nil, fmt.Errorf("journal entry %s (%s %s): %w", e.ID, e.Method, e.Path, err)
	}
	return &req, nil
}

// isChat reports whether e is a request of the chat completions API.
func (e *Entry) isChat() bool {
	return e.Method == "POST" && strings.HasSuffix(strings.SplitN(e.Path, "?", 2)[0], "/chat/completions")
}

// isMessages reports whether e is a request of Anthropic's Messages API.
func (e *Entry) isMessages() bool {
	return e.Method == "POST" && strings.HasSuffix(strings.SplitN(e.Path, "?", 2)[0], "/v1/messages")
}

// ChatRequest is the body of a chat completions request: the fields the
// tests read.
type ChatRequest struct {
	Model               string         `json:"model"`
	Messages            []ChatMessage  `json:"messages"`
	Tools               []ChatTool     `json:"tools"`
	Temperature         *float64       `json:"temperature"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
	MaxTokens           *int           `json:"max_tokens"` // the max_tokens of a Messages API request
	Stream              bool           `json:"stream"`
	StreamOptions       *StreamOptions `json:"stream_options"`
	ResponseFormat      map[string]any `json:"response_format"`
}

// StreamOptions are the stream_options of a request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatMessage is a message of a request.
type ChatMessage struct {
	Role       string         `json:"role"`
	Content    Content        `json:"content"`
	Name       string         `json:"name"`
	ToolCalls  []ChatToolCall `json:"tool_calls"`
	ToolCallID string         `json:"tool_call_id"`
}

// Content is the content of a message: text, or a list of parts.
type Content struct {
	Text  string
	Parts []Part // nil when the content is text
}

// UnmarshalJSON reads a string, a list of parts or null.
func (c *Content) UnmarshalJSON(data []byte) error {
	*c = Content{}
	switch data = bytes.TrimSpace(data); {
	case bytes.Equal(data, []byte("null")):
		return nil
	case len(data) > 0 && data[0] == '[':
		return json.Unmarshal(data, &c.Parts)
	}
	return json.Unmarshal(data, &c.Text)
}

// Part is a part of a message's content: {type: "text", text} or
// {type: "image_url", image_url: {url}}.
type Part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is the image of an image part: a URL or a data: URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// ChatToolCall is a tool call of an assistant message.
type ChatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function ChatFunction `json:"function"`
}

// ChatTool is a tool a request offers.
type ChatTool struct {
	Type     string       `json:"type"`
	Function ChatFunction `json:"function"`
}

// ChatFunction is the function of a tool or of a tool call: a tool has
// a description and parameters, a call arguments.
type ChatFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
	Arguments   string         `json:"arguments,omitempty"`
}
