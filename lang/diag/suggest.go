package diag

// TypoLimit is how many edits away a name may be from a candidate and
// still be taken for a misspelling of it: half its length plus one, and
// never more than three.
func TypoLimit(name string) int { return min(3, len(name)/2+1) }

// Closest returns the candidate closest to name, at most limit edits
// away (Distance), the least in string order among equals, with its
// distance; ok is false when none is that close, or when name is itself
// a candidate: a known name is no misspelling. It is what a "did you
// mean" suggestion names.
func Closest(name string, candidates []string, limit int) (best string, dist int, ok bool) {
	for _, c := range candidates {
		if c == name {
			return "", 0, false
		}
		d := Distance(name, c)
		if d > limit {
			continue
		}
		if !ok || d < dist || d == dist && c < best {
			best, dist, ok = c, d, true
		}
	}
	return best, dist, ok
}

// Distance is the Damerau–Levenshtein distance (optimal string alignment)
// between a and b, counted in runes: how many insertions, deletions,
// substitutions and swaps of two neighbours turn one into the other.
func Distance(a, b string) int {
	if ascii(a) && ascii(b) {
		return osa([]byte(a), []byte(b))
	}
	return osa([]rune(a), []rune(b))
}

func ascii(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func osa[T byte | rune](a, b []T) int {
	n := len(b) + 1
	prev2, prev, cur := make([]int, n), make([]int, n), make([]int, n)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
