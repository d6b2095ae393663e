package lang

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Position is a place in a source file: a byte offset from 0, a line from
// 1 and a column from 1 counted in runes.
type Position struct {
	Offset int
	Line   int
	Column int
}

// Advance moves p past text, which starts at p.
func (p *Position) Advance(text string) {
	p.Offset += len(text)
	nl := strings.LastIndexByte(text, '\n')
	if nl < 0 {
		p.Column += runeCount(text)
		return
	}
	p.Line += strings.Count(text, "\n")
	p.Column = runeCount(text[nl+1:]) + 1
}

// String renders p as line:col.
func (p Position) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Column) }

// runeCount counts the runes of s, quickly when s is ASCII.
func runeCount(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return i + utf8.RuneCountInString(s[i:])
		}
	}
	return len(s)
}

// tokKind is the kind of a token.
type tokKind uint8

// The token kinds. Outside strings: the statement and expression tokens.
// Inside "…" and """…""": text, escapes, and the << and >> around an
// interpolation, whose inside is lexed with the outer kinds (and tIString
// for a double-quoted string).
const (
	tEOF          tokKind = iota
	tNewline              // \n
	tLabel                // name: (with the colon)
	tIdent                // name
	tVar                  // $name
	tPunct                // { } ( ) [ ] ,
	tHeredocOpen          // """
	tStrOpen              // "
	tBadComment           // /* that is never closed
	tNumber               // 42, 1_000, 0x1F, 2.5, 1e3
	tArrow                // ->
	tOp                   // an operator: + == ?? # : . …
	tAssign               // =
	tSemi                 // ;
	tSQString             // 'text'
	tRawString            // `text`
	tChars                // text of a "…" string
	tHChars               // text of a """…""" string
	tStrClose             // " that closes a string
	tHeredocClose         // """ that closes a heredoc
	tInterpOpen           // <<
	tInterpClose          // >>
	tEscaped              // \n, \u00e9, \<< …
	tLt                   // < in a string
	tQuote                // " inside a heredoc
	tIString              // "…" inside an interpolation
	tBad                  // text no token matches (reported by the scanner)
)

// token is one token: its kind, its text and where it starts.
type token struct {
	kind  tokKind
	inStr bool // lexed inside a string or an interpolation
	val   string
	pos   Position
}

// end returns the position just past t.
func (t *token) end() Position {
	p := t.pos
	p.Advance(t.val)
	return p
}

// scanner modes, pushed and popped as strings and interpolations open and
// close.
const (
	modeRoot = iota
	modeString
	modeHeredoc
	modeInterp
)

// scanError is a problem the scanner found: at a token of its list (the
// parser then skips the statement that holds it) or a message alone.
type scanError struct {
	pos, end Position
	msg      string
}

// scanner splits a source file into tokens, in the manner of the rules
// documented on the package: the first rule that matches wins. Comments
// and blanks are not tokens: comments are kept aside for the formatter,
// and the offsets of semicolons for the check that statements are
// separated.
type scanner struct {
	src      string
	off      int
	pos      Position
	modes    []int
	opens    []int // index in toks of the token that opened each pushed mode
	toks     []token
	comments []*Comment
	semis    []int
	errs     []scanError
	toEOF    bool // an error ran to the end of the file: errors there follow from it
}

// scan lexes src into tokens ending with tEOF.
func scan(src string) *scanner {
	s := &scanner{src: src, pos: Position{Line: 1, Column: 1}, modes: []int{modeRoot}}
	s.toks = make([]token, 0, len(src)/5+8)
	for s.off < len(s.src) {
		switch s.modes[len(s.modes)-1] {
		case modeRoot:
			s.root()
		case modeString:
			s.str(false)
		case modeHeredoc:
			s.str(true)
		case modeInterp:
			s.interp()
		}
	}
	if len(s.modes) > 1 {
		// The file ends inside a string: report the innermost opener.
		open := s.toks[s.opens[len(s.opens)-1]]
		msg := `unterminated string literal (use """ for a string of several lines)`
		switch open.kind {
		case tHeredocOpen:
			msg = `unterminated string literal: """ has no closing """`
		case tInterpOpen:
			msg = `unclosed << in string (missing >>)`
		}
		s.errs = append(s.errs, scanError{pos: open.pos, end: open.end(), msg: msg})
		s.toEOF = true
		s.emit(tBad, 0)
	}
	s.toks = append(s.toks, token{kind: tEOF, pos: s.pos})
	return s
}

