package vm

// EventType names a semantic event of a run. The server maps each to its
// AG-UI event; `aguic run` prints them.
type EventType string

// The event types.
const (
	TextStart         EventType = "TEXT_MESSAGE_START"        // MessageID, Role
	TextContent       EventType = "TEXT_MESSAGE_CONTENT"      // MessageID, Delta
	TextEnd           EventType = "TEXT_MESSAGE_END"          // MessageID
	ToolCallStart     EventType = "TOOL_CALL_START"           // ToolCallID, ToolCallName, ParentMessageID
	ToolCallArgs      EventType = "TOOL_CALL_ARGS"            // ToolCallID, Delta
	ToolCallEnd       EventType = "TOOL_CALL_END"             // ToolCallID
	ToolCallResult    EventType = "TOOL_CALL_RESULT"          // MessageID ("tool:" + ToolCallID), ToolCallID, Content
	StateSnapshot     EventType = "STATE_SNAPSHOT"            // Value: the state
	StateDelta        EventType = "STATE_DELTA"               // Patch: RFC 6902 operations
	ActivitySnapshot  EventType = "ACTIVITY_SNAPSHOT"         // MessageID ("activity:" + id), ActivityType, Value, Replace
	ActivityDelta     EventType = "ACTIVITY_DELTA"            // MessageID, ActivityType, Patch
	StepStarted       EventType = "STEP_STARTED"              // Name
	StepFinished      EventType = "STEP_FINISHED"             // Name
	Custom            EventType = "CUSTOM"                    // Name, Value; ToolCallID, never sent, ties an event that announces a tool call to it
	ReasoningStart    EventType = "REASONING_START"           // MessageID ("reason:" + id)
	ReasoningMsgStart EventType = "REASONING_MESSAGE_START"   // MessageID
	ReasoningContent  EventType = "REASONING_MESSAGE_CONTENT" // MessageID, Delta
	ReasoningMsgEnd   EventType = "REASONING_MESSAGE_END"     // MessageID
	ReasoningEnd      EventType = "REASONING_END"             // MessageID
	SubagentStarted   EventType = "SUBAGENT_STARTED"          // SubagentRunID, Name
	SubagentFinished  EventType = "SUBAGENT_FINISHED"         // SubagentRunID, Name, Value: the output
	SubagentError     EventType = "SUBAGENT_ERROR"            // SubagentRunID, Name, Content: the message, Code
	// HideToolCall asks the event log to hide every earlier event of
	// ToolCallID from replay and history. It is not sent to clients.
	HideToolCall EventType = "HIDE_TOOL_CALL"
	// Usage reports the tokens one model call used: Name is the model
	// ("provider/model"), Value a UsageValue. It is neither stored nor
	// sent as an event; the server adds it up into the usage of the run's
	// terminal event.
	Usage EventType = "USAGE"
)

// UsageValue is the Value of a Usage event.
type UsageValue struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
}

// The message id prefixes that keep message kinds apart.
const (
	ReasoningPrefix = "reason:"
	ToolPrefix      = "tool:"
	ActivityPrefix  = "activity:"
)

// Event is one semantic event. Only the fields its Type lists are set.
type Event struct {
	Type EventType `json:"type"`

	MessageID       string `json:"messageId,omitempty"`
	Role            string `json:"role,omitempty"`
	Delta           string `json:"delta,omitempty"`
	ToolCallID      string `json:"toolCallId,omitempty"`
	ToolCallName    string `json:"toolCallName,omitempty"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
	Content         string `json:"content,omitempty"`
	ActivityType    string `json:"activityType,omitempty"`
	Replace         *bool  `json:"replace,omitempty"`
	Name            string `json:"name,omitempty"`
	SubagentRunID   string `json:"subagentRunId,omitempty"` // the subagent run of SUBAGENT_* events, and the called workflow's run that emitted any other event
	Code            string `json:"code,omitempty"`
	Value           any    `json:"value,omitempty"`
	Patch           []any  `json:"patch,omitempty"`

	// Silent events are stored but not streamed live; Hidden events are
	// streamed live but never replayed.
	Silent bool `json:"silent,omitempty"`
	Hidden bool `json:"hidden,omitempty"`

	NodeID string `json:"nodeId,omitempty"` // the node that emitted it
}

// Sink receives a run's events in order. The server persists and streams
// them; `aguic run` prints them. Emit is called from one goroutine at a
// time. An error stops the run.
type Sink interface {
	Emit(Event) error
}

// Observer is what a run reports to, handed to Machine.Run: the sink of
// its events, and what else the caller wants of the run. A field left nil
// costs the interpreter nothing. The interpreter calls the three under one
// lock, so their methods never run at the same time, in the order things
// happened.
type Observer struct {
	// Events receives the run's events in order; nil drops them.
	Events Sink
	// Saver, when set, saves the run as it goes.
	Saver Saver
	// Nodes, when set, learns when the nodes of the main flow start and
	// end.
	Nodes NodeObserver
}

// Saver saves a run as it goes: the interpreter calls Checkpoint after
// every node of the main flow that is not pure (see KindSpec.Pure), with
// the frame as it stands there, after the events of the nodes before, and
// inside a node of the main flow when the node asks (Call.Checkpoint),
// with the frame pointing at that node. A store writes what changed in the
// frame and those events in one transaction, so a run that crashes
// resumes from its last checkpoint, running the pure nodes after it (or
// the rest of the node it was saved in) again. An error fails the run.
type Saver interface {
	// Effect is called before a node of the main flow that is not pure
	// runs: what such a node does may reach the world (a model, an HTTP
	// service, another workflow), and a store first makes sure that the
	// turn it belongs to cannot be lost. An error fails the run.
	Effect() error
	Checkpoint(*Frame) error
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Event) error

// Emit calls f.
func (f SinkFunc) Emit(e Event) error { return f(e) }
