package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// AnthropicOptions configure an Anthropic provider.
type AnthropicOptions struct {
	// APIKey is sent in the x-api-key header; when empty, the
	// ANTHROPIC_API_KEY environment variable is used, and with neither no
	// key is sent (as a gateway that adds its own expects).
	APIKey string
	// BaseURL is the API's root, such as "https://api.anthropic.com"; when
	// empty, ANTHROPIC_BASE_URL or else the Anthropic API.
	BaseURL string
	// HTTPClient sends the requests; when nil, a client of the provider's
	// own that keeps a connection open for each concurrent call
	// (NewHTTPClient).
	HTTPClient *http.Client
	// MaxRetries is how many times the SDK itself tries a failed request
	// again. Zero, the default, leaves retrying to the model node.
	MaxRetries int
}

// anthropicMaxTokens is the max_tokens of a request that sets none: the
// API requires one, and every Claude model can write this many.
const anthropicMaxTokens = 4096

// Anthropic is a Provider for Anthropic's Messages API (Claude). It
// streams; a failing HTTP status, or an error event in the stream, is a
// *StatusError.
//
// System messages become the request's system prompt, joined by blank
// lines; tool results become tool_result blocks of a user turn, and
// consecutive messages of the same turn are merged, as the API requires
// user and assistant turns to alternate. Message names are dropped: the
// API has none. A request without MaxTokens asks for at most 4096 tokens.
// An output Schema is sent as the request's output_config.format (the
// API's structured outputs, which only recent models support), adapted
// by the SDK to the subset of JSON Schema the API accepts; the answer is
// the JSON text. Extended thinking is never asked for, but thinking that
// a model sends anyway is streamed as reasoning.
type Anthropic struct {
	client anthropic.Client
}

// NewAnthropic returns an Anthropic provider.
func NewAnthropic(opts AnthropicOptions) *Anthropic {
	ro := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), // no credential files or other variables
		option.WithMaxRetries(max(opts.MaxRetries, 0)),
	}
	key := opts.APIKey
	if key == "" {
		key = os.Getenv("ANTHROPIC_API_KEY")
	}
	if key != "" {
		ro = append(ro, option.WithAPIKey(key))
	}
	url := opts.BaseURL
	if url == "" {
		url = os.Getenv("ANTHROPIC_BASE_URL")
	}
	if url != "" {
		ro = append(ro, option.WithBaseURL(url))
	}
	ro = append(ro, option.WithHTTPClient(cmp.Or(opts.HTTPClient, NewHTTPClient())))
	return &Anthropic{client: anthropic.NewClient(ro...)}
}

// anthropicBlock is a content block of a streamed answer.
type anthropicBlock struct {
	call  *ToolCall // a tool_use block's call; nil for the other kinds
	index int       // the call's index among the answer's calls
	input string    // the input of content_block_start, for a server that sends no deltas
}

