package diag

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// WriteText renders every diagnostic of l as
//
//	file:line:col: error[WF101]: message
//	    source line
//	    ^~~~
//
// followed by each of its related spans the same way:
//
//	file:line:col: note: first defined here
//	    source line
//	    ^~~~
//
// A source line and caret are left out when fs does not hold the file.
// It ends with a summary line, which counts no notes, when l is not empty.
func (l List) WriteText(w io.Writer, fs FileSet) error {
	var b strings.Builder
	for _, d := range l {
		writeLocated(&b, d.String(), fs, d.Span)
		for _, r := range d.Related {
			writeLocated(&b, r.String(), fs, r.Span)
		}
	}
	if len(l) > 0 {
		b.WriteString(l.Summary())
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Summary counts l's errors and warnings in words: "2 errors, 1 warning".
func (l List) Summary() string {
	plural := func(n int, word string) string {
		if n == 1 {
			return "1 " + word
		}
		return fmt.Sprintf("%d %ss", n, word)
	}
	errs, warns := l.Count(Error), l.Count(Warning)
	switch {
	case errs > 0 && warns > 0:
		return plural(errs, "error") + ", " + plural(warns, "warning")
	case warns > 0:
		return plural(warns, "warning")
	}
	return plural(errs, "error")
}

// writeLocated writes a header line and, when fs holds the span's file,
// the source line with a caret under the span.
func writeLocated(b *strings.Builder, header string, fs FileSet, s Span) {
	b.WriteString(header)
	b.WriteByte('\n')
	if f := fs[s.File]; f != nil && s.Start.IsValid() {
		writeCaret(b, f, s)
	}
}

// writeCaret writes the span's first line, indented, and a caret line under
// the span (to the end of that line when the span runs past it).
func writeCaret(b *strings.Builder, f *File, s Span) {
	line := f.Line(s.Start.Line)
	// Tabs become single spaces so the caret lines up in any terminal.
	shown := strings.ReplaceAll(line, "\t", " ")
	b.WriteString("    ")
	b.WriteString(shown)
	b.WriteByte('\n')
	width := 1
	if s.End.Line == s.Start.Line && s.End.Col > s.Start.Col {
		width = s.End.Col - s.Start.Col
	} else if s.End.Line > s.Start.Line {
		width = max(1, utf8.RuneCountInString(line)-s.Start.Col+1)
	}
	b.WriteString("    ")
	b.WriteString(strings.Repeat(" ", s.Start.Col-1))
	b.WriteByte('^')
	if width > 1 {
		b.WriteString(strings.Repeat("~", width-1))
	}
	b.WriteByte('\n')
}

// jsonSpan is the stable JSON shape of a span.
type jsonSpan struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndLine   int    `json:"endLine"`
	EndColumn int    `json:"endColumn"`
}

func toJSONSpan(s Span) jsonSpan {
	return jsonSpan{File: s.File, Line: s.Start.Line, Column: s.Start.Col, EndLine: s.End.Line, EndColumn: s.End.Col}
}

// jsonDiagnostic is the stable JSON shape of one diagnostic.
type jsonDiagnostic struct {
	jsonSpan
	Severity Severity      `json:"severity"`
	Code     string        `json:"code"`
	Message  string        `json:"message"`
	Related  []jsonRelated `json:"related,omitempty"`
}

// jsonRelated is the stable JSON shape of a related span.
type jsonRelated struct {
	jsonSpan
	Message string `json:"message"`
}

// WriteJSON renders l as one JSON array of objects with file, line, column,
// endLine, endColumn, severity, code and message, and, when the diagnostic
// has related spans, related: an array of objects with file, line, column,
// endLine, endColumn and message.
func (l List) WriteJSON(w io.Writer) error {
	out := make([]jsonDiagnostic, 0, len(l))
	for _, d := range l {
		j := jsonDiagnostic{jsonSpan: toJSONSpan(d.Span), Severity: d.Severity, Code: d.Code, Message: d.Message}
		for _, r := range d.Related {
			j.Related = append(j.Related, jsonRelated{jsonSpan: toJSONSpan(r.Span), Message: r.Message})
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteGitHub renders l as GitHub Actions workflow commands, one a line:
//
//	::error file=F,line=L,col=C,endLine=L,endColumn=C,title=WF101::message
//
// followed by a notice at each related span of the diagnostic, which
// carries the diagnostic's code and says what is there and why:
//
//	::notice file=F,line=L,col=C,endLine=L,endColumn=C,title=WF121::first defined here (workflow "a" is already defined)
func (l List) WriteGitHub(w io.Writer) error {
	var b strings.Builder
	for _, d := range l {
		kind := "error"
		switch d.Severity {
		case Warning:
			kind = "warning"
		case Note:
			kind = "notice"
		}
		writeCommand(&b, kind, d.Span, d.Code, d.Message)
		for _, r := range d.Related {
			writeCommand(&b, "notice", r.Span, d.Code, fmt.Sprintf("%s (%s)", r.Message, d.Message))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCommand writes one workflow command that annotates span.
func writeCommand(b *strings.Builder, kind string, s Span, title, message string) {
	fmt.Fprintf(b, "::%s file=%s,line=%d,col=%d", kind, ghProperty(s.File), s.Start.Line, s.Start.Col)
	if s.End.IsValid() {
		fmt.Fprintf(b, ",endLine=%d,endColumn=%d", s.End.Line, s.End.Col)
	}
	fmt.Fprintf(b, ",title=%s::%s\n", ghProperty(title), ghData(message))
}

// ghData escapes a workflow command's message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
