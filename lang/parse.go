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
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aguic/aguic/lang/diag"
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
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

var parser = participle.MustBuild[File](
	participle.Lexer(definition),
	participle.Elide(elided...),
)

// Parse parses one .wf file. It returns the tree, or nil when the file has
// a syntax error, and the file's syntax diagnostics.
func Parse(name string, src []byte) (*File, diag.List) {
	var diags diag.List
	tokens, err := lexAll(name, src)
	if err != nil {
		diags.Add(syntaxError(name, src, err))
		return nil, diags
	}
	if d, ok := checkDepth(name, src, tokens); !ok {
		diags.Add(d)
		return nil, diags
	}
	peek, err := lexer.Upgrade(&sliceLexer{tokens: tokens}, elidedTypes()...)
	if err != nil {
		diags.Add(syntaxError(name, src, err))
		return nil, diags
	}
	f, err := parser.ParseFromLexer(peek)
	if err != nil {
		diags.Add(syntaxError(name, src, err, tokens...))
		return nil, diags
	}
	f.Name = name
	for _, t := range tokens {
		if t.Type == tokenTypes["Comment"] {
			f.Comments = append(f.Comments, &Comment{Pos: t.Pos, EndPos: endOf(t), Text: t.Value})
		}
	}
	post := postParse{file: f}
	for _, t := range tokens {
		if t.Type == tokenTypes["Semi"] {
			post.semis = append(post.semis, t.Pos.Offset)
		}
	}
	post.run()
	diags = append(diags, post.diags...)
	if diags.HasErrors() {
		return nil, diags
	}
	return f, diags
}

func elidedTypes() []lexer.TokenType {
	out := make([]lexer.TokenType, len(elided))
	for i, name := range elided {
		out[i] = tokenTypes[name]
	}
	return out
}

// lexAll lexes src once into tokens ending with EOF.
func lexAll(name string, src []byte) ([]lexer.Token, error) {
	lex, err := definition.LexString(name, string(src))
	if err != nil {
		return nil, err
	}
	return lexer.ConsumeAll(lex)
}

// endOf returns the position just past token t.
func endOf(t lexer.Token) lexer.Position {
	p := t.Pos
	p.Advance(t.Value)
	return p
}

// checkDepth rejects input that nests deeper than MaxDepth.
func checkDepth(name string, src []byte, tokens []lexer.Token) (diag.Diagnostic, bool) {
	depth := 0
	for _, t := range tokens {
		switch t.Type {
		case tokenTypes["StrOpen"], tokenTypes["HeredocOpen"], tokenTypes["InterpOpen"]:
			depth++
		case tokenTypes["StrClose"], tokenTypes["HeredocClose"], tokenTypes["InterpClose"]:
			depth--
		case tokenTypes["Punct"]:
			switch t.Value {
			case "{", "(", "[":
				depth++
			case "}", ")", "]":
				depth--
			}
		default:
			continue
		}
		if depth > MaxDepth {
			f := diag.NewFile(name, src)
			return diag.Errorf(f.Span(t.Pos.Offset, t.Pos.Offset+len(t.Value)), CodeDepth,
				"nesting deeper than %d levels", MaxDepth), false
		}
	}
	return diag.Diagnostic{}, true
}

// syntaxError turns a lexer or parser error into a diagnostic that says
// what was expected and what was found. What it says comes from the error's
// type and the token it holds: participle's *UnexpectedTokenError (what the
// parser expected is read by expectedOf), the lexer's *lexer.Error (input
// no token matches) or another participle.Error (its own message).
func syntaxError(name string, src []byte, err error, tokens ...lexer.Token) diag.Diagnostic {
	f := diag.NewFile(name, src)
	if d, ok := unterminated(f, err, tokens); ok {
		return d
	}
	var ute *participle.UnexpectedTokenError
	if errors.As(err, &ute) {
		at := ute.Unexpected
		return diag.Errorf(f.Span(at.Pos.Offset, at.Pos.Offset+max(1, len(at.Value))), CodeSyntax, "%s", describeUnexpected(at, expectedOf(ute)))
	}
	var lerr *lexer.Error
	if errors.As(err, &lerr) {
		at := min(lerr.Pos.Offset, len(src))
		return diag.Errorf(f.Span(at, at+1), CodeSyntax, "%s", unexpectedChar(src[at:]))
	}
	var perr participle.Error
	if errors.As(err, &perr) {
		at := perr.Position().Offset
		return diag.Errorf(f.Span(at, at+1), CodeSyntax, "%s", perr.Message())
	}
	return diag.Errorf(diag.Span{File: name}, CodeSyntax, "%v", err)
}

// unexpectedChar describes the first character of rest, where no token of
// the lexer matches.
func unexpectedChar(rest []byte) string {
	r, size := utf8.DecodeRune(rest)
	switch {
	case size == 0:
		return "unexpected end of file"
	case r == '\'' || r == '`':
		// A quote no token matches opens a string that does not close.
		return "unterminated string literal"
	}
	return fmt.Sprintf("unexpected character %s", strconv.QuoteRune(r))
}

// expectedOf returns participle's grammar text for what the parser expected
// instead of ute's token (`"}" | Stmt`), or "" when it says nothing.
//
// Participle keeps the grammar node it expected unexported and shows it
// only in the message, as `unexpected token "x" (expected …)`: this is the
// one place that reads that message. It cuts off the prefix participle
// builds from the token it holds, so only the expected part is read.
func expectedOf(ute *participle.UnexpectedTokenError) string {
	rest, ok := strings.CutPrefix(ute.Message(), fmt.Sprintf("unexpected token %q", ute.Unexpected))
	if !ok {
		return ""
	}
	rest, ok = strings.CutPrefix(rest, " (expected ")
	if !ok {
		return ""
	}
	return strings.TrimSuffix(rest, ")")
}

