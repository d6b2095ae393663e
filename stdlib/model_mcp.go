package stdlib

import (
	"context"
	"fmt"

	"github.com/aguic/aguic/mcpclient"
	"github.com/aguic/aguic/mcplock"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// mcpTool is a tool of an MCP server that a model node offers because its
// tools list names the server.
type mcpTool struct {
	server *vm.Server
	name   string
}

// run calls the tool with the model's arguments and returns what the
// model gets, as a tool implemented by an mcp node does: the structured
// value, else the text; a result the tool marks as an error is an error
// the model reads.
func (t mcpTool) run(ctx context.Context, pool *mcpclient.Pool, args map[string]any) (any, error) {
	res, err := callMCP(ctx, pool, t.server, t.name, args)
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, vm.Errorf(vm.ErrNode, "%s", mcpErrorText(res))
	}
	return mcpToolResult(mcpResult(res)), nil
}

// addServer offers the model the tools of the MCP server name that its
// declaration allows: as the lock describes them when the server is
// locked, so that a server that changes its tools changes nothing until
// it is locked again; else as the server lists them now.
func (m *modelRun) addServer(ctx context.Context, name string) error {
	s := m.c.Server(name)
	if s == nil {
		return vm.Errorf(vm.ErrInternal, "tools: the program declares no MCP server %q", name)
	}
	tools, err := m.serverTools(ctx, s)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if !s.Allows(t.Name) {
			continue
		}
		if m.backend[t.Name] != nil || m.mcp[t.Name].server != nil {
			return vm.Errorf(vm.ErrNode, "tools: MCP server %s has a tool %q, and the node offers another tool of that name; declare a tool that renames one of them", s.Name, t.Name)
		}
		var params any = map[string]any{"type": "object"}
		if t.InputSchema != nil {
			params = vm.Normalize(t.InputSchema)
		}
		m.mcp[t.Name] = mcpTool{server: s, name: t.Name}
		m.params[t.Name] = params
		m.req.Tools = append(m.req.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: params})
	}
	return nil
}

// serverTools are the tools of s: locked, else live.
func (m *modelRun) serverTools(ctx context.Context, s *vm.Server) ([]mcplock.Tool, error) {
	if s.Locked != nil {
		return s.Locked.Tools, nil
	}
	if m.pool == nil {
		return nil, vm.Errorf(vm.ErrNode, "tools: MCP server %s: this process connects to no MCP servers", s.Name)
	}
	tools, err := m.pool.Tools(ctx, s)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, vm.Errorf(vm.ErrNode, "tools: listing the tools of MCP server %s: %v", s.Name, err)
	}
	return tools, nil
}

// liveMCPTool is the MCP tool a workflow tool implemented by an mcp node
// calls, as its server describes it, for a tool that leaves out its
// description or parameters (the compiler fills them from a lock); nil
// for a tool of another kind.
func (m *modelRun) liveMCPTool(ctx context.Context, t *vm.Tool) (*mcplock.Tool, error) {
	if t.Impl == nil || t.Impl.Spec == nil || t.Impl.Spec.Word == nil || !t.Impl.Spec.Word.Servers {
		return nil, nil
	}
	s := m.c.Server(t.Impl.Word)
	if s == nil {
		return nil, vm.Errorf(vm.ErrInternal, "tool %q: the program declares no MCP server %q", t.Name, t.Impl.Word)
	}
	name, err := vm.EvalConst(t.Impl.Arg)
	if err != nil {
		return nil, err
	}
	tools, err := m.serverTools(ctx, s)
	if err != nil {
		return nil, err
	}
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i], nil
		}
	}
	return nil, vm.Errorf(vm.ErrNode, "tool %q: MCP server %s has no tool %q", t.Name, s.Name, fmt.Sprint(name))
}
