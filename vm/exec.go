package vm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aguic/aguic/lang/diag"
)

// Exec runs one node of a kind the stdlib provides. It returns which edge
// to follow, or a Wait to suspend the run at the node; on resume the same
// node runs again with Call.Resume set.
type Exec func(ctx context.Context, c *Call) (Step, error)

// Step is what a node did.
type Step struct {
	Edge   string // the edge to follow; "" means next
	Result any    // stored at the node's `-> $path`, if it has one
	Wait   *Wait  // non-nil: suspend the run here
}

// WaitKind says what a suspended run waits for.
type WaitKind string

// The things a run waits for.
const (
	WaitUser      WaitKind = "user"      // the next user turn (suspend)
	WaitTool      WaitKind = "tool"      // the result of frontend tool calls
	WaitInterrupt WaitKind = "interrupt" // answers to interrupts
	WaitTimer     WaitKind = "timer"     // a time: whoever keeps the thread resumes it then
)

// Wait describes a suspension: what the run waits for.
type Wait struct {
	Kind        WaitKind    `json:"kind"`
	ToolCallIDs []string    `json:"toolCallIds,omitempty"`
	Interrupts  []Interrupt `json:"interrupts,omitempty"`
	Until       int64       `json:"until,omitempty"` // WaitTimer: when, in Unix milliseconds
}

// Interrupt is one open AG-UI interrupt.
type Interrupt struct {
	ID             string `json:"id"`
	Reason         string `json:"reason"`
	Message        string `json:"message,omitempty"`
	ToolCallID     string `json:"toolCallId,omitempty"`
	ResponseSchema any    `json:"responseSchema,omitempty"`
	ExpiresAt      int64  `json:"expiresAt,omitempty"` // Unix milliseconds
	Metadata       any    `json:"metadata,omitempty"`
}

// Resume is the input that continues a suspended run.
type Resume struct {
	// Agent, when not nil, replaces $agent whole (an AG-UI turn).
	Agent map[string]any `json:"agent,omitempty"`
	// User is who asks for the turn, $user ({id, claims}), nil for
	// nobody: with Agent, it replaces $user whole, nil included.
	User map[string]any `json:"user,omitempty"`
	// Merge is merged into the context recursively before the node resumes.
	Merge map[string]any `json:"merge,omitempty"`
	// Interrupts answers the open interrupts (AG-UI RunAgentInput.resume).
	Interrupts []ResumeEntry `json:"interrupts,omitempty"`
	// ToolResults are the results of the client's tool calls the turn
	// brings, in order (ToolResults derives them from $agent).
	ToolResults []ToolResult `json:"toolResults,omitempty"`
}

// ToolResult is the result of a tool call the client ran.
type ToolResult struct {
	ToolCallID string `json:"toolCallId"`
	MessageID  string `json:"messageId,omitempty"`
	Content    any    `json:"content"` // as the message has it: text, or a list of parts
}

// ToolResult returns the result of tool call id the turn brings.
func (r *Resume) ToolResult(id string) (ToolResult, bool) {
	if r != nil {
		for _, t := range r.ToolResults {
			if t.ToolCallID == id {
				return t, true
			}
		}
	}
	return ToolResult{}, false
}

// ToolResults are the tool results of a turn's $agent: its tool messages
// with a toolCallId, then its latestToolResult when that is not among
// them.
func ToolResults(agent map[string]any) []ToolResult {
	var out []ToolResult
	seen := map[string]bool{}
	add := func(v any) {
		msg, _ := v.(map[string]any)
		id, _ := msg["toolCallId"].(string)
		if msg == nil || msg["role"] != "tool" || id == "" || seen[id] {
			return
		}
		seen[id] = true
		mid, _ := msg["id"].(string)
		out = append(out, ToolResult{ToolCallID: id, MessageID: mid, Content: msg["content"]})
	}
	list, _ := agent["messages"].([]any)
	for _, m := range list {
		add(m)
	}
	add(agent["latestToolResult"])
	return out
}

