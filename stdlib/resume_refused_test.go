package stdlib_test

import (
	"testing"

	"github.com/aguic/aguic/vm"
)

// TestResumeWithInterruptAnswers resumes the nodes that do not wait for
// interrupt answers with some: the resume is refused with invalid_resume,
// nothing is emitted, and the node still waits for what it waited for.
func TestResumeWithInterruptAnswers(t *testing.T) {
	answers := []vm.ResumeEntry{{InterruptID: "int-x", Status: "resolved", Payload: map[string]any{"ok": true}}}
	tests := []struct {
		name    string
		src     string
		ctx     map[string]any
		refused msgTurn      // a turn with interrupt answers
		message string       // the error it gets
		next    msgTurn      // then the turn the node waits for
		want    vm.EventType // the first event of that turn
	}{
		{name: "suspend", src: msgSuspendSrc, ctx: map[string]any{"agent": agentWith(msgUser("u1", "first"))},
			refused: msgTurn{Interrupts: answers},
			message: "the thread waits for the next user message, not for interrupt answers",
			next:    msgTurn{Agent: agentWith(msgUser("u2", "second"))},
			want:    vm.Custom},
		{name: "suspend with a message and answers", src: msgSuspendSrc, ctx: map[string]any{"agent": agentWith(msgUser("u1", "first"))},
			refused: msgTurn{Agent: agentWith(msgUser("u2", "second")), Interrupts: answers},
			message: "the thread waits for the next user message, not for interrupt answers",
			next:    msgTurn{Agent: agentWith(msgUser("u2", "second"))},
			want:    vm.Custom},
		{name: "frontend_tool", src: msgFrontendSrc,
			refused: msgTurn{Interrupts: answers},
			message: `tool call "call-f1-1" waits for its result in a tool message, not for interrupt answers`,
			next:    msgTurn{Agent: map[string]any{"messages": []any{msgTool("t1", "call-f1-1", `{"ok":true}`)}}},
			want:    vm.ToolCallResult},
		{name: "frontend_tool with its result and answers", src: msgFrontendSrc,
			refused: msgTurn{Agent: map[string]any{"messages": []any{msgTool("t1", "call-f1-1", `{"ok":true}`)}}, Interrupts: answers},
			message: `tool call "call-f1-1" waits for its result in a tool message, not for interrupt answers`,
			next:    msgTurn{Agent: map[string]any{"messages": []any{msgTool("t1", "call-f1-1", `{"ok":true}`)}}},
			want:    vm.ToolCallResult},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newMsgConversation(t, tt.src, tt.ctx)
			o, _ := c.run()
			if o.Status != vm.Suspended {
				t.Fatalf("first run: %s", msgOutcome(o))
			}
			wait := o.Wait
			o, rec := c.resume(tt.refused)
			if o.Status != vm.Failed || o.Err.Code != vm.ErrResume || o.Err.Message != tt.message || o.Err.NodeID == "" {
				t.Fatalf("resumed with interrupt answers: %s; want %s %q at the waiting node", msgOutcome(o), vm.ErrResume, tt.message)
			}
			if len(rec.Events) != 0 {
				t.Errorf("a refused resume emitted:\n%s", rec.Text())
			}
			if !c.f.Suspended || c.f.Node != o.Err.NodeID {
				t.Fatalf("after the refused resume the frame is at %q, suspended %v; want still waiting at %q (%s)", c.f.Node, c.f.Suspended, o.Err.NodeID, wait.Kind)
			}
			o, rec = c.resume(tt.next)
			if o.Status != vm.Finished || len(rec.Events) == 0 || rec.Events[0].Type != tt.want {
				t.Fatalf("the turn the node waits for: %s\n%s", msgOutcome(o), rec.Text())
			}
		})
	}
}
