package stdlib

import (
	"context"
	"maps"
	"slices"

	"github.com/aguic/aguic/vm"
)

func suspend() *vm.KindSpec {
	return &vm.KindSpec{
		Name:  "suspend",
		Exec:  execSuspend,
		Gives: func(*vm.Node) vm.Gives { return vm.Gives{HumanInTheLoop: true} },
		Pure:  true,
		Doc:   "Checkpoints the conversation and ends the run with RUN_FINISHED, emitting nothing else; the thread's next request resumes the flow here with that turn's $agent.",
		Keys: []vm.KeySpec{
			{Name: "merge", Type: vm.TypeObject, Writes: true,
				Doc: "An object merged into the context when the conversation resumes here."},
		},
		Suspend: vm.SuspendAlways,
		Convo:   true,
		Example: "next_turn: suspend",
	}
}

// execSuspend ends the run and waits for the user; resumed, it merges its
// merge key into the context and goes on. A resume that answers
// interrupts is refused: the node still waits.
func execSuspend(ctx context.Context, c *vm.Call) (vm.Step, error) {
	if c.Resume == nil {
		return vm.Step{Wait: &vm.Wait{Kind: vm.WaitUser}}, nil
	}
	if len(c.Resume.Interrupts) > 0 {
		return vm.Step{}, vm.Errorf(vm.ErrResume, "the thread waits for the next user message, not for interrupt answers")
	}
	var merge map[string]any
	if err := c.UnpackKeys("merge", &merge); err != nil {
		return vm.Step{}, err
	}
	for _, k := range slices.Sorted(maps.Keys(merge)) {
		root := &vm.Path{Root: k}
		dst := map[string]any{k: c.Get(root)}
		vm.Merge(dst, map[string]any{k: merge[k]})
		if err := c.Set(root, dst[k]); err != nil {
			return vm.Step{}, vm.Errorf(vm.ErrNode, "merge: %v", err)
		}
	}
	return vm.Step{}, nil
}