// RequestModel is the model a turn's request chose for the model nodes
// that name none, as the server records it in the turn's $agent
// (SetRequestModel): $agent._hidden.model, or "" when it chose none.
func RequestModel(agent map[string]any) string {
	hidden, _ := agent["_hidden"].(map[string]any)
	name, _ := hidden["model"].(string)
	return name
}

// SetRequestModel records in agent, a turn's $agent, the model its request
// chose, for RequestModel. The server sets it only to a model the
// operator allows.
func SetRequestModel(agent map[string]any, name string) {
	hidden, _ := agent["_hidden"].(map[string]any)
	if hidden == nil {
		hidden = map[string]any{}
		agent["_hidden"] = hidden
	}
	hidden["model"] = name
}

// ResumeEntry answers one interrupt.
type ResumeEntry struct {
	InterruptID string `json:"interruptId"`
	Status      string `json:"status"` // "resolved" or "cancelled"
	Payload     any    `json:"payload,omitempty"`
}

// Status is how a run ended.
type Status string

// The run statuses.
const (
	Finished  Status = "finished"
	Suspended Status = "suspended"
	Cancelled Status = "cancelled"
	Failed    Status = "failed"
)

// Outcome is how a run ended. Exactly one per run.
type Outcome struct {
	Status Status `json:"status"`
	Result any    `json:"result,omitempty"` // Finished: what output set
	Wait   *Wait  `json:"wait,omitempty"`   // Suspended: what the run waits for
	Err    *Error `json:"error,omitempty"`  // Failed
}

// Error is a run-time error with the node and the source span it came from.
type Error struct {
	Code    string    `json:"code"`
	Message string    `json:"message"`
	NodeID  string    `json:"nodeId,omitempty"`
	Span    diag.Span `json:"span"`
}

// The run-time error codes.
const (
	ErrExpr      = "expression"     // an expression failed to evaluate
	ErrFail      = "fail"           // a fail statement
	ErrVisits    = "too_many_steps" // the run visited more nodes than allowed
	ErrDeadline  = "deadline"       // the run's deadline passed
	ErrNode      = "node"           // a node failed
	ErrResume    = "invalid_resume" // the resume input does not fit the suspension
	ErrInternal  = "internal"       // a bug or a broken frame
	ErrTimeout   = "timeout"        // an I/O node ran out of time
	ErrHTTP      = "http"           // an http node got a failing status or no answer
	ErrCall      = "call"           // a called workflow failed
	ErrCancelled = "cancelled"      // the run was cancelled inside a node
)

func (e *Error) Error() string {
	where := e.Span.String()
	if e.NodeID != "" {
		where += " (" + e.NodeID + ")"
	}
	return fmt.Sprintf("%s: %s", where, e.Message)
}

// Errorf returns an *Error with the given code; the interpreter fills in
// the node and span.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// asError converts any error into an *Error of node n.
func asError(err error, n *Node) *Error {
	var e *Error
	if !errors.As(err, &e) {
		code := ErrNode
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			code = ErrTimeout
		case errors.Is(err, context.Canceled):
			code = ErrCancelled
		}
		e = &Error{Code: code, Message: err.Error()}
	} else {
		c := *e
		e = &c
	}
	if e.NodeID == "" && n != nil {
		e.NodeID = n.ID
		if !e.Span.Start.IsValid() {
			e.Span = n.Span
		}
	}
	return e
}

// Call is what a node's Exec sees: its node, its values, the frame and the
// means to emit events.
type Call struct {
	Node   *Node
	Spec   *KindSpec
	Resume *Resume // non-nil when the run resumes at this node
	// Tool is the workflow's tool the node implements when a model called
	// it (see RunTool), or nil for a node of the flow.
	Tool *Tool

	r *runner
}

// Server returns the MCP server the program declares with the given name,
// or nil.
func (c *Call) Server(name string) *Server { return c.r.m.Program.Server(name) }

// Frame returns the run's frame.
func (c *Call) Frame() *Frame { return c.r.frame }

