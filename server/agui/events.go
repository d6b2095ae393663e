package agui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// ProtocolVersion is the AG-UI protocol version the events follow, which
// RUN_STARTED announces.
const ProtocolVersion = "1.0"

// The event types of AG-UI 1.0, as @ag-ui/core@1.0.0 names them.
const (
	TypeRunStarted              = "RUN_STARTED"
	TypeRunFinished             = "RUN_FINISHED"
	TypeRunError                = "RUN_ERROR"
	TypeStepStarted             = "STEP_STARTED"
	TypeStepFinished            = "STEP_FINISHED"
	TypeTextMessageStart        = "TEXT_MESSAGE_START"
	TypeTextMessageContent      = "TEXT_MESSAGE_CONTENT"
	TypeTextMessageEnd          = "TEXT_MESSAGE_END"
	TypeTextMessageChunk        = "TEXT_MESSAGE_CHUNK"
	TypeToolCallStart           = "TOOL_CALL_START"
	TypeToolCallArgs            = "TOOL_CALL_ARGS"
	TypeToolCallEnd             = "TOOL_CALL_END"
	TypeToolCallChunk           = "TOOL_CALL_CHUNK"
	TypeToolCallResult          = "TOOL_CALL_RESULT"
	TypeStateSnapshot           = "STATE_SNAPSHOT"
	TypeStateDelta              = "STATE_DELTA"
	TypeMessagesSnapshot        = "MESSAGES_SNAPSHOT"
	TypeActivitySnapshot        = "ACTIVITY_SNAPSHOT"
	TypeActivityDelta           = "ACTIVITY_DELTA"
	TypeRaw                     = "RAW"
	TypeCustom                  = "CUSTOM"
	TypeReasoningStart          = "REASONING_START"
	TypeReasoningMessageStart   = "REASONING_MESSAGE_START"
	TypeReasoningMessageContent = "REASONING_MESSAGE_CONTENT"
	TypeReasoningMessageEnd     = "REASONING_MESSAGE_END"
	TypeReasoningMessageChunk   = "REASONING_MESSAGE_CHUNK"
	TypeReasoningEnd            = "REASONING_END"
	TypeReasoningEncryptedValue = "REASONING_ENCRYPTED_VALUE"
	TypeSubagentStarted         = "SUBAGENT_STARTED"
	TypeSubagentFinished        = "SUBAGENT_FINISHED"
	TypeSubagentError           = "SUBAGENT_ERROR"
)

// isoMillis is how interrupts' expiresAt is written: ISO 8601 in UTC with
// milliseconds, as JavaScript's Date.toISOString writes it.
const isoMillis = "2006-01-02T15:04:05.000Z07:00"

// Types returns every event type of AG-UI 1.0, in the order of the
// protocol's catalogue.
func Types() []string {
	return []string{
		TypeTextMessageStart, TypeTextMessageContent, TypeTextMessageEnd, TypeTextMessageChunk,
		TypeToolCallStart, TypeToolCallArgs, TypeToolCallEnd, TypeToolCallChunk, TypeToolCallResult,
		TypeStateSnapshot, TypeStateDelta, TypeMessagesSnapshot,
		TypeActivitySnapshot, TypeActivityDelta,
		TypeRaw, TypeCustom,
		TypeRunStarted, TypeRunFinished, TypeRunError,
		TypeStepStarted, TypeStepFinished,
		TypeReasoningStart, TypeReasoningMessageStart, TypeReasoningMessageContent,
		TypeReasoningMessageEnd, TypeReasoningMessageChunk, TypeReasoningEnd, TypeReasoningEncryptedValue,
		TypeSubagentStarted, TypeSubagentFinished, TypeSubagentError,
	}
}

// Event is one AG-UI 1.0 event as it goes on the wire. The set is closed:
// the types of this file are all there is.
//
// MarshalJSON writes compact JSON, HTML characters unescaped, with "type"
// first: optional fields are left out when empty and never written as null;
// required fields are always written, those that hold any JSON value
// (CUSTOM.value, RAW.event, STATE_SNAPSHOT.snapshot, a patch operation's
// value) as null when nil, and lists (STATE_DELTA.delta, ACTIVITY_DELTA.patch,
// MESSAGES_SNAPSHOT.messages) as [] when nil. Call MarshalJSON itself, or
// use an SSEWriter, for those exact bytes: json.Marshal escapes <, > and &
// again.
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

