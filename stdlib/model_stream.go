package stdlib

import (
	"context"
	"slices"
	"strings"

	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// modelStream turns the chunks of one provider call into events.
type modelStream struct {
	m        *modelRun
	ctx      context.Context // the call's: a pause gives up when it is done
	pace     *pacer          // spaces out the streamed chunks
	emitted  bool            // an event went out: the call is not tried again
	emitErr  error           // the sink failed
	text     strings.Builder
	reason   strings.Builder
	textID   string // the open text message
	reasonID string // the open reasoning message
	lastText string // the latest text message, parent of later tool calls
	calls    []*modelStreamCall
}

// modelStreamCall is a tool call being streamed.
type modelStreamCall struct {
	index            int
	id, name         string
	args             strings.Builder
	started, visible bool
	ended            bool // TOOL_CALL_END went out: later arguments are not streamed
}

func (s *modelStream) emit(e vm.Event) error {
	if s.emitErr != nil {
		return s.emitErr
	}
	if e.Type == vm.TextContent || e.Type == vm.ReasoningContent || e.Type == vm.ToolCallArgs {
		// A chunk streamed, paced; waiting is not emitting, so a
		// cancelled wait leaves emitErr alone.
		if err := s.pace.next(s.ctx); err != nil {
			return err
		}
	}
	s.emitted = true
	if err := s.m.c.Emit(e); err != nil {
		s.emitErr = err
		return err
	}
	return nil
}

// chunk is the callback the provider streams to.
func (s *modelStream) chunk(ch llm.Chunk) error {
	m := s.m
	if ch.Reasoning != "" {
		if err := s.endText(); err != nil {
			return err
		}
		s.reason.WriteString(ch.Reasoning)
		if m.streamReasoning {
			if s.reasonID == "" {
				s.reasonID = vm.ReasoningPrefix + m.c.NextID("msg")
				if err := s.emit(vm.Event{Type: vm.ReasoningStart, MessageID: s.reasonID}); err != nil {
					return err
				}
				if err := s.emit(vm.Event{Type: vm.ReasoningMsgStart, MessageID: s.reasonID}); err != nil {
					return err
				}
			}
			if err := s.emit(vm.Event{Type: vm.ReasoningContent, MessageID: s.reasonID, Delta: ch.Reasoning}); err != nil {
				return err
			}
		}
	}
	if ch.Text != "" {
		if err := s.endReasoning(); err != nil {
			return err
		}
		s.text.WriteString(ch.Text)
		if m.stream {
			if s.textID == "" {
				s.textID = m.c.NextID("msg")
				s.lastText = s.textID
				if err := s.emit(vm.Event{Type: vm.TextStart, MessageID: s.textID, Role: llm.RoleAssistant}); err != nil {
					return err
				}
			}
			if err := s.emit(vm.Event{Type: vm.TextContent, MessageID: s.textID, Delta: ch.Text}); err != nil {
				return err
			}
		}
	}
	if d := ch.ToolCall; d != nil {
		if err := s.endReasoning(); err != nil {
			return err
		}
		if err := s.endText(); err != nil {
			return err
		}
		var sc *modelStreamCall
		for _, c := range s.calls {
			if c.index == d.Index {
				sc = c
			}
		}
		if sc == nil {
			// A new call: providers stream calls one after the other, so
			// the one before is complete.
			if n := len(s.calls); n > 0 {
				if err := s.endCall(s.calls[n-1]); err != nil {
					return err
				}
			}
			sc = &modelStreamCall{index: d.Index}
			s.calls = append(s.calls, sc)
		}
		if sc.id == "" {
			sc.id = d.ID
		}
		if sc.name == "" {
			sc.name = d.Name
		}
		sc.args.WriteString(d.Arguments)
		switch {
		case !sc.started && sc.name != "":
			return s.startCall(sc)
		case sc.started && sc.visible && !sc.ended && d.Arguments != "":
			return s.emit(vm.Event{Type: vm.ToolCallArgs, ToolCallID: sc.id, Delta: d.Arguments})
		}
	}
	return nil
}

// startCall emits the start of a tool call and the arguments so far.
func (s *modelStream) startCall(sc *modelStreamCall) error {
	sc.started = true
	if sc.id == "" {
		sc.id = s.m.c.NextID("call")
	}
	sc.visible = s.m.streamTools || s.m.frontend[sc.name]
	if !sc.visible {
		return nil
	}
	if err := s.predict(sc.id, sc.name); err != nil {
		return err
	}
	if err := s.emit(vm.Event{Type: vm.ToolCallStart, ToolCallID: sc.id, ToolCallName: sc.name, ParentMessageID: s.lastText}); err != nil {
		return err
	}
	if sc.args.Len() > 0 {
		return s.emit(vm.Event{Type: vm.ToolCallArgs, ToolCallID: sc.id, Delta: sc.args.String()})
	}
	return nil
}

// predict emits the PredictState of call id of tool, before its start,
// when the node predicts state from its arguments.
func (s *modelStream) predict(id, tool string) error {
	if entries := s.m.predict[tool]; entries != nil {
		return s.emit(predictEvent(entries, id))
	}
	return nil
}

// endCall ends a started, visible tool call once.
func (s *modelStream) endCall(sc *modelStreamCall) error {
	if !sc.started || !sc.visible || sc.ended {
		return nil
	}
	sc.ended = true
	return s.emit(vm.Event{Type: vm.ToolCallEnd, ToolCallID: sc.id})
}

func (s *modelStream) endText() error {
	if s.textID == "" {
		return nil
	}
	id := s.textID
	s.textID = ""
	return s.emit(vm.Event{Type: vm.TextEnd, MessageID: id})
}

func (s *modelStream) endReasoning() error {
	if s.reasonID == "" {
		return nil
	}
	id := s.reasonID
	s.reasonID = ""
	if err := s.emit(vm.Event{Type: vm.ReasoningMsgEnd, MessageID: id}); err != nil {
		return err
	}
	return s.emit(vm.Event{Type: vm.ReasoningEnd, MessageID: id})
}

// abort closes what a failed call left open.
func (s *modelStream) abort() error {
	if err := s.endReasoning(); err != nil {
		return err
	}
	if err := s.endText(); err != nil {
		return err
	}
	for _, sc := range s.calls {
		if err := s.endCall(sc); err != nil {
			return err
		}
	}
	return nil
}

// finish closes the streamed lifecycles, emits whatever the provider
// answered without streaming it, and returns the whole answer with the
// tool call ids the client saw.
func (s *modelStream) finish(resp *llm.Response) (*llm.Response, error) {
	m := s.m
	if err := s.endReasoning(); err != nil {
		return nil, err
	}
	if err := s.endText(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(s.calls, func(a, b *modelStreamCall) int { return a.index - b.index })
	for _, sc := range s.calls {
		if !sc.started {
			if err := s.startCall(sc); err != nil {
				return nil, err
			}
		}
		if err := s.endCall(sc); err != nil {
			return nil, err
		}
	}
	out := &llm.Response{}
	if resp != nil {
		*out = *resp
	}
	if out.Reasoning == "" {
		out.Reasoning = s.reason.String()
	} else if s.reason.Len() == 0 && m.streamReasoning {
		id := vm.ReasoningPrefix + m.c.NextID("msg")
		for _, e := range []vm.Event{
			{Type: vm.ReasoningStart, MessageID: id},
			{Type: vm.ReasoningMsgStart, MessageID: id},
			{Type: vm.ReasoningContent, MessageID: id, Delta: out.Reasoning},
			{Type: vm.ReasoningMsgEnd, MessageID: id},
			{Type: vm.ReasoningEnd, MessageID: id},
		} {
			if err := s.emit(e); err != nil {
				return nil, err
			}
		}
	}
	if out.Text == "" {
		out.Text = s.text.String()
	} else if s.text.Len() == 0 && m.stream {
		id := m.c.NextID("msg")
		s.lastText = id
		for _, e := range []vm.Event{
			{Type: vm.TextStart, MessageID: id, Role: llm.RoleAssistant},
			{Type: vm.TextContent, MessageID: id, Delta: out.Text},
			{Type: vm.TextEnd, MessageID: id},
		} {
			if err := s.emit(e); err != nil {
				return nil, err
			}
		}
	}
	if len(out.ToolCalls) == 0 {
		for _, sc := range s.calls {
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: sc.id, Name: sc.name, Arguments: sc.args.String()})
		}
		return out, nil
	}
	out.ToolCalls = slices.Clone(out.ToolCalls)
	for i := range out.ToolCalls {
		tc := &out.ToolCalls[i]
		if i < len(s.calls) {
			sc := s.calls[i]
			tc.ID = sc.id
			if tc.Name == "" {
				tc.Name = sc.name
			}
			if tc.Arguments == "" {
				tc.Arguments = sc.args.String()
			}
			continue
		}
		if tc.ID == "" {
			tc.ID = m.c.NextID("call")
		}
		if !m.streamTools && !m.frontend[tc.Name] {
			continue
		}
		if err := s.predict(tc.ID, tc.Name); err != nil {
			return nil, err
		}
		events := []vm.Event{{Type: vm.ToolCallStart, ToolCallID: tc.ID, ToolCallName: tc.Name, ParentMessageID: s.lastText}}
		if tc.Arguments != "" {
			events = append(events, vm.Event{Type: vm.ToolCallArgs, ToolCallID: tc.ID, Delta: tc.Arguments})
		}
		events = append(events, vm.Event{Type: vm.ToolCallEnd, ToolCallID: tc.ID})
		for _, e := range events {
			if err := s.emit(e); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
