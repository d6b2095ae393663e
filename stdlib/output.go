package stdlib

import (
	"context"

	"github.com/aguic/aguic/vm"
)

func output() *vm.KindSpec {
	return &vm.KindSpec{
		Name:    "output",
		Exec:    execOutput,
		Pure:    true,
		Doc:     "Sets the run's result, which RUN_FINISHED carries as result and a calling workflow's call node receives.",
		Arg:     &vm.ArgSpec{Name: "value", Type: vm.TypeAny, Required: true, Doc: "The result, any JSON value."},
		Example: "output $reply.text",
	}
}

// execOutput sets the run's result.
func execOutput(ctx context.Context, c *vm.Call) (vm.Step, error) {
	v, err := c.Arg()
	if err != nil {
		return vm.Step{}, err
	}
	c.SetOutput(v)
	return vm.Step{}, nil
}
