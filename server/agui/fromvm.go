package agui

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// FromVM returns the AG-UI event of a semantic event of the VM, and false
// for an event that is never sent (HIDE_TOOL_CALL) or of a type it does not
// know. Message ids pass through as the VM made them ("reason:…",
// "activity:…", "tool:…"); a tool result without one gets "tool:" and its
// tool call id. It does not look at Silent and Hidden: whether an event is
// streamed, stored or replayed is the caller's decision. A subagent's
// Value becomes SUBAGENT_FINISHED's result (left out when nil) and
// SUBAGENT_ERROR's message (a string as it is, anything else as JSON). The
// VM's NodeID, and a subagent's Name after SUBAGENT_STARTED, have no place
// in AG-UI 1.0 and are dropped. The SubagentRunID of any other event
// attributes it to that subagent (subagentRunId).
func FromVM(e vm.Event) (Event, bool) {
	switch e.Type {
	case vm.TextStart:
		return TextMessageStartEvent{MessageID: e.MessageID, Role: e.Role, SubagentRunID: e.SubagentRunID}, true
	case vm.TextContent:
		return TextMessageContentEvent{MessageID: e.MessageID, Delta: e.Delta, SubagentRunID: e.SubagentRunID}, true
	case vm.TextEnd:
		return TextMessageEndEvent{MessageID: e.MessageID, SubagentRunID: e.SubagentRunID}, true
	case vm.ToolCallStart:
		return ToolCallStartEvent{ToolCallID: e.ToolCallID, ToolCallName: e.ToolCallName, ParentMessageID: e.ParentMessageID, SubagentRunID: e.SubagentRunID}, true
	case vm.ToolCallArgs:
		return ToolCallArgsEvent{ToolCallID: e.ToolCallID, Delta: e.Delta, SubagentRunID: e.SubagentRunID}, true
	case vm.ToolCallEnd:
		return ToolCallEndEvent{ToolCallID: e.ToolCallID, SubagentRunID: e.SubagentRunID}, true
	case vm.ToolCallResult:
		id := e.MessageID
		if id == "" {
			id = vm.ToolPrefix + e.ToolCallID
		}
		return ToolCallResultEvent{MessageID: id, ToolCallID: e.ToolCallID, Content: Content{Text: e.Content}, Role: RoleTool, SubagentRunID: e.SubagentRunID}, true
	case vm.StateSnapshot:
		return StateSnapshotEvent{Snapshot: e.Value, SubagentRunID: e.SubagentRunID}, true
	case vm.StateDelta:
		return StateDeltaEvent{Delta: PatchOps(e.Patch), SubagentRunID: e.SubagentRunID}, true
	case vm.ActivitySnapshot:
		return ActivitySnapshotEvent{MessageID: e.MessageID, ActivityType: e.ActivityType, Content: e.Value, Replace: e.Replace, SubagentRunID: e.SubagentRunID}, true
	case vm.ActivityDelta:
		return ActivityDeltaEvent{MessageID: e.MessageID, ActivityType: e.ActivityType, Patch: PatchOps(e.Patch), SubagentRunID: e.SubagentRunID}, true
	case vm.StepStarted:
		return StepStartedEvent{StepName: e.Name, SubagentRunID: e.SubagentRunID}, true
	case vm.StepFinished:
		return StepFinishedEvent{StepName: e.Name, SubagentRunID: e.SubagentRunID}, true
	case vm.Custom:
		return CustomEvent{Name: e.Name, Value: e.Value, SubagentRunID: e.SubagentRunID}, true
	case vm.ReasoningStart:
		return ReasoningStartEvent{MessageID: e.MessageID, SubagentRunID: e.SubagentRunID}, true
	case vm.ReasoningMsgStart:
		return ReasoningMessageStartEvent{MessageID: e.MessageID, SubagentRunID: e.SubagentRunID}, true
	case vm.ReasoningContent:
		return ReasoningMessageContentEvent{MessageID: e.MessageID, Delta: e.Delta, SubagentRunID: e.SubagentRunID}, true
	case vm.ReasoningMsgEnd:
		return ReasoningMessageEndEvent{MessageID: e.MessageID, SubagentRunID: e.SubagentRunID}, true
	case vm.ReasoningEnd:
		return ReasoningEndEvent{MessageID: e.MessageID, SubagentRunID: e.SubagentRunID}, true
	case vm.SubagentStarted:
		return SubagentStartedEvent{SubagentRunID: e.SubagentRunID, Name: e.Name}, true
	case vm.SubagentFinished:
		return SubagentFinishedEvent{SubagentRunID: e.SubagentRunID, Result: nonNull(e.Value)}, true
	case vm.SubagentError:
		return SubagentErrorEvent{SubagentRunID: e.SubagentRunID, Message: e.Content, Code: e.Code}, true
	}
	return nil, false
}

