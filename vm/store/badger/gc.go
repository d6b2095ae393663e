package badger

import (
	"context"
	"errors"
	"fmt"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/aguic/aguic/internal/every"
)

// gcDiscardRatio is the share of garbage that makes a value-log file worth
// rewriting.
const gcDiscardRatio = 0.5

// RunGC reclaims value-log space: it rewrites value-log files that are at
// least half garbage until none is left, and returns how many it rewrote.
// Only values of 4 KiB and more (frames, large events) live in the value
// log. In memory it does nothing.
func (s *Store) RunGC(ctx context.Context) (int, error) {
	if err := s.enter(ctx); err != nil {
		return 0, fmt.Errorf("value-log gc %s: %w", s.name, err)
	}
	defer s.leave()
	n := 0
	for {
		err := s.db.RunValueLogGC(gcDiscardRatio)
		switch {
		case err == nil:
			n++
			if err := ctx.Err(); err != nil {
				return n, fmt.Errorf("value-log gc %s: %w", s.name, err)
			}
		case errors.Is(err, badgerdb.ErrNoRewrite), errors.Is(err, badgerdb.ErrRejected),
			errors.Is(err, badgerdb.ErrGCInMemoryMode):
			// Nothing (more) to rewrite, or another GC is running.
			return n, nil
		default:
			return n, fmt.Errorf("value-log gc %s: %w", s.name, err)
		}
	}
}

// StartGC runs RunGC every interval (10 minutes when every is not
// positive) in a goroutine until ctx is done or the store closed, and logs
// its failures. The channel it returns is closed when the goroutine has
// stopped.
func (s *Store) StartGC(ctx context.Context, interval time.Duration) <-chan struct{} {
	if interval <= 0 {
		interval = 10 * time.Minute
	}
	// The loop ends with the store too.
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		select {
		case <-s.done:
		case <-ctx.Done():
		}
	}()
	return every.Run(ctx, interval, func() {
		n, err := s.RunGC(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed):
			s.log.Warn("value-log gc failed", "dir", s.name, "err", err)
		case n > 0:
			s.log.Debug("value-log gc", "dir", s.name, "rewritten", n)
		}
	})
}
