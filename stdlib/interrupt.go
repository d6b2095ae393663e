package stdlib

import (
	"context"
	"time"

	"github.com/aguic/aguic/vm"
)

func interrupt() *vm.KindSpec {
	return &vm.KindSpec{
		Name:  "interrupt",
		Exec:  execInterrupt,
		Gives: func(*vm.Node) vm.Gives { return vm.Gives{Interrupts: true} },
		Pure:  true,
		Doc:   `Checkpoints the conversation and ends the run with RUN_FINISHED outcome {type: "interrupt", interrupts: [...]}; the next request resumes it with a RunAgentInput.resume entry for this interrupt.`,
		Keys: []vm.KeySpec{
			{Name: "reason", Type: vm.TypeString, Required: true,
				Doc: `Why the run stopped, a short code the client acts on, such as "approval".`},
			{Name: "message", Type: vm.TypeString,
				Doc: "A human-readable explanation for the client to show."},
			{Name: "response_schema", Type: vm.TypeObject,
				Doc: "A JSON Schema the resume payload must match; a payload that does not ends the resumed run with RUN_ERROR."},
			{Name: "expires", Type: vm.TypeDuration,
				Doc: `How long the interrupt stays open, such as "24h"; after that it can only be cancelled (a resume that resolves it ends with RUN_ERROR). It never expires when absent.`},
			{Name: "tool_call_id", Type: vm.TypeString,
				Doc: "The id of the tool call the interrupt is about, sent as its toolCallId."},
			{Name: "metadata", Type: vm.TypeObject,
				Doc: "Extra data sent with the interrupt as its metadata."},
		},
		Suspend: vm.SuspendAlways,
		Convo:   true,
		Result:  "{status, payload}",
		Example: "approve: interrupt {\n" +
			"  reason  = \"approval\"\n" +
			"  message = \"Refund order <<$order.id>>?\"\n" +
			"} -> $decision",
	}
}

// interruptState is what a suspended interrupt node keeps: the interrupts
// it opened.
type interruptState struct {
	Interrupts []vm.Interrupt `json:"interrupts"`
}

// execInterrupt opens an AG-UI interrupt and suspends; resumed, it checks
// the answers and gives {status, payload}.
func execInterrupt(ctx context.Context, c *vm.Call) (vm.Step, error) {
	if c.Resume != nil {
		return resumeInterrupt(c)
	}
	in := vm.Interrupt{ID: c.NextID("int")}
	var schema, meta map[string]any
	var expires time.Duration
	if err := c.UnpackKeys("reason", &in.Reason, "message", &in.Message, "tool_call_id", &in.ToolCallID,
		"response_schema", &schema, "expires", &expires, "metadata", &meta); err != nil {
		return vm.Step{}, err
	}
	if schema != nil {
		if _, err := compileSchema(schema); err != nil {
			return vm.Step{}, vm.Errorf(vm.ErrNode, "response_schema is not a valid JSON Schema: %s", schemaError(err))
		}
		in.ResponseSchema = schema
	}
	if expires > 0 {
		in.ExpiresAt = c.Now().Add(expires).UnixMilli()
	}
	if meta != nil {
		in.Metadata = meta
	}
	st := interruptState{Interrupts: []vm.Interrupt{in}}
	c.SetState(st)
	return vm.Step{Wait: &vm.Wait{Kind: vm.WaitInterrupt, Interrupts: st.Interrupts}}, nil
}

func resumeInterrupt(c *vm.Call) (vm.Step, error) {
	var st interruptState
	if err := fromState(c.State(), &st); err != nil || len(st.Interrupts) == 0 {
		return vm.Step{}, vm.Errorf(vm.ErrInternal, "the checkpoint holds no open interrupt for this node")
	}
	open := map[string]*vm.Interrupt{}
	var ids []string
	for i := range st.Interrupts {
		open[st.Interrupts[i].ID] = &st.Interrupts[i]
		ids = append(ids, st.Interrupts[i].ID)
	}
	answers := map[string]vm.ResumeEntry{}
	for _, e := range c.Resume.Interrupts {
		switch {
		case open[e.InterruptID] == nil:
			return vm.Step{}, vm.Errorf(vm.ErrResume, "resume entry for unknown interrupt %q; open: %s", e.InterruptID, vm.QuoteList(ids))
		case answers[e.InterruptID].InterruptID != "":
			return vm.Step{}, vm.Errorf(vm.ErrResume, "interrupt %q is answered more than once", e.InterruptID)
		case e.Status != "resolved" && e.Status != "cancelled":
			return vm.Step{}, vm.Errorf(vm.ErrResume, "interrupt %q: status must be \"resolved\" or \"cancelled\", found %q", e.InterruptID, e.Status)
		}
		answers[e.InterruptID] = e
	}
	now := c.Now().UnixMilli()
	for _, in := range st.Interrupts {
		e, ok := answers[in.ID]
		if !ok {
			return vm.Step{}, vm.Errorf(vm.ErrResume, "interrupt %q (%s) has no resume entry", in.ID, in.Reason)
		}
		if e.Status != "resolved" {
			// Cancelling is always accepted, also past expiry: it is how
			// the client closes an interrupt it can no longer answer.
			continue
		}
		if in.ExpiresAt != 0 && now > in.ExpiresAt {
			return vm.Step{}, vm.Errorf(vm.ErrResume, "interrupt %q expired at %s and can no longer be resolved: resume it with status \"cancelled\"", in.ID, time.UnixMilli(in.ExpiresAt).UTC().Format(time.RFC3339))
		}
		if in.ResponseSchema == nil {
			continue
		}
		sch, err := compileSchema(in.ResponseSchema)
		if err != nil {
			return vm.Step{}, vm.Errorf(vm.ErrInternal, "interrupt %q: response_schema: %s", in.ID, schemaError(err))
		}
		if err := sch.Validate(vm.Normalize(e.Payload)); err != nil {
			return vm.Step{}, vm.Errorf(vm.ErrResume, "interrupt %q: the payload does not match response_schema: %s", in.ID, schemaError(err))
		}
	}
	c.SetState(nil)
	e := answers[st.Interrupts[0].ID]
	return vm.Step{Result: map[string]any{"status": e.Status, "payload": vm.Normalize(e.Payload)}}, nil
}
