package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/shared"
)

// OpenAIOptions configure an OpenAI provider.
type OpenAIOptions struct {
	// APIKey is sent as a bearer token; when empty, the OPENAI_API_KEY
	// environment variable is used, and with neither no key is sent (as
	// local servers such as Ollama or llama.cpp expect).
	APIKey string
	// BaseURL is the API's root, such as "https://api.openai.com/v1" or
	// "http://localhost:11434/v1"; when empty, OPENAI_BASE_URL or else the
	// OpenAI API.
	BaseURL string
	// HTTPClient sends the requests; when nil, a client of the provider's
	// own that keeps a connection open for each concurrent call
	// (NewHTTPClient).
	HTTPClient *http.Client
	// MaxRetries is how many times the SDK itself tries a failed request
	// again. Zero, the default, leaves retrying to the model node.
	MaxRetries int
}

// OpenAI is a Provider for the chat completions API of OpenAI and of the
// servers compatible with it (vLLM, Ollama, llama.cpp, OpenRouter…). It
// streams; a failing HTTP status is a *StatusError.
type OpenAI struct {
	client openai.Client
}

// NewOpenAI returns an OpenAI provider.
func NewOpenAI(opts OpenAIOptions) *OpenAI {
	ro := []option.RequestOption{option.WithMaxRetries(max(opts.MaxRetries, 0))}
	if opts.APIKey != "" {
		ro = append(ro, option.WithAPIKey(opts.APIKey))
	}
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
	}
	ro = append(ro, option.WithHTTPClient(cmp.Or(opts.HTTPClient, NewHTTPClient())))
	return &OpenAI{client: openai.NewClient(ro...)}
}

// Stream sends req as a streaming chat completion, calls on with each
// piece of text, reasoning and tool call as it arrives and returns the
// whole answer.
func (p *OpenAI) Stream(ctx context.Context, req *Request, on func(Chunk) error) (*Response, error) {
	params, err := openAIParams(req)
	if err != nil {
		return nil, err
	}
	stream := p.client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()

	resp := &Response{}
	var text, reasoning strings.Builder
	var calls []*ToolCall // by the index of the server; nil for a gap
	finished := false     // a choice had a finish_reason
	for stream.Next() {
		chunk := stream.Current()
		if chunk.Model != "" {
			resp.Model = chunk.Model
		}
		if u := chunk.Usage; chunk.JSON.Usage.Valid() && (u.PromptTokens != 0 || u.CompletionTokens != 0) {
			// Servers that report usage on several chunks report running
			// totals, so the last one counts.
			resp.Usage = Usage{InputTokens: int(u.PromptTokens), OutputTokens: int(u.CompletionTokens)}
		}
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue // n is never set, so there is only one choice
			}
			if choice.FinishReason != "" {
				finished = true
				resp.FinishReason = choice.FinishReason
			}
			d := choice.Delta
			if r := openAIReasoning(d.JSON.ExtraFields); r != "" {
				reasoning.WriteString(r)
				if err := on(Chunk{Reasoning: r}); err != nil {
					return nil, err
				}
			}
			if d.Content != "" {
				text.WriteString(d.Content)
				if err := on(Chunk{Text: d.Content}); err != nil {
					return nil, err
				}
			}
			for _, tc := range d.ToolCalls {
				i := int(tc.Index)
				if i < 0 {
					i = 0 // some servers send -1 for their only call
				}
				if i > len(calls)+1024 {
					return nil, fmt.Errorf("openai: tool call index %d out of range", tc.Index)
				}
				for len(calls) <= i {
					calls = append(calls, nil)
				}
				c := calls[i]
				if c == nil {
					c = &ToolCall{}
					calls[i] = c
				}
				if c.ID == "" {
					c.ID = tc.ID
				}
				c.Name += tc.Function.Name
				c.Arguments += tc.Function.Arguments
				delta := &ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
				if err := on(Chunk{ToolCall: delta}); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, openAIError(ctx, err)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("openai: %w", ctx.Err())
	}
	if !finished {
		return nil, errors.New("openai: the stream ended before the answer was complete")
	}
	resp.Text, resp.Reasoning = text.String(), reasoning.String()
	for _, c := range calls {
		if c != nil {
			resp.ToolCalls = append(resp.ToolCalls, *c)
		}
	}
	return resp, nil
}

// openAIReasoning reads the reasoning of a delta, which the API does not
// define but servers send as reasoning_content (DeepSeek, vLLM, llama.cpp)
// or reasoning (Ollama, OpenRouter).
func openAIReasoning(extra map[string]respjson.Field) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		f, ok := extra[key]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// openAIError converts an error of the SDK: a failing status becomes a
// *StatusError, a cancelled call the context's error, a connection that
// closed mid-answer an error that says so.
func openAIError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("openai: %w", ctx.Err())
	}
	if cerr := connectionError("openai", err); cerr != nil {
		return cerr
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = strings.TrimSpace(apiErr.RawJSON())
		}
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		return &StatusError{StatusCode: apiErr.StatusCode, Message: msg}
	}
	return fmt.Errorf("openai: %w", err)
}

// openAIParams builds the chat completion request of req.
func openAIParams(req *Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{
		Model: shared.ChatModel(req.Model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{
			IncludeUsage: openai.Bool(true),
		},
	}
	for i, m := range req.Messages {
		msg, err := openAIMessage(m)
		if err != nil {
			return params, fmt.Errorf("openai: message %d: %w", i, err)
		}
		params.Messages = append(params.Messages, msg)
	}
	for _, t := range req.Tools {
		schema, err := jsonObject(t.Parameters)
		if err != nil {
			return params, fmt.Errorf("openai: tool %q: parameters: %w", t.Name, err)
		}
		if schema == nil {
			schema = map[string]any{"type": "object"}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.Schema != nil {
		schema, err := jsonObject(req.Schema)
		if err != nil {
			return params, fmt.Errorf("openai: output schema: %w", err)
		}
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "output", Schema: schema},
			},
		}
	}
	return params, nil
}

// openAIMessage converts a message.
func openAIMessage(m Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case RoleSystem:
		msg := openai.SystemMessage(m.Content)
		if m.Name != "" {
			msg.OfSystem.Name = openai.String(m.Name)
		}
		return msg, nil
	case RoleUser:
		msg := openai.UserMessage(m.Content)
		if len(m.Images) > 0 {
			var parts []openai.ChatCompletionContentPartUnionParam
			if m.Content != "" {
				parts = append(parts, openai.TextContentPart(m.Content))
			}
			for _, img := range m.Images {
				url := img.URL
				if url == "" {
					mime := img.MimeType
					if mime == "" {
						mime = "image/png"
					}
					url = "data:" + mime + ";base64," + img.Data
				}
				parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url}))
			}
			msg = openai.UserMessage(parts)
		}
		if m.Name != "" {
			msg.OfUser.Name = openai.String(m.Name)
		}
		return msg, nil
	case RoleAssistant:
		var a openai.ChatCompletionAssistantMessageParam
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Content)
		}
		if m.Name != "" {
			a.Name = openai.String(m.Name)
		}
		for _, tc := range m.ToolCalls {
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case RoleTool:
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
}

// jsonObject converts a JSON Schema, any value that marshals to a JSON
// object, into a map; nil stays nil.
func jsonObject(v any) (map[string]any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}
