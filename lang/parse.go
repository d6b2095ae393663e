// Package lang is the syntax of the .wf workflow language: its lexer, its
// grammar, the AST with a start and end position on every node, Parse and
// Format.
//
// Parse turns one file's text into a *File and the syntax diagnostics of
// that file (at most one syntax error, the deepest, since the parser does
// not recover; a file with a syntax error yields no tree). Format prints a
// tree back in the one canonical layout, comments kept. The package knows
// nothing of node kinds or expression semantics: the compiler checks those.
package lang

import (
	"slices"

	"github.com/aguic/aguic/lang/diag"
)

// MaxDepth is how deeply brackets, blocks and strings may nest. Parsing is
// recursive, so deeper input is rejected before it reaches the parser.
const MaxDepth = 100

// Syntax diagnostic codes.
const (
	CodeSyntax   = "WF001" // the text is not valid .wf syntax
	CodeDepth    = "WF002" // nesting deeper than MaxDepth
	CodeVersion  = "WF003" // missing or unsupported `wf N` line
	CodeReserved = "WF004" // a keyword used as a name
)

// LanguageVersion is the language version this package parses.
const LanguageVersion = 1

// Keywords are the words the grammar gives a meaning; none may name a
// workflow, tool, label, node kind, variable or branch.
var Keywords = []string{
	"wf", "workflow", "tool", "flow", "set", "if", "else", "switch", "case",
	"default", "for", "in", "while", "max", "goto", "step", "parallel",
	"branch", "try", "catch", "end", "fail", "on",
}

// StartsStatement reports whether name is a keyword that begins a
// statement (set, if, goto…), as opposed to one inside a statement (in,
// max, else…).
func StartsStatement(name string) bool {
	switch name {
	case "set", "if", "switch", "for", "while", "goto", "step", "parallel", "try", "end", "fail":
		return true
	}
	return false
}

// IsKeyword reports whether name is a keyword.
func IsKeyword(name string) bool {
	for _, k := range Keywords {
		if k == name {
			return true
		}
	}
	return false
}

// An Option configures Parse.
type Option func(*parser)

// WithKinds tells Parse the node kinds of the registry, so that a
// misspelled statement keyword is told from a node kind (`whlie` is
// "while", `sya` is a kind the compiler suggests "say" for). Without it,
// Parse calls a word a misspelled keyword only where no node could stand.
func WithKinds(kinds []string) Option {
	return func(p *parser) { p.kinds = kinds }
}

// Parse parses one .wf file. It returns the tree, partial when the file
// has syntax errors, and the file's syntax diagnostics: every syntax error,
// at most one per line, none that only follows from another. A statement
// that does not parse is in the tree with Bad set; a declaration that does
// not parse is left out and File.Lost set.
func Parse(name string, src []byte, opts ...Option) (*File, diag.List) {
	s := scan(string(src))
	f := &File{Name: name, Comments: s.comments}
	dfile := diag.NewFile(name, src)
	var diags diag.List
	span := func(pos, end Position) diag.Span { return SpanOf(name, pos, end) }
	if t, ok := tooDeep(s.toks); !ok {
		diags.Errorf(span(t.pos, t.end()), CodeDepth, "nesting deeper than %d levels", MaxDepth)
		f.Lost = true
		return f, diags
	}
	p := &parser{f: f, toks: s.toks, toEOF: s.toEOF, kwAt: -1}
	for _, o := range opts {
		o(p)
	}
	p.file(f)
	p.toks = nil
	for _, e := range s.errs {
		diags.Errorf(span(e.pos, e.end), CodeSyntax, "%s", e.msg)
	}
	for _, e := range p.errs {
		d := diag.Errorf(span(e.pos, e.end), CodeSyntax, "%s", e.msg)
		for _, r := range e.related {
			d = d.WithRelated(span(r.pos, r.end), r.msg)
		}
		diags.Add(d)
	}
	post := postParse{file: f, semis: s.semis}
	post.run()
	diags = append(diags, post.diags...)
	_ = dfile
	return f, onePerLine(diags)
}

// onePerLine sorts diags and keeps the first of each line: a second error
// on a line mostly follows from the first.
//
// Of two errors at one place, the first found stays: the scanner's, then
// the parser's, then the later checks'.
func onePerLine(diags diag.List) diag.List {
	slices.SortStableFunc(diags, func(a, b diag.Diagnostic) int { return a.Span.Start.Offset - b.Span.Start.Offset })
	line := 0
	diags = slices.DeleteFunc(diags, func(d diag.Diagnostic) bool {
		if d.Span.Start.Line == line {
			return true
		}
		line = d.Span.Start.Line
		return false
	})
	diags.Sort()
	return diags
}

// tooDeep finds the first bracket, block or string that nests deeper than
// MaxDepth; ok is true when there is none. Parsing is recursive: deeper
// input is rejected before it reaches the parser.
func tooDeep(toks []token) (at *token, ok bool) {
	depth := 0
	for i := range toks {
		t := &toks[i]
		switch t.kind {
		case tStrOpen, tHeredocOpen, tInterpOpen:
			depth++
		case tStrClose, tHeredocClose, tInterpClose:
			depth--
		case tPunct:
			switch t.val {
			case "{", "(", "[":
				depth++
			case "}", ")", "]":
				depth--
			}
		default:
			continue
		}
		if depth > MaxDepth {
			return t, false
		}
	}
	return nil, true
}
