package lang

import (
	"github.com/alecthomas/participle/v2/lexer"
)

// Patterns shared by several lexer states. A rule name used in more than
// one state must have the same pattern in each.
const (
	identPattern    = `[A-Za-z_][A-Za-z0-9_]*`
	varPattern      = `\$[A-Za-z_][A-Za-z0-9_]*`
	numberPattern   = `0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*(\.[0-9][0-9_]*)?([eE][+-]?[0-9]+)?`
	sqStringPattern = `'(\\.|[^'\\\n])*'`
	rawPattern      = "`[^`]*`"
	opPattern       = `\?\?|\?\.|\.\.|==|!=|<=|>=|&&|\|\||\*\*|[-+*/%<>!?:.|^~&#]`
	punctPattern    = `[{}()\[\],]`
	escapePattern   = `\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|[0-7]{3}|<<|.|\n)`
)

// definition is the stateful lexer of the .wf language.
//
// Root lexes statements and expressions. `"` pushes String and `"""`
// pushes Heredoc (tried first: the first matching rule wins); both push
// Interp on `<<`, which pops on `>>` and lexes quoted strings itself, so
// `'a>>b'` does not end an interpolation. BadComment and BadNewline are
// poison tokens no grammar rule accepts: they turn an unterminated comment
// or string into a precise syntax error.
//
// Rules are tried in order and the first match wins, so the frequent ones
// come first, and each rule comes after those it would otherwise shadow:
// Comment before Op (`/`), Label before Ident, HeredocOpen before StrOpen,
// Arrow before Op (`-`), Op before Assign (`==`), InterpClose before Op (`>`).
var definition = lexer.MustStateful(lexer.Rules{
	"Root": {
		{Name: "Whitespace", Pattern: `[ \t\r]+`},
		{Name: "Newline", Pattern: `\r?\n`},
		{Name: "Label", Pattern: identPattern + `:`},
		{Name: "Ident", Pattern: identPattern},
		{Name: "Var", Pattern: varPattern},
		{Name: "Punct", Pattern: punctPattern},
		{Name: "HeredocOpen", Pattern: `"""`, Action: lexer.Push("Heredoc")},
		{Name: "StrOpen", Pattern: `"`, Action: lexer.Push("String")},
		{Name: "Comment", Pattern: `//[^\n]*|/\*([^*]|\*+[^*/])*\*+/`},
		{Name: "BadComment", Pattern: `/\*`},
		{Name: "Number", Pattern: numberPattern},
		{Name: "Arrow", Pattern: `->`},
		{Name: "Op", Pattern: opPattern},
		{Name: "Assign", Pattern: `=`},
		{Name: "Semi", Pattern: `;`},
		{Name: "SQString", Pattern: sqStringPattern},
		{Name: "RawString", Pattern: rawPattern},
	},
	"String": {
		{Name: "Chars", Pattern: `[^"\\<\n]+`},
		{Name: "StrClose", Pattern: `"`, Action: lexer.Pop()},
		{Name: "InterpOpen", Pattern: `<<`, Action: lexer.Push("Interp")},
		{Name: "Escaped", Pattern: escapePattern},
		{Name: "Lt", Pattern: `<`},
		{Name: "BadNewline", Pattern: `\n`},
	},
	"Heredoc": {
		{Name: "HChars", Pattern: `[^"\\<]+`},
		{Name: "HeredocClose", Pattern: `"""`, Action: lexer.Pop()},
		{Name: "InterpOpen", Pattern: `<<`, Action: lexer.Push("Interp")},
		{Name: "Escaped", Pattern: escapePattern},
		{Name: "Lt", Pattern: `<`},
		{Name: "Quote", Pattern: `"`},
	},
	"Interp": {
		{Name: "IWhitespace", Pattern: `[ \t\r\n]+`},
		{Name: "InterpClose", Pattern: `>>`, Action: lexer.Pop()},
		{Name: "Var", Pattern: varPattern},
		{Name: "Ident", Pattern: identPattern},
		{Name: "Punct", Pattern: punctPattern},
		{Name: "Number", Pattern: numberPattern},
		{Name: "IString", Pattern: `"(\\.|[^"\\\n])*"`},
		{Name: "SQString", Pattern: sqStringPattern},
		{Name: "RawString", Pattern: rawPattern},
		{Name: "Op", Pattern: opPattern},
		{Name: "Assign", Pattern: `=`},
		{Name: "Semi", Pattern: `;`},
	},
})

// elided are the token types the grammar never sees.
var elided = []string{"Comment", "Whitespace", "IWhitespace"}

// tokenTypes maps rule names to token types.
var tokenTypes = definition.Symbols()

// sliceLexer replays tokens lexed once, so one pass of the lexer serves the
// depth guard, the comment list and the parser.
type sliceLexer struct {
	tokens []lexer.Token
	i      int
}

func (l *sliceLexer) Next() (lexer.Token, error) {
	if l.i >= len(l.tokens) {
		return l.tokens[len(l.tokens)-1], nil // the EOF token
	}
	t := l.tokens[l.i]
	l.i++
	return t, nil
}