// emit adds a token of n bytes at the scanner's offset.
func (s *scanner) emit(kind tokKind, n int) {
	val := s.src[s.off : s.off+n]
	s.toks = append(s.toks, token{kind: kind, val: val, pos: s.pos, inStr: s.modes[len(s.modes)-1] != modeRoot})
	s.skip(n)
}

// skip moves past n bytes.
func (s *scanner) skip(n int) {
	s.pos.Advance(s.src[s.off : s.off+n])
	s.off += n
}

func (s *scanner) push(mode int) {
	s.modes = append(s.modes, mode)
	s.opens = append(s.opens, len(s.toks)-1)
}

func (s *scanner) pop() {
	if len(s.modes) > 1 {
		s.modes = s.modes[:len(s.modes)-1]
		s.opens = s.opens[:len(s.opens)-1]
	}
}

// bad reports n bytes no rule matches as a tBad token.
func (s *scanner) bad(n int, msg string) {
	start := s.pos
	s.emit(tBad, n)
	s.errs = append(s.errs, scanError{pos: start, end: s.pos, msg: msg})
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// identLen returns the length of the name at the start of s, 0 if none.
func identLen(s string) int {
	if s == "" || !isLetter(s[0]) {
		return 0
	}
	i := 1
	for i < len(s) && (isLetter(s[i]) || isDigit(s[i])) {
		i++
	}
	return i
}

// numberLen returns the length of the number at the start of s, 0 if none.
func numberLen(s string) int {
	if s == "" || !isDigit(s[0]) {
		return 0
	}
	if len(s) > 2 && s[0] == '0' {
		var ok func(byte) bool
		switch s[1] {
		case 'x', 'X':
			ok = func(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' || c == '_' }
		case 'o', 'O':
			ok = func(c byte) bool { return '0' <= c && c <= '7' || c == '_' }
		case 'b', 'B':
			ok = func(c byte) bool { return c == '0' || c == '1' || c == '_' }
		}
		if ok != nil && ok(s[2]) {
			i := 3
			for i < len(s) && ok(s[i]) {
				i++
			}
			return i
		}
	}
	digits := func(i int) int {
		for i < len(s) && (isDigit(s[i]) || s[i] == '_') {
			i++
		}
		return i
	}
	i := digits(1)
	if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
		i = digits(i + 2)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	return i
}

// opLen returns the length of the operator at the start of s, 0 if none.
func opLen(s string) int {
	if len(s) >= 2 {
		switch s[:2] {
		case "??", "?.", "..", "==", "!=", "<=", ">=", "&&", "||", "**":
			return 2
		}
	}
	if s != "" && strings.IndexByte("-+*/%<>!?:.|^~&#", s[0]) >= 0 {
		return 1
	}
	return 0
}

// quotedLen returns the length of the 'single-quoted' (or, with q '"', the
// double-quoted) string at the start of s, which may not span lines; 0 if
// it does not close.
func quotedLen(s string, q byte) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case q:
			return i + 1
		case '\n':
			return 0
		case '\\':
			if i+1 < len(s) && s[i+1] != '\n' {
				_, n := utf8.DecodeRuneInString(s[i+1:])
				i += n
				continue
			}
			return 0
		}
	}
	return 0
}

// rawLen returns the length of the `raw string` at the start of s, 0 if it
// does not close.
func rawLen(s string) int {
	if i := strings.IndexByte(s[1:], '`'); i >= 0 {
		return i + 2
	}
	return 0
}

