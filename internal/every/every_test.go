package every_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/every"
)

// TestRun: f runs again and again, and never after the returned channel
// closed.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	ran := make(chan struct{}, 1)
	done := every.Run(ctx, time.Millisecond, func() {
		calls.Add(1)
		select {
		case ran <- struct{}{}:
		default:
		}
	})
	for range 3 {
		<-ran
	}
	cancel()
	<-done
	n := calls.Load()
	time.Sleep(10 * time.Millisecond)
	if calls.Load() != n {
		t.Errorf("f ran after Run's goroutine ended")
	}
}
