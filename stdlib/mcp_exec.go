package stdlib

import (
	"context"

	"github.com/aguic/aguic/vm"
)

func execMCP(ctx context.Context, c *vm.Call) (vm.Step, error) {
	return vm.Step{}, vm.Errorf(vm.ErrNode, "mcp calls are not wired yet")
}
