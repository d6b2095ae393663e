package stdlib

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"

	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// toolCallKeys declares the keys of a kind that sends one tool call: its
// args, how they stream (pace) and the state they predict, then more.
func toolCallKeys(more ...vm.KeySpec) []vm.KeySpec {
	return append([]vm.KeySpec{
		{Name: "args", Type: vm.TypeObject,
			Doc: "The tool call's arguments, streamed as the TOOL_CALL_ARGS JSON; {} when absent."},
		paceKey("the arguments' JSON text goes word by word, one TOOL_CALL_ARGS a word, instead of in one delta, so string arguments stream word by word"),
		predictKey("args", "The client's state keys that the call's arguments predict while they stream, each mapped to the name of an argument, such as {document: \"document\"}: a PredictState CUSTOM event before the call tells the client. The workflow's own state does not change."),
	}, more...)
}

// The persist modes of the tool-call kinds.
const (
	persistNone          = "none"
	persistCall          = "call"
	persistCallAndResult = "call_and_result"
)

// persists reports whether a node of a kind with a persist key writes its
// chat: unless persist is "none", written or by default; a computed persist
// may.
func persists(n *vm.Node) bool {
	if v := n.Keys["persist"]; v != nil {
		if v.Template == nil || v.Template.Single() != nil || len(v.Template.Parts) != 1 {
			return true
		}
		return v.Template.Parts[0].Text != persistNone
	}
	return n.Spec.Key("persist").Default != persistNone
}

func persistKey(def string) vm.KeySpec {
	return vm.KeySpec{Name: "persist", Type: vm.TypeString, Default: def, Enum: []string{"none", "call", "call_and_result"},
		Doc: "Which chat messages to append to chat: none; call, the assistant's tool-call message; or call_and_result, that and the tool result message."}
}

// callHead is what a tool-call node calls: the tool's name, its arguments
// as JSON text, and how they stream.
type callHead struct {
	name, args string
	pace       *pacer
	predict    []any // the PredictState entries of the call; nil for none
}

// toolCallHead evaluates what a tool-call node calls: the tool's name, its
// positional argument; its args, an object ({} when absent), as JSON text;
// its pace and its predictions.
func toolCallHead(c *vm.Call) (callHead, error) {
	v, err := c.Arg()
	if err != nil {
		return callHead{}, err
	}
	h := callHead{name: vm.Text(v), args: "{}"}
	var args map[string]any
	if err := c.UnpackKeys("args", &args); err != nil {
		return callHead{}, err
	}
	if args != nil {
		if h.args, err = encodeJSON(args); err != nil {
			return callHead{}, vm.Errorf(vm.ErrNode, "args: %v", err)
		}
	}
	if h.pace, err = newPacer(c); err != nil {
		return callHead{}, err
	}
	if h.predict, err = callPredictions(c, h.name, args); err != nil {
		return callHead{}, err
	}
	return h, nil
}

// emitToolCall emits the call's PredictState when it predicts state, then
// TOOL_CALL_START, TOOL_CALL_ARGS (one a word, spaced by the pace, when
// the node has one) and TOOL_CALL_END.
func emitToolCall(ctx context.Context, c *vm.Call, id string, h callHead) error {
	if h.predict != nil {
		if err := c.Emit(predictEvent(h.predict, id)); err != nil {
			return err
		}
	}
	if err := c.Emit(vm.Event{Type: vm.ToolCallStart, ToolCallID: id, ToolCallName: h.name}); err != nil {
		return err
	}
	pieces := []string{h.args}
	if h.pace.on() {
		pieces = llm.Words(h.args)
	}
	for _, piece := range pieces {
		if err := h.pace.next(ctx); err != nil {
			return err
		}
		if err := c.Emit(vm.Event{Type: vm.ToolCallArgs, ToolCallID: id, Delta: piece}); err != nil {
			return err
		}
	}
	return c.Emit(vm.Event{Type: vm.ToolCallEnd, ToolCallID: id})
}

func toolResult(id, content string) vm.Event {
	return vm.Event{Type: vm.ToolCallResult, MessageID: vm.ToolPrefix + id, ToolCallID: id, Content: content}
}

// resultContent is a tool result as message content: a string as it is,
// any other value as compact JSON.
func resultContent(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	s, err := encodeJSON(v)
	if err != nil {
		return "", vm.Errorf(vm.ErrNode, "result: %v", err)
	}
	return s, nil
}

// parseContent parses a tool result's content when it is JSON.
func parseContent(s string) (any, bool) {
	if strings.TrimSpace(s) == "" || !json.Valid([]byte(s)) {
		return nil, false
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, false
	}
	return vm.Normalize(v), true
}

// callMessage is the chat message of an assistant calling a tool.
func callMessage(id, name, args string) any {
	return llm.ToValue([]llm.Message{{
		Role:      llm.RoleAssistant,
		ToolCalls: []llm.ToolCall{{ID: id, Name: name, Arguments: args}},
	}})[0]
}

// resultMessage is the chat message of a tool's result.
func resultMessage(id, content string) any {
	return llm.ToValue([]llm.Message{{Role: llm.RoleTool, ToolCallID: id, Content: content}})[0]
}

// chatList reads the node's chat history: the list at its chat path.
func chatList(c *vm.Call) (*vm.Path, []any, error) {
	p := c.KeyPath("chat")
	if p == nil {
		return nil, nil, vm.Errorf(vm.ErrInternal, "no chat path")
	}
	switch v := c.Get(p).(type) {
	case nil:
		return p, nil, nil
	case []any:
		return p, v, nil
	default:
		return nil, nil, vm.Errorf(vm.ErrNode, "chat history %s must be a list, found %s", p, vm.Describe(v))
	}
}

// appendChat appends msgs to the node's chat history, creating the list
// when it is absent.
func appendChat(c *vm.Call, msgs []any) error {
	if len(msgs) == 0 {
		return nil
	}
	p, list, err := chatList(c)
	if err != nil {
		return err
	}
	out := make([]any, 0, len(list)+len(msgs))
	out = append(append(out, list...), msgs...)
	if err := c.Set(p, out); err != nil {
		return vm.Errorf(vm.ErrNode, "chat history: %v", err)
	}
	return nil
}

// removeChat removes from the node's chat history the last message equal
// to each of msgs, if it is still there.
func removeChat(c *vm.Call, msgs []any) error {
	if len(msgs) == 0 {
		return nil
	}
	p, list, err := chatList(c)
	if err != nil || list == nil {
		return err
	}
	out := slices.Clone(list)
	removed := false
	for _, m := range msgs {
		for i := len(out) - 1; i >= 0; i-- {
			if reflect.DeepEqual(out[i], m) {
				out = slices.Delete(out, i, i+1)
				removed = true
				break
			}
		}
	}
	if !removed {
		return nil
	}
	if err := c.Set(p, out); err != nil {
		return vm.Errorf(vm.ErrNode, "chat history: %v", err)
	}
	return nil
}

// fromState decodes node state saved by SetState into v.
func fromState(st, v any) error {
	if st == nil {
		return errors.New("no state")
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
