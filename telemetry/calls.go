package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/aguic/aguic/stdlib/llm"
)

// Models wraps a model resolver (stdlib.Options.Models): each provider it
// returns traces its calls as GenAI client spans ("chat {model}"). With
// tracing off it returns resolve.
func (t *Tracing) Models(resolve func(name string) (llm.Provider, error)) func(name string) (llm.Provider, error) {
	if t == nil || resolve == nil {
		return resolve
	}
	return func(name string) (llm.Provider, error) {
		p, err := resolve(name)
		if err != nil || p == nil {
			return p, err
		}
		provider, _, _ := llm.SplitModel(name)
		return &tracedProvider{t: t, next: p, provider: provider}, nil
	}
}

// tracedProvider is a provider whose calls are traced.
type tracedProvider struct {
	t        *Tracing
	next     llm.Provider
	provider string // as the model's name writes it: "openai" of "openai/gpt-4o-mini"
}

// Stream traces one call of the provider: a span from the request to the
// whole answer, with the model, the tokens and why the model stopped.
func (p *tracedProvider) Stream(ctx context.Context, req *llm.Request, on func(llm.Chunk) error) (*llm.Response, error) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(p.provider),
		semconv.GenAIRequestModel(req.Model),
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	if req.Temperature != nil {
		attrs = append(attrs, semconv.GenAIRequestTemperature(*req.Temperature))
	}
	if req.Schema != nil {
		attrs = append(attrs, semconv.GenAIOutputTypeJSON)
	}
	if p.t.capture {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(inputMessages(req.Messages)))
	}
	ctx, span := p.t.tracer.Start(parent(ctx), "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	resp, err := p.next.Stream(ctx, req, on)
	if err != nil {
		failed(span, err)
		return resp, err
	}
	model := resp.Model
	if model == "" {
		model = req.Model
	}
	reason := resp.FinishReason
	if reason == "" {
		reason = "stop"
		if len(resp.ToolCalls) > 0 {
			reason = "tool_calls"
		}
	}
	span.SetAttributes(
		semconv.GenAIResponseModel(model),
		semconv.GenAIResponseFinishReasons(reason),
		semconv.GenAIUsageInputTokens(resp.Usage.InputTokens),
		semconv.GenAIUsageOutputTokens(resp.Usage.OutputTokens),
	)
	if p.t.capture {
		span.SetAttributes(semconv.GenAIOutputMessagesKey.String(outputMessage(resp, reason)))
	}
	return resp, nil
}

// failed marks span as failed with err: error.type is "timeout" for a
// deadline, "cancelled" for a cancellation, else the Go type of err.
func failed(span trace.Span, err error) {
	kind := "_OTHER"
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		kind = "timeout"
	case errors.Is(err, context.Canceled):
		kind = "cancelled"
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(kind))
	span.SetStatus(codes.Error, err.Error())
}

// part is one part of a message, as the GenAI conventions' message
// schemas (gen_ai.input.messages, gen_ai.output.messages) describe it.
type part struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Response  string `json:"response,omitempty"`
	URI       string `json:"uri,omitempty"`
	MimeType  string `json:"mime_type,omitempty"`
	Modality  string `json:"modality,omitempty"`
}

// message is a message as those schemas describe it.
type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// inputMessages is gen_ai.input.messages of msgs. Images sent inline are
// named by their type, never copied.
func inputMessages(msgs []llm.Message) string {
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		mm := message{Role: m.Role, Parts: []part{}}
		switch {
		case m.Role == llm.RoleTool:
			mm.Parts = append(mm.Parts, part{Type: "tool_call_response", ID: m.ToolCallID, Response: m.Content})
		case m.Content != "":
			mm.Parts = append(mm.Parts, part{Type: "text", Content: m.Content})
		}
		for _, img := range m.Images {
			if img.URL != "" {
				mm.Parts = append(mm.Parts, part{Type: "uri", URI: img.URL, Modality: "image", MimeType: img.MimeType})
			} else {
				mm.Parts = append(mm.Parts, part{Type: "blob", Modality: "image", MimeType: img.MimeType})
			}
		}
		mm.Parts = append(mm.Parts, toolCallParts(m.ToolCalls)...)
		out = append(out, mm)
	}
	return jsonText(out)
}

