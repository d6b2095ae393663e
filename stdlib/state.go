package stdlib

import (
	"context"

	"github.com/aguic/aguic/vm"
)

// agentState is where the client's state and its baseline live.
var agentState = statePaths{
	state:    vm.ParsePath("$agent.state"),
	hidden:   vm.ParsePath("$agent._hidden"),
	baseline: vm.ParsePath("$agent._hidden.state"),
}

func stateSync() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "state sync",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			return vm.Step{}, execStateSync(c, agentState)
		},
		Gives: func(*vm.Node) vm.Gives { return vm.Gives{StateSnapshots: true, StateDeltas: true} },
		Pure:  true,
		Doc:   "Compares $agent.state with its hidden baseline $agent._hidden.state, emits STATE_DELTA (RFC 6902) when that is smaller and STATE_SNAPSHOT otherwise, then makes $agent.state the new baseline.",
		Keys: []vm.KeySpec{
			{Name: "snapshots_only", Type: vm.TypeBool, Default: false,
				Doc: "Always emit STATE_SNAPSHOT, never STATE_DELTA."},
		},
		Example: "state sync",
	}
}

func stateSnapshot() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "state snapshot",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			return vm.Step{}, execStateSnapshot(c, agentState)
		},
		Gives:   func(*vm.Node) vm.Gives { return vm.Gives{StateSnapshots: true} },
		Pure:    true,
		Doc:     "Emits STATE_SNAPSHOT, setting the client's whole state to the given value.",
		Arg:     &vm.ArgSpec{Name: "state", Type: vm.TypeAny, Required: true, Doc: "The client's new state, usually an object."},
		Example: "state snapshot $agent.state",
	}
}

func stateDelta() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "state delta",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			return vm.Step{}, execStateDelta(c, agentState)
		},
		Gives:   func(*vm.Node) vm.Gives { return vm.Gives{StateDeltas: true} },
		Pure:    true,
		Doc:     "Emits STATE_DELTA, changing the client's state by the given RFC 6902 JSON Patch operations.",
		Arg:     &vm.ArgSpec{Name: "patch", Type: vm.TypeList, Required: true, Doc: `The RFC 6902 operations, such as [{op: "replace", path: "/mode", value: "review"}].`},
		Example: `state delta [{op: "replace", path: "/mode", value: "review"}]`,
	}
}

// statePaths are where the client's state and its baseline live: the
// baseline is the member "state" of hidden.
type statePaths struct {
	state, hidden, baseline *vm.Path
}

// execStateSync brings the client's state from the baseline to $agent.state.
func execStateSync(c *vm.Call, p statePaths) error {
	var only bool
	if err := c.UnpackKeys("snapshots_only", &only); err != nil {
		return err
	}
	cur, base := c.Get(p.state), c.Get(p.baseline)
	plan, err := diffSync(base, cur, true, only)
	if err != nil {
		return vm.Errorf(vm.ErrNode, "state sync: %v", err)
	}
	if !plan.Changed {
		return nil
	}
	e := vm.Event{Type: vm.StateDelta, Patch: plan.Patch}
	if plan.Snapshot {
		e = vm.Event{Type: vm.StateSnapshot, Value: vm.Copy(cur)}
	}
	if err := c.Emit(e); err != nil {
		return err
	}
	// The new baseline shares what did not change with the old one, which
	// it replaces: written in place, not copied again by Set.
	if hidden, ok := c.Get(p.hidden).(map[string]any); ok {
		hidden["state"] = plan.Base
		c.Wrote(p.baseline)
		return nil
	}
	return setContext(c, "state sync", p.baseline, plan.Base)
}

// execStateSnapshot sends the argument as the client's whole state, which
// becomes $agent.state and its baseline.
func execStateSnapshot(c *vm.Call, p statePaths) error {
	v, err := c.Arg()
	if err != nil {
		return err
	}
	v = vm.Normalize(v)
	if err := c.Emit(vm.Event{Type: vm.StateSnapshot, Value: v}); err != nil {
		return err
	}
	if err := setContext(c, "state snapshot", p.state, v); err != nil {
		return err
	}
	return setContext(c, "state snapshot", p.baseline, v)
}

// execStateDelta applies the argument's operations to $agent.state and sends
// them. The baseline follows; when they do not apply to it, it is dropped,
// so the next state sync sends a snapshot.
func execStateDelta(c *vm.Call, p statePaths) error {
	v, err := c.Arg()
	if err != nil {
		return err
	}
	ops, err := patchOps("state delta", v)
	if err != nil {
		return err
	}
	next, err := applyPatch("state delta", c.Get(p.state), ops)
	if err != nil {
		return err
	}
	if err := c.Emit(vm.Event{Type: vm.StateDelta, Patch: vm.Copy(ops).([]any)}); err != nil {
		return err
	}
	if err := setContext(c, "state delta", p.state, next); err != nil {
		return err
	}
	var base any
	if old := c.Get(p.baseline); old != nil {
		base, err = applyOps(old, ops)
		if err != nil {
			base = nil
		}
	}
	return setContext(c, "state delta", p.baseline, base)
}

func setContext(c *vm.Call, what string, p *vm.Path, v any) error {
	if err := c.Set(p, v); err != nil {
		return vm.Errorf(vm.ErrNode, "%s: %v", what, err)
	}
	return nil
}
