package stdlib

import (
	"context"
	"errors"
	"time"

	"github.com/aguic/aguic/vm"
)

// timeoutKey declares timeout; def is a duration string, or nil for none.
func timeoutKey(what string, def any) vm.KeySpec {
	doc := "How long " + what + ` may take before it fails, such as "20s"`
	if def == nil {
		doc += "; only the run's deadline applies when absent."
	} else {
		doc += "."
	}
	return vm.KeySpec{Name: "timeout", Type: vm.TypeDuration, Default: def, Doc: doc}
}

// retryKey declares retry; def is an int, or nil for none.
func retryKey(what string, def any) vm.KeySpec {
	return vm.KeySpec{Name: "retry", Type: vm.TypeInt, Default: def,
		Doc: "How many more times a failed " + what + " is tried; none when absent or 0."}
}

// backoffKey declares backoff; def is a backoff string, or nil for none.
func backoffKey(def any) vm.KeySpec {
	return vm.KeySpec{Name: "backoff", Type: vm.TypeBackoff, Default: def,
		Doc: `The waits between tries as "first..longest", doubling from the first up to the longest, such as "1s..8s".`}
}

// retryPolicyOf reads the retry and backoff keys.
func retryPolicyOf(c *vm.Call) (retryPolicy, error) {
	var b retryPolicy
	var s string
	if err := c.UnpackKeys("retry", &b.retries, "backoff", &s); err != nil {
		return b, err
	}
	if b.retries < 0 {
		return b, vm.Errorf(vm.ErrNode, "retry must be a whole number of at least 0, found %d", b.retries)
	}
	if s != "" {
		var err error
		if b.first, b.longest, err = vm.ParseBackoff(s); err != nil {
			return b, vm.Errorf(vm.ErrNode, "backoff: %v", err)
		}
	}
	return b, nil
}

// retryPolicy says how often and how long to wait before trying again.
type retryPolicy struct {
	retries        int           // tries after the first
	first, longest time.Duration // the first wait, doubling up to the longest
}

// delay is the wait before retry n (1 for the first retry): first doubled
// n-1 times, at most longest.
func (b retryPolicy) delay(n int) time.Duration {
	d := b.first
	for i := 1; i < n && d < b.longest; i++ {
		d *= 2
	}
	return min(d, b.longest)
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// runEndedErr turns the end of the run's context into the error that stops
// the run: cancelled, or past its deadline.
func runEndedErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return vm.Errorf(vm.ErrDeadline, "the run's deadline passed")
	}
	return vm.Errorf(vm.ErrCancelled, "the run was cancelled")
}
