package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/aguic/aguic/internal/every"
)

// Maintain applies the retention policy r once before it returns, then
// every interval until ctx ends, logging what it removed; the returned
// channel closes when it stops. With a zero policy it does nothing and
// returns a closed channel. Among the processes that share the store, the
// policy is applied about once per interval, by whichever process comes
// first (Store.TakeTask), not once per process.
func Maintain(ctx context.Context, st Store, r Retention, interval time.Duration, log *slog.Logger) <-chan struct{} {
	if r == (Retention{}) {
		done := make(chan struct{})
		close(done)
		return done
	}
	if interval <= 0 {
		interval = time.Hour
	}
	if log == nil {
		log = slog.Default()
	}
	sweep := func() {
		// A little less than the interval: the process that swept last
		// time may take it again at its next tick.
		mine, err := st.TakeTask(ctx, "retention", interval-interval/20)
		if err != nil || !mine {
			if err != nil && ctx.Err() == nil {
				log.Warn("retention sweep: taking the task failed", "err", err)
			}
			return
		}
		events, threads, err := st.Sweep(ctx, r, time.Now())
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("retention sweep failed", "err", err)
		case events > 0 || threads > 0:
			log.Info("retention sweep", "events", events, "threads", threads)
		}
	}
	sweep()
	return every.Run(ctx, interval, sweep)
}
