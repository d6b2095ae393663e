package stdlib

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// attachMessages sets the Exec of say, emit, output, backend_tool,
// frontend_tool, suspend and interrupt.
func attachMessages(r *vm.Registry, opts Options) {
	execs := map[string]vm.Exec{
		"say":           execSay,
		"emit":          execEmit,
		"output":        execOutput,
		"backend_tool":  execBackendTool,
		"frontend_tool": execFrontendTool,
		"suspend":       execSuspend,
		"interrupt":     execInterrupt,
	}
	for name, exec := range execs {
		attach(r, name, exec)
	}
}

// attach sets the Exec of the kind name, which kinds() must have defined.
func attach(r *vm.Registry, name string, exec vm.Exec) {
	k := r.Kind(name)
	if k == nil {
		panic(fmt.Sprintf("stdlib: no kind %q to attach an Exec to", name))
	}
	k.Exec = exec
}

// execSay sends one text message: TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT
// (left out when the text is empty: AG-UI wants a non-empty delta) and
// TEXT_MESSAGE_END.
func execSay(ctx context.Context, c *vm.Call) (vm.Step, error) {
	arg, err := c.Arg()
	if err != nil {
		return vm.Step{}, err
	}
	text := vm.Text(arg)
	id, _, err := stringKey(c, "id")
	if err != nil {
		return vm.Step{}, err
	}
	if id == "" {
		id = c.NextID("msg")
	}
	role, err := enumKey(c, "role")
	if err != nil {
		return vm.Step{}, err
	}
	silent, err := boolKey(c, "silent")
	if err != nil {
		return vm.Step{}, err
	}
	hidden, err := boolKey(c, "hidden")
	if err != nil {
		return vm.Step{}, err
	}
	events := []vm.Event{{Type: vm.TextStart, MessageID: id, Role: role}}
	if text != "" {
		events = append(events, vm.Event{Type: vm.TextContent, MessageID: id, Delta: text})
	}
	events = append(events, vm.Event{Type: vm.TextEnd, MessageID: id})
	for _, e := range events {
		e.Silent, e.Hidden = silent, hidden
		if err := c.Emit(e); err != nil {
			return vm.Step{}, err
		}
	}
	return vm.Step{Result: map[string]any{"id": id, "text": text}}, nil
}

// execEmit sends a CUSTOM event.
func execEmit(ctx context.Context, c *vm.Call) (vm.Step, error) {
	name, err := c.Arg()
	if err != nil {
		return vm.Step{}, err
	}
	value, _, err := c.Key("value")
	if err != nil {
		return vm.Step{}, err
	}
	return vm.Step{}, c.Emit(vm.Event{Type: vm.Custom, Name: vm.Text(name), Value: vm.Normalize(value)})
}

// execOutput sets the run's result.
func execOutput(ctx context.Context, c *vm.Call) (vm.Step, error) {
	v, err := c.Arg()
	if err != nil {
		return vm.Step{}, err
	}
	c.SetOutput(v)
	return vm.Step{}, nil
}

// The persist modes of the tool-call kinds.
const (
	persistNone          = "none"
	persistCall          = "call"
	persistCallAndResult = "call_and_result"
)

