package stdlib

import (
	"context"

	"github.com/aguic/aguic/vm"
)

func frontendTool() *vm.KindSpec {
	return &vm.KindSpec{
		Name:     "frontend_tool",
		Exec:     execFrontendTool,
		Gives:    func(*vm.Node) vm.Gives { return vm.Gives{ClientTools: true, Approvals: true} },
		Persists: persists,
		Pure:     true,
		Doc:      "Asks the client to run one of its tools (TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END) and suspends; on resume the one incoming message is either that call's result, which is emitted as TOOL_CALL_RESULT and stored before `on result` runs, or anything else, which abandons the call before `on other` runs.",
		Arg:      &vm.ArgSpec{Name: "tool name", Type: vm.TypeString, Required: true, Doc: "The name of the client's tool to call."},
		Keys: toolCallKeys(
			persistKey("none"),
			vm.KeySpec{Name: "chat", Type: vm.TypePath, Writes: true, Path: "$input.chat",
				Doc: "The chat history persist appends to, and from which an abandoned call's messages are removed; $input.chat when absent and persist is not none."},
			vm.KeySpec{Name: "hide_after", Type: vm.TypeBool, Default: false,
				Doc: "Once the call is handled, hide its tool-call events from replay so a reloaded client does not ask again."},
		),
		Handlers: []vm.Handler{
			{Name: "result", Required: true,
				Doc: "Runs when the incoming message is this call's tool result, after the result is stored."},
			{Name: "other", Required: true,
				Doc: "Runs when the incoming message is anything else, after the call is abandoned: the chat messages it wrote are removed and its events hidden from replay."},
		},
		Suspend: vm.SuspendAlways,
		Convo:   true,
		Result:  "the tool result message {toolCallId, messageId, content, value?}",
		Example: "confirm: frontend_tool \"confirm_refund\" {\n" +
			"  args = {orderId: $order.id}\n" +
			"  on result { say \"Done.\" }\n" +
			"  on other { say \"Cancelled.\" }\n" +
			"} -> $approval",
	}
}

// frontendState is what a suspended frontend_tool node keeps in its node
// state: the call it waits for and what it wrote to the chat history.
type frontendState struct {
	ToolCallID string `json:"toolCallId"`
	Persist    string `json:"persist"`
	HideAfter  bool   `json:"hideAfter,omitempty"`
	Wrote      []any  `json:"wrote,omitempty"` // the chat messages it appended
}

// execFrontendTool asks the client to run a tool and suspends; resumed, it
// takes the one incoming message as the call's result (edge result) or
// abandons the call (edge other).
func execFrontendTool(ctx context.Context, c *vm.Call) (vm.Step, error) {
	if c.Resume != nil {
		return resumeFrontendTool(c)
	}
	h, err := toolCallHead(c)
	if err != nil {
		return vm.Step{}, err
	}
	var persist string
	var hide bool
	if err := c.UnpackKeys("persist", &persist, "hide_after", &hide); err != nil {
		return vm.Step{}, err
	}
	// State left by a call whose resume failed: that call is abandoned
	// for the new one.
	var stale frontendState
	if fromState(c.State(), &stale) == nil && stale.ToolCallID != "" {
		if err := removeChat(c, stale.Wrote); err != nil {
			return vm.Step{}, err
		}
		if err := c.Emit(vm.Event{Type: vm.HideToolCall, ToolCallID: stale.ToolCallID}); err != nil {
			return vm.Step{}, err
		}
	}
	id := c.NextID("call")
	if err := emitToolCall(ctx, c, id, h); err != nil {
		return vm.Step{}, err
	}
	st := frontendState{ToolCallID: id, Persist: persist, HideAfter: hide}
	if persist != persistNone {
		st.Wrote = []any{callMessage(id, h.name, h.args)}
		if err := appendChat(c, st.Wrote); err != nil {
			return vm.Step{}, err
		}
	}
	c.SetState(st)
	return vm.Step{Wait: &vm.Wait{Kind: vm.WaitTool, ToolCallIDs: []string{id}}}, nil
}

