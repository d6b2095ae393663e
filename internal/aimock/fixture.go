package aimock

import (
	"encoding/json"
	"time"
)

// Fixture is one canned answer of the server: the requests it matches
// and what it answers. The first fixture, in the order they were added,
// that matches a request answers it.
type Fixture struct {
	Match    Match
	Response Response

	// ChunkSize is how many characters of text, reasoning or tool call
	// arguments one streamed chunk holds; aimock's default (20) when zero.
	ChunkSize int
	// Latency is a pause before each streamed chunk.
	Latency time.Duration
	// Profile sets the pace of the stream: it wins over Latency.
	Profile *StreamingProfile
	// TruncateAfterChunks, when positive, tears down the connection after
	// that many chunks were written, as a server that crashes mid-stream
	// would. The chunk written last before the teardown may never reach the
	// client, so give the stream a Latency to make the chunks before it
	// arrive.
	TruncateAfterChunks int
	// DisconnectAfter, when positive, tears down the connection that long
	// after the answer started.
	DisconnectAfter time.Duration
	// Chaos injects failures into the requests this fixture matches.
	Chaos *Chaos
}

// Match says which requests a fixture answers; every field given must
// match, and a Match with none matches every request.
type Match struct {
	UserMessage   string // a substring of the last user message's text
	SystemMessage string // a substring of the system messages' text
	Model         string // the request's model, or its name without a "-<digit>…" version
	ToolName      string // a tool the request offers
	ToolCallID    string // the last message is the result of this tool call

	// ToolResultContains: the last message is a tool result that contains
	// this text.
	ToolResultContains string
	// HasToolResult, when set, says whether the current turn (the messages
	// after the last user message) has a tool result, telling the request
	// that leads to a tool call from the one that brings its result.
	HasToolResult *bool
	// SequenceIndex, when set, makes the fixture answer only the n-th
	// request (counting from 0) that the fixtures with the same other
	// criteria match, so that repeated requests get different answers.
	SequenceIndex *int
	// TurnIndex prefers the fixture for requests with this many assistant
	// messages.
	TurnIndex *int
}

// Response is what a fixture answers: an Error, or text, reasoning and
// tool calls.
type Response struct {
	Content      string
	Reasoning    string // streamed before the text: reasoning_content deltas, or a thinking block on the Messages API
	ToolCalls    []ToolCall
	Usage        *Usage // the token counts reported; estimated when nil
	FinishReason string // "stop", or "tool_calls" for tool calls, when empty

	// Error makes the answer an error with HTTP status Status (500 when
	// zero); a 429 carries a Retry-After header of RetryAfter (1s when
	// zero).
	Error      *Error
	Status     int
	RetryAfter time.Duration
}

// ToolCall is a tool call of an answer.
type ToolCall struct {
	ID        string // made up by aimock when empty
	Name      string
	Arguments string // a JSON object, as text
}

// Usage is the token counts an answer reports.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Error is the body of an error answer, as OpenAI's API sends it; on the
// Messages API aimock sends {"type": "error", "error": {type, message}},
// with the type "api_error" when Type is empty.
type Error struct {
	Message string `json:"message"`
	Type    string `json:"type,omitempty"`
	Code    string `json:"code,omitempty"`
}

// StreamingProfile sets the pace of a streamed answer.
type StreamingProfile struct {
	TTFT   time.Duration // the wait before the first chunk
	TPS    float64       // chunks per second after it
	Jitter float64       // a random share, such as 0.1, to vary each wait by
}

// Chaos injects failures: each rate, from 0 to 1, is the chance of its
// failure, drawn in the order drop, malformed, rate limit, disconnect.
// Latency is a fixed delay before each request is handled.
type Chaos struct {
	DropRate       float64 // the connection closes with no answer
	MalformedRate  float64 // the answer is not valid JSON
	RateLimitRate  float64 // a 429 with Retry-After
	DisconnectRate float64 // the connection closes mid-answer
	Latency        time.Duration
}

// ms converts a duration to the whole milliseconds aimock counts in.
func ms(d time.Duration) int64 { return d.Milliseconds() }