// execBackendTool emits a whole tool call with its result and appends the
// chat messages persist asks for.
func execBackendTool(ctx context.Context, c *vm.Call) (vm.Step, error) {
	name, err := c.Arg()
	if err != nil {
		return vm.Step{}, err
	}
	args, err := argsJSON(c)
	if err != nil {
		return vm.Step{}, err
	}
	result, _, err := c.Key("result")
	if err != nil {
		return vm.Step{}, err
	}
	result = vm.Normalize(result)
	content, err := resultContent(result)
	if err != nil {
		return vm.Step{}, err
	}
	persist, err := enumKey(c, "persist")
	if err != nil {
		return vm.Step{}, err
	}
	id := c.NextID("call")
	if err := emitToolCall(c, id, vm.Text(name), args); err != nil {
		return vm.Step{}, err
	}
	if err := c.Emit(toolResult(id, content)); err != nil {
		return vm.Step{}, err
	}
	var msgs []any
	switch persist {
	case persistCall:
		msgs = []any{callMessage(id, vm.Text(name), args)}
	case persistCallAndResult:
		msgs = []any{callMessage(id, vm.Text(name), args), resultMessage(id, content)}
	}
	if err := appendChat(c, msgs); err != nil {
		return vm.Step{}, err
	}
	return vm.Step{Result: map[string]any{"toolCallId": id, "result": result}}, nil
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
	name, err := c.Arg()
	if err != nil {
		return vm.Step{}, err
	}
	args, err := argsJSON(c)
	if err != nil {
		return vm.Step{}, err
	}
	persist, err := enumKey(c, "persist")
	if err != nil {
		return vm.Step{}, err
	}
	hide, err := boolKey(c, "hide_after")
	if err != nil {
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
	if err := emitToolCall(c, id, vm.Text(name), args); err != nil {
		return vm.Step{}, err
	}
	st := frontendState{ToolCallID: id, Persist: persist, HideAfter: hide}
	if persist != persistNone {
		st.Wrote = []any{callMessage(id, vm.Text(name), args)}
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
	if msg["role"] != "tool" || msg["toolCallId"] != id {
		// Anything else abandons the call: the chat forgets it and
		// replay no longer asks the question.
		if err := removeChat(c, st.Wrote); err != nil {
			return vm.Step{}, err
		}
		return vm.Step{Edge: "other"}, c.Emit(vm.Event{Type: vm.HideToolCall, ToolCallID: id})
	}
	content := msg["content"].(string)
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
	result := map[string]any{"toolCallId": id, "messageId": msg["id"], "content": content}
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
		return nil, vm.Errorf(vm.ErrResume, "the incoming message must be an object, found %s", describeValue(msgs[0]))
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
			return nil, vm.Errorf(vm.ErrResume, "tool message %q must have string content, found %s", msg["id"], describeValue(msg["content"]))
		}
		if id, _ := msg["toolCallId"].(string); id == "" {
			return nil, vm.Errorf(vm.ErrResume, "tool message %q has no toolCallId", msg["id"])
		}
	}
	return msg, nil
}

var agentMessages = vm.ParsePath("$agent.messages")

// execSuspend ends the run and waits for the user; resumed, it merges its
// merge key into the context and goes on. A resume that answers
// interrupts is refused: the node still waits.
func execSuspend(ctx context.Context, c *vm.Call) (vm.Step, error) {
	if c.Resume == nil {
		return vm.Step{Wait: &vm.Wait{Kind: vm.WaitUser}}, nil
	}
	if len(c.Resume.Interrupts) > 0 {
		return vm.Step{}, vm.Errorf(vm.ErrResume, "the thread waits for the next user message, not for interrupt answers")
	}
	merge, err := objectKey(c, "merge")
	if err != nil {
		return vm.Step{}, err
	}
	for _, k := range slices.Sorted(maps.Keys(merge)) {
		root := &vm.Path{Root: k}
		dst := map[string]any{k: c.Get(root)}
		vm.Merge(dst, map[string]any{k: merge[k]})
		if err := c.Set(root, dst[k]); err != nil {
			return vm.Step{}, vm.Errorf(vm.ErrNode, "merge: %v", err)
		}
	}
	return vm.Step{}, nil
}

// interruptState is what a suspended interrupt node keeps: the interrupts
// it opened.
type interruptState struct {
	Interrupts []vm.Interrupt `json:"interrupts"`
}

