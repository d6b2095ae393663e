package vm

import (
	"fmt"
	"strings"
	"time"
)

// ParseBackoff reads a backoff written "first..longest", such as
// "1s..8s": the first wait before a retry and the longest, each wait
// doubling the one before. The first wait must be positive and the longest
// at least as long.
func ParseBackoff(s string) (first, longest time.Duration, err error) {
	a, b, ok := strings.Cut(s, "..")
	if !ok {
		return 0, 0, fmt.Errorf("expected first..longest, found %q", s)
	}
	if first, err = time.ParseDuration(strings.TrimSpace(a)); err != nil {
		return 0, 0, fmt.Errorf("first wait: %v", err)
	}
	if longest, err = time.ParseDuration(strings.TrimSpace(b)); err != nil {
		return 0, 0, fmt.Errorf("longest wait: %v", err)
	}
	if first <= 0 {
		return 0, 0, fmt.Errorf("the first wait must be positive, found %s", first)
	}
	if longest < first {
		return 0, 0, fmt.Errorf("longest wait %s is shorter than the first %s", longest, first)
	}
	return first, longest, nil
}
