package wftest

import (
	"slices"
	"strings"
)

// Rewrite applies updates to the text of a test file: each replaces a
// part of one line, and every other byte stays as it was.
func Rewrite(data []byte, updates []Update) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	byLine := map[int][]Update{}
	for _, u := range updates {
		byLine[u.Line] = append(byLine[u.Line], u)
	}
	for n, us := range byLine {
		if n < 1 || n > len(lines) {
			continue
		}
		line := lines[n-1]
		body := strings.TrimRight(line, "\r\n")
		end := line[len(body):]
		// From the right, so that earlier offsets stay valid.
		slices.SortFunc(us, func(a, b Update) int { return b.Start - a.Start })
		for _, u := range us {
			if u.Start < 0 || u.End > len(body) || u.Start > u.End {
				continue
			}
			body = body[:u.Start] + u.Text + body[u.End:]
		}
		lines[n-1] = body + end
	}
	return []byte(strings.Join(lines, ""))
}
