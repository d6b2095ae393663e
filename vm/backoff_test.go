package vm

import (
	"testing"
	"time"
)

func TestParseBackoff(t *testing.T) {
	tests := []struct {
		in             string
		first, longest time.Duration
		err            string
	}{
		{in: "1s..8s", first: time.Second, longest: 8 * time.Second},
		{in: "250ms..1m", first: 250 * time.Millisecond, longest: time.Minute},
		{in: " 1s .. 1s ", first: time.Second, longest: time.Second},
		{in: "1s", err: `expected first..longest, found "1s"`},
		{in: "x..1s", err: `first wait: time: invalid duration "x"`},
		{in: "1s..", err: `longest wait: time: invalid duration ""`},
		{in: "0s..0s", err: "the first wait must be positive, found 0s"},
		{in: "8s..1s", err: "longest wait 1s is shorter than the first 8s"},
	}
	for _, tt := range tests {
		first, longest, err := ParseBackoff(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParseBackoff(%q) error %v, want %s", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || first != tt.first || longest != tt.longest {
			t.Errorf("ParseBackoff(%q) = %s, %s, %v", tt.in, first, longest, err)
		}
	}
}
