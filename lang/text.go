package lang

import (
	"strconv"
	"strings"
)

func strconvUnquote(esc string) (string, error) {
	return strconv.Unquote(`"` + esc + `"`)
}

// Literal returns the text of a string with no interpolation, escapes
// decoded and, for a heredoc, common indentation stripped; ok is false when
// the string interpolates.
func (s *String) Literal() (text string, ok bool) {
	var b strings.Builder
	for _, part := range s.Parts {
		switch {
		case part.Interp != nil:
			return "", false
		case part.Escape != "":
			t, _ := unescape(part.Escape)
			b.WriteString(t)
		default:
			b.WriteString(part.Text)
		}
	}
	if s.Heredoc {
		return Dedent(b.String()), true
	}
	return b.String(), true
}

// Dedent strips a heredoc's layout: a first line that is empty, the
// indentation of the closing line when it holds only blanks, and the
// indentation common to every non-blank line.
func Dedent(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 1 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if n := len(lines); n > 1 && strings.TrimSpace(lines[n-1]) == "" {
		lines = lines[:n-1]
	}
	prefix := ""
	first := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = indent, false
			continue
		}
		for !strings.HasPrefix(indent, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines[i] = ""
			continue
		}
		lines[i] = l[len(prefix):]
	}
	return strings.Join(lines, "\n")
}
