package lang

import (
	"bytes"
	"strconv"
	"strings"
)

func strconvUnquote(esc string) (string, error) {
	return strconv.Unquote(`"` + esc + `"`)
}

// Segment is a decoded piece of a string literal: text, or an
// interpolation.
type Segment struct {
	Text   string
	Interp *Interp
}

// Placeholders stand for interpolations and escapes while a heredoc's
// indentation is stripped, so that neither is mistaken for layout.
const (
	interpMark = '\uE000'
	escapeMark = '\uE001'
)

// Segments decodes the string into text and interpolations: a heredoc's
// layout stripped first (Dedent), then escapes decoded. Adjacent text is
// joined; a string with no text and no interpolation has one empty segment.
func (s *String) Segments() []Segment {
	var b strings.Builder
	var interps []*Interp
	var escapes []string
	for _, p := range s.Parts {
		switch {
		case p.Interp != nil:
			b.WriteRune(interpMark)
			interps = append(interps, p.Interp)
		case p.Escape != "":
			b.WriteRune(escapeMark)
			t, _ := unescape(p.Escape)
			escapes = append(escapes, t)
		default:
			b.WriteString(p.Text)
		}
	}
	text := b.String()
	if s.Heredoc {
		text = Dedent(text)
	}
	var out []Segment
	var cur strings.Builder
	for _, r := range text {
		switch r {
		case interpMark:
			if cur.Len() > 0 {
				out = append(out, Segment{Text: cur.String()})
				cur.Reset()
			}
			out = append(out, Segment{Interp: interps[0]})
			interps = interps[1:]
		case escapeMark:
			cur.WriteString(escapes[0])
			escapes = escapes[1:]
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 || len(out) == 0 {
		out = append(out, Segment{Text: cur.String()})
	}
	return out
}

// Literal returns the decoded text of a string with no interpolation; ok
// is false when the string interpolates.
func (s *String) Literal() (text string, ok bool) {
	segs := s.Segments()
	if len(segs) != 1 || segs[0].Interp != nil {
		return "", false
	}
	return segs[0].Text, true
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

// Clean returns src as the parser reads it: without a UTF-8 byte order
// mark, and with CRLF line endings turned into LF. Callers that show source
// lines next to diagnostics should show the cleaned text.
func Clean(src []byte) []byte {
	src = bytes.TrimPrefix(src, []byte("\uFEFF"))
	if !bytes.Contains(src, []byte("\r\n")) {
		return src
	}
	return bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
}