// root lexes one token of statements and expressions.
func (s *scanner) root() {
	rest := s.src[s.off:]
	c := rest[0]
	switch {
	case c == ' ' || c == '\t' || c == '\r':
		n := 1
		for n < len(rest) && (rest[n] == ' ' || rest[n] == '\t' || rest[n] == '\r') {
			n++
		}
		s.skip(n)
	case c == '\n':
		s.emit(tNewline, 1)
	case isLetter(c):
		n := identLen(rest)
		if n < len(rest) && rest[n] == ':' {
			s.emit(tLabel, n+1)
			return
		}
		s.emit(tIdent, n)
	case c == '$' && identLen(rest[1:]) > 0:
		s.emit(tVar, 1+identLen(rest[1:]))
	case strings.IndexByte("{}()[],", c) >= 0:
		s.emit(tPunct, 1)
	case strings.HasPrefix(rest, `"""`):
		s.emit(tHeredocOpen, 3)
		s.push(modeHeredoc)
	case c == '"':
		s.emit(tStrOpen, 1)
		s.push(modeString)
	case strings.HasPrefix(rest, "//"):
		n := strings.IndexByte(rest, '\n')
		if n < 0 {
			n = len(rest)
		}
		s.comment(n)
	case strings.HasPrefix(rest, "/*"):
		if n := strings.Index(rest[2:], "*/"); n >= 0 {
			s.comment(n + 4)
			return
		}
		s.emit(tBadComment, 2)
		s.errs = append(s.errs, scanError{pos: s.toks[len(s.toks)-1].pos, end: s.pos, msg: "unterminated block comment"})
		s.skip(len(s.src) - s.off) // the rest of the file is the comment
		s.toEOF = true
	case isDigit(c):
		s.emit(tNumber, numberLen(rest))
	case strings.HasPrefix(rest, "->"):
		s.emit(tArrow, 2)
	case opLen(rest) > 0:
		s.emit(tOp, opLen(rest))
	case c == '=':
		s.emit(tAssign, 1)
	case c == ';':
		s.semis = append(s.semis, s.off)
		s.emit(tSemi, 1)
	case c == '\'':
		if n := quotedLen(rest, '\''); n > 0 {
			s.emit(tSQString, n)
			return
		}
		s.bad(lineLen(rest), "unterminated string literal")
	case c == '`':
		if n := rawLen(rest); n > 0 {
			s.emit(tRawString, n)
			return
		}
		s.bad(lineLen(rest), "unterminated raw string literal")
	default:
		s.unexpected(rest)
	}
}

// lineLen returns the length of the rest of the line at the start of s.
func lineLen(s string) int {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return i
	}
	return len(s)
}

// unexpected reports the character at the start of rest, which no rule
// matches.
func (s *scanner) unexpected(rest string) {
	r, n := utf8.DecodeRuneInString(rest)
	msg := fmt.Sprintf("unexpected character %s", strconv.QuoteRune(r))
	switch {
	case r == '$':
		msg = "expected a name after \"$\""
	case r == utf8.RuneError && n == 1:
		msg = "invalid UTF-8 encoding"
	case r == '“' || r == '”':
		msg += ` (strings are written with straight quotes: ")`
	case r == '‘' || r == '’':
		msg += ` (strings are written with straight quotes: ' or ")`
	}
	s.bad(n, msg)
}

func (s *scanner) comment(n int) {
	start := s.pos
	text := s.src[s.off : s.off+n]
	s.skip(n)
	s.comments = append(s.comments, &Comment{Pos: start, EndPos: s.pos, Text: text})
}

// str lexes one token inside a "…" string or, when heredoc is set, a
// """…""" string.
func (s *scanner) str(heredoc bool) {
	rest := s.src[s.off:]
	n := 0
	stop := "\"\\<\n"
	if heredoc {
		stop = "\"\\<"
	}
	for n < len(rest) && strings.IndexByte(stop, rest[n]) < 0 {
		n++
	}
	switch {
	case n > 0 && heredoc:
		s.emit(tHChars, n)
	case n > 0:
		s.emit(tChars, n)
	case heredoc && strings.HasPrefix(rest, `"""`):
		s.emit(tHeredocClose, 3)
		s.pop()
	case rest[0] == '"' && !heredoc:
		s.emit(tStrClose, 1)
		s.pop()
	case strings.HasPrefix(rest, "<<"):
		s.emit(tInterpOpen, 2)
		s.push(modeInterp)
	case rest[0] == '\\':
		if n := escapeLen(rest); n > 0 {
			s.emit(tEscaped, n)
			return
		}
		s.bad(1, "unterminated string literal")
		s.toEOF = true
	case rest[0] == '<':
		s.emit(tLt, 1)
	case rest[0] == '"':
		s.emit(tQuote, 1)
	default: // a newline in a "…" string: the string ends before it
		open := s.toks[s.opens[len(s.opens)-1]]
		s.errs = append(s.errs, scanError{pos: open.pos, end: open.end(), msg: `unterminated string literal (use """ for a string of several lines)`})
		s.emit(tBad, 0)
		s.pop()
	}
}

