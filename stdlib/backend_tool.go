package stdlib

import (
	"context"

	"github.com/aguic/aguic/vm"
)

func backendTool() *vm.KindSpec {
	return &vm.KindSpec{
		Name:     "backend_tool",
		Exec:     execBackendTool,
		Gives:    func(*vm.Node) vm.Gives { return vm.Gives{Tools: true} },
		Persists: persists,
		Pure:     true,
		Doc:      "Emits a whole tool call with its result (TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END, TOOL_CALL_RESULT) without suspending, so the client renders data the workflow already has as a tool call.",
		Arg:      &vm.ArgSpec{Name: "name", Type: vm.TypeString, Required: true, Doc: "The tool name shown to the client."},
		Keys: toolCallKeys(
			vm.KeySpec{Name: "result", Type: vm.TypeAny, Required: true,
				Doc: "The tool's result, sent as the TOOL_CALL_RESULT content: a string as it is, any other value as JSON."},
			persistKey("call_and_result"),
			vm.KeySpec{Name: "chat", Type: vm.TypePath, Writes: true, Path: "$input.chat",
				Doc: "The chat history persist appends to; $input.chat when absent and persist is not none."},
		),
		Result: "{toolCallId, result}",
		Example: "backend_tool \"lookup_weather\" {\n" +
			"  args   = {city: \"Sydney\"}\n" +
			"  result = \"Sunny\"\n" +
			"} -> $weather",
	}
}

// execBackendTool emits a whole tool call with its result and appends the
// chat messages persist asks for.
func execBackendTool(ctx context.Context, c *vm.Call) (vm.Step, error) {
	h, err := toolCallHead(c)
	if err != nil {
		return vm.Step{}, err
	}
	var result any
	var persist string
	if err := c.UnpackKeys("result", &result, "persist", &persist); err != nil {
		return vm.Step{}, err
	}
	result = vm.Normalize(result)
	content, err := resultContent(result)
	if err != nil {
		return vm.Step{}, err
	}
	id := c.NextID("call")
	if err := emitToolCall(ctx, c, id, h); err != nil {
		return vm.Step{}, err
	}
	if err := c.Emit(toolResult(id, content)); err != nil {
		return vm.Step{}, err
	}
	var msgs []any
	switch persist {
	case persistCall:
		msgs = []any{callMessage(id, h.name, h.args)}
	case persistCallAndResult:
		msgs = []any{callMessage(id, h.name, h.args), resultMessage(id, content)}
	}
	if err := appendChat(c, msgs); err != nil {
		return vm.Step{}, err
	}
	return vm.Step{Result: map[string]any{"toolCallId": id, "result": result}}, nil
}
