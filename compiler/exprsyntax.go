package compiler

import (
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser/lexer"
)

// exprTokens lexes text with expr's own lexer: the tokens its parser saw.
// It returns none when text does not lex; the parser's error then is the
// lexer's.
func exprTokens(text string) []lexer.Token {
	tokens, err := lexer.Lex(file.NewSource(text))
	if err != nil {
		return nil
	}
	return tokens
}

// rejectedToken returns the token of tokens that expr's parser rejected
// with err, and err's message with that token named in words: `unexpected
// operator "*"` for expr's `unexpected token Operator("*")`.
//
// expr's parser says which token it rejected only in its message, as
// "token " followed by the token's String(). This is the one place that
// reads the parser's message: it looks there for the String() of a token
// that starts where the error does (the end of file shares its position
// with the last token), and reads nothing else of it.
func rejectedToken(tokens []lexer.Token, err *file.Error) (lexer.Token, string, bool) {
	for _, t := range tokens {
		if t.From != err.From {
			continue
		}
		if named := "token " + t.String(); strings.Contains(err.Message, named) {
			return t, strings.Replace(err.Message, named, describeExprToken(t), 1), true
		}
	}
	return lexer.Token{}, "", false
}

// describeExprToken names an expr token for a message: `operator "*"`.
func describeExprToken(t lexer.Token) string {
	if t.Kind == lexer.EOF {
		return "end of expression"
	}
	return strings.ToLower(string(t.Kind)) + " " + strconv.Quote(t.Value)
}

// closesCall reports whether the token of tokens at the parser's error is
// the ")" that closes the arguments of a call, such as `filter([1])`: the
// parser, which counts the arguments of a builtin that takes a predicate,
// stopped there.
func closesCall(tokens []lexer.Token, err *file.Error) bool {
	i := slices.IndexFunc(tokens, func(t lexer.Token) bool { return t.From == err.From && t.Is(lexer.Bracket, ")") })
	depth := 0
	for ; i > 0; i-- {
		switch t := tokens[i]; {
		case t.Is(lexer.Bracket, ")"):
			depth++
		case t.Is(lexer.Bracket, "("):
			depth--
		}
		if depth == 0 {
			return tokens[i-1].Is(lexer.Identifier)
		}
	}
	return false
}