// escapeLen returns the length of the escape sequence at the start of s
// (which starts with a backslash), 0 when nothing follows the backslash.
func escapeLen(s string) int {
	hex := func(n int) bool {
		if len(s) < 2+n {
			return false
		}
		for _, c := range []byte(s[2 : 2+n]) {
			if !isDigit(c) && !('a' <= c && c <= 'f') && !('A' <= c && c <= 'F') {
				return false
			}
		}
		return true
	}
	if len(s) < 2 {
		return 0
	}
	switch c := s[1]; {
	case c == 'u' && hex(4):
		return 6
	case c == 'U' && hex(8):
		return 10
	case c == 'x' && hex(2):
		return 4
	case len(s) >= 4 && '0' <= c && c <= '7' && '0' <= s[2] && s[2] <= '7' && '0' <= s[3] && s[3] <= '7':
		return 4
	case strings.HasPrefix(s[1:], "<<"):
		return 3
	}
	_, n := utf8.DecodeRuneInString(s[1:])
	return 1 + n
}

// interp lexes one token inside << >>.
func (s *scanner) interp() {
	rest := s.src[s.off:]
	c := rest[0]
	switch {
	case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		n := 1
		for n < len(rest) && strings.IndexByte(" \t\r\n", rest[n]) >= 0 {
			n++
		}
		if nl := strings.IndexByte(rest[:n], '\n'); nl >= 0 && s.modes[len(s.modes)-2] == modeString {
			// A "…" string is one line: the line ends before the >>.
			s.skip(nl)
			s.unclosedInterp()
			s.pop() // the string
			return
		}
		s.skip(n)
	case strings.HasPrefix(rest, ">>"):
		s.emit(tInterpClose, 2)
		s.pop()
	case c == '$' && identLen(rest[1:]) > 0:
		s.emit(tVar, 1+identLen(rest[1:]))
	case isLetter(c):
		s.emit(tIdent, identLen(rest))
	case strings.IndexByte("{}()[],", c) >= 0:
		s.emit(tPunct, 1)
	case isDigit(c):
		s.emit(tNumber, numberLen(rest))
	case strings.HasPrefix(rest, `"""`) && s.modes[len(s.modes)-2] == modeHeredoc:
		s.unclosedInterp() // the quotes close the heredoc
	case c == '"':
		if n := quotedLen(rest, '"'); n > 0 {
			s.emit(tIString, n)
			return
		}
		s.unclosedInterp()
	case c == '\'':
		if n := quotedLen(rest, '\''); n > 0 {
			s.emit(tSQString, n)
			return
		}
		s.bad(lineLen(rest), "unterminated string literal")
	case c == '`':
		if n := rawLen(rest); n > 0 {
			s.emit(tRawString, n)
			return
		}
		s.bad(lineLen(rest), "unterminated raw string literal")
	case opLen(rest) > 0:
		s.emit(tOp, opLen(rest))
	case c == '=':
		s.emit(tAssign, 1)
	case c == ';':
		s.emit(tSemi, 1)
	default:
		s.unexpected(rest)
	}
}

// unclosedInterp handles a " inside << >> that opens no string: the >> is
// missing and the quote closes the string around the interpolation.
func (s *scanner) unclosedInterp() {
	open := s.toks[s.opens[len(s.opens)-1]]
	s.errs = append(s.errs, scanError{pos: open.pos, end: open.end(), msg: `unclosed << in string (missing >>)`})
	s.pop()
	s.emit(tBad, 0)
}
