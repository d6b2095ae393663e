package lang

import (
	"testing"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// TestExpectedOf checks the one place that reads participle's message: what
// the parser expected is cut out of it whatever the unexpected token holds.
func TestExpectedOf(t *testing.T) {
	tests := []struct {
		token, expect, want string
	}{
		{"$list", `"in"`, `"in"`},
		{`say "a (expected x)"`, `"}" | Stmt`, `"}" | Stmt`},
		{`\"`, `<newline> | <semi>`, `<newline> | <semi>`},
		{"}", "", ""},
	}
	for _, tt := range tests {
		ute := &participle.UnexpectedTokenError{Unexpected: lexer.Token{Value: tt.token}, Expect: tt.expect}
		if got := expectedOf(ute); got != tt.want {
			t.Errorf("expectedOf(%q) = %q, want %q", ute.Message(), got, tt.want)
		}
	}
}
