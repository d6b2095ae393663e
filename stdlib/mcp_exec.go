package stdlib

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aguic/aguic/mcpclient"
	"github.com/aguic/aguic/vm"
)

// execMCP calls the tool of an mcp node on its server. Outside a tool the
// call is shown to the client as a tool call when stream is on; inside
// one, the model node that called the tool shows it.
func execMCP(ctx context.Context, c *vm.Call, pool *mcpclient.Pool) (vm.Step, error) {
	s := c.Server(c.Node.Word)
	if s == nil {
		return vm.Step{}, vm.Errorf(vm.ErrInternal, "mcp: the program declares no server %q", c.Node.Word)
	}
	tool, err := c.Arg()
	if err != nil {
		return vm.Step{}, err
	}
	name, ok := tool.(string)
	if !ok || name == "" {
		return vm.Step{}, vm.Errorf(vm.ErrNode, "mcp %s: the tool's name must be a string, found %s", s.Name, vm.Text(tool))
	}
	var args any
	var timeout time.Duration
	retry := -1
	var backoff string
	stream := true
	if err := c.UnpackKeys("args", &args, "timeout", &timeout, "retry", &retry, "backoff", &backoff, "stream", &stream); err != nil {
		return vm.Step{}, err
	}
	if c.Node.Keys["args"] == nil && c.Tool != nil {
		args = c.Get(vm.ParsePath("$args"))
	}
	argm, err := mcpArgs(s.Name, name, args)
	if err != nil {
		return vm.Step{}, err
	}
	// A node's timeout, retry and backoff replace the server's for its call.
	call := *s
	if timeout > 0 {
		call.Timeout = timeout
	}
	if retry >= 0 {
		call.Retry = retry
	}
	if backoff != "" {
		call.Backoff = backoff
	}
	shown := stream && c.Tool == nil
	id := c.NextID("call")
	if shown {
		h := callHead{name: name, args: vm.Text(argm)}
		if err := emitToolCall(ctx, c, id, h); err != nil {
			return vm.Step{}, err
		}
	}
	res, err := callMCP(ctx, pool, &call, name, argm)
	if err != nil {
		return vm.Step{}, err
	}
	out := mcpResult(res)
	if shown {
		content := res.Text()
		if res.IsError {
			content = "error: " + content
		} else if v := out["value"]; v != nil && res.Structured != nil {
			content = vm.Text(v)
		}
		if err := c.Emit(toolResult(id, content)); err != nil {
			return vm.Step{}, err
		}
	}
	if res.IsError {
		return vm.Step{}, vm.Errorf(vm.ErrNode, "mcp %s %q: the tool failed: %s", s.Name, name, mcpErrorText(res))
	}
	return vm.Step{Result: out}, nil
}

// callMCP calls tool on server s through pool, turning what went wrong
// into the node's errors: the run's cancellation stays one, anything else
// names the server and the tool.
func callMCP(ctx context.Context, pool *mcpclient.Pool, s *vm.Server, tool string, args map[string]any) (*mcpclient.Result, error) {
	if pool == nil {
		return nil, vm.Errorf(vm.ErrNode, "mcp %s %q: this process connects to no MCP servers", s.Name, tool)
	}
	res, err := pool.Call(ctx, s, tool, args)
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	msg := err.Error()
	if !strings.Contains(msg, s.Name) {
		msg = fmt.Sprintf("mcp %s %q: %s", s.Name, tool, msg)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, vm.Errorf(vm.ErrTimeout, "%s", msg)
	}
	return nil, vm.Errorf(vm.ErrNode, "%s", msg)
}

// mcpArgs checks that a call's arguments are an object.
func mcpArgs(server, tool string, args any) (map[string]any, error) {
	switch a := vm.Normalize(args).(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return a, nil
	default:
		return nil, vm.Errorf(vm.ErrNode, "mcp %s %q: args must be an object, found %s", server, tool, vm.Text(a))
	}
}

// mcpResult is an mcp node's result: {text, content, value}.
func mcpResult(r *mcpclient.Result) map[string]any {
	content := make([]any, len(r.Content))
	for i, c := range r.Content {
		content[i] = c
	}
	return map[string]any{"text": r.Text(), "content": content, "value": r.Value()}
}

// mcpErrorText is what a failed tool said, or that it said nothing.
func mcpErrorText(r *mcpclient.Result) string {
	if t := strings.TrimSpace(r.Text()); t != "" {
		return t
	}
	return "it gave no reason"
}
