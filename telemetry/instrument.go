package telemetry

import (
	"net/http"

	"github.com/aguic/aguic/stdlib"
)

// Instrument makes what opts gives the node kinds traced: the providers
// its Models resolver returns, the backend tool calls of model nodes
// (TraceTool) and the requests of http nodes and tools (HTTPClient, whose
// transport it wraps; a client like the one http nodes make of their own
// when it is nil). The MCP connections are traced by their pool
// (mcpclient.Options.Trace = t.MCP). With tracing off it changes nothing.
func (t *Tracing) Instrument(opts *stdlib.Options) {
	if t == nil {
		return
	}
	opts.Models = t.Models(opts.Models)
	opts.TraceTool = t.Tool
	base := opts.HTTPClient
	if base == nil {
		base = &http.Client{}
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			base.Transport = dt.Clone()
		}
	}
	c := *base
	c.Transport = t.Transport(base.Transport)
	opts.HTTPClient = &c
}