// outputMessage is gen_ai.output.messages of resp.
func outputMessage(resp *llm.Response, reason string) string {
	m := message{Role: llm.RoleAssistant, Parts: []part{}, FinishReason: reason}
	if resp.Reasoning != "" {
		m.Parts = append(m.Parts, part{Type: "reasoning", Content: resp.Reasoning})
	}
	if resp.Text != "" {
		m.Parts = append(m.Parts, part{Type: "text", Content: resp.Text})
	}
	m.Parts = append(m.Parts, toolCallParts(resp.ToolCalls)...)
	return jsonText([]message{m})
}

func toolCallParts(calls []llm.ToolCall) []part {
	var parts []part
	for _, tc := range calls {
		var args any = tc.Arguments
		if json.Valid([]byte(tc.Arguments)) {
			args = json.RawMessage(tc.Arguments)
		}
		parts = append(parts, part{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: args})
	}
	return parts
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// Tool starts the span of a backend tool call of a model node
// (through stdlib.Options.ToolCall): execute_tool, under the node. It returns
// the context the tool runs in, whose calls are traced under it, and the
// function that ends the span with the call's error.
func (t *Tracing) Tool(ctx context.Context, name, callID string) (context.Context, func(error)) {
	if t == nil {
		return ctx, func(error) {}
	}
	ctx, span := t.tracer.Start(parent(ctx), "execute_tool "+name, trace.WithAttributes(
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(name),
		semconv.GenAIToolCallID(callID),
		semconv.GenAIToolTypeKey.String("function"),
	))
	return ctx, ender(span)
}

// MCP starts the span of a call of an MCP server's tool
// (mcpclient.Options.Trace): "tools/call {tool}", a client span.
func (t *Tracing) MCP(ctx context.Context, server, tool string) (context.Context, func(error)) {
	if t == nil {
		return ctx, func(error) {}
	}
	ctx, span := t.tracer.Start(parent(ctx), "tools/call "+tool, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		semconv.McpMethodNameKey.String("tools/call"),
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(tool),
		AttrMCPServer.String(server),
	))
	return ctx, ender(span)
}

// ender returns the function that ends span with an error, or none.
func ender(span trace.Span) func(error) {
	return func(err error) {
		if err != nil {
			failed(span, err)
		}
		span.End()
	}
}

// Transport wraps base (nil: http.DefaultTransport) so that each request
// is a client span, from the request to the response's headers, and
// carries the span's W3C trace context (traceparent) to the service. The
// span's url.full leaves out credentials and the query, which may hold
// secrets. With tracing off it returns base.
func (t *Tracing) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if t == nil {
		return base
	}
	return &transport{t: t, base: base}
}

// transport is the RoundTripper Transport returns.
type transport struct {
	t    *Tracing
	base http.RoundTripper
}

// RoundTrip sends req in a span of its own.
func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	u := *req.URL
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(req.Method),
		semconv.URLFull(u.String()),
		semconv.ServerAddress(req.URL.Hostname()),
	}
	if p, err := strconv.Atoi(req.URL.Port()); err == nil {
		attrs = append(attrs, semconv.ServerPort(p))
	}
	ctx, span := tr.t.tracer.Start(parent(req.Context()), req.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	out := req.Clone(ctx)
	tr.t.prop.Inject(ctx, propagation.HeaderCarrier(out.Header))
	resp, err := tr.base.RoundTrip(out)
	if err != nil {
		failed(span, err)
		return resp, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(resp.StatusCode)))
		span.SetStatus(codes.Error, resp.Status)
	}
	return resp, nil
}
