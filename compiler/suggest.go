package compiler

import "fmt"

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
	return closestWithin(name, candidates, min(3, len(name)/2+1))
}

// misspelling returns the candidate that name is a misspelling of: one
// that differs from it by at most one edit, or two for names of 8 runes
// or more; else "". It is stricter than closest, for names that may
// rightly be unknown to the compiler (a field a hook adds to $agent, a
// model provider of the program's own), where only a near miss is
// reported.
func misspelling(name string, candidates []string) string {
	limit := 1
	if len([]rune(name)) >= 8 {
		limit = 2
	}
	return closestWithin(name, candidates, limit)
}

func closestWithin(name string, candidates []string, limit int) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		d := distance(name, c)
		if c == name || d > limit {
			continue
		}
		if best == "" || d < bestDist || d == bestDist && c < best {
			best, bestDist = c, d
		}
	}
	return best
}

// distance is the Damerau–Levenshtein distance (optimal string alignment)
// between a and b, counted in runes.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