func resumeFrontendTool(c *vm.Call) (vm.Step, error) {
	var st frontendState
	if err := fromState(c.State(), &st); err != nil || st.ToolCallID == "" {
		return vm.Step{}, vm.Errorf(vm.ErrInternal, "the checkpoint holds no pending tool call for this node")
	}
	if len(c.Resume.Interrupts) > 0 {
		return vm.Step{}, vm.Errorf(vm.ErrResume, "tool call %q waits for its result in a tool message, not for interrupt answers", st.ToolCallID)
	}
	msg, err := incomingMessage(c, st.ToolCallID)
	if err != nil {
		return vm.Step{}, err
	}
	c.SetState(nil)
	id := st.ToolCallID
	res, answered := c.Resume.ToolResult(id)
	if !answered || msg["role"] != "tool" {
		// Anything else abandons the call: the chat forgets it and
		// replay no longer asks the question.
		if err := removeChat(c, st.Wrote); err != nil {
			return vm.Step{}, err
		}
		return vm.Step{Edge: "other"}, c.Emit(vm.Event{Type: vm.HideToolCall, ToolCallID: id})
	}
	content, ok := res.Content.(string)
	if !ok {
		return vm.Step{}, vm.Errorf(vm.ErrResume, "the result of tool call %q must be text, found %s", id, vm.Describe(res.Content))
	}
	if err := c.Emit(toolResult(id, content)); err != nil {
		return vm.Step{}, err
	}
	if st.Persist == persistCallAndResult {
		if err := appendChat(c, []any{resultMessage(id, content)}); err != nil {
			return vm.Step{}, err
		}
	}
	if st.HideAfter {
		if err := c.Emit(vm.Event{Type: vm.HideToolCall, ToolCallID: id}); err != nil {
			return vm.Step{}, err
		}
	}
	result := map[string]any{"toolCallId": id, "messageId": res.MessageID, "content": content}
	if v, ok := parseContent(content); ok {
		result["value"] = v
	}
	return vm.Step{Edge: "result", Result: result}, nil
}

// incomingMessage returns the one message of this turn, $agent.messages,
// checked as far as frontend_tool needs: an id, a role, and for a tool
// message a string content and a toolCallId.
func incomingMessage(c *vm.Call, pending string) (map[string]any, error) {
	if c.Resume.Agent == nil && c.Resume.Merge["agent"] == nil {
		return nil, vm.Errorf(vm.ErrResume, "the resume brings no incoming message; tool call %q waits for its result", pending)
	}
	msgs, ok := c.Get(agentMessages).([]any)
	if !ok || len(msgs) != 1 {
		return nil, vm.Errorf(vm.ErrResume, "expected exactly one incoming message for tool call %q, found %d", pending, len(msgs))
	}
	msg, ok := msgs[0].(map[string]any)
	if !ok {
		return nil, vm.Errorf(vm.ErrResume, "the incoming message must be an object, found %s", vm.Describe(msgs[0]))
	}
	if id, _ := msg["id"].(string); id == "" {
		return nil, vm.Errorf(vm.ErrResume, "the incoming message has no id")
	}
	role, _ := msg["role"].(string)
	if role == "" {
		return nil, vm.Errorf(vm.ErrResume, "incoming message %q has no role", msg["id"])
	}
	if role == "tool" {
		if _, ok := msg["content"].(string); !ok {
			return nil, vm.Errorf(vm.ErrResume, "tool message %q must have string content, found %s", msg["id"], vm.Describe(msg["content"]))
		}
		if id, _ := msg["toolCallId"].(string); id == "" {
			return nil, vm.Errorf(vm.ErrResume, "tool message %q has no toolCallId", msg["id"])
		}
	}
	return msg, nil
}

var agentMessages = vm.ParsePath("$agent.messages")
