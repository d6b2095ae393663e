package agui

import (
	"strconv"
	"strings"
)

// Dialect is the shape of the events a stream sends: AG-UI 1.0, or the
// shapes the clients before it accept. A server decides it once per
// request (DialectOf) and sends every event of the stream in it (Encode,
// Translate).
type Dialect uint8

const (
	// V1 is AG-UI 1.0: the events as this package writes them.
	V1 Dialect = iota
	// V0 is the protocol before 1.0 as the clients of @ag-ui/client
	// 0.0.57 and 0.0.59 (which CopilotKit 1.61 and 1.74 bundle) read it:
	// they check every event against their own schemas and fail the run
	// on one they refuse.
	V0
)

// DialectOf returns the dialect a run request asks for with its
// protocolVersion: V0 when it has none (the clients before 1.0 send
// none) or names a version before 1.0 ("0.0.57"), V1 for "1.0" and for
// any other version, later or unreadable.
func DialectOf(protocolVersion string) Dialect {
	v := strings.TrimSpace(protocolVersion)
	if v == "" {
		return V0
	}
	major, _, _ := strings.Cut(v, ".")
	if n, err := strconv.ParseUint(major, 10, 64); err == nil && n == 0 {
		return V0
	}
	return V1
}

// Translate returns e as d sends it, and false when d does not send it.
// V1 sends every event as it is. V0 sends what the schemas of
// @ag-ui/core 0.0.57 and 0.0.59 both accept:
//
//   - RUN_STARTED without protocolVersion;
//   - RUN_FINISHED whose success outcome has no pendingToolCallIds (those
//     clients learn of frontend tool calls from the TOOL_CALL events),
//     whose interrupt outcome is as in 1.0, and which has no outcome for
//     a cancelled run (they know no cancelled outcome);
//   - no SUBAGENT_STARTED, SUBAGENT_FINISHED or SUBAGENT_ERROR (0.0.57
//     does not know them), and every other event without subagentRunId:
//     a called workflow's events are the run's own;
//   - TOOL_CALL_RESULT with text content: the text of its parts, joined;
//   - every other event, and every field, as in 1.0.
func (d Dialect) Translate(e Event) (Event, bool) {
	out, send, _ := d.translate(e)
	return out, send
}

// translate is Translate, and whether the event sent differs from e.
func (d Dialect) translate(e Event) (out Event, send, changed bool) {
	if d == V1 {
		return e, true, false
	}
	switch x := e.(type) {
	case SubagentStartedEvent, SubagentFinishedEvent, SubagentErrorEvent:
		return nil, false, true
	case RunStartedEvent:
		changed = x.ProtocolVersion != ""
		x.ProtocolVersion = ""
		return x, true, changed
	case RunFinishedEvent:
		o, changed := x.Outcome.v0()
		x.Outcome = o
		return x, true, changed
	case ToolCallResultEvent:
		if !x.Content.IsText() {
			x.Content, changed = Content{Text: x.Content.text()}, true
			e = x
		}
	}
	if a, ok := e.(interface{ unattributed() (Event, bool) }); ok {
		if out, named := a.unattributed(); named {
			e, changed = out, true
		}
	}
	return e, true, changed
}

// v0 returns the outcome as clients before 1.0 take it (see Translate),
// and whether it differs from o.
func (o *Outcome) v0() (*Outcome, bool) {
	switch {
	case o == nil:
		return nil, false
	case o.Type == OutcomeCancelled:
		return nil, true
	case o.Type == OutcomeSuccess && len(o.PendingToolCallIDs) > 0:
		return &Outcome{Type: OutcomeSuccess}, true
	case o.Type == OutcomeInterrupt:
		ins, changed := o.Interrupts, false
		for i, in := range o.Interrupts {
			if in.SubagentRunID != "" {
				if !changed {
					ins, changed = append([]Interrupt(nil), o.Interrupts...), true
				}
				ins[i].SubagentRunID = ""
			}
		}
		if changed {
			return &Outcome{Type: OutcomeInterrupt, Interrupts: ins}, true
		}
	}
	return o, false
}

// text is the content's text: its text parts joined when it is a list of
// parts.
func (c *Content) text() string {
	if c.IsText() {
		return c.Text
	}
	var b strings.Builder
	for _, p := range c.Parts {
		if p.Type == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Encoding is an event's JSON in each dialect, written at once: the
// values an event holds may change once it has been sent.
type Encoding struct {
	v1, v0 []byte // v0 nil: the same as v1
	v0Drop bool   // V0 does not send the event
}

// Encode returns the JSON of e in each dialect, as MarshalJSON writes it.
func Encode(e Event) (Encoding, error) {
	v1, err := e.MarshalJSON()
	if err != nil {
		return Encoding{}, err
	}
	x := Encoding{v1: v1}
	out, send, changed := V0.translate(e)
	switch {
	case !send:
		x.v0Drop = true
	case changed:
		if x.v0, err = out.MarshalJSON(); err != nil {
			return Encoding{}, err
		}
	}
	return x, nil
}

// In returns the event's JSON in dialect d, and false when d does not
// send it.
func (x Encoding) In(d Dialect) ([]byte, bool) {
	switch {
	case d != V0:
		return x.v1, true
	case x.v0Drop:
		return nil, false
	case x.v0 != nil:
		return x.v0, true
	}
	return x.v1, true
}
