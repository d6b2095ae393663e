package vm

import (
	"fmt"
	"slices"
	"sync"
)

// tracker passes events to the sink, one at a time, and remembers which
// messages, tool calls and reasoning spans are open so that a run that
// stops in the middle of one still closes it.
type tracker struct {
	mu        sync.Mutex
	sink      Sink
	open      []Event // the start events of what is open, in order
	reasoning []string
	unsaved   bool // an event was emitted since the last checkpoint
}

func (t *tracker) emit(e Event) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e.Type {
	case TextStart, ToolCallStart, ReasoningMsgStart:
		t.open = append(t.open, e)
	case ReasoningStart:
		t.reasoning = append(t.reasoning, e.MessageID)
	case TextEnd, ReasoningMsgEnd:
		t.close(func(o Event) bool { return o.MessageID == e.MessageID && o.Type != ToolCallStart })
	case ToolCallEnd:
		t.close(func(o Event) bool { return o.Type == ToolCallStart && o.ToolCallID == e.ToolCallID })
	case ReasoningEnd:
		if i := slices.Index(t.reasoning, e.MessageID); i >= 0 {
			t.reasoning = slices.Delete(t.reasoning, i, i+1)
		}
	}
	if e.Type != Usage {
		t.unsaved = true
	}
	if t.sink == nil {
		return nil
	}
	return t.sink.Emit(e)
}

func (t *tracker) close(match func(Event) bool) {
	if i := slices.IndexFunc(t.open, match); i >= 0 {
		t.open = slices.Delete(t.open, i, i+1)
	}
}

// describeOpen names the first message, tool call or reasoning span left
// open, for an error; "" when none is.
func (t *tracker) describeOpen() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case len(t.open) > 0 && t.open[0].Type == ToolCallStart:
		return fmt.Sprintf("tool call %q", t.open[0].ToolCallID)
	case len(t.open) > 0:
		return fmt.Sprintf("message %q", t.open[0].MessageID)
	case len(t.reasoning) > 0:
		return fmt.Sprintf("reasoning %q", t.reasoning[0])
	}
	return ""
}

// mark is a point in the open lists that closeFrom closes back to.
type mark struct{ open, reasoning int }

func (t *tracker) mark() mark {
	t.mu.Lock()
	defer t.mu.Unlock()
	return mark{len(t.open), len(t.reasoning)}
}

// closeAll ends, innermost first, every message, tool call and reasoning
// span left open, then every step the frame has open.
func (t *tracker) closeAll(f *Frame) error { return t.closeFrom(mark{}, f) }

// closeFrom ends what was opened after m, innermost first, then every step
// f has open.
func (t *tracker) closeFrom(m mark, f *Frame) error {
	for len(t.open) > m.open {
		o := t.open[len(t.open)-1]
		end := Event{Type: TextEnd, MessageID: o.MessageID, NodeID: o.NodeID, Silent: o.Silent, Hidden: o.Hidden}
		switch o.Type {
		case ToolCallStart:
			end = Event{Type: ToolCallEnd, ToolCallID: o.ToolCallID, NodeID: o.NodeID, Silent: o.Silent, Hidden: o.Hidden}
		case ReasoningMsgStart:
			end.Type = ReasoningMsgEnd
		}
		if err := t.emit(end); err != nil {
			return err
		}
	}
	for len(t.reasoning) > m.reasoning {
		if err := t.emit(Event{Type: ReasoningEnd, MessageID: t.reasoning[len(t.reasoning)-1]}); err != nil {
			return err
		}
	}
	for len(f.Steps) > 0 {
		name := f.Steps[len(f.Steps)-1]
		f.Steps = f.Steps[:len(f.Steps)-1]
		if err := t.emit(Event{Type: StepFinished, Name: name}); err != nil {
			return err
		}
	}
	return nil
}
