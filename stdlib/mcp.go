package stdlib

import (
	"context"

	"github.com/aguic/aguic/mcpclient"
	"github.com/aguic/aguic/vm"
)

// mcpKind declares the mcp kind: a call of a tool of an MCP server the
// files declare (`mcp name { … }`).
func mcpKind(pool *mcpclient.Pool) *vm.KindSpec {
	return &vm.KindSpec{
		Name: "mcp",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			return execMCP(ctx, c, pool)
		},
		Gives: func(*vm.Node) vm.Gives { return vm.Gives{Tools: true} },
		Tool: &vm.ToolSpec{
			Doc:   "Its description and parameters default to the MCP tool's (from mcp.lock.json when the server is locked); the model gets the tool's structured value as JSON when it has one, else its text, and `error: <text>` when the tool reports an error; a result = expr beside the node shapes it instead, reading the call's result as $result: {text, content, value}.",
			Shape: mcpToolResult,
			Var:   "result",
		},
		Doc:  "Calls a tool of an MCP server the files declare and gives its result; a result the tool marks as an error is a run-time error of the node.",
		Word: &vm.WordSpec{Name: "server", Servers: true},
		Arg: &vm.ArgSpec{Name: "tool", Type: vm.TypeServerTool, Required: true,
			Doc: "The name of the server's tool, a string literal without <<…>>; with a lock it must be a tool the server lists and its tools list allows."},
		Keys: []vm.KeySpec{
			{Name: "args", Type: vm.TypeArguments,
				Doc: "The tool's arguments, an object; a map literal is checked against the tool's input schema when the server is locked. When absent: the model's arguments ($args) inside a tool, else {}."},
			{Name: "timeout", Type: vm.TypeDuration,
				Doc: `How long the call may take before it fails, such as "20s"; the server's timeout (60s unless its declaration sets one) when absent.`},
			{Name: "retry", Type: vm.TypeInt,
				Doc: "How many more times a call that could not reach the server is tried (never one the tool answered with an error); the server's retry when absent."},
			{Name: "backoff", Type: vm.TypeBackoff,
				Doc: `The waits between tries as "first..longest", doubling from the first up to the longest; the server's backoff when absent.`},
			{Name: "stream", Type: vm.TypeBool, Default: true,
				Doc: "Whether the client sees the call as a tool call (TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END, TOOL_CALL_RESULT), as backend_tool shows one."},
		},
		Result: "{text, content, value}: text is the text parts joined, content the MCP content blocks, value the structured content, else the text parsed when it is JSON, else nil",
		Example: "mcp everything \"get-sum\" {\n" +
			"  args = {a: 1, b: 2}\n" +
			"} -> $sum",
	}
}

// mcpToolResult is what the model gets of an mcp node's result when it
// implements a tool: the value when there is one, else the text.
func mcpToolResult(result any) any {
	m, ok := result.(map[string]any)
	if !ok {
		return result
	}
	if v := m["value"]; v != nil {
		return v
	}
	return m["text"]
}
