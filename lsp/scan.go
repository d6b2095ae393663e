package lsp

// A scanner walks .wf text without parsing it, as far as an editor needs
// when the text may not parse: which context roots ($name) are read, and,
// at the cursor, whether it is in code, a string, an interpolation or a
// comment, which brackets are open and where the statement began.

// Scanner modes.
const (
	modeCode    = 'c'
	modeString  = 's' // "…"
	modeHeredoc = 'h' // """…"""
	modeInterp  = 'i' // <<…>> inside a string
)

// group is an open bracket: its character, its offset, the mode depth it
// was opened at, and where the statement it is part of began.
type group struct {
	ch    byte
	at    int
	depth int
	stmt  int
}

type scanner struct {
	src    []byte
	onVar  func(name string, start, end int) // a $name outside string text
	modes  []byte
	groups []group
	stmt   int  // where the current statement began
	inComm bool // the limit is inside a comment
}

func newScanner(src []byte) *scanner {
	return &scanner{src: src, modes: []byte{modeCode}}
}

func (s *scanner) mode() byte { return s.modes[len(s.modes)-1] }

func (s *scanner) push(m byte) { s.modes = append(s.modes, m) }

func (s *scanner) pop() {
	if len(s.modes) > 1 {
		s.modes = s.modes[:len(s.modes)-1]
	}
	for len(s.groups) > 0 && s.groups[len(s.groups)-1].depth > len(s.modes) {
		s.groups = s.groups[:len(s.groups)-1]
	}
}

// inBrackets reports whether a ( or [ is open in the current brace.
func (s *scanner) inBrackets() bool {
	n := len(s.groups)
	return n > 0 && s.groups[n-1].ch != '{'
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

func (s *scanner) has(i int, prefix string) bool {
	return i+len(prefix) <= len(s.src) && string(s.src[i:i+len(prefix)]) == prefix
}

// run scans src[from:limit].
func (s *scanner) run(from, limit int) {
	limit = min(limit, len(s.src))
	i := from
	for i < limit {
		c := s.src[i]
		switch s.mode() {
		case modeString, modeHeredoc:
			switch {
			case c == '\\':
				i += 2
				continue
			case s.mode() == modeHeredoc && s.has(i, `"""`):
				s.pop()
				i += 3
				continue
			case s.mode() == modeString && (c == '"' || c == '\n'):
				s.pop()
			case s.has(i, "<<"):
				s.push(modeInterp)
				i += 2
				continue
			}
			i++
			continue
		}
		// code or interpolation
		switch {
		case c == '\n' || c == ';':
			if s.mode() == modeCode && !s.inBrackets() {
				s.stmt = i + 1
			}
		case s.has(i, "//"):
			for i < len(s.src) && s.src[i] != '\n' {
				i++
			}
			if i >= limit {
				s.inComm = true
				return
			}
			continue
		case s.has(i, "/*"):
			j := i + 2
			for j < len(s.src) && !s.has(j, "*/") {
				j++
			}
			if j >= limit {
				s.inComm = true
				return
			}
			i = j + 2
			continue
		case s.mode() == modeInterp && s.has(i, ">>"):
			s.pop()
			i += 2
			continue
		case s.mode() == modeCode && s.has(i, `"""`):
			s.push(modeHeredoc)
			i += 3
			continue
		case c == '"' && s.mode() == modeCode:
			s.push(modeString)
		case c == '"' || c == '\'' || c == '`':
			i = s.quoted(i, limit)
			continue
		case c == '$' && i+1 < len(s.src) && isIdentStart(s.src[i+1]):
			j := i + 1
			for j < len(s.src) && isIdentChar(s.src[j]) {
				j++
			}
			if s.onVar != nil {
				s.onVar(string(s.src[i+1:j]), i, j)
			}
			i = j
			continue
		case c == '{' || c == '(' || c == '[':
			s.groups = append(s.groups, group{ch: c, at: i, depth: len(s.modes), stmt: s.stmt})
			if c == '{' && s.mode() == modeCode {
				s.stmt = i + 1
			}
		case c == '}' || c == ')' || c == ']':
			if n := len(s.groups); n > 0 && s.groups[n-1].depth == len(s.modes) {
				s.groups = s.groups[:n-1]
			}
			if c == '}' && s.mode() == modeCode {
				s.stmt = i + 1
			}
		}
		i++
	}
}

// quoted skips a quoted string without interpolations ('…', `…`, or "…"
// inside an interpolation) that starts at i, and returns the offset after
// it.
func (s *scanner) quoted(i, limit int) int {
	q := s.src[i]
	j := i + 1
	for j < len(s.src) && s.src[j] != q && (q == '`' || s.src[j] != '\n') {
		if s.src[j] == '\\' && q != '`' {
			j++
		}
		j++
	}
	if j >= limit {
		s.push(modeString) // the limit is inside the string
		return limit
	}
	return j + 1
}

// scanVars calls fn for every $name read in src[start:end], which begins
// outside any string.
func scanVars(src []byte, start, end int, fn func(name string, start, end int)) {
	s := newScanner(src)
	s.onVar = fn
	s.run(start, end)
}
