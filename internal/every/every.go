// Package every runs a function at a fixed interval in the background:
// the loop that lease renewals, retention sweeps, value-log collection
// and the idle memory check each need.
package every

import (
	"context"
	"time"
)

// Run calls f every interval, from a goroutine of its own, until ctx is
// done. The channel it returns is closed once that goroutine has ended:
// after it, f is not called again.
func Run(ctx context.Context, interval time.Duration, f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f()
			}
		}
	}()
	return done
}
