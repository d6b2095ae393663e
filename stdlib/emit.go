package stdlib

import (
	"context"

	"github.com/aguic/aguic/vm"
)

func emit() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "emit",
		Exec: execEmit,
		Pure: true,
		Doc:  "Emits an AG-UI CUSTOM event with the given name and value.",
		Arg:  &vm.ArgSpec{Name: "name", Type: vm.TypeString, Required: true, Doc: "The event's name."},
		Keys: []vm.KeySpec{
			{Name: "value", Type: vm.TypeAny,
				Doc: "The event's value, any JSON; null when absent."},
		},
		Example: `emit "weather_progress" { value = {stage: "fetch"} }`,
	}
}

// execEmit sends a CUSTOM event.
func execEmit(ctx context.Context, c *vm.Call) (vm.Step, error) {
	name, err := c.Arg()
	if err != nil {
		return vm.Step{}, err
	}
	var value any
	if err := c.UnpackKeys("value", &value); err != nil {
		return vm.Step{}, err
	}
	return vm.Step{}, c.Emit(vm.Event{Type: vm.Custom, Name: vm.Text(name), Value: vm.Normalize(value)})
}
