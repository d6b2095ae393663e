package agui

import (
	"encoding/json"
	"time"
)

//go:generate go run ./internal/gen

// ProtocolVersion is the AG-UI protocol version the events follow, which
// RUN_STARTED announces.
const ProtocolVersion = "1.0"

// TypeTextMessageChunk is the type of an AG-UI event that aguic does not
// send but aguic bench reads. The types of the events of this file
// (TypeRunStarted…) are in events_gen.go; the protocol's other types (the
// chunk forms of tool calls and reasoning, RAW, REASONING_ENCRYPTED_VALUE)
// have no source in aguic.
const TypeTextMessageChunk = "TEXT_MESSAGE_CHUNK"

// Event is one AG-UI 1.0 event as it goes on the wire. The set is closed:
// the types of this file that embed Base are all there is.
//
// MarshalJSON writes compact JSON, HTML characters unescaped, with "type"
// first: optional fields are left out when empty and never written as null;
// required fields are always written, those that hold any JSON value
// (CUSTOM.value, STATE_SNAPSHOT.snapshot, a patch operation's value) as
// null when nil, and lists (STATE_DELTA.delta, ACTIVITY_DELTA.patch,
// MESSAGES_SNAPSHOT.messages) as [] when nil. Call MarshalJSON itself, or
// use an SSEWriter, for those exact bytes: json.Marshal escapes <, > and &
// again.
//
// The struct tags of a type are its wire form: events_gen.go, its
// encoder, is generated from them (go generate runs ./internal/gen). A
// field's json tag names its key, in the order of the struct; omitempty or
// omitzero makes it optional, and an optional value of type any is empty
// when it would be written as null. agui:"object" writes a nil value as
// {}; a blank field tagged agui:"key=value" writes the string value under
// key. An event's "type" is its Go name without Event in upper snake case,
// held by a constant named Type and that name: TEXT_MESSAGE_START and
// TypeTextMessageStart for TextMessageStartEvent. Adding an event type is
// adding its struct here, and its case to FromVM when the VM emits it.
type Event interface {
	// EventType returns the event's "type", such as "RUN_STARTED".
	EventType() string
	json.Marshaler
	// with returns a copy of the event with f applied to its Base.
	with(f func(*Base)) Event
}

// Base holds the fields every event may carry.
type Base struct {
	// Timestamp is when the event happened, in Unix milliseconds; 0 leaves
	// it out.
	Timestamp int64 `json:"timestamp,omitempty"`
	// RawEvent is the event this one was translated from; nil leaves it out
	// (the protocol rejects a null).
	RawEvent any `json:"rawEvent,omitempty"`
	// Metadata is extra information, any JSON values by key; nil leaves it
	// out, an empty map is written as {}.
	Metadata map[string]any `json:"metadata,omitzero"`
}

// WithTimestamp returns a copy of e stamped with t (Unix milliseconds).
func WithTimestamp(e Event, t time.Time) Event {
	return e.with(func(b *Base) { b.Timestamp = t.UnixMilli() })
}

// Run lifecycle.