// execInterrupt opens an AG-UI interrupt and suspends; resumed, it checks
// the answers and gives {status, payload}.
func execInterrupt(ctx context.Context, c *vm.Call) (vm.Step, error) {
	if c.Resume != nil {
		return resumeInterrupt(c)
	}
	in := vm.Interrupt{ID: c.NextID("int")}
	var err error
	if in.Reason, _, err = stringKey(c, "reason"); err != nil {
		return vm.Step{}, err
	}
	if in.Message, _, err = stringKey(c, "message"); err != nil {
		return vm.Step{}, err
	}
	if in.ToolCallID, _, err = stringKey(c, "tool_call_id"); err != nil {
		return vm.Step{}, err
	}
	schema, err := objectKey(c, "response_schema")
	if err != nil {
		return vm.Step{}, err
	}
	if schema != nil {
		if _, err := compileSchema(schema); err != nil {
			return vm.Step{}, vm.Errorf(vm.ErrNode, "response_schema is not a valid JSON Schema: %s", schemaError(err))
		}
		in.ResponseSchema = schema
	}
	expires, ok, err := stringKey(c, "expires")
	if err != nil {
		return vm.Step{}, err
	}
	if ok {
		d, err := time.ParseDuration(expires)
		if err != nil || d <= 0 {
			return vm.Step{}, vm.Errorf(vm.ErrNode, "expires must be a positive duration such as \"24h\", found %q", expires)
		}
		in.ExpiresAt = c.Now().Add(d).UnixMilli()
	}
	if meta, err := objectKey(c, "metadata"); err != nil {
		return vm.Step{}, err
	} else if meta != nil {
		in.Metadata = meta
	}
	st := interruptState{Interrupts: []vm.Interrupt{in}}
	c.SetState(st)
	return vm.Step{Wait: &vm.Wait{Kind: vm.WaitInterrupt, Interrupts: st.Interrupts}}, nil
}

func resumeInterrupt(c *vm.Call) (vm.Step, error) {
	var st interruptState
	if err := fromState(c.State(), &st); err != nil || len(st.Interrupts) == 0 {
		return vm.Step{}, vm.Errorf(vm.ErrInternal, "the checkpoint holds no open interrupt for this node")
	}
	open := map[string]*vm.Interrupt{}
	var ids []string
	for i := range st.Interrupts {
		open[st.Interrupts[i].ID] = &st.Interrupts[i]
		ids = append(ids, st.Interrupts[i].ID)
	}
	answers := map[string]vm.ResumeEntry{}
	for _, e := range c.Resume.Interrupts {
		switch {
		case open[e.InterruptID] == nil:
			return vm.Step{}, vm.Errorf(vm.ErrResume, "resume entry for unknown interrupt %q; open: %s", e.InterruptID, quoteList(ids))
		case answers[e.InterruptID].InterruptID != "":
			return vm.Step{}, vm.Errorf(vm.ErrResume, "interrupt %q is answered more than once", e.InterruptID)
		case e.Status != "resolved" && e.Status != "cancelled":
			return vm.Step{}, vm.Errorf(vm.ErrResume, "interrupt %q: status must be \"resolved\" or \"cancelled\", found %q", e.InterruptID, e.Status)
		}
		answers[e.InterruptID] = e
	}
	now := c.Now().UnixMilli()
	for _, in := range st.Interrupts {
		e, ok := answers[in.ID]
		if !ok {
			return vm.Step{}, vm.Errorf(vm.ErrResume, "interrupt %q (%s) has no resume entry", in.ID, in.Reason)
		}
		if e.Status != "resolved" {
			// Cancelling is always accepted, also past expiry: it is how
			// the client closes an interrupt it can no longer answer.
			continue
		}
		if in.ExpiresAt != 0 && now > in.ExpiresAt {
			return vm.Step{}, vm.Errorf(vm.ErrResume, "interrupt %q expired at %s and can no longer be resolved: resume it with status \"cancelled\"", in.ID, time.UnixMilli(in.ExpiresAt).UTC().Format(time.RFC3339))
		}
		if in.ResponseSchema == nil {
			continue
		}
		sch, err := compileSchema(in.ResponseSchema)
		if err != nil {
			return vm.Step{}, vm.Errorf(vm.ErrInternal, "interrupt %q: response_schema: %s", in.ID, schemaError(err))
		}
		if err := sch.Validate(vm.Normalize(e.Payload)); err != nil {
			return vm.Step{}, vm.Errorf(vm.ErrResume, "interrupt %q: the payload does not match response_schema: %s", in.ID, schemaError(err))
		}
	}
	c.SetState(nil)
	e := answers[st.Interrupts[0].ID]
	return vm.Step{Result: map[string]any{"status": e.Status, "payload": vm.Normalize(e.Payload)}}, nil
}