// Workflow returns the workflow being run.
func (c *Call) Workflow() *Workflow { return c.r.wf }

// Now returns the machine's current time.
func (c *Call) Now() time.Time { return c.r.m.now() }

// Eval evaluates a value of the node.
func (c *Call) Eval(v *Value) (any, error) { return c.r.eval(v) }

// Arg evaluates the node's positional argument (nil when absent).
func (c *Call) Arg() (any, error) {
	if c.Node.Arg == nil {
		return nil, nil
	}
	return c.r.eval(c.Node.Arg)
}

// Key evaluates the key name: the written value, else the kind's default;
// ok is false when neither exists.
func (c *Call) Key(name string) (v any, ok bool, err error) {
	if val := c.Node.Keys[name]; val != nil {
		if val.Path != nil {
			return c.r.frame.Get(val.Path), true, nil
		}
		v, err := c.r.eval(val)
		return v, true, err
	}
	if c.Spec != nil {
		if ks := c.Spec.Key(name); ks != nil && ks.Default != nil {
			return ks.Default, true, nil
		}
	}
	return nil, false, nil
}

// KeyPath returns the path a TypePath key names: the written path, else
// the key's default path; nil when neither exists.
func (c *Call) KeyPath(name string) *Path {
	if val := c.Node.Keys[name]; val != nil && val.Path != nil {
		return val.Path
	}
	if c.Spec != nil {
		if ks := c.Spec.Key(name); ks != nil && ks.Path != "" {
			return ParsePath(ks.Path)
		}
	}
	return nil
}

// Emit sends an event of the node.
func (c *Call) Emit(e Event) error {
	e.NodeID = c.Node.ID
	return c.r.emit(e)
}

// NextID returns a new id unique within the conversation.
func (c *Call) NextID(prefix string) string { return c.r.frame.NextID(prefix) }

// State returns the node-local state saved by SetState, or nil.
func (c *Call) State() any { return c.r.frame.State[c.Node.ID] }

// SetState saves node-local state in the frame; nil deletes it.
func (c *Call) SetState(v any) {
	if v == nil {
		c.r.frame.noteState(c.Node.ID)
		delete(c.r.frame.State, c.Node.ID)
		return
	}
	if c.r.frame.State == nil {
		c.r.frame.State = map[string]any{}
	}
	c.r.frame.State[c.Node.ID] = Normalize(v)
	c.r.frame.noteState(c.Node.ID)
}

// Checkpoint saves the run where it stands, inside the node: the frame,
// with the node's state as SetState left it, and the events emitted since
// the last save, through the observer's Saver, as the interpreter saves
// the run between two nodes. A run recovered from this save starts again
// at this node, with no resume and with State as it was saved, so that the
// node's Exec can go on from there instead of repeating what it did before
// (a tool call that reached the world, say); a node that checkpoints must
// clear its state (SetState(nil)) on every other way out.
//
// Nothing the run emitted may be open at a checkpoint (a text message, a
// tool call, a reasoning span): a recovered run would not know to close
// it. Checkpoint fails then, and when the Saver fails, with an internal
// error that fails the run.
//
// Only the main flow of a run is saved: in a parallel branch, in a called
// workflow and in a run without a Saver, Checkpoint does nothing (see
// CanCheckpoint), and a crash runs the node again from its start, as it
// runs again every node since the last save there.
func (c *Call) Checkpoint() error {
	r := c.r
	if r.checkpoint == nil {
		return nil
	}
	if open := r.out.describeOpen(); open != "" {
		return &Error{Code: ErrInternal, Message: fmt.Sprintf("node %s saves the run with %s open", c.Node.ID, open)}
	}
	if err := r.checkpoint(r.frame); err != nil {
		return &Error{Code: ErrInternal, Message: "saving the checkpoint inside " + c.Node.ID + " failed: " + err.Error()}
	}
	return nil
}

// CanCheckpoint reports whether Checkpoint saves the run: in the main flow
// of a run that has a Saver. A node may skip preparing the state it would
// save when it does not.
func (c *Call) CanCheckpoint() bool { return c.r.checkpoint != nil }

