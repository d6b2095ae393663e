// Package diag holds the vocabulary every pass of aguic reports problems in:
// positions and spans inside a source file, severities, stable codes,
// diagnostics, and lists of diagnostics that sort and render themselves.
//
// It is a leaf: it imports nothing of the project. A Pos counts lines from 1,
// columns from 1 in runes, and offsets from 0 in bytes; a Span's End is
// exclusive. Positions are data: a diagnostic's place is its Span, and the
// other places it involves (the first declaration of a name declared twice)
// are its Related spans, never text inside a message. A List renders as
// `file:line:col: error[WF101]: message` followed by the source line and a
// caret under the span, and a `file:line:col: note: message` line for each
// related span.
package diag

import (
	"cmp"
	"fmt"
	"slices"
)

// Pos is a position inside a source file.
type Pos struct {
	Offset int // byte offset from the start of the file, from 0
	Line   int // line number, from 1
	Col    int // column in runes, from 1
}

// IsValid reports whether p names a real position.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String renders p as line:col.
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Span is a range of a file: Start inclusive, End exclusive.
type Span struct {
	File  string
	Start Pos
	End   Pos
}

// String renders the start of s as file:line:col.
func (s Span) String() string {
	if !s.Start.IsValid() {
		return s.File
	}
	return fmt.Sprintf("%s:%d:%d", s.File, s.Start.Line, s.Start.Col)
}

// Severity says how bad a diagnostic is.
type Severity int

// The severities, worst first.
const (
	Error Severity = iota
	Warning
	Note
)

func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	default:
		return "note"
	}
}

// MarshalText renders s as its name, so JSON carries "error", not 0.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Diagnostic is one problem found in one place.
type Diagnostic struct {
	Span     Span
	Severity Severity
	Code     string    // stable code such as "WF101"
	Message  string    // lower case, no final period
	Related  []Related // other places the problem involves, in the order to show them
}

// Related is another place a diagnostic involves, such as the first
// declaration of a name declared twice, with a short message that says
// what is there: "first defined here".
type Related struct {
	Span    Span
	Message string // lower case, no final period
}

// String renders r on one line: file:line:col: note: message.
func (r Related) String() string {
	return fmt.Sprintf("%s: %s: %s", r.Span, Note, r.Message)
}

// WithRelated returns d with one more related span, shown after the
// others.
func (d Diagnostic) WithRelated(span Span, message string) Diagnostic {
	d.Related = append(slices.Clip(d.Related), Related{Span: span, Message: message})
	return d
}

// Errorf builds an error diagnostic.
func Errorf(span Span, code, format string, args ...any) Diagnostic {
	return Diagnostic{Span: span, Severity: Error, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Warningf builds a warning diagnostic.
func Warningf(span Span, code, format string, args ...any) Diagnostic {
	return Diagnostic{Span: span, Severity: Warning, Code: code, Message: fmt.Sprintf(format, args...)}
}

// String renders d on one line: file:line:col: severity[code]: message.
// The related spans are left out; Lines has them.
func (d Diagnostic) String() string {
	return fmt.Sprintf("%s: %s[%s]: %s", d.Span, d.Severity, d.Code, d.Message)
}

// Lines renders d as its String line followed by one line for each
// related span, without source lines or carets.
func (d Diagnostic) Lines() []string {
	lines := make([]string, 0, 1+len(d.Related))
	lines = append(lines, d.String())
	for _, r := range d.Related {
		lines = append(lines, r.String())
	}
	return lines
}

// List is a set of diagnostics, usually from several files.
type List []Diagnostic

// Add appends d.
func (l *List) Add(d Diagnostic) { *l = append(*l, d) }

// Errorf appends an error diagnostic.
func (l *List) Errorf(span Span, code, format string, args ...any) {
	l.Add(Errorf(span, code, format, args...))
}

// Warningf appends a warning diagnostic.
func (l *List) Warningf(span Span, code, format string, args ...any) {
	l.Add(Warningf(span, code, format, args...))
}

// HasErrors reports whether any diagnostic in l is an error.
func (l List) HasErrors() bool {
	return slices.ContainsFunc(l, func(d Diagnostic) bool { return d.Severity == Error })
}

// Count returns how many diagnostics of severity s l holds.
func (l List) Count(s Severity) int {
	n := 0
	for _, d := range l {
		if d.Severity == s {
			n++
		}
	}
	return n
}

// Sort orders l by file, position, severity, code, message and related
// spans, and drops exact duplicates.
func (l *List) Sort() {
	slices.SortStableFunc(*l, compare)
	*l = slices.CompactFunc(*l, func(a, b Diagnostic) bool { return compare(a, b) == 0 })
}

func compare(a, b Diagnostic) int {
	return cmp.Or(
		compareSpans(a.Span, b.Span),
		cmp.Compare(a.Severity, b.Severity),
		cmp.Compare(a.Code, b.Code),
		cmp.Compare(a.Message, b.Message),
		slices.CompareFunc(a.Related, b.Related, func(a, b Related) int {
			return cmp.Or(compareSpans(a.Span, b.Span), cmp.Compare(a.Message, b.Message))
		}),
	)
}

// compareSpans orders spans by file and start.
func compareSpans(a, b Span) int {
	return cmp.Or(
		cmp.Compare(a.File, b.File),
		cmp.Compare(a.Start.Offset, b.Start.Offset),
		cmp.Compare(a.Start.Line, b.Start.Line),
		cmp.Compare(a.Start.Col, b.Start.Col),
	)
}

// Err returns l as an error when it holds at least one error, else nil.
func (l List) Err() error {
	if !l.HasErrors() {
		return nil
	}
	return ListError(l)
}

// ListError is a List that is used as an error.
type ListError List

func (e ListError) Error() string {
	l := List(e)
	errs := 0
	var first Diagnostic
	for _, d := range l {
		if d.Severity == Error {
			if errs == 0 {
				first = d
			}
			errs++
		}
	}
	if errs <= 1 {
		return first.String()
	}
	return fmt.Sprintf("%s (and %d more errors)", first, errs-1)
}
