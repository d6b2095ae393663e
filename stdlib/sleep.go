package stdlib

import (
	"context"
	"time"

	"github.com/aguic/aguic/vm"
)

// sleep declares the sleep kind: a durable timer. The conversation parks
// at the node, like at a suspend, and whoever keeps the thread (the
// server's host) resumes it once the time has come, after restarts
// included. A request that arrives before then is refused, and the
// conversation keeps sleeping.
func sleep() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "sleep",
		Exec: execSleep,
		Pure: true,
		Doc:  "Parks the conversation for a duration, ending the run with RUN_FINISHED; the server wakes the thread when the time has come, after restarts too, and the flow goes on after the node in a run of its own.",
		Arg: &vm.ArgSpec{Name: "duration", Type: vm.TypeDuration, Required: true,
			Doc: `How long to sleep, such as "10m" or "24h".`},
		Gives:   func(*vm.Node) vm.Gives { return vm.Gives{HumanInTheLoop: true} },
		Suspend: vm.SuspendAlways,
		Convo:   true,
		Example: `nap: sleep "1h"`,
	}
}

// sleepState is what a sleeping node keeps: when it wakes.
type sleepState struct {
	Until int64 `json:"until"` // Unix milliseconds
}

// execSleep parks the run until the node's time; resumed, it goes on when
// the time has come and refuses the resume before.
func execSleep(ctx context.Context, c *vm.Call) (vm.Step, error) {
	var st sleepState
	if c.Resume != nil && fromState(c.State(), &st) == nil && st.Until > 0 {
		if c.Now().UnixMilli() < st.Until {
			return vm.Step{}, vm.Errorf(vm.ErrResume, "the conversation sleeps until %s", time.UnixMilli(st.Until).UTC().Format(time.RFC3339))
		}
		c.SetState(nil)
		return vm.Step{}, nil
	}
	v, err := c.Arg()
	if err != nil {
		return vm.Step{}, err
	}
	s, _ := v.(string)
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return vm.Step{}, vm.Errorf(vm.ErrNode, "sleep expects a positive duration such as \"10m\", found %s", vm.Describe(v))
	}
	st.Until = c.Now().Add(d).UnixMilli()
	c.SetState(st)
	return vm.Step{Wait: &vm.Wait{Kind: vm.WaitTimer, Until: st.Until}}, nil
}