// Get reads a context path.
func (c *Call) Get(p *Path) any { return c.r.frame.Get(p) }

// Set writes a context path; the expressions evaluated after it see the
// new value.
func (c *Call) Set(p *Path, v any) error { return c.r.set(p, v) }

// SetOutput sets the run's result.
func (c *Call) SetOutput(v any) {
	c.r.frame.Output = Normalize(v)
	c.r.frame.noteOutput()
}

// Wrote records that the value at p was changed in place rather than
// through Set (see Frame.Wrote).
func (c *Call) Wrote(p *Path) { c.r.frame.Wrote(p) }

// CallWorkflow runs another workflow of the program to its end with input
// as its $input, inside this run, and returns its output.
func (c *Call) CallWorkflow(ctx context.Context, id string, input any) (any, error) {
	return c.r.callWorkflow(ctx, c.Node, id, input)
}

// ParsePath reads a path written as $root.key.key.
func ParsePath(s string) *Path {
	s = trimDollar(s)
	p := &Path{}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if p.Root == "" && start == 0 {
				p.Root = s[:i]
			} else {
				p.Keys = append(p.Keys, PathKey{Name: s[start:i]})
			}
			start = i + 1
		}
	}
	return p
}

func trimDollar(s string) string {
	if len(s) > 0 && s[0] == '$' {
		return s[1:]
	}
	return s
}

// Hidden returns a value the run keeps for the stdlib under key (a
// baseline of what the client has seen, for instance), or nil. It is saved
// with the frame and shared by every node. The value is not copied: change
// it only through SetHidden.
func (c *Call) Hidden(key string) any { return c.r.frame.Hidden[key] }

// SetHidden saves a value under key, as Hidden reads it; nil deletes it.
func (c *Call) SetHidden(key string, v any) {
	if v != nil {
		v = Normalize(v)
	}
	c.r.setHidden(key, v)
}

// RunTool runs a backend tool of the workflow with args as $args and
// returns what the model gets: the value of its `result = expr`, or the
// result of its http or call node, shaped as the kind's ToolSpec says; a
// tool with both evaluates the expression with the node's result bound to
// the kind's variable ($response).
func (c *Call) RunTool(ctx context.Context, t *Tool, args any) (any, error) {
	r := c.r
	defer r.bind("args", Normalize(args))()
	if t.Impl == nil {
		if t.Result == nil {
			return nil, &Error{Code: ErrInternal, Message: fmt.Sprintf("tool %q has no implementation", t.Name)}
		}
		return r.eval(t.Result)
	}
	spec := r.m.Registry.Kind(t.Impl.Kind)
	if spec == nil || spec.Exec == nil || spec.Tool == nil {
		return nil, &Error{Code: ErrInternal, Message: fmt.Sprintf("tool %q: node kind %q cannot implement a tool", t.Name, t.Impl.Kind)}
	}
	st, err := spec.Exec(ctx, &Call{Node: t.Impl, Spec: spec, Tool: t, r: r})
	if err != nil {
		return nil, asError(err, t.Impl)
	}
	switch {
	case t.Result != nil:
		if spec.Tool.Var == "" {
			return nil, &Error{Code: ErrInternal, Message: fmt.Sprintf("tool %q: a %s node's result cannot be shaped", t.Name, t.Impl.Kind)}
		}
		defer r.bind(spec.Tool.Var, Normalize(st.Result))()
		return r.eval(t.Result)
	case spec.Tool.Shape != nil:
		return spec.Tool.Shape(st.Result), nil
	}
	return st.Result, nil
}

// bind sets the context root name to v for what runs until the returned
// function restores the root as it was.
func (r *runner) bind(name string, v any) (restore func()) {
	saved, had := r.frame.Context[name]
	r.frame.Context[name] = v
	r.env = nil
	return func() {
		if had {
			r.frame.Context[name] = saved
		} else {
			delete(r.frame.Context, name)
		}
		r.env = nil
	}
}
