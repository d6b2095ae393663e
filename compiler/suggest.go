package compiler

import (
	"fmt"
	"strings"

	"github.com/aguic/aguic/lang/diag"
)

// suggest returns ` (did you mean "x"?)` for the candidate closest to name,
// or "" when none is close enough to be a likely typo.
func suggest(name string, candidates []string) string {
	best := closest(name, candidates)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// closest returns the candidate closest to name, the first in order among
// equals, when it is close enough to be a likely typo: at most half the
// name's length plus one edits away, and never more than 3; else "".
func closest(name string, candidates []string) string {
	return closestWithin(name, candidates, diag.TypoLimit(name))
}

// misspelling returns the candidate that name is a misspelling of: one
// that differs from it only in case, else one that differs by at most one
// edit, or two for names of 8 runes or more; else "". It is stricter than
// closest, for names that may rightly be unknown to the compiler (a field
// a hook adds to $agent, a model provider of the program's own), where
// only a near miss is reported.
func misspelling(name string, candidates []string) string {
	for _, c := range candidates {
		if c != name && strings.EqualFold(c, name) {
			return c
		}
	}
	limit := 1
	if len([]rune(name)) >= 8 {
		limit = 2
	}
	return closestWithin(name, candidates, limit)
}

// closestWithin is the candidate closest to name, at most limit edits
// away, or "".
func closestWithin(name string, candidates []string, limit int) string {
	best, _, _ := diag.Closest(name, candidates, limit)
	return best
}
