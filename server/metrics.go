package server

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aguic/aguic/vm"
)

// metricsPath is the path of the metrics (Config.Metrics).
const metricsPath = "/metrics"

// The outcomes of runs that are not a vm.Status.
const (
	outcomeHandedOver = "handed_over"
	outcomeRejected   = "rejected"
	outcomeInvalid    = "invalid_input"
)

// outcome is the outcome a run's metrics count: its status, failed for a
// run the store failed, or handed_over.
func (s *Server) outcome(o vm.Outcome, err error) string {
	switch {
	case err != nil && s.handing.Err() != nil && errors.Is(err, s.handing.Err()):
		return outcomeHandedOver
	case err != nil:
		return string(vm.Failed)
	}
	return string(o.Status)
}

// countMCP counts the calls of the MCP tool of workflow id that h
// handles, by outcome: ok, error (a result that is an error), or
// cancelled (the call ended before its result).
func (s *Server) countMCP(id string, h mcp.ToolHandler) mcp.ToolHandler {
	if s.cfg.Metrics == nil {
		return h
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := h(ctx, req)
		outcome := "ok"
		switch {
		case err != nil:
			outcome = string(vm.Cancelled)
		case res != nil && res.IsError:
			outcome = "error"
		}
		s.cfg.Metrics.MCPToolCall(id, outcome)
		return res, err
	}
}
