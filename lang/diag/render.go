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
// The source line and caret are left out when fs does not hold the file.
// It ends with a summary line when l is not empty.
func (l List) WriteText(w io.Writer, fs FileSet) error {
	var b strings.Builder
	for _, d := range l {
		b.WriteString(d.String())
		b.WriteByte('\n')
		if f := fs[d.Span.File]; f != nil && d.Span.Start.IsValid() {
			writeCaret(&b, f, d.Span)
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

// jsonDiagnostic is the stable JSON shape of one diagnostic.
type jsonDiagnostic struct {
	File      string   `json:"file"`
	Line      int      `json:"line"`
	Column    int      `json:"column"`
	EndLine   int      `json:"endLine"`
	EndColumn int      `json:"endColumn"`
	Severity  Severity `json:"severity"`
	Code      string   `json:"code"`
	Message   string   `json:"message"`
}

// WriteJSON renders l as one JSON array of objects with file, line, column,
// endLine, endColumn, severity, code and message.
func (l List) WriteJSON(w io.Writer) error {
	out := make([]jsonDiagnostic, 0, len(l))
	for _, d := range l {
		out = append(out, jsonDiagnostic{
			File: d.Span.File, Line: d.Span.Start.Line, Column: d.Span.Start.Col,
			EndLine: d.Span.End.Line, EndColumn: d.Span.End.Col,
			Severity: d.Severity, Code: d.Code, Message: d.Message,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteGitHub renders l as GitHub Actions workflow commands, one a line:
// ::error file=F,line=L,col=C,endLine=L,endColumn=C,title=WF101::message
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
		fmt.Fprintf(&b, "::%s file=%s,line=%d,col=%d", kind, ghProperty(d.Span.File), d.Span.Start.Line, d.Span.Start.Col)
		if d.Span.End.IsValid() {
			fmt.Fprintf(&b, ",endLine=%d,endColumn=%d", d.Span.End.Line, d.Span.End.Col)
		}
		fmt.Fprintf(&b, ",title=%s::%s\n", ghProperty(d.Code), ghData(d.Message))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ghData escapes a workflow command's message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
