package lang

// closest returns the candidate closest to name and its distance, when one
// is close enough to be a likely typo: at most a third of a short name's
// letters differ, and never more than three. ok is false when none is, or
// when name is itself a candidate.
func closest(name string, candidates []string) (best string, dist int, ok bool) {
	limit := min(3, len(name)/2+1)
	for _, c := range candidates {
		if c == name {
			return "", 0, false
		}
		d := distance(name, c)
		if d > limit {
			continue
		}
		if !ok || d < dist || d == dist && c < best {
			best, dist, ok = c, d, true
		}
	}
	return best, dist, ok
}

// distance is the Damerau–Levenshtein distance (optimal string alignment)
// between a and b, counted in bytes (names are ASCII).
func distance(a, b string) int {
	var buf [3][33]int // no allocation for names of up to 32 bytes
	n := len(b) + 1
	prev2, prev, cur := buf[0][:0], buf[1][:0], buf[2][:0]
	if n <= len(buf[0]) {
		prev2, prev, cur = buf[0][:n], buf[1][:n], buf[2][:n]
	} else {
		prev2, prev, cur = make([]int, n), make([]int, n), make([]int, n)
	}
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