// The helpers the message kinds share.

// emitToolCall emits TOOL_CALL_START, TOOL_CALL_ARGS and TOOL_CALL_END.
func emitToolCall(c *vm.Call, id, name, args string) error {
	for _, e := range []vm.Event{
		{Type: vm.ToolCallStart, ToolCallID: id, ToolCallName: name},
		{Type: vm.ToolCallArgs, ToolCallID: id, Delta: args},
		{Type: vm.ToolCallEnd, ToolCallID: id},
	} {
		if err := c.Emit(e); err != nil {
			return err
		}
	}
	return nil
}

func toolResult(id, content string) vm.Event {
	return vm.Event{Type: vm.ToolCallResult, MessageID: vm.ToolPrefix + id, ToolCallID: id, Content: content}
}

// argsJSON evaluates the args key, an object ({} when absent), as JSON text.
func argsJSON(c *vm.Call) (string, error) {
	args, err := objectKey(c, "args")
	if err != nil {
		return "", err
	}
	if args == nil {
		return "{}", nil
	}
	s, err := encodeJSON(args)
	if err != nil {
		return "", vm.Errorf(vm.ErrNode, "args: %v", err)
	}
	return s, nil
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
		return nil, nil, vm.Errorf(vm.ErrNode, "chat history %s must be a list, found %s", p, describeValue(v))
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

// boolKey evaluates a bool key.
func boolKey(c *vm.Call, name string) (bool, error) {
	v, _, err := c.Key(name)
	if err != nil {
		return false, err
	}
	switch b := v.(type) {
	case nil:
		return false, nil
	case bool:
		return b, nil
	}
	return false, vm.Errorf(vm.ErrNode, "%s must be true or false, found %s", name, describeValue(v))
}

// stringKey evaluates a string key; ok is false when it is absent or null.
func stringKey(c *vm.Call, name string) (s string, ok bool, err error) {
	v, _, err := c.Key(name)
	if err != nil || v == nil {
		return "", false, err
	}
	s, isString := v.(string)
	if !isString {
		return "", false, vm.Errorf(vm.ErrNode, "%s must be a string, found %s", name, describeValue(v))
	}
	return s, true, nil
}

// enumKey evaluates a string key that must be one of its declared values.
func enumKey(c *vm.Call, name string) (string, error) {
	s, _, err := stringKey(c, name)
	if err != nil {
		return "", err
	}
	var values []string
	if ks := c.Spec.Key(name); ks != nil {
		values = ks.Enum
	}
	if !slices.Contains(values, s) {
		return "", vm.Errorf(vm.ErrNode, "%s must be %s, found %q", name, quoteList(values), s)
	}
	return s, nil
}

// objectKey evaluates an object key; nil when it is absent or null.
func objectKey(c *vm.Call, name string) (map[string]any, error) {
	v, _, err := c.Key(name)
	if err != nil || v == nil {
		return nil, err
	}
	m, ok := vm.Normalize(v).(map[string]any)
	if !ok {
		return nil, vm.Errorf(vm.ErrNode, "%s must be an object, found %s", name, describeValue(v))
	}
	return m, nil
}

// describeValue names a value for an error message: a string as itself,
// quoted; anything else by its type with its article: "a list", "an
// object", "null".
func describeValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	name := typeName(vm.Normalize(v))
	switch name {
	case "nil":
		return "null"
	case "int", "object":
		return "an " + name
	}
	return "a " + name
}

// quoteList renders words as "a", "b" or "c".
func quoteList(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	switch len(q) {
	case 0:
		return "nothing"
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
