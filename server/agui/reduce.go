package agui

import (
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/aguic/aguic/vm"
)

// Reducer folds the events of runs into AG-UI messages and state, the way
// @ag-ui/client applies them:
//
//   - text messages become messages of their role (assistant when none),
//     their deltas concatenated;
//   - a tool call joins the assistant message its parentMessageId names, or
//     starts a new assistant message; its argument deltas are concatenated;
//   - TOOL_CALL_RESULT becomes a tool message with the event's message id,
//     placed after the call's assistant message and the tool messages that
//     already follow it; a result for a call that already has one replaces
//     that one, so that a result the client sent and the server echoes is
//     not doubled;
//   - reasoning messages become reasoning messages ("reason:…" ids);
//   - ACTIVITY_SNAPSHOT creates or replaces the activity message of its id
//     (replace=false keeps an existing one) and ACTIVITY_DELTA patches its
//     content;
//   - STATE_SNAPSHOT sets State and STATE_DELTA patches it;
//   - steps, custom events, reasoning spans and subagents change nothing.
//
// Live says which events count. A live reducer is a client reading the
// stream: silent events never reach it, hidden ones do, and HIDE_TOOL_CALL
// is not sent to it. Otherwise the reducer rebuilds the history a replay
// shows: hidden events are left out, silent ones count, and HIDE_TOOL_CALL
// removes the tool call it names and its result.
//
// The zero Reducer is ready to use; State starts as nil, which a delta
// patches as {}.
type Reducer struct {
	Messages []Message
	State    any
	Live     bool
}

// Append adds messages the client itself sends (its user turns, its tool
// results), skipping any whose id the history already holds.
func (r *Reducer) Append(msgs ...Message) {
	for _, m := range msgs {
		if m.ID != "" && r.find(m.ID) >= 0 {
			continue
		}
		r.Messages = append(r.Messages, m)
	}
}

// Add applies one event. An event that names a message or a tool call the
// history does not hold is ignored, as the client ignores it; a patch that
// does not apply is an error and leaves the history as it was.
func (r *Reducer) Add(e vm.Event) error {
	if r.Live && e.Silent || !r.Live && e.Hidden {
		return nil
	}
	switch e.Type {
	case vm.TextStart:
		role := e.Role
		if role == "" {
			role = RoleAssistant
		}
		r.start(e.MessageID, role)
	case vm.ReasoningMsgStart:
		r.start(e.MessageID, RoleReasoning)
	case vm.TextContent, vm.ReasoningContent:
		if i := r.find(e.MessageID); i >= 0 && r.Messages[i].Role != RoleActivity {
			m := &r.Messages[i]
			if m.Content == nil || !m.Content.IsText() {
				m.Content = Text("")
			}
			m.Content.Text += e.Delta
		}
	case vm.ToolCallStart:
		r.toolCallStart(e)
	case vm.ToolCallArgs:
		if tc := r.ToolCall(e.ToolCallID); tc != nil {
			tc.Function.Arguments += e.Delta
		}
	case vm.ToolCallResult:
		r.toolCallResult(e)
	case vm.StateSnapshot:
		r.State = vm.Normalize(e.Value)
	case vm.StateDelta:
		doc := r.State
		if doc == nil {
			doc = map[string]any{}
		}
		v, err := patch(doc, e.Patch)
		if err != nil {
			return fmt.Errorf("state delta: %w", err)
		}
		r.State = v
	case vm.ActivitySnapshot:
		r.activitySnapshot(e)
	case vm.ActivityDelta:
		i := r.find(e.MessageID)
		if i < 0 || r.Messages[i].Role != RoleActivity {
			return nil
		}
		m := &r.Messages[i]
		doc := vm.Normalize(m.ActivityContent)
		if doc == nil {
			doc = map[string]any{}
		}
		v, err := patch(doc, e.Patch)
		if err != nil {
			return fmt.Errorf("activity delta of %q: %w", e.MessageID, err)
		}
		m.ActivityContent = v
		if e.ActivityType != "" {
			m.ActivityType = e.ActivityType
		}
	case vm.HideToolCall:
		if !r.Live {
			r.hide(e.ToolCallID)
		}
	}
	return nil
}

// start opens a text or reasoning message; an existing message of that id
// (not an activity) is kept as it is.
func (r *Reducer) start(id, role string) {
	if r.find(id) >= 0 {
		return
	}
	r.Messages = append(r.Messages, Message{ID: id, Role: role, Content: Text("")})
}