// PatchOps converts RFC 6902 operations as the VM holds them (JSON objects
// with op, path, from and value) to their wire form. Any other value is
// read through its JSON.
func PatchOps(ops []any) []PatchOp {
	if ops == nil {
		return nil
	}
	out := make([]PatchOp, len(ops))
	for i, op := range ops {
		switch x := op.(type) {
		case PatchOp:
			out[i] = x
		case map[string]any:
			out[i].Op, _ = x["op"].(string)
			out[i].Path, _ = x["path"].(string)
			out[i].From, _ = x["from"].(string)
			out[i].Value = x["value"]
		default:
			if b, err := json.Marshal(op); err == nil {
				_ = json.Unmarshal(b, &out[i])
			}
		}
	}
	return out
}

// RunFinished returns the event that ends run runID of thread threadID as
// o says:
//
//   - finished: RUN_FINISHED, outcome success, with o.Result as result;
//   - suspended for frontend tool calls: success with pendingToolCallIds;
//   - suspended for interrupts: outcome interrupt with the interrupts;
//   - suspended for the next user turn: success (the turn is over);
//   - cancelled: outcome cancelled;
//   - failed, or a status it does not know: RUN_ERROR with the error's
//     message and code.
//
// usage nil is left out.
func RunFinished(threadID, runID string, o vm.Outcome, usage []TokenUsage) Event {
	e := RunFinishedEvent{ThreadID: threadID, RunID: runID, Result: nonNull(o.Result), Usage: usage}
	switch o.Status {
	case vm.Finished:
		e.Outcome = &Outcome{Type: OutcomeSuccess}
	case vm.Suspended:
		e.Outcome = suspendedOutcome(o.Wait)
	case vm.Cancelled:
		e.Outcome = &Outcome{Type: OutcomeCancelled}
	case vm.Failed:
		ev := RunError("the run failed", vm.ErrInternal)
		if o.Err != nil {
			ev = RunError(o.Err.Message, o.Err.Code)
		}
		ev.Usage = usage
		return ev
	default:
		ev := RunError(fmt.Sprintf("the run ended with an unknown status %q", o.Status), vm.ErrInternal)
		ev.Usage = usage
		return ev
	}
	return e
}

// suspendedOutcome is the outcome of a run suspended on w. A wait for
// interrupts that lists none is a success: there is nothing to resume.
func suspendedOutcome(w *vm.Wait) *Outcome {
	if w == nil {
		return &Outcome{Type: OutcomeSuccess}
	}
	switch w.Kind {
	case vm.WaitTool:
		return &Outcome{Type: OutcomeSuccess, PendingToolCallIDs: w.ToolCallIDs}
	case vm.WaitInterrupt:
		if len(w.Interrupts) == 0 {
			return &Outcome{Type: OutcomeSuccess}
		}
		ins := make([]Interrupt, len(w.Interrupts))
		for i, in := range w.Interrupts {
			ins[i] = FromVMInterrupt(in)
		}
		return &Outcome{Type: OutcomeInterrupt, Interrupts: ins}
	}
	return &Outcome{Type: OutcomeSuccess}
}

// FromVMInterrupt converts an interrupt of the VM to its wire form:
// expiresAt becomes ISO 8601 in UTC with milliseconds; a response schema
// or metadata that is not a JSON object is left out.
func FromVMInterrupt(in vm.Interrupt) Interrupt {
	out := Interrupt{
		ID:         in.ID,
		Reason:     in.Reason,
		Message:    in.Message,
		ToolCallID: in.ToolCallID,
	}
	out.ResponseSchema, _ = in.ResponseSchema.(map[string]any)
	out.Metadata, _ = in.Metadata.(map[string]any)
	if in.ExpiresAt != 0 {
		out.ExpiresAt = time.UnixMilli(in.ExpiresAt).UTC().Format(isoMillis)
	}
	return out
}

// isoMillis is how interrupts' expiresAt is written: ISO 8601 in UTC with
// milliseconds, as JavaScript's Date.toISOString writes it.
const isoMillis = "2006-01-02T15:04:05.000Z07:00"

// AddUsage adds the tokens of a vm.Usage event to the entry of its
// provider and model in usage, appending one for a model not seen before,
// and returns the list.
func AddUsage(usage []TokenUsage, e vm.Event) []TokenUsage {
	v, ok := e.Value.(vm.UsageValue)
	if !ok {
		return usage
	}
	provider, model, ok := llm.SplitModel(e.Name)
	if !ok {
		provider, model = "", e.Name
	}
	i := slices.IndexFunc(usage, func(u TokenUsage) bool { return u.Provider == provider && u.Model == model })
	if i < 0 {
		usage = append(usage, TokenUsage{Provider: provider, Model: model})
		i = len(usage) - 1
	}
	u := &usage[i]
	u.InputTokens += int64(v.InputTokens)
	u.OutputTokens += int64(v.OutputTokens)
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return usage
}