// unterminated reports a string, heredoc or interpolation left open where
// it starts, not where the parser noticed: at the end of the line or file.
func unterminated(f *diag.File, err error, tokens []lexer.Token) (diag.Diagnostic, bool) {
	var ute *participle.UnexpectedTokenError
	if !errors.As(err, &ute) {
		return diag.Diagnostic{}, false
	}
	at := ute.Unexpected
	if !at.EOF() && at.Type != tokenTypes["BadNewline"] {
		return diag.Diagnostic{}, false
	}
	var open []lexer.Token
	for _, t := range tokens {
		if t.Pos.Offset >= at.Pos.Offset && !t.EOF() {
			break
		}
		switch t.Type {
		case tokenTypes["StrOpen"], tokenTypes["HeredocOpen"], tokenTypes["InterpOpen"]:
			open = append(open, t)
		case tokenTypes["StrClose"], tokenTypes["HeredocClose"], tokenTypes["InterpClose"]:
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
	}
	if len(open) == 0 {
		return diag.Diagnostic{}, false
	}
	t := open[len(open)-1]
	span := f.Span(t.Pos.Offset, t.Pos.Offset+len(t.Value))
	switch t.Type {
	case tokenTypes["InterpOpen"]:
		return diag.Errorf(span, CodeSyntax, "unterminated interpolation: %q has no closing %q", "<<", ">>"), true
	case tokenTypes["HeredocOpen"]:
		return diag.Errorf(span, CodeSyntax, `unterminated string literal: """ has no closing """`), true
	}
	return diag.Errorf(span, CodeSyntax, `unterminated string literal (use """ for a string of several lines)`), true
}

// describeUnexpected says what is wrong with the unexpected token t, where
// the parser expected what expected says in participle's grammar text (""
// when it does not say).
func describeUnexpected(t lexer.Token, expected string) string {
	switch t.Type {
	case tokenTypes["BadComment"]:
		return "unterminated block comment"
	case tokenTypes["BadNewline"]:
		return `unterminated string literal (use """ for a string of several lines)`
	}
	found := describeToken(t)
	switch {
	case t.Value == "else":
		return `"else" must follow the "}" that closes the if, on the same line`
	case t.Type == tokenTypes["Label"]:
		return fmt.Sprintf("unexpected %q (a map literal in a condition needs parentheses: `if x == ({k: v}) {`)", t.Value)
	}
	if expected == "" {
		return "unexpected " + found
	}
	if strings.HasPrefix(expected, `"}"`) {
		// The parser gave up on a statement and reports the block around
		// it; say what the statement needs instead.
		if hint, ok := statementHints[t.Value]; ok {
			return hint
		}
	}
	return fmt.Sprintf("expected %s, found %s", describeExpected(expected), found)
}

// statementHints say what a statement needs, keyed by the token the parser
// stopped at when a statement starting there did not parse.
var statementHints = map[string]string{
	"goto":     "goto needs a label: `goto name`",
	"set":      "set needs a $path and a value: `set $path = value`",
	"if":       "if needs a condition and a block: `if cond { … }`",
	"for":      "for needs a variable, a list and a block: `for x in list { … }`",
	"while":    "while needs a condition, a bound and a block: `while cond max N { … }`",
	"step":     "step needs a name and a block: `step \"name\" { … }`",
	"fail":     "fail needs a message: `fail \"message\"`",
	"switch":   "switch needs a block of cases: `switch { case cond { … } default { … } }`",
	"parallel": "parallel needs a block of branches: `parallel { branch a { … } }`",
	"try":      "try needs a block and a catch: `try { … } catch e { … }`",
	"branch":   "a branch belongs inside `parallel { … }`",
	"case":     "case belongs inside `switch { … }`",
	"default":  "default belongs inside `switch { … }`",
	"catch":    "catch must follow the \"}\" of its try block, on the same line",
	"flow":     "flow needs a block: `flow { … }`",
	"tool":     "a tool is declared in the workflow block, next to the flow, not inside it",
	"mcp":      "an MCP server is declared at the top level of a file, beside the workflows: `mcp name { command = \"…\" }`",
	"->":       "-> must follow its node on the same line and name a path: `say \"x\" -> $out`",
	"=":        "unexpected \"=\": write each `key = value` on a line of its own, or separate them with \";\"",
}

// describeToken names a token for a message.
func describeToken(t lexer.Token) string {
	switch {
	case t.EOF():
		return "end of file"
	case t.Type == tokenTypes["Newline"]:
		return "newline"
	case t.Type == tokenTypes["Ident"]:
		return fmt.Sprintf("%q", t.Value)
	case t.Type == tokenTypes["StrOpen"], t.Type == tokenTypes["HeredocOpen"]:
		return "string"
	case t.Type == tokenTypes["Var"]:
		return fmt.Sprintf("%q", t.Value)
	}
	return fmt.Sprintf("%q", t.Value)
}

// expectedNames maps grammar fragments participle prints to words.
var expectedNames = strings.NewReplacer(
	"<newline>", "newline",
	"<semi>", `";"`,
	"<ident>", "name",
	"<var>", "$path",
	"<number>", "number",
	"<assign>", `"="`,
	"<arrow>", `"->"`,
	"<stropen>", "string",
	"<heredocopen>", "string",
	"<eof>", "end of file",
	"<label>", "label",
	"<interpclose>", `">>"`,
	"<strclose>", `"\""`,
	"<heredocclose>", `"\"\"\""`,
)

// describeExpected turns participle's view of what it expected into words.
func describeExpected(s string) string {
	if words, ok := expectedWords(s); ok {
		return words
	}
	s = expectedNames.Replace(s)
	if len(s) > 60 {
		return "a statement"
	}
	return s
}