func (r *Reducer) toolCallStart(e vm.Event) {
	if tc := r.ToolCall(e.ToolCallID); tc != nil {
		tc.Function.Name = e.ToolCallName
		return
	}
	parent := -1
	if e.ParentMessageID != "" {
		if i := r.find(e.ParentMessageID); i >= 0 && r.Messages[i].Role == RoleAssistant {
			parent = i
		}
	}
	if parent < 0 {
		id := e.ToolCallID
		if e.ParentMessageID != "" && r.find(e.ParentMessageID) < 0 {
			id = e.ParentMessageID
		}
		r.Messages = append(r.Messages, Message{ID: id, Role: RoleAssistant, ToolCalls: []ToolCall{}})
		parent = len(r.Messages) - 1
	}
	m := &r.Messages[parent]
	m.ToolCalls = append(m.ToolCalls, ToolCall{ID: e.ToolCallID, Type: "function", Function: FunctionCall{Name: e.ToolCallName}})
}

func (r *Reducer) toolCallResult(e vm.Event) {
	msg := Message{ID: e.MessageID, Role: RoleTool, ToolCallID: e.ToolCallID, Content: Text(e.Content)}
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := &r.Messages[i]; m.Role == RoleTool && m.ToolCallID == e.ToolCallID {
			*m = msg
			return
		}
	}
	at := len(r.Messages)
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == RoleAssistant && hasCall(m, e.ToolCallID) {
			at = i + 1
			for at < len(r.Messages) && r.Messages[at].Role == RoleTool {
				at++
			}
			break
		}
	}
	r.Messages = append(r.Messages, Message{})
	copy(r.Messages[at+1:], r.Messages[at:])
	r.Messages[at] = msg
}

func (r *Reducer) activitySnapshot(e vm.Event) {
	msg := Message{ID: e.MessageID, Role: RoleActivity, ActivityType: e.ActivityType, ActivityContent: vm.Normalize(e.Value)}
	replace := e.Replace == nil || *e.Replace
	i := r.find(e.MessageID)
	switch {
	case i < 0:
		r.Messages = append(r.Messages, msg)
	case replace && r.Messages[i].Role == RoleActivity:
		m := &r.Messages[i]
		m.ActivityType, m.ActivityContent = msg.ActivityType, msg.ActivityContent
	case replace:
		r.Messages[i] = msg
	}
}

// hide removes the tool call id and its result; an assistant message left
// with neither text nor tool calls goes too.
func (r *Reducer) hide(id string) {
	out := r.Messages[:0]
	for _, m := range r.Messages {
		if m.Role == RoleTool && m.ToolCallID == id {
			continue
		}
		if m.Role == RoleAssistant && hasCall(m, id) {
			var calls []ToolCall
			for _, tc := range m.ToolCalls {
				if tc.ID != id {
					calls = append(calls, tc)
				}
			}
			m.ToolCalls = calls
			if len(calls) == 0 && (m.Content == nil || m.Content.IsText() && m.Content.Text == "") {
				continue
			}
		}
		out = append(out, m)
	}
	clear(r.Messages[len(out):])
	r.Messages = out
}

// ToolCall returns the tool call of that id in the history, or nil.
func (r *Reducer) ToolCall(id string) *ToolCall {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := &r.Messages[i]
		for j := range m.ToolCalls {
			if m.ToolCalls[j].ID == id {
				return &m.ToolCalls[j]
			}
		}
	}
	return nil
}

// Message returns the message of that id in the history, or nil.
func (r *Reducer) Message(id string) *Message {
	if i := r.find(id); i >= 0 {
		return &r.Messages[i]
	}
	return nil
}

func (r *Reducer) find(id string) int {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].ID == id {
			return i
		}
	}
	return -1
}

func hasCall(m Message, id string) bool {
	for _, tc := range m.ToolCalls {
		if tc.ID == id {
			return true
		}
	}
	return false
}

// patch applies RFC 6902 operations to a JSON tree and returns the result.
func patch(doc any, ops []any) (any, error) {
	d, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if ops == nil {
		ops = []any{}
	}
	p, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	pp, err := jsonpatch.DecodePatch(p)
	if err != nil {
		return nil, err
	}
	out, err := pp.Apply(d)
	if err != nil {
		return nil, err
	}
	v, err := decodeAny(out)
	if err != nil {
		return nil, err
	}
	return vm.Normalize(v), nil
}
