package compiler

import (
	"errors"
	"testing"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/parser/lexer"
)

// TestRejectedToken pins what the one place that reads expr's parser
// messages finds in the errors of expr's real parser: the token it
// rejected, the message with that token in words, and whether it stopped
// at the ")" of a call (which matters only when it rejected no token). A
// new wording in expr fails here first.
func TestRejectedToken(t *testing.T) {
	tests := []struct {
		text       string
		kind       lexer.Kind // "" when no token is rejected
		value, msg string
		closesCall bool
	}{
		{text: "1 +", kind: lexer.EOF, msg: "unexpected end of expression"},
		{text: "upper(", kind: lexer.EOF, msg: "unexpected end of expression"},
		{text: "$a +* 2", kind: lexer.Operator, value: "*", msg: `unexpected operator "*"`},
		{text: "1 2", kind: lexer.Number, value: "2", msg: `unexpected number "2"`},
		{text: "$x say", kind: lexer.Identifier, value: "say", msg: `unexpected identifier "say"`},
		{text: "len(1 +)", kind: lexer.Bracket, value: ")", msg: `unexpected bracket ")"`, closesCall: true},
		{text: "{,}", kind: lexer.Operator, value: ",", msg: `a map key must be a quoted string, a number, a identifier, or an expression enclosed in parentheses (unexpected operator ",")`},
		{text: "filter([1])", closesCall: true},
		{text: "$a."},
		{text: "1 ?? 2 + 3"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			_, err := parser.Parse(tt.text)
			var fe *file.Error
			if !errors.As(err, &fe) {
				t.Fatalf("parse error is %v, want a *file.Error", err)
			}
			tokens := exprTokens(tt.text)
			tok, msg, ok := rejectedToken(tokens, fe)
			if ok != (tt.kind != "") || tok.Kind != tt.kind || tok.Value != tt.value {
				t.Errorf("%q: rejected %v (%v), want %s %q", fe.Message, tok, ok, tt.kind, tt.value)
			}
			if ok && msg != tt.msg {
				t.Errorf("%q: message %q, want %q", fe.Message, msg, tt.msg)
			}
			if got := closesCall(tokens, fe); got != tt.closesCall {
				t.Errorf("%q: closesCall = %v, want %v", fe.Message, got, tt.closesCall)
			}
		})
	}
}
