package stdlib

import (
	"context"

	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

func say() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "say",
		Exec: execSay,
		Pure: true,
		Doc:  "Sends a text message to the client as TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT and TEXT_MESSAGE_END and stores it in the thread's history.",
		Arg:  &vm.ArgSpec{Name: "text", Type: vm.TypeString, Required: true, Doc: "The message text, a template: <<expr>> interpolates."},
		Keys: []vm.KeySpec{
			{Name: "role", Type: vm.TypeString, Default: "assistant", Enum: []string{"assistant", "user", "system"},
				Doc: "Who the message is from: assistant, user or system."},
			{Name: "silent", Type: vm.TypeBool, Default: false,
				Doc: "Store the message in the history without streaming it to the client live."},
			{Name: "hidden", Type: vm.TypeBool, Default: false,
				Doc: "Stream the message live but leave it out of every later replay and history."},
			{Name: "id", Type: vm.TypeString,
				Doc: "The message id; a fresh unique id when absent."},
			paceKey("the text goes word by word, one TEXT_MESSAGE_CONTENT a word with the white space before it, instead of in one delta; a silent message is stored at once"),
		},
		Result:  "{id, text}",
		Example: `say "Hello <<$agent.latestUserMessage.content>>"`,
	}
}

// execSay sends one text message: TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT
// (left out when the text is empty: AG-UI wants a non-empty delta; one a
// word, spaced by the pace, when the node has one) and TEXT_MESSAGE_END.
func execSay(ctx context.Context, c *vm.Call) (vm.Step, error) {
	arg, err := c.Arg()
	if err != nil {
		return vm.Step{}, err
	}
	text := vm.Text(arg)
	var id, role string
	var silent, hidden bool
	if err := c.UnpackKeys("id", &id, "role", &role, "silent", &silent, "hidden", &hidden); err != nil {
		return vm.Step{}, err
	}
	p, err := newPacer(c)
	if err != nil {
		return vm.Step{}, err
	}
	if id == "" {
		id = c.NextID("msg")
	}
	emit := func(e vm.Event) error {
		e.Silent, e.Hidden = silent, hidden
		return c.Emit(e)
	}
	if err := emit(vm.Event{Type: vm.TextStart, MessageID: id, Role: role}); err != nil {
		return vm.Step{}, err
	}
	pieces := []string{text}
	switch {
	case text == "":
		pieces = nil
	case p.on() && !silent:
		pieces = llm.Words(text)
	}
	for _, piece := range pieces {
		if err := p.next(ctx); err != nil {
			return vm.Step{}, err
		}
		if err := emit(vm.Event{Type: vm.TextContent, MessageID: id, Delta: piece}); err != nil {
			return vm.Step{}, err
		}
	}
	if err := emit(vm.Event{Type: vm.TextEnd, MessageID: id}); err != nil {
		return vm.Step{}, err
	}
	return vm.Step{Result: map[string]any{"id": id, "text": text}}, nil
}
