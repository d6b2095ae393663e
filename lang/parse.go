// Package lang is the syntax of the .wf workflow language: its scanner, its
// grammar, the AST with a start and end position on every node, Parse and
// Format.
//
// Parse turns one file's text into a *File and the syntax diagnostics of
// that file. It recovers from errors: every syntax error of the file is
// reported, at most one a line, each at its token, and none that only
// follows from an earlier one; a statement that does not parse is skipped
// to its end (a newline or ";" outside brackets, or the "}" of its block)
// and kept in the tree marked Bad, so the rest of the file is parsed and
// checked. Format prints a tree back in the one canonical layout, comments
// kept. The package knows nothing of node kinds or expression semantics:
// the compiler checks those (WithKinds lets Parse tell a misspelled
// keyword from a node kind).
//
// # Tokens
//
// Outside strings the scanner reads, the first rule that matches winning:
// blanks (space, tab, CR; skipped), newline, label (name:), name
// ([A-Za-z_][A-Za-z0-9_]*), $name, { } ( ) [ ] ,, """ and " (which open a
// heredoc or a string), comments (// to the end of the line, /* … */;
// kept aside), number (42, 1_000, 0x1F, 0o7, 0b1, 2.5, 1e3), ->,
// operators (?? ?. .. == != <= >= && || ** and - + * / % < > ! ? : . | ^ ~
// & #), =, ;, 'single-quoted' and `raw` strings. Inside "…": text, escapes
// (\n, \u00e9, \<< …), < and <<, which opens an interpolation; a newline
// ends the line and the string with an error. Inside """…""" the same,
// newlines and " included. Inside << >> the outside tokens without labels,
// comments and ->, and "…" strings that do not interpolate.
//
// # Grammar
//
// In EBNF, where NL is a newline, SEP is NL or ";", and "…" a token of that
// text. Items of a braced list are separated by SEP; a value runs to the
// end of its line, and goes on to the next line only inside brackets.
//
//	File      = { SEP } "wf" Number { Workflow | Server | SEP } .
//	Workflow  = "workflow" Ident "{" { Member | SEP } "}" .
//	Server    = "mcp" Ident "{" { Attr | SEP } "}" .
//	Member    = Tool | "flow" Block | Attr .
//	Attr      = Ident "=" Expr .
//	Tool      = "tool" Ident "{" { ToolItem | SEP } "}" .
//	ToolItem  = Ident [ "=" Expr ] [ Arg ] [ NodeBody ] [ "->" Path ] .
//	Block     = "{" { Stmt | SEP } "}" .
//	Stmt      = [ Label { NL } ] ( Set | If | Switch | For | While | Goto | Step
//	          | Parallel | Try | "end" | "fail" Expr | Node ) .
//	Set       = "set" ( Assign | "{" { Assign | SEP } "}" ) .
//	Assign    = Path "=" Expr .
//	If        = "if" Cond Block [ "else" ( If | Block ) ] .
//	Switch    = "switch" "{" { Case | SEP } "}" .
//	Case      = ( "case" Cond | "default" ) Block .
//	For       = "for" Ident "in" Cond Block .
//	While     = "while" Cond Block .            (Cond ends with "max" Number)
//	Goto      = "goto" Ident .
//	Step      = "step" String Block .
//	Parallel  = "parallel" "{" { Branch | SEP } "}" .
//	Branch    = "branch" Ident Block .
//	Try       = "try" Block "catch" [ Ident ] Block .
//	Node      = Ident [ Arg ] [ NodeBody ] [ "->" Path ] .  (Ident no statement keyword)
//	NodeBody  = "{" { Entry | SEP } "}" .
//	Entry     = Attr | "on" Ident Block .
//	Path      = Var { "." Ident | "[" Number "]" } .
//	Expr      = Part { Part } .
//	Cond      = CondPart { CondPart } .       (no "{" outside brackets)
//	Arg       = ArgPart { ArgPart } .         ("{" only before a key and ":")
//	Part      = Token | String | Group .
//	Token     = Var | Ident | Number | SQString | RawString | Label | Op | "," .
//	Group     = ( "(" | "[" | "{" ) { Token | String | Group | ";" | "=" | "->" | NL } ( ")" | "]" | "}" ) .
//	String    = `"` { Text | Escape | "<<" Interp ">>" } `"`
//	          | `"""` { Text | Escape | "<<" Interp ">>" } `"""` .
//
// A keyword (see Keywords) is a name: the grammar matches it by its text.
// The checks that follow the grammar (post.go) reject a keyword used as a
// name, an unsupported version, unknown escapes, empty interpolations and
// two items on one line without ";".
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
	return func(p *parser) {
		p.kinds = make(map[string]bool, len(kinds))
		for _, k := range kinds {
			p.kinds[k] = true
		}
		p.kindList = kinds
	}
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