// MarshalJSON writes the fixture in aimock's JSON format, durations in
// milliseconds.
func (f Fixture) MarshalJSON() ([]byte, error) {
	type out struct {
		Match               Match             `json:"match"`
		Response            Response          `json:"response"`
		ChunkSize           int               `json:"chunkSize,omitempty"`
		Latency             int64             `json:"latency,omitempty"`
		Profile             *StreamingProfile `json:"streamingProfile,omitempty"`
		TruncateAfterChunks int               `json:"truncateAfterChunks,omitempty"`
		DisconnectAfterMs   int64             `json:"disconnectAfterMs,omitempty"`
		Chaos               *Chaos            `json:"chaos,omitempty"`
	}
	return json.Marshal(out{
		Match:               f.Match,
		Response:            f.Response,
		ChunkSize:           f.ChunkSize,
		Latency:             ms(f.Latency),
		Profile:             f.Profile,
		TruncateAfterChunks: f.TruncateAfterChunks,
		DisconnectAfterMs:   ms(f.DisconnectAfter),
		Chaos:               f.Chaos,
	})
}

// MarshalJSON writes the match in aimock's JSON format, leaving out the
// fields not given.
func (m Match) MarshalJSON() ([]byte, error) {
	type out struct {
		UserMessage        string `json:"userMessage,omitempty"`
		SystemMessage      string `json:"systemMessage,omitempty"`
		Model              string `json:"model,omitempty"`
		ToolName           string `json:"toolName,omitempty"`
		ToolCallID         string `json:"toolCallId,omitempty"`
		ToolResultContains string `json:"toolResultContains,omitempty"`
		HasToolResult      *bool  `json:"hasToolResult,omitempty"`
		SequenceIndex      *int   `json:"sequenceIndex,omitempty"`
		TurnIndex          *int   `json:"turnIndex,omitempty"`
	}
	return json.Marshal(out(m))
}

// MarshalJSON writes the response in aimock's JSON format: an error
// answer, or text, reasoning and tool calls.
func (r Response) MarshalJSON() ([]byte, error) {
	if r.Error != nil {
		type errorOut struct {
			Error      *Error `json:"error"`
			Status     int    `json:"status,omitempty"`
			RetryAfter int64  `json:"retryAfter,omitempty"`
		}
		return json.Marshal(errorOut{Error: r.Error, Status: r.Status, RetryAfter: int64(r.RetryAfter / time.Second)})
	}
	type call struct {
		ID        string `json:"id,omitempty"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type out struct {
		// aimock tells a text answer by its content, and an answer of text
		// and tool calls by both: content is left out only beside tool
		// calls.
		Content      *string `json:"content,omitempty"`
		Reasoning    string  `json:"reasoning,omitempty"`
		ToolCalls    []call  `json:"toolCalls,omitempty"`
		Usage        *Usage  `json:"usage,omitempty"`
		FinishReason string  `json:"finishReason,omitempty"`
	}
	o := out{Reasoning: r.Reasoning, Usage: r.Usage, FinishReason: r.FinishReason}
	if r.Content != "" || len(r.ToolCalls) == 0 {
		o.Content = &r.Content
	}
	for _, tc := range r.ToolCalls {
		args := tc.Arguments
		if args == "" {
			args = "{}"
		}
		o.ToolCalls = append(o.ToolCalls, call{ID: tc.ID, Name: tc.Name, Arguments: args})
	}
	return json.Marshal(o)
}

// MarshalJSON writes the profile in aimock's JSON format, durations in
// milliseconds.
func (p StreamingProfile) MarshalJSON() ([]byte, error) {
	type out struct {
		TTFT   int64   `json:"ttft,omitempty"`
		TPS    float64 `json:"tps,omitempty"`
		Jitter float64 `json:"jitter,omitempty"`
	}
	return json.Marshal(out{TTFT: ms(p.TTFT), TPS: p.TPS, Jitter: p.Jitter})
}

// MarshalJSON writes the chaos in aimock's JSON format, durations in
// milliseconds.
func (c Chaos) MarshalJSON() ([]byte, error) {
	type out struct {
		DropRate       float64 `json:"dropRate,omitempty"`
		MalformedRate  float64 `json:"malformedRate,omitempty"`
		RateLimitRate  float64 `json:"rateLimitRate,omitempty"`
		DisconnectRate float64 `json:"disconnectRate,omitempty"`
		LatencyMs      int64   `json:"latencyMs,omitempty"`
	}
	return json.Marshal(out{
		DropRate:       c.DropRate,
		MalformedRate:  c.MalformedRate,
		RateLimitRate:  c.RateLimitRate,
		DisconnectRate: c.DisconnectRate,
		LatencyMs:      ms(c.Latency),
	})
}
