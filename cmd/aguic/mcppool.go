package main

import (
	"log/slog"

	"github.com/aguic/aguic/mcpclient"
	"github.com/aguic/aguic/telemetry"
)

// mcpPool makes the connections of a command to the MCP servers its
// workflows declare, telling the servers this build's version, and
// tracing the tool calls with tracing (nil: none); the command closes it
// when it ends, which stops the servers it started.
func mcpPool(log *slog.Logger, tracing *telemetry.Tracing) *mcpclient.Pool {
	o := mcpclient.Options{Logger: log, Version: buildVersionText()}
	if tracing.On() {
		o.Trace = tracing.MCP
	}
	return mcpclient.NewPool(o)
}
