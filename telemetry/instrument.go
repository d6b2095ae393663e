package telemetry

import (
	"context"

	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
)

// Instrument makes what opts gives the node kinds traced: the providers
// its Models resolver returns, the backend tool calls of model nodes
// (ToolCall, after any observer it has) and the requests of http nodes and tools (HTTPClient, whose
// transport it wraps; a client like the one http nodes make of their own
// when it is nil). The MCP connections are traced by their pool
// (mcpclient.Options.Trace = t.MCP). With tracing off it changes nothing.
func (t *Tracing) Instrument(opts *stdlib.Options) {
	if t == nil {
		return
	}
	opts.Models = t.Models(opts.Models)
	opts.ToolCall = opts.ToolCall.And(func(ctx context.Context, call stdlib.ToolCallInfo) (context.Context, func(error)) {
		return t.Tool(ctx, call.Name, call.ID)
	})
	base := opts.HTTPClient
	if base == nil {
		base = llm.NewHTTPClient()
	}
	c := *base
	c.Transport = t.Transport(base.Transport)
	opts.HTTPClient = &c
}
