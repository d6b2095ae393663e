package stdlib

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aguic/aguic/vm"
)

func call() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "call",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			res, err := execCall(ctx, c)
			return vm.Step{Result: res}, err
		},
		Gives: func(n *vm.Node) vm.Gives {
			if n.Arg == nil {
				return vm.Gives{}
			}
			return vm.Gives{Calls: strings.TrimSpace(n.Arg.Source)}
		},
		Tool: &vm.ToolSpec{Doc: "The model gets the called workflow's output."},
		Doc:  "Runs another workflow as a sub-workflow between SUBAGENT_STARTED and SUBAGENT_FINISHED and gives the value its output node set.",
		Arg:  &vm.ArgSpec{Name: "workflow", Type: vm.TypeWorkflow, Required: true, Doc: "The id of the workflow to run, a bare identifier."},
		Keys: []vm.KeySpec{
			{Name: "input", Type: vm.TypeAny,
				Doc: "The value the child workflow reads as $input."},
			{Name: "timeout", Type: vm.TypeDuration,
				Doc: `How long the child workflow may run before the node fails, such as "2m"; only the run's deadline applies when absent.`},
			{Name: "retry", Type: vm.TypeInt, Default: 0,
				Doc: "How many times a failed child run is started again before the node fails."},
			{Name: "backoff", Type: vm.TypeBackoff, Default: "1s..8s",
				Doc: `The first and the longest wait between retries, such as "1s..8s"; each wait doubles.`},
		},
		Result:  "the child workflow's output",
		Example: `call summarize { input = {text: $document.text} } -> $summary`,
	}
}

func execCall(ctx context.Context, c *vm.Call) (any, error) {
	v, err := c.Arg()
	if err != nil {
		return nil, err
	}
	id, ok := v.(string)
	if !ok || id == "" {
		return nil, vm.Errorf(vm.ErrNode, "call: expected a workflow id, found %s", vm.Describe(v))
	}
	var input any
	var timeout time.Duration
	if err := c.UnpackKeys("input", &input, "timeout", &timeout); err != nil {
		return nil, err
	}
	b, err := retryPolicyOf(c)
	if err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		out, err := callOnce(ctx, c, id, input, timeout)
		if err == nil {
			return out, nil
		}
		var e *vm.Error
		if ctx.Err() != nil || errors.As(err, &e) && (e.Code == vm.ErrVisits || e.Code == vm.ErrCancelled || e.Code == vm.ErrDeadline || e.Code == vm.ErrInternal) {
			return nil, err
		}
		if try >= b.retries {
			if try > 0 && e != nil {
				e.Message += fmt.Sprintf(" (after %d tries)", try+1)
			}
			return nil, err
		}
		if sleepCtx(ctx, b.delay(try+1)) != nil {
			return nil, runEndedErr(ctx)
		}
	}
}

// callOnce runs the child workflow once within timeout.
func callOnce(ctx context.Context, c *vm.Call, id string, input any, timeout time.Duration) (any, error) {
	try := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		try, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	out, err := c.CallWorkflow(try, id, input)
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil:
		return nil, runEndedErr(ctx)
	case try.Err() != nil:
		return nil, vm.Errorf(vm.ErrTimeout, "call %s: the workflow did not finish within %s", id, timeout)
	}
	return nil, err
}
