package llm

import "context"

// Provider is a model API: OpenAI-compatible servers, a scripted provider
// for tests and demos.
type Provider interface {
	// Stream sends one request and reports the answer as it arrives.
	Stream(ctx context.Context, req *Request, on func(Chunk) error) (*Response, error)
}

// Request is one model call.
type Request struct {
	Model       string // the model's name at its provider: "gpt-4o-mini" of "openai/gpt-4o-mini"
	Messages    []Message
	Tools       []Tool
	Temperature *float64
	MaxTokens   int
	Schema      any // JSON Schema of structured output; nil for text
}

// Tool is a tool the model may call.
type Tool struct {
	Name        string
	Description string
	Parameters  any // JSON Schema
}

// Chunk is a piece of a streamed answer: text, reasoning, or a part of a
// tool call.
type Chunk struct {
	Text      string
	Reasoning string
	ToolCall  *ToolCallDelta
}

// ToolCallDelta is a streamed part of a tool call; Index tells calls apart.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// Response is a whole answer.
type Response struct {
	Text      string
	Reasoning string
	ToolCalls []ToolCall
	Usage     Usage
	// Model is the model that answered, as the provider names it; ""
	// when the provider does not say.
	Model string
	// FinishReason is why the model stopped, as the provider says it
	// ("stop", "tool_calls", "end_turn", "length"…); "" when it does not.
	FinishReason string
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
}