// clean drops what would be written as null.
func (b Base) clean() Base {
	b.RawEvent = nonNull(b.RawEvent)
	return b
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
	w.field("type", o.Type)
	switch o.Type {
	case OutcomeSuccess:
		if len(o.PendingToolCallIDs) > 0 {
			w.field("pendingToolCallIds", o.PendingToolCallIDs)
		}
	case OutcomeInterrupt:
		ins := o.Interrupts
		if ins == nil {
			ins = []Interrupt{}
		}
		w.field("interrupts", ins)
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

// RunErrorEvent ends a run that failed. It carries no thread or run id.
type RunErrorEvent struct {
	Message string       `json:"message"`
	Code    string       `json:"code,omitempty"`
	Usage   []TokenUsage `json:"usage,omitempty"`
	Base
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

// TextMessageChunkEvent stands for a start, content and end; every field
// is optional.
type TextMessageChunkEvent struct {
	MessageID     string `json:"messageId,omitempty"`
	Role          string `json:"role,omitempty"`
	Delta         string `json:"delta,omitempty"`
	Name          string `json:"name,omitempty"`
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

// ToolCallChunkEvent stands for a tool call's start, args and end; every
// field is optional.
type ToolCallChunkEvent struct {
	ToolCallID      string `json:"toolCallId,omitempty"`
	ToolCallName    string `json:"toolCallName,omitempty"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
	Delta           string `json:"delta,omitempty"`
	SubagentRunID   string `json:"subagentRunId,omitempty"`
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
	w.field("op", p.Op)
	switch p.Op {
	case "add", "replace", "test":
		w.field("path", p.Path)
		w.field("value", p.Value)
	case "move", "copy":
		w.field("from", p.From)
		w.field("path", p.Path)
	case "remove":
		w.field("path", p.Path)
	default:
		w.field("path", p.Path)
		if p.From != "" {
			w.field("from", p.From)
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
	Content       any    `json:"content"`
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

// Raw and custom events.

// RawEvent passes a provider's event through; a nil Event is null.
type RawEvent struct {
	Event         any    `json:"event"`
	Source        string `json:"source,omitempty"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

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
	MessageID     string `json:"messageId"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
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

// ReasoningMessageChunkEvent stands for a reasoning message's start,
// content and end; every field is optional.
type ReasoningMessageChunkEvent struct {
	MessageID     string `json:"messageId,omitempty"`
	Delta         string `json:"delta,omitempty"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// ReasoningEndEvent closes a span of reasoning.
type ReasoningEndEvent struct {
	MessageID     string `json:"messageId"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Base
}

// The subtypes of REASONING_ENCRYPTED_VALUE.
const (
	EncryptedToolCall = "tool-call"
	EncryptedMessage  = "message"
)

// ReasoningEncryptedValueEvent carries a provider's encrypted reasoning for
// a message or a tool call (Subtype), which the client returns on a later
// turn.
type ReasoningEncryptedValueEvent struct {
	Subtype        string `json:"subtype"`
	EntityID       string `json:"entityId"`
	EncryptedValue string `json:"encryptedValue"`
	SubagentRunID  string `json:"subagentRunId,omitempty"`
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

// Marshalling. Each type converts itself to a type without methods (plain)
// so that encoding/json writes its fields, after "type".

func (e RunStartedEvent) MarshalJSON() ([]byte, error) {
	type plain RunStartedEvent
	e.Input = nonNull(e.Input)
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e RunFinishedEvent) MarshalJSON() ([]byte, error) {
	type plain RunFinishedEvent
	e.Result = nonNull(e.Result)
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e RunErrorEvent) MarshalJSON() ([]byte, error) {
	type plain RunErrorEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e StepStartedEvent) MarshalJSON() ([]byte, error) {
	type plain StepStartedEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e StepFinishedEvent) MarshalJSON() ([]byte, error) {
	type plain StepFinishedEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e TextMessageStartEvent) MarshalJSON() ([]byte, error) {
	type plain TextMessageStartEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e TextMessageContentEvent) MarshalJSON() ([]byte, error) {
	type plain TextMessageContentEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e TextMessageEndEvent) MarshalJSON() ([]byte, error) {
	type plain TextMessageEndEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e TextMessageChunkEvent) MarshalJSON() ([]byte, error) {
	type plain TextMessageChunkEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ToolCallStartEvent) MarshalJSON() ([]byte, error) {
	type plain ToolCallStartEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ToolCallArgsEvent) MarshalJSON() ([]byte, error) {
	type plain ToolCallArgsEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ToolCallEndEvent) MarshalJSON() ([]byte, error) {
	type plain ToolCallEndEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ToolCallChunkEvent) MarshalJSON() ([]byte, error) {
	type plain ToolCallChunkEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ToolCallResultEvent) MarshalJSON() ([]byte, error) {
	type plain ToolCallResultEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e StateSnapshotEvent) MarshalJSON() ([]byte, error) {
	type plain StateSnapshotEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e StateDeltaEvent) MarshalJSON() ([]byte, error) {
	type plain StateDeltaEvent
	if e.Delta == nil {
		e.Delta = []PatchOp{}
	}
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e MessagesSnapshotEvent) MarshalJSON() ([]byte, error) {
	type plain MessagesSnapshotEvent
	if e.Messages == nil {
		e.Messages = []Message{}
	}
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ActivitySnapshotEvent) MarshalJSON() ([]byte, error) {
	type plain ActivitySnapshotEvent
	if nonNull(e.Content) == nil {
		e.Content = struct{}{}
	}
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ActivityDeltaEvent) MarshalJSON() ([]byte, error) {
	type plain ActivityDeltaEvent
	if e.Patch == nil {
		e.Patch = []PatchOp{}
	}
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e RawEvent) MarshalJSON() ([]byte, error) {
	type plain RawEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e CustomEvent) MarshalJSON() ([]byte, error) {
	type plain CustomEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ReasoningStartEvent) MarshalJSON() ([]byte, error) {
	type plain ReasoningStartEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ReasoningMessageStartEvent) MarshalJSON() ([]byte, error) {
	type plain struct {
		MessageID     string `json:"messageId"`
		Role          string `json:"role"`
		SubagentRunID string `json:"subagentRunId,omitempty"`
		Base
	}
	return marshalEvent(e.EventType(), plain{e.MessageID, RoleReasoning, e.SubagentRunID, e.Base.clean()})
}

func (e ReasoningMessageContentEvent) MarshalJSON() ([]byte, error) {
	type plain ReasoningMessageContentEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ReasoningMessageEndEvent) MarshalJSON() ([]byte, error) {
	type plain ReasoningMessageEndEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ReasoningMessageChunkEvent) MarshalJSON() ([]byte, error) {
	type plain ReasoningMessageChunkEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ReasoningEndEvent) MarshalJSON() ([]byte, error) {
	type plain ReasoningEndEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e ReasoningEncryptedValueEvent) MarshalJSON() ([]byte, error) {
	type plain ReasoningEncryptedValueEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e SubagentStartedEvent) MarshalJSON() ([]byte, error) {
	type plain SubagentStartedEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e SubagentFinishedEvent) MarshalJSON() ([]byte, error) {
	type plain SubagentFinishedEvent
	e.Result = nonNull(e.Result)
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

func (e SubagentErrorEvent) MarshalJSON() ([]byte, error) {
	type plain SubagentErrorEvent
	e.Base = e.Base.clean()
	return marshalEvent(e.EventType(), plain(e))
}

// marshalEvent writes {"type":typ, then the fields of v, an object.
func marshalEvent(typ string, v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"type":"`)
	buf.WriteString(typ) // the type names need no escaping
	buf.WriteByte('"')
	start := buf.Len()
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%s: %w", typ, err)
	}
	b := buf.Bytes()
	b = b[:len(b)-1]       // the newline Encode adds
	if len(b)-start == 2 { // {}
		return append(b[:start], '}'), nil
	}
	b[start] = ','
	return b, nil
}

// nonNull returns nil for every value JSON writes as null, v otherwise.
func nonNull(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		if x == nil || isNull(x) {
			return nil
		}
		return v
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
	}
	return v
}

// The methods that make the types events.

func (RunStartedEvent) EventType() string              { return TypeRunStarted }
func (RunFinishedEvent) EventType() string             { return TypeRunFinished }
func (RunErrorEvent) EventType() string                { return TypeRunError }
func (StepStartedEvent) EventType() string             { return TypeStepStarted }
func (StepFinishedEvent) EventType() string            { return TypeStepFinished }
func (TextMessageStartEvent) EventType() string        { return TypeTextMessageStart }
func (TextMessageContentEvent) EventType() string      { return TypeTextMessageContent }
func (TextMessageEndEvent) EventType() string          { return TypeTextMessageEnd }
func (TextMessageChunkEvent) EventType() string        { return TypeTextMessageChunk }
func (ToolCallStartEvent) EventType() string           { return TypeToolCallStart }
func (ToolCallArgsEvent) EventType() string            { return TypeToolCallArgs }
func (ToolCallEndEvent) EventType() string             { return TypeToolCallEnd }
func (ToolCallChunkEvent) EventType() string           { return TypeToolCallChunk }
func (ToolCallResultEvent) EventType() string          { return TypeToolCallResult }
func (StateSnapshotEvent) EventType() string           { return TypeStateSnapshot }
func (StateDeltaEvent) EventType() string              { return TypeStateDelta }
func (MessagesSnapshotEvent) EventType() string        { return TypeMessagesSnapshot }
func (ActivitySnapshotEvent) EventType() string        { return TypeActivitySnapshot }
func (ActivityDeltaEvent) EventType() string           { return TypeActivityDelta }
func (RawEvent) EventType() string                     { return TypeRaw }
func (CustomEvent) EventType() string                  { return TypeCustom }
func (ReasoningStartEvent) EventType() string          { return TypeReasoningStart }
func (ReasoningMessageStartEvent) EventType() string   { return TypeReasoningMessageStart }
func (ReasoningMessageContentEvent) EventType() string { return TypeReasoningMessageContent }
func (ReasoningMessageEndEvent) EventType() string     { return TypeReasoningMessageEnd }
func (ReasoningMessageChunkEvent) EventType() string   { return TypeReasoningMessageChunk }
func (ReasoningEndEvent) EventType() string            { return TypeReasoningEnd }
func (ReasoningEncryptedValueEvent) EventType() string { return TypeReasoningEncryptedValue }
func (SubagentStartedEvent) EventType() string         { return TypeSubagentStarted }
func (SubagentFinishedEvent) EventType() string        { return TypeSubagentFinished }
func (SubagentErrorEvent) EventType() string           { return TypeSubagentError }

func (e RunStartedEvent) with(f func(*Base)) Event              { f(&e.Base); return e }
func (e RunFinishedEvent) with(f func(*Base)) Event             { f(&e.Base); return e }
func (e RunErrorEvent) with(f func(*Base)) Event                { f(&e.Base); return e }
func (e StepStartedEvent) with(f func(*Base)) Event             { f(&e.Base); return e }
func (e StepFinishedEvent) with(f func(*Base)) Event            { f(&e.Base); return e }
func (e TextMessageStartEvent) with(f func(*Base)) Event        { f(&e.Base); return e }
func (e TextMessageContentEvent) with(f func(*Base)) Event      { f(&e.Base); return e }
func (e TextMessageEndEvent) with(f func(*Base)) Event          { f(&e.Base); return e }
func (e TextMessageChunkEvent) with(f func(*Base)) Event        { f(&e.Base); return e }
func (e ToolCallStartEvent) with(f func(*Base)) Event           { f(&e.Base); return e }
func (e ToolCallArgsEvent) with(f func(*Base)) Event            { f(&e.Base); return e }
func (e ToolCallEndEvent) with(f func(*Base)) Event             { f(&e.Base); return e }
func (e ToolCallChunkEvent) with(f func(*Base)) Event           { f(&e.Base); return e }
func (e ToolCallResultEvent) with(f func(*Base)) Event          { f(&e.Base); return e }
func (e StateSnapshotEvent) with(f func(*Base)) Event           { f(&e.Base); return e }
func (e StateDeltaEvent) with(f func(*Base)) Event              { f(&e.Base); return e }
func (e MessagesSnapshotEvent) with(f func(*Base)) Event        { f(&e.Base); return e }
func (e ActivitySnapshotEvent) with(f func(*Base)) Event        { f(&e.Base); return e }
func (e ActivityDeltaEvent) with(f func(*Base)) Event           { f(&e.Base); return e }
func (e RawEvent) with(f func(*Base)) Event                     { f(&e.Base); return e }
func (e CustomEvent) with(f func(*Base)) Event                  { f(&e.Base); return e }
func (e ReasoningStartEvent) with(f func(*Base)) Event          { f(&e.Base); return e }
func (e ReasoningMessageStartEvent) with(f func(*Base)) Event   { f(&e.Base); return e }
func (e ReasoningMessageContentEvent) with(f func(*Base)) Event { f(&e.Base); return e }
func (e ReasoningMessageEndEvent) with(f func(*Base)) Event     { f(&e.Base); return e }
func (e ReasoningMessageChunkEvent) with(f func(*Base)) Event   { f(&e.Base); return e }
func (e ReasoningEndEvent) with(f func(*Base)) Event            { f(&e.Base); return e }
func (e ReasoningEncryptedValueEvent) with(f func(*Base)) Event { f(&e.Base); return e }
func (e SubagentStartedEvent) with(f func(*Base)) Event         { f(&e.Base); return e }
func (e SubagentFinishedEvent) with(f func(*Base)) Event        { f(&e.Base); return e }
func (e SubagentErrorEvent) with(f func(*Base)) Event           { f(&e.Base); return e }

// DecodeEvent reads one event of any type, numbers kept exact as
// json.Number. It checks the JSON's shape, not what the protocol requires
// (a missing required field reads as empty).
func DecodeEvent(data []byte) (Event, error) {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("an event must be a JSON object: %v", err)
	}
	if head.Type == nil {
		return nil, fmt.Errorf("event has no type")
	}
	switch *head.Type {
	case TypeRunStarted:
		return decodeAs[RunStartedEvent](data)
	case TypeRunFinished:
		return decodeAs[RunFinishedEvent](data)
	case TypeRunError:
		return decodeAs[RunErrorEvent](data)
	case TypeStepStarted:
		return decodeAs[StepStartedEvent](data)
	case TypeStepFinished:
		return decodeAs[StepFinishedEvent](data)
	case TypeTextMessageStart:
		return decodeAs[TextMessageStartEvent](data)
	case TypeTextMessageContent:
		return decodeAs[TextMessageContentEvent](data)
	case TypeTextMessageEnd:
		return decodeAs[TextMessageEndEvent](data)
	case TypeTextMessageChunk:
		return decodeAs[TextMessageChunkEvent](data)
	case TypeToolCallStart:
		return decodeAs[ToolCallStartEvent](data)
	case TypeToolCallArgs:
		return decodeAs[ToolCallArgsEvent](data)
	case TypeToolCallEnd:
		return decodeAs[ToolCallEndEvent](data)
	case TypeToolCallChunk:
		return decodeAs[ToolCallChunkEvent](data)
	case TypeToolCallResult:
		return decodeAs[ToolCallResultEvent](data)
	case TypeStateSnapshot:
		return decodeAs[StateSnapshotEvent](data)
	case TypeStateDelta:
		return decodeAs[StateDeltaEvent](data)
	case TypeMessagesSnapshot:
		return decodeAs[MessagesSnapshotEvent](data)
	case TypeActivitySnapshot:
		return decodeAs[ActivitySnapshotEvent](data)
	case TypeActivityDelta:
		return decodeAs[ActivityDeltaEvent](data)
	case TypeRaw:
		return decodeAs[RawEvent](data)
	case TypeCustom:
		return decodeAs[CustomEvent](data)
	case TypeReasoningStart:
		return decodeAs[ReasoningStartEvent](data)
	case TypeReasoningMessageStart:
		return decodeAs[ReasoningMessageStartEvent](data)
	case TypeReasoningMessageContent:
		return decodeAs[ReasoningMessageContentEvent](data)
	case TypeReasoningMessageEnd:
		return decodeAs[ReasoningMessageEndEvent](data)
	case TypeReasoningMessageChunk:
		return decodeAs[ReasoningMessageChunkEvent](data)
	case TypeReasoningEnd:
		return decodeAs[ReasoningEndEvent](data)
	case TypeReasoningEncryptedValue:
		return decodeAs[ReasoningEncryptedValueEvent](data)
	case TypeSubagentStarted:
		return decodeAs[SubagentStartedEvent](data)
	case TypeSubagentFinished:
		return decodeAs[SubagentFinishedEvent](data)
	case TypeSubagentError:
		return decodeAs[SubagentErrorEvent](data)
	}
	return nil, fmt.Errorf("unknown event type %q", *head.Type)
}

func decodeAs[T Event](data []byte) (Event, error) {
	var e T
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%s: %s", e.EventType(), decodeError(err, data))
	}
	return e, nil
}

// Constructors.

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

// RunError ends a run that failed; code "" is left out.
func RunError(message, code string) RunErrorEvent {
	return RunErrorEvent{Message: message, Code: code}
}

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