// RunStartedEvent opens a run.
type RunStartedEvent struct {
	ThreadID        string `json:"threadId"`
	RunID           string `json:"runId"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	ParentRunID     string `json:"parentRunId,omitempty"`
	// Input is the RunAgentInput that started the run; nil leaves it out.
	Input any `json:"input,omitempty"`
	Base
}

// RunStarted opens run runID of thread threadID, announcing protocol 1.0.
// parentRunID "" and input nil are left out; input is the RunAgentInput as
// the client sent it.
func RunStarted(threadID, runID, parentRunID string, input any) RunStartedEvent {
	return RunStartedEvent{
		ThreadID:        threadID,
		RunID:           runID,
		ProtocolVersion: ProtocolVersion,
		ParentRunID:     parentRunID,
		Input:           nonNull(input),
	}
}

// RunFinishedEvent closes a run that did not fail.
type RunFinishedEvent struct {
	ThreadID string `json:"threadId"`
	RunID    string `json:"runId"`
	// Result is what the run produced; nil leaves it out.
	Result  any          `json:"result,omitempty"`
	Outcome *Outcome     `json:"outcome,omitempty"`
	Usage   []TokenUsage `json:"usage,omitempty"`
	Base
}

// The outcome types of RUN_FINISHED.
const (
	OutcomeSuccess   = "success"
	OutcomeInterrupt = "interrupt"
	OutcomeCancelled = "cancelled"
)

// Outcome is why a run ended: "success", with the frontend tool calls the
// client is to answer; "interrupt", with the interrupts the next run must
// resume; or "cancelled".
type Outcome struct {
	Type               string      `json:"type"`
	PendingToolCallIDs []string    `json:"pendingToolCallIds,omitempty"` // success
	Interrupts         []Interrupt `json:"interrupts,omitempty"`         // interrupt
}

// MarshalJSON writes the fields of the outcome's type only; interrupts
// always for an interrupt.
func (o Outcome) MarshalJSON() ([]byte, error) {
	var w object
	w.str("type", o.Type)
	switch o.Type {
	case OutcomeSuccess:
		if len(o.PendingToolCallIDs) > 0 {
			w.field("pendingToolCallIds", o.PendingToolCallIDs)
		}
	case OutcomeInterrupt:
		list(&w, "interrupts", o.Interrupts)
	}
	return w.bytes()
}

// Interrupt is something a run needs from outside before it continues.
type Interrupt struct {
	ID             string         `json:"id"`
	Reason         string         `json:"reason"`
	Message        string         `json:"message,omitempty"`
	ToolCallID     string         `json:"toolCallId,omitempty"`
	ResponseSchema map[string]any `json:"responseSchema,omitzero"` // a JSON Schema
	// ExpiresAt is when the interrupt stops being answerable, in ISO 8601
	// (what the client parses); "" leaves it out.
	ExpiresAt     string         `json:"expiresAt,omitempty"`
	Metadata      map[string]any `json:"metadata,omitzero"`
	SubagentRunID string         `json:"subagentRunId,omitempty"`
}

// TokenUsage is the token counts of one provider and model. Zero counts
// are left out.
type TokenUsage struct {
	Provider              string `json:"provider,omitempty"`
	Model                 string `json:"model,omitempty"`
	InputTokens           int64  `json:"inputTokens,omitempty"`
	OutputTokens          int64  `json:"outputTokens,omitempty"`
	TotalTokens           int64  `json:"totalTokens,omitempty"`
	ReasoningTokens       int64  `json:"reasoningTokens,omitempty"`
	CachedInputTokens     int64  `json:"cachedInputTokens,omitempty"`
	CacheWriteInputTokens int64  `json:"cacheWriteInputTokens,omitempty"`
}

// RunErrorEvent ends a run that failed. It carries no thread or run id.
type RunErrorEvent struct {
	Message string       `json:"message"`
	Code    string       `json:"code,omitempty"`
	Usage   []TokenUsage `json:"usage,omitempty"`
	Base
}

// RunError ends a run that failed; code "" is left out.
func RunError(message, code string) RunErrorEvent {
	return RunErrorEvent{Message: message, Code: code}
}

// Steps.

// StepStartedEvent opens a named step.
type StepStartedEvent struct {
	StepName      string `json:"stepName"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// StepFinishedEvent closes a named step.
type StepFinishedEvent struct {
	StepName      string `json:"stepName"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// Text messages.

// TextMessageStartEvent opens a streamed text message. Role is one of
// developer, system, assistant or user; "" leaves it out (assistant).
type TextMessageStartEvent struct {
	MessageID     string `json:"messageId"`
	Role          string `json:"role,omitempty"`
	Name          string `json:"name,omitempty"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// TextMessageContentEvent appends Delta to a text message.
type TextMessageContentEvent struct {
	MessageID     string `json:"messageId"`
	Delta         string `json:"delta"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// TextMessageEndEvent closes a text message.
type TextMessageEndEvent struct {
	MessageID     string `json:"messageId"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// Tool calls.

// ToolCallStartEvent opens a tool call.
type ToolCallStartEvent struct {
	ToolCallID      string `json:"toolCallId"`
	ToolCallName    string `json:"toolCallName"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
	SubagentRunID   string `json:"subagentRunId,omitempty"`
	Base
}

// ToolCallArgsEvent appends Delta to a tool call's arguments.
type ToolCallArgsEvent struct {
	ToolCallID    string `json:"toolCallId"`
	Delta         string `json:"delta"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// ToolCallEndEvent closes a tool call: its arguments are complete.
type ToolCallEndEvent struct {
	ToolCallID    string `json:"toolCallId"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// ToolCallResultEvent carries what a tool returned: a tool message of its
// own id. Role is "tool" or "" (left out).
type ToolCallResultEvent struct {
	MessageID     string  `json:"messageId"`
	ToolCallID    string  `json:"toolCallId"`
	Content       Content `json:"content"` // text or parts; the zero Content is ""
	Role          string  `json:"role,omitempty"`
	SubagentRunID string  `json:"subagentRunId,omitempty"`
	Base
}

// State.

// StateSnapshotEvent replaces the state whole; a nil Snapshot is null.
type StateSnapshotEvent struct {
	Snapshot      any    `json:"snapshot"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// StateDeltaEvent patches the state (RFC 6902); nil Delta is [].
type StateDeltaEvent struct {
	Delta         []PatchOp `json:"delta"`
	SubagentRunID string    `json:"subagentRunId,omitempty"`
	Base
}

// PatchOp is one RFC 6902 operation. It is written with value for add,
// replace and test (null when nil) and from for move and copy.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from,omitempty"`
	Value any    `json:"value,omitempty"`
}

// MarshalJSON writes op, path, then from or value as the operation has
// them.
func (p PatchOp) MarshalJSON() ([]byte, error) {
	var w object
	w.str("op", p.Op)
	switch p.Op {
	case "add", "replace", "test":
		w.str("path", p.Path)
		w.field("value", p.Value)
	case "move", "copy":
		w.str("from", p.From)
		w.str("path", p.Path)
	case "remove":
		w.str("path", p.Path)
	default:
		w.str("path", p.Path)
		if p.From != "" {
			w.str("from", p.From)
		}
		if p.Value != nil {
			w.field("value", p.Value)
		}
	}
	return w.bytes()
}

// Messages.

// MessagesSnapshotEvent holds every message of the conversation; nil
// Messages is [].
type MessagesSnapshotEvent struct {
	Messages []Message `json:"messages"`
	Base
}

// Activities.

// ActivitySnapshotEvent sets an activity message's content. Content must
// be a JSON object; nil is written as {}. Replace nil leaves it out (the
// client replaces).
type ActivitySnapshotEvent struct {
	MessageID     string `json:"messageId"`
	ActivityType  string `json:"activityType"`
	Content       any    `json:"content" agui:"object"`
	Replace       *bool  `json:"replace,omitempty"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// ActivityDeltaEvent patches an activity message's content; nil Patch is
// [].
type ActivityDeltaEvent struct {
	MessageID     string    `json:"messageId"`
	ActivityType  string    `json:"activityType"`
	Patch         []PatchOp `json:"patch"`
	SubagentRunID string    `json:"subagentRunId,omitempty"`
	Base
}

// Custom events.

// CustomEvent is an application's own event; a nil Value is null.
type CustomEvent struct {
	Name          string `json:"name"`
	Value         any    `json:"value"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// Reasoning.

// ReasoningStartEvent opens a span of reasoning.
type ReasoningStartEvent struct {
	MessageID     string `json:"messageId"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// ReasoningMessageStartEvent opens a reasoning message; its role is always
// written as "reasoning".
type ReasoningMessageStartEvent struct {
	MessageID     string   `json:"messageId"`
	_             struct{} `agui:"role=reasoning"`
	SubagentRunID string   `json:"subagentRunId,omitempty"`
	Base
}

// ReasoningMessageContentEvent appends Delta to a reasoning message.
type ReasoningMessageContentEvent struct {
	MessageID     string `json:"messageId"`
	Delta         string `json:"delta"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// ReasoningMessageEndEvent closes a reasoning message.
type ReasoningMessageEndEvent struct {
	MessageID     string `json:"messageId"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// ReasoningEndEvent closes a span of reasoning.
type ReasoningEndEvent struct {
	MessageID     string `json:"messageId"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// Subagents.

// SubagentStartedEvent announces a subagent invocation.
type SubagentStartedEvent struct {
	SubagentRunID       string `json:"subagentRunId"`
	Name                string `json:"name"`
	Description         string `json:"description,omitempty"`
	ParentSubagentRunID string `json:"parentSubagentRunId,omitempty"`
	ParentToolCallID    string `json:"parentToolCallId,omitempty"`
	ParentMessageID     string `json:"parentMessageId,omitempty"`
	Base
}

// The outcome types of SUBAGENT_FINISHED.
const (
	SubagentSuccess   = "success"
	SubagentSuspended = "suspended"
)

// SubagentOutcome is why a subagent's part of the run ended.
type SubagentOutcome struct {
	Type         string   `json:"type"`
	InterruptIDs []string `json:"interruptIds,omitempty"` // suspended
}

// SubagentFinishedEvent ends a subagent invocation's part of the run.
type SubagentFinishedEvent struct {
	SubagentRunID string           `json:"subagentRunId"`
	Result        any              `json:"result,omitempty"`
	Outcome       *SubagentOutcome `json:"outcome,omitempty"`
	Base
}

// SubagentErrorEvent reports that a subagent invocation failed; the run
// may go on.
type SubagentErrorEvent struct {
	SubagentRunID string `json:"subagentRunId"`
	Message       string `json:"message"`
	Code          string `json:"code,omitempty"`
	Base
}