// Stream sends req as a streaming message, calls on with each piece of
// text, reasoning and tool call as it arrives and returns the whole
// answer. Tool call deltas are indexed by the call's place among the
// answer's calls; a call without arguments gets "{}".
func (p *Anthropic) Stream(ctx context.Context, req *Request, on func(Chunk) error) (*Response, error) {
	params, err := anthropicParams(req)
	if err != nil {
		return nil, err
	}
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	var text, reasoning strings.Builder
	var calls []*ToolCall
	blocks := map[int64]*anthropicBlock{} // tool_use blocks, by the index of the server
	var usage anthropic.Usage             // input and output tokens so far
	var model, stop string                // the model that answers, why it stopped
	stopped := false                      // message_stop arrived
	emit := func(ch Chunk) error {
		if ch.Text != "" {
			text.WriteString(ch.Text)
		}
		if ch.Reasoning != "" {
			reasoning.WriteString(ch.Reasoning)
		}
		return on(ch)
	}
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			usage, model = ev.Message.Usage, string(ev.Message.Model)
		case "message_delta":
			if ev.Delta.StopReason != "" {
				stop = string(ev.Delta.StopReason)
			}
			// The counts are running totals; a field that is absent keeps
			// what message_start said.
			u := ev.Usage
			if u.JSON.InputTokens.Valid() {
				usage.InputTokens = u.InputTokens
			}
			if u.JSON.CacheCreationInputTokens.Valid() {
				usage.CacheCreationInputTokens = u.CacheCreationInputTokens
			}
			if u.JSON.CacheReadInputTokens.Valid() {
				usage.CacheReadInputTokens = u.CacheReadInputTokens
			}
			if u.JSON.OutputTokens.Valid() {
				usage.OutputTokens = u.OutputTokens
			}
		case "message_stop":
			stopped = true
		case "content_block_start":
			cb := ev.ContentBlock
			switch cb.Type {
			case "text":
				if cb.Text != "" {
					if err := emit(Chunk{Text: cb.Text}); err != nil {
						return nil, err
					}
				}
			case "thinking":
				if cb.Thinking != "" {
					if err := emit(Chunk{Reasoning: cb.Thinking}); err != nil {
						return nil, err
					}
				}
			case "tool_use":
				b := &anthropicBlock{call: &ToolCall{ID: cb.ID, Name: cb.Name}, index: len(calls)}
				if in := strings.TrimSpace(cb.JSON.Input.Raw()); strings.HasPrefix(in, "{") && in != "{}" {
					b.input = in
				}
				blocks[ev.Index] = b
				calls = append(calls, b.call)
				if err := on(Chunk{ToolCall: &ToolCallDelta{Index: b.index, ID: cb.ID, Name: cb.Name}}); err != nil {
					return nil, err
				}
			}
		case "content_block_delta":
			d := ev.Delta
			switch d.Type {
			case "text_delta":
				if d.Text != "" {
					if err := emit(Chunk{Text: d.Text}); err != nil {
						return nil, err
					}
				}
			case "thinking_delta":
				if d.Thinking != "" {
					if err := emit(Chunk{Reasoning: d.Thinking}); err != nil {
						return nil, err
					}
				}
			case "input_json_delta":
				b := blocks[ev.Index]
				if b == nil || d.PartialJSON == "" {
					continue
				}
				b.call.Arguments += d.PartialJSON
				if err := on(Chunk{ToolCall: &ToolCallDelta{Index: b.index, Arguments: d.PartialJSON}}); err != nil {
					return nil, err
				}
			}
		case "content_block_stop":
			b := blocks[ev.Index]
			if b == nil || b.call.Arguments != "" {
				continue
			}
			b.call.Arguments = b.input
			if b.call.Arguments == "" {
				b.call.Arguments = "{}"
			}
			if err := on(Chunk{ToolCall: &ToolCallDelta{Index: b.index, Arguments: b.call.Arguments}}); err != nil {
				return nil, err
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, anthropicError(ctx, err)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("anthropic: %w", ctx.Err())
	}
	if !stopped {
		return nil, errors.New("anthropic: the stream ended before the answer was complete")
	}
	resp := &Response{
		Text:         text.String(),
		Reasoning:    reasoning.String(),
		Model:        model,
		FinishReason: stop,
		Usage: Usage{
			// Cached input is input too, as OpenAI's prompt_tokens counts it.
			InputTokens:  int(usage.InputTokens + usage.CacheCreationInputTokens + usage.CacheReadInputTokens),
			OutputTokens: int(usage.OutputTokens),
		},
	}
	for _, c := range calls {
		if c.Arguments == "" {
			c.Arguments = "{}"
		}
		resp.ToolCalls = append(resp.ToolCalls, *c)
	}
	return resp, nil
}

// anthropicError converts an error of the SDK: a failing status becomes a
// *StatusError, and so does an error event in the stream, with the status
// the API gives its type (529 for overloaded_error); a cancelled call is
// the context's error, a connection that closed mid-answer an error that
// says so.
func anthropicError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("anthropic: %w", ctx.Err())
	}
	if cerr := connectionError("anthropic", err); cerr != nil {
		return cerr
	}
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		return fmt.Errorf("anthropic: %w", err)
	}
	raw := strings.TrimSpace(apiErr.RawJSON())
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(raw), &body)
	status := apiErr.StatusCode
	if status < 400 {
		// An error event after the stream began with 200 OK.
		status = anthropicErrorStatus(body.Error.Type)
	}
	msg := body.Error.Message
	if msg == "" {
		msg = raw
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &StatusError{StatusCode: status, Message: msg}
}

// anthropicErrorStatus is the HTTP status of an error type of the API; a
// type it does not know is a server error.
func anthropicErrorStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	}
	return http.StatusInternalServerError
}

