package store

import (
	"context"
	"log/slog"
	"time"
)

// Maintain applies the retention policy r once before it returns, then
// every interval until ctx ends, logging what it removed; the returned
// channel closes when it stops. With a zero policy it does nothing and
// returns a closed channel.
func Maintain(ctx context.Context, st Store, r Retention, every time.Duration, log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	if r == (Retention{}) {
		close(done)
		return done
	}
	if every <= 0 {
		every = time.Hour
	}
	if log == nil {
		log = slog.Default()
	}
	sweep := func() {
		events, threads, err := st.Sweep(ctx, r, time.Now())
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("retention sweep failed", "err", err)
		case events > 0 || threads > 0:
			log.Info("retention sweep", "events", events, "threads", threads)
		}
	}
	sweep()
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				sweep()
			}
		}
	}()
	return done
}