// anthropicParams builds the message request of req.
func anthropicParams(req *Request) (anthropic.MessageNewParams, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: anthropicMaxTokens,
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = int64(req.MaxTokens)
	}
	var system []string
	for i, m := range req.Messages {
		if m.Role == RoleSystem {
			if m.Content != "" {
				system = append(system, m.Content)
			}
			continue
		}
		role, blocks, err := anthropicBlocks(m)
		if err != nil {
			return params, fmt.Errorf("anthropic: message %d: %w", i, err)
		}
		if len(blocks) == 0 {
			continue // the API refuses empty turns
		}
		if n := len(params.Messages); n > 0 && params.Messages[n-1].Role == role {
			params.Messages[n-1].Content = append(params.Messages[n-1].Content, blocks...)
			continue
		}
		params.Messages = append(params.Messages, anthropic.MessageParam{Role: role, Content: blocks})
	}
	if len(system) > 0 {
		params.System = []anthropic.TextBlockParam{{Text: strings.Join(system, "\n\n")}}
	}
	for _, t := range req.Tools {
		schema, err := jsonObject(t.Parameters)
		if err != nil {
			return params, fmt.Errorf("anthropic: tool %q: parameters: %w", t.Name, err)
		}
		if schema == nil {
			schema = map[string]any{"type": "object"}
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: anthropic.ToolInputSchemaParam{ExtraFields: schema}}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	if req.Temperature != nil {
		params.Temperature = anthropic.Float(*req.Temperature)
	}
	if req.Schema != nil {
		schema, err := jsonObject(req.Schema)
		if err != nil {
			return params, fmt.Errorf("anthropic: output schema: %w", err)
		}
		params.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: anthropicSchema(schema)}
	}
	return params, nil
}

// anthropicSchema adapts an output schema to what structured outputs
// accept: objects closed with additionalProperties false, and keywords the
// API does not support moved into descriptions. The answer is still
// checked against the schema as written. A schema the SDK cannot read is
// sent as it is.
func anthropicSchema(schema map[string]any) map[string]any {
	schema = maps.Clone(schema)
	delete(schema, "$schema") // the draft is the API's to choose
	if out, ok := anthropic.BetaJSONSchemaOutputFormat(schema).Schema.(map[string]any); ok && out != nil {
		return out
	}
	return schema
}

// anthropicBlocks converts a message that is not a system message into
// the role and content blocks of a turn.
func anthropicBlocks(m Message) (anthropic.MessageParamRole, []anthropic.ContentBlockParamUnion, error) {
	var blocks []anthropic.ContentBlockParamUnion
	switch m.Role {
	case RoleUser:
		if m.Content != "" {
			blocks = append(blocks, anthropic.NewTextBlock(m.Content))
		}
		for _, img := range m.Images {
			blocks = append(blocks, anthropicImage(img))
		}
		return anthropic.MessageParamRoleUser, blocks, nil
	case RoleAssistant:
		if m.Content != "" {
			blocks = append(blocks, anthropic.NewTextBlock(m.Content))
		}
		for _, tc := range m.ToolCalls {
			args := strings.TrimSpace(tc.Arguments)
			if args == "" {
				args = "{}"
			}
			var input map[string]any
			if err := json.Unmarshal([]byte(args), &input); err != nil || input == nil {
				return "", nil, fmt.Errorf("tool call %q: the arguments are not a JSON object", tc.Name)
			}
			blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, json.RawMessage(args), tc.Name))
		}
		return anthropic.MessageParamRoleAssistant, blocks, nil
	case RoleTool:
		if m.ToolCallID == "" {
			return "", nil, errors.New("a tool message needs the toolCallId of the call it answers")
		}
		result := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
		if m.Content != "" {
			result.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
		}
		blocks = append(blocks, anthropic.ContentBlockParamUnion{OfToolResult: &result})
		return anthropic.MessageParamRoleUser, blocks, nil
	}
	return "", nil, fmt.Errorf("unknown role %q", m.Role)
}

// anthropicImage converts an image: a URL, a data: URL or base64 data.
func anthropicImage(img Image) anthropic.ContentBlockParamUnion {
	if img.URL != "" {
		if rest, ok := strings.CutPrefix(img.URL, "data:"); ok {
			if meta, data, ok := strings.Cut(rest, ","); ok && strings.HasSuffix(meta, ";base64") {
				return anthropic.NewImageBlockBase64(strings.TrimSuffix(meta, ";base64"), data)
			}
		}
		return anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: img.URL})
	}
	mime := img.MimeType
	if mime == "" {
		mime = "image/png"
	}
	return anthropic.NewImageBlockBase64(mime, img.Data)
}
