package lang

import (
	"fmt"

	"github.com/aguic/aguic/lang/diag"
)

// syntaxErr is one syntax error found by the parser.
type syntaxErr struct {
	pos, end Position
	msg      string
	related  []relatedPos
}

// relatedPos is another place an error involves.
type relatedPos struct {
	pos, end Position
	msg      string
}

// endList unwinds the parser from an item to its list, which ends there:
// the item starts what comes after the list.
type endList struct{}

// bailout unwinds the parser from an item that does not parse to the list
// that holds it, which skips to the item's end and goes on.
type bailout struct{}

// parser is a recursive-descent parser over the scanner's tokens. Each
// production is a method named after the AST node it returns. An item of a
// list (a statement, member, entry, case…) that does not parse is reported
// at the offending token and skipped to its end, a newline or ";" outside
// brackets, or the "}" that closes the list; the list goes on with the
// next item.
type parser struct {
	f        *File
	toks     []token
	i        int
	end      Position        // just past the last token consumed
	kinds    map[string]bool // the node kinds, when the caller knows them
	kindList []string
	toEOF    bool // a scanner error ran to the end of the file
	errs     []syntaxErr
	kwAt     int // index of the keyword of the statement being parsed, -1 if none
	// badStmt is set by an error the parser goes on after: the statement
	// being parsed is parsed to its end, then marked Bad.
	badStmt bool
}

func (p *parser) tok() *token { return &p.toks[p.i] }

// peek returns the token n ahead of the current one (EOF past the end).
func (p *parser) peek(n int) *token {
	if p.i+n >= len(p.toks) {
		return &p.toks[len(p.toks)-1]
	}
	return &p.toks[p.i+n]
}

// next consumes the current token and returns it.
func (p *parser) next() *token {
	t := &p.toks[p.i]
	if t.kind != tEOF {
		p.end = t.end()
		p.i++
	}
	return t
}

func (t *token) is(kind tokKind, val string) bool { return t.kind == kind && t.val == val }
func (t *token) punct(val string) bool            { return t.kind == tPunct && t.val == val }
func (t *token) word(val string) bool             { return t.kind == tIdent && t.val == val }

// report records an error at t.
func (p *parser) report(t *token, format string, args ...any) *syntaxErr {
	if t.kind == tEOF && p.toEOF {
		return nil
	}
	p.errs = append(p.errs, syntaxErr{pos: t.pos, end: t.end(), msg: fmt.Sprintf(format, args...)})
	return &p.errs[len(p.errs)-1]
}

// fail reports an error at t and abandons the current item. Text the
// scanner rejected has its own error: fail adds none at it.
func (p *parser) fail(t *token, format string, args ...any) {
	if t.kind != tBad && t.kind != tBadComment {
		p.report(t, format, args...)
	}
	panic(bailout{})
}

// failExpected reports that want was expected at the current token. When
// that token follows the keyword of a statement, the statement's hint says
// what it needs instead.
func (p *parser) failExpected(want string) {
	t := p.tok()
	if p.kwAt >= 0 && p.i == p.kwAt+1 && t.kind != tBad {
		if hint, ok := statementHints[p.toks[p.kwAt].val]; ok {
			p.fail(&p.toks[p.kwAt], "%s", hint)
		}
	}
	p.fail(t, "expected %s, found %s", want, describe(t))
}

// describe names a token for a message.
func describe(t *token) string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tNewline:
		return "newline"
	case tStrOpen, tHeredocOpen:
		return "string"
	}
	return fmt.Sprintf("%q", t.val)
}

// expectPunct consumes the punctuation val.
func (p *parser) expectPunct(val string) *token {
	if !p.tok().punct(val) {
		p.failExpected(fmt.Sprintf("%q", val))
	}
	return p.next()
}

// ident parses a name.
func (p *parser) ident() *Ident {
	t := p.tok()
	if t.kind != tIdent {
		p.failExpected("name")
	}
	p.next()
	return &Ident{Pos: t.pos, EndPos: p.end, Name: t.val}
}

// try runs item, which parses one item of a list. When the item does not
// parse, it skips to the item's end and returns false.
func (p *parser) try(item func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(bailout); !is {
				panic(r)
			}
			p.sync()
			ok = false
		}
	}()
	item()
	return true
}

// sync skips to the end of an item that did not parse: a newline or ";"
// outside brackets, or the "}" of the list that holds it (not consumed).
// Brackets are skipped whole: a "}" closes the "(" and "[" left open
// inside its "{".
func (p *parser) sync() {
	var open []string
	for {
		t := p.tok()
		if t.inStr {
			p.next()
			continue
		}
		switch {
		case t.kind == tEOF:
			return
		case (t.kind == tNewline || t.kind == tSemi) && len(open) == 0:
			return
		case t.punct("{") || t.punct("(") || t.punct("["):
			open = append(open, t.val)
		case t.punct("}"):
			for len(open) > 0 && open[len(open)-1] != "{" {
				open = open[:len(open)-1]
			}
			if len(open) == 0 {
				return
			}
			open = open[:len(open)-1]
		case t.punct(")") || t.punct("]"):
			if len(open) > 0 && open[len(open)-1] != "{" {
				open = open[:len(open)-1]
			}
		}
		p.next()
	}
}

// list parses the items of a braced list whose "{" is open, up to and
// including its "}". Newlines and semicolons between items are skipped.
func (p *parser) list(open *token, item func()) {
	for {
		t := p.tok()
		switch {
		case t.kind == tNewline || t.kind == tSemi:
			p.next()
			continue
		case t.punct("}"):
			p.next()
			return
		case t.kind == tEOF:
			p.unclosed(open)
			return
		}
		start := p.i
		if p.tryList(item) {
			return
		}
		if p.i == start {
			p.next() // an item must move on
		}
	}
}

// tryList runs item under try and reports whether it ended the list.
func (p *parser) tryList(item func()) (ended bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(endList); !is {
				panic(r)
			}
			ended = true
		}
	}()
	p.try(item)
	return false
}

// unclosed reports the end of the file where the "}" of open is missing.
func (p *parser) unclosed(open *token) {
	e := p.report(p.tok(), `expected "}", found end of file`)
	if e != nil {
		e.related = append(e.related, relatedPos{pos: open.pos, end: open.end(), msg: `this "{" is not closed`})
	}
}

// keywordTypo reports whether t, a name where a keyword of candidates may
// stand, is a misspelling of one of them, and which. A known node kind is
// never a typo; when the node kinds are known, a name closer to a kind than
// to the keyword is left to the compiler, which suggests the kind.
func (p *parser) keywordTypo(t *token, candidates []string) (string, bool) {
	if t.kind != tIdent || IsKeyword(t.val) || p.kinds[t.val] {
		return "", false
	}
	kw, d, ok := diag.Closest(t.val, candidates, diag.TypoLimit(t.val))
	if !ok {
		return "", false
	}
	if p.kinds != nil {
		if _, kd, near := diag.Closest(t.val, p.kindList, diag.TypoLimit(t.val)); near && kd <= d {
			return "", false
		}
	}
	return kw, true
}

// typo reports t as a misspelling of keyword kw.
func (p *parser) typo(t *token, kw string) {
	p.report(t, "unknown keyword %q (did you mean %q?)", t.val, kw)
}

// file parses a whole file into f.
func (p *parser) file(f *File) {
	f.Pos = p.tok().pos
	for p.tok().kind == tNewline || p.tok().kind == tSemi {
		p.next()
	}
	if t := p.tok(); t.word("wf") && p.peek(1).kind == tNumber {
		p.next()
		n := p.next()
		f.Version = &Version{Pos: t.pos, EndPos: p.end, Number: n.val}
	} else if t.kind != tBad {
		p.report(t, "expected %q, found %s", "wf 1", describe(t))
	}
	for {
		t := p.tok()
		switch {
		case t.kind == tNewline || t.kind == tSemi:
			p.next()
			continue
		case t.kind == tEOF:
			f.EndPos = p.end
			if f.EndPos.Offset < f.Pos.Offset {
				f.EndPos = f.Pos
			}
			return
		}
		start := p.i
		if !p.try(func() { p.decl(f) }) && p.skippedBlock(start) {
			// What did not parse held a block: it may have declared a
			// workflow that other files name. A stray line (a # comment, a
			// word) declared nothing.
			f.Lost = true
		}
		if p.i == start {
			p.next()
		}
	}
}

// skippedBlock reports whether the tokens from start to the current one
// hold a "{" outside strings.
func (p *parser) skippedBlock(start int) bool {
	for i := start; i < p.i && i < len(p.toks); i++ {
		if t := &p.toks[i]; !t.inStr && t.punct("{") {
			return true
		}
	}
	return false
}

// decl parses a workflow or an MCP server declaration.
func (p *parser) decl(f *File) {
	t := p.tok()
	switch {
	case t.word("workflow"):
		f.Workflows = append(f.Workflows, p.workflow())
		return
	case t.word("mcp"):
		f.Servers = append(f.Servers, p.server())
		return
	case t.punct("}"):
		p.fail(t, `unexpected "}" (no "{" is open)`)
	}
	if kw, ok := p.keywordTypo(t, []string{"workflow", "mcp"}); ok && p.peek(1).kind == tIdent {
		p.typo(t, kw)
		if kw == "workflow" {
			f.Workflows = append(f.Workflows, p.workflow())
		} else {
			f.Servers = append(f.Servers, p.server())
		}
		return
	}
	p.itemError(t, `"workflow" or "mcp"`)
}

// itemError reports t, which starts no item of the list at hand: a # taken
// for a comment, a misplaced arrow, or what the list expected.
func (p *parser) itemError(t *token, want string) {
	switch {
	case t.is(tOp, "#"):
		p.fail(t, "comments start with // or /* */, not #")
	case t.punct(")") || t.punct("]"):
		p.fail(t, "unexpected %q (no %q is open)", t.val, map[string]string{")": "(", "]": "["}[t.val])
	case t.punct("{"):
		p.fail(t, `unexpected "{": the "{" of a block or of a node's body goes on the line of its statement`)
	case t.kind == tIdent && !StartsStatement(t.val) || t.kind == tArrow || t.kind == tAssign:
		if hint, ok := statementHints[t.val]; ok {
			p.fail(t, "%s", hint)
		}
	}
	p.fail(t, "expected %s, found %s", want, describe(t))
}

// workflow parses `workflow name { members }`.
func (p *parser) workflow() *Workflow {
	w := &Workflow{Pos: p.next().pos}
	w.Name = p.ident()
	open := p.expectPunct("{")
	p.list(open, func() {
		if t := p.tok(); (t.word("workflow") || t.word("mcp") && p.peek(1).kind == tIdent && p.peek(2).punct("{")) && t.pos.Column == 1 {
			// The next declaration: this workflow's "}" is missing.
			if e := p.report(t, `expected "}", found %q`, t.val); e != nil {
				e.related = append(e.related, relatedPos{pos: open.pos, end: open.end(), msg: `this "{" is not closed`})
			}
			panic(endList{})
		}
		if m := p.member(); m != nil {
			w.Members = append(w.Members, m)
		}
	})
	w.EndPos = p.end
	return w
}

// server parses `mcp name { key = value … }`.
func (p *parser) server() *Server {
	s := &Server{Pos: p.next().pos}
	s.Name = p.ident()
	open := p.expectPunct("{")
	p.list(open, func() {
		t := p.tok()
		if t.kind == tIdent && p.peek(1).kind == tAssign {
			s.Attrs = append(s.Attrs, p.attr())
			return
		}
		if a := p.missingAssign(t); a != nil {
			s.Attrs = append(s.Attrs, a)
			return
		}
		p.itemError(t, "name")
	})
	s.EndPos = p.end
	return s
}

// member parses an attribute, a tool or the flow of a workflow.
func (p *parser) member() *Member {
	t := p.tok()
	m := &Member{Pos: t.pos}
	switch {
	case t.word("tool") && p.peek(1).kind == tIdent:
		m.Tool = p.tool()
	case t.word("flow") && p.peek(1).punct("{"):
		p.next()
		m.Flow = p.block()
	case t.kind == tIdent && p.peek(1).kind == tAssign:
		m.Attr = p.attr()
	default:
		if kw, ok := p.keywordTypo(t, []string{"flow", "tool"}); ok {
			switch {
			case kw == "flow" && p.peek(1).punct("{"):
				p.typo(t, kw)
				p.next()
				m.Flow = p.block()
				m.EndPos = p.end
				return m
			case kw == "tool" && p.peek(1).kind == tIdent && p.peek(2).punct("{"):
				p.typo(t, kw)
				m.Tool = p.tool()
				m.EndPos = p.end
				return m
			}
		}
		if a := p.missingAssign(t); a != nil {
			m.Attr = a
			break
		}
		p.itemError(t, "an attribute, tool or flow")
	}
	m.EndPos = p.end
	return m
}

// startsValue reports whether t may start a value on the line of a key.
func startsValue(t *token) bool {
	switch t.kind {
	case tStrOpen, tHeredocOpen, tNumber, tVar, tSQString, tRawString, tIdent:
		return true
	case tPunct:
		return t.val == "[" || t.val == "(" || t.val == "{"
	}
	return false
}

// missingAssign handles `key value` without its "=": it reports the value
// and parses the attribute as if the "=" were there. It returns nil when t
// does not start such a line.
func (p *parser) missingAssign(t *token) *Attr {
	if t.kind != tIdent || IsKeyword(t.val) || !startsValue(p.peek(1)) || p.peek(1).word("in") {
		return nil
	}
	v := p.peek(1)
	if v.kind == tIdent && !(p.peek(2).kind == tNewline || p.peek(2).kind == tSemi || p.peek(2).punct("}")) {
		return nil // two names: not a key and its value
	}
	p.report(v, "expected %q after %q, found %s", "=", t.val, describe(v))
	p.next()
	name := &Ident{Pos: t.pos, EndPos: p.end, Name: t.val}
	a := &Attr{Pos: t.pos, Name: name, Value: p.expr()}
	a.EndPos = p.end
	return a
}

// attr parses `name = value`.
func (p *parser) attr() *Attr {
	a := &Attr{Pos: p.tok().pos}
	a.Name = p.ident()
	p.next() // =
	a.Value = p.expr()
	a.EndPos = p.end
	return a
}

// tool parses `tool name { items }`.
func (p *parser) tool() *Tool {
	t := &Tool{Pos: p.next().pos}
	t.Name = p.ident()
	open := p.expectPunct("{")
	p.list(open, func() {
		first := p.tok()
		if first.kind != tIdent {
			p.itemError(first, "an attribute or statement")
		}
		it := &ToolItem{Pos: first.pos}
		it.Name = p.ident()
		if p.tok().kind == tAssign && !p.arrowTypo() {
			p.next()
			it.Value = p.expr()
		}
		it.Arg, it.Body, it.Out = p.nodeRest()
		it.EndPos = p.end
		t.Items = append(t.Items, it)
	})
	t.EndPos = p.end
	return t
}

// block parses `{ statements }`.
func (p *parser) block() *Block {
	open := p.expectPunct("{")
	b := &Block{Pos: open.pos}
	p.list(open, func() {
		s := &Stmt{Pos: p.tok().pos}
		outer := p.badStmt
		p.badStmt = false
		ok := p.try(func() { p.stmt(s) })
		if ok && p.badStmt {
			*s = Stmt{Pos: s.Pos, EndPos: s.EndPos, Label: s.Label, Bad: true}
		}
		p.badStmt = outer
		if !ok {
			s.Bad = true
			s.EndPos = p.end
			if s.EndPos.Offset < s.Pos.Offset {
				s.EndPos = s.Pos
			}
		}
		b.Stmts = append(b.Stmts, s)
	})
	b.EndPos = p.end
	return b
}

// statementKeywords are the keywords a statement starts with.
var statementKeywords = []string{"set", "if", "switch", "for", "while", "goto", "step", "parallel", "try", "end", "fail"}

// stmt parses one statement, with its label, into s.
func (p *parser) stmt(s *Stmt) {
	defer func() { s.EndPos = p.end }()
	p.kwAt = -1
	if t := p.tok(); t.kind == tLabel {
		p.next()
		for p.tok().kind == tNewline {
			p.next()
		}
		s.Label = &Label{Pos: t.pos, EndPos: p.end, Text: t.val}
		if n := p.tok(); n.punct("}") || n.kind == tEOF || n.kind == tSemi {
			p.fail(n, "expected a statement, found %s", describe(n))
		}
	}
	t := p.tok()
	if t.kind != tIdent {
		p.nonStatement(t)
	}
	kw := t.val
	if !StartsStatement(kw) {
		switch kw {
		case "else":
			p.fail(t, `"else" must follow the "}" that closes the if, on the same line`)
		case "case", "default", "branch", "catch", "on", "tool":
			p.fail(t, "%s", statementHints[kw])
		}
		typo, ok := p.keywordTypo(t, statementKeywords)
		if !ok || p.kinds == nil && !p.shapeOf(typo) {
			s.Node = p.node()
			return
		}
		p.typo(t, typo)
		kw = typo
	}
	p.kwAt = p.i
	switch kw {
	case "set":
		s.Set = p.set()
	case "if":
		s.If = p.ifStmt()
	case "switch":
		s.Switch = p.switchStmt()
	case "for":
		s.For = p.forStmt()
	case "while":
		s.While = p.whileStmt()
	case "goto":
		g := &Goto{Pos: p.next().pos}
		g.Target = p.ident()
		g.EndPos = p.end
		s.Goto = g
	case "step":
		s.Step = p.step()
	case "parallel":
		s.Parallel = p.parallel()
	case "try":
		s.Try = p.try_()
	case "end":
		e := p.next()
		s.End = &End{Pos: e.pos, EndPos: p.end, Keyword: "end"}
	case "fail":
		f := &Fail{Pos: p.next().pos}
		f.Message = p.expr()
		f.EndPos = p.end
		s.Fail = f
	}
}

// shapeOf reports whether the statement at the current token, whose first
// word misspells keyword kw, has the shape of that statement rather than
// of a node: used when the node kinds are not known.
func (p *parser) shapeOf(kw string) bool {
	switch kw {
	case "for":
		return p.peek(1).kind == tIdent && p.peek(2).word("in")
	case "set":
		if p.peek(1).punct("{") {
			return p.peek(2).kind == tNewline && p.peek(3).kind == tVar
		}
		// `x $path = …`: a node's argument never holds a bare "=".
		if p.peek(1).kind != tVar {
			return false
		}
		for j := 2; ; j++ {
			switch t := p.peek(j); {
			case t.kind == tAssign:
				return true
			case t.kind == tNewline || t.kind == tSemi || t.kind == tEOF || t.punct("{") || t.punct("}"):
				return false
			}
		}
	case "switch", "parallel":
		want := map[string]string{"switch": "case", "parallel": "branch"}[kw]
		if !p.peek(1).punct("{") {
			return false
		}
		j := 2
		for p.peek(j).kind == tNewline {
			j++
		}
		return p.peek(j).word(want) || kw == "switch" && p.peek(j).word("default")
	}
	return false
}

// nonStatement reports t, which starts no statement.
func (p *parser) nonStatement(t *token) {
	if t.kind == tVar {
		j := 1
		for p.peek(j).is(tOp, ".") || p.peek(j).kind == tIdent || p.peek(j).punct("[") || p.peek(j).punct("]") || p.peek(j).kind == tNumber {
			j++
		}
		if p.peek(j).kind == tAssign {
			p.fail(t, "expected a statement, found %q (write `set %s = …` to set a value)", t.val, t.val)
		}
	}
	p.itemError(t, "a statement")
}

// set parses `set $path = value` or `set { $a = 1 … }`.
func (p *parser) set() *Set {
	s := &Set{Pos: p.next().pos}
	if t := p.tok(); t.punct("{") {
		p.next()
		s.Group = true
		p.list(t, func() {
			if p.tok().kind != tVar {
				p.itemError(p.tok(), "$path")
			}
			s.Assigns = append(s.Assigns, p.assign())
		})
	} else {
		if t.kind != tVar {
			p.failExpected("$path")
		}
		s.Assigns = []*Assign{p.assign()}
	}
	s.EndPos = p.end
	return s
}

// assign parses `$path = value`.
func (p *parser) assign() *Assign {
	a := &Assign{Pos: p.tok().pos}
	a.Path = p.path()
	if p.tok().kind != tAssign {
		p.failExpected(`"="`)
	}
	p.next()
	a.Value = p.expr()
	a.EndPos = p.end
	return a
}

// path parses `$root.key[0]`.
func (p *parser) path() *Path {
	t := p.tok()
	if t.kind != tVar {
		p.failExpected("$path")
	}
	p.next()
	x := &Path{Pos: t.pos, Root: t.val}
	for {
		k := p.tok()
		switch {
		case k.is(tOp, ".") && p.peek(1).kind == tIdent:
			p.next()
			name := p.next()
			x.Keys = append(x.Keys, &PathKey{Pos: k.pos, EndPos: p.end, Name: name.val})
			continue
		case k.punct("[") && p.peek(1).kind == tNumber:
			p.next()
			n := p.next()
			if !p.tok().punct("]") {
				p.failExpected(`"]"`)
			}
			p.next()
			x.Keys = append(x.Keys, &PathKey{Pos: k.pos, EndPos: p.end, Index: n.val})
			continue
		}
		break
	}
	x.EndPos = p.end
	return x
}

// condition parses the condition of an if, case or while, or the list of
// a for, and rejects a "=" after it, a comparison written with one "=".
func (p *parser) condition() *Cond {
	c := p.cond()
	if t := p.tok(); t.kind == tAssign && !p.peek(1).is(tOp, ">") {
		// Read on as if it were "==", so the blocks after are parsed.
		p.report(t, `unexpected "=" in a condition (did you mean "=="?)`)
		p.badStmt = true
		p.next()
		if p.tok().punct("{") {
			return c
		}
		rest := p.cond()
		c.Parts = append(c.Parts, rest.Parts...)
		c.EndPos = rest.EndPos
	}
	return c
}

// ifStmt parses `if cond { } else if cond { } else { }`.
func (p *parser) ifStmt() *If {
	n := &If{Pos: p.next().pos}
	n.Cond = p.condition()
	n.Then = p.block()
	t := p.tok()
	if t.kind == tIdent && t.pos.Line == p.end.Line && (t.val == "elif" || t.val == "elsif" || t.val == "elseif") {
		p.report(t, "unknown keyword %q (write \"else if\")", t.val)
		p.kwAt = p.i
		n.ElseIf = p.ifStmt()
		n.EndPos = p.end
		return n
	}
	isElse := t.word("else")
	if !isElse && t.pos.Line == p.end.Line && (p.peek(1).punct("{") || p.peek(1).word("if")) {
		if kw, ok := p.keywordTypo(t, []string{"else"}); ok {
			p.typo(t, kw)
			isElse = true
		}
	}
	if isElse {
		switch next := p.peek(1); {
		case next.word("if"):
			p.next()
			p.kwAt = p.i
			n.ElseIf = p.ifStmt()
		case next.punct("{"):
			p.next()
			n.Else = p.block()
		default:
			p.next()
			p.fail(next, `expected "{" or "if" after "else", found %s`, describe(next))
		}
	}
	n.EndPos = p.end
	return n
}

// switchStmt parses `switch { case cond { } default { } }`.
func (p *parser) switchStmt() *Switch {
	n := &Switch{Pos: p.next().pos}
	open := p.expectPunct("{")
	p.list(open, func() {
		t := p.tok()
		c := &Case{Pos: t.pos}
		kw := t.val
		if !t.word("case") && !t.word("default") {
			typo, ok := p.keywordTypo(t, []string{"case", "default"})
			if !ok {
				p.itemError(t, `"case" or "default"`)
			}
			p.typo(t, typo)
			kw = typo
		}
		p.next()
		if kw == "default" {
			c.Default = true
		} else {
			c.Cond = p.condition()
		}
		c.Body = p.block()
		c.EndPos = p.end
		n.Cases = append(n.Cases, c)
	})
	n.EndPos = p.end
	return n
}

// forStmt parses `for x in list { }`.
func (p *parser) forStmt() *For {
	n := &For{Pos: p.next().pos}
	n.Var = p.ident()
	if t := p.tok(); !t.word("in") {
		kw, ok := p.keywordTypo(t, []string{"in"})
		if !ok {
			p.failExpected(`"in"`)
		}
		p.typo(t, kw)
	}
	p.next()
	n.Iter = p.condition()
	n.Body = p.block()
	n.EndPos = p.end
	return n
}

// whileStmt parses `while cond max N { }`; post splits off the bound.
func (p *parser) whileStmt() *While {
	n := &While{Pos: p.next().pos}
	n.Cond = p.condition()
	n.Body = p.block()
	n.EndPos = p.end
	return n
}

// step parses `step "name" { }`.
func (p *parser) step() *Step {
	n := &Step{Pos: p.next().pos}
	if t := p.tok(); t.kind != tStrOpen && t.kind != tHeredocOpen {
		p.failExpected("string")
	}
	n.Name = p.string_()
	n.Body = p.block()
	n.EndPos = p.end
	return n
}

// parallel parses `parallel { branch a { } … }`.
func (p *parser) parallel() *Parallel {
	n := &Parallel{Pos: p.next().pos}
	open := p.expectPunct("{")
	p.list(open, func() {
		t := p.tok()
		if !t.word("branch") {
			kw, ok := p.keywordTypo(t, []string{"branch"})
			if !ok {
				p.itemError(t, `"branch"`)
			}
			p.typo(t, kw)
		}
		b := &Branch{Pos: p.next().pos}
		b.Name = p.ident()
		b.Body = p.block()
		b.EndPos = p.end
		n.Branches = append(n.Branches, b)
	})
	n.EndPos = p.end
	return n
}

// try_ parses `try { } catch e { }`.
func (p *parser) try_() *Try {
	n := &Try{Pos: p.next().pos}
	n.Body = p.block()
	if t := p.tok(); !t.word("catch") {
		kw, ok := p.keywordTypo(t, []string{"catch"})
		if !ok {
			p.failExpected(`"catch"`)
		}
		p.typo(t, kw)
	}
	p.next()
	if p.tok().kind == tIdent {
		n.Var = p.ident()
	}
	n.Catch = p.block()
	n.EndPos = p.end
	return n
}

// node parses `kind [arg] [{ body }] [-> $path]`.
func (p *parser) node() *Node {
	n := &Node{Pos: p.tok().pos}
	n.Kind = p.ident()
	n.Arg, n.Body, n.Out = p.nodeRest()
	n.EndPos = p.end
	return n
}

// nodeRest parses the optional argument, body and `-> $path` of a node or
// tool implementation.
func (p *parser) nodeRest() (arg *Arg, body *NodeBody, out *Path) {
	if p.argStarts() {
		arg = p.arg()
	}
	if p.tok().punct("{") {
		body = p.nodeBody()
	}
	if p.tok().kind == tArrow || p.arrowTypo() {
		p.next()
		out = p.path()
	}
	return arg, body, out
}

// arrowTypo reports `=>` written for `->` (and moves past its "=").
func (p *parser) arrowTypo() bool {
	t := p.tok()
	gt := p.peek(1)
	if t.kind != tAssign || !gt.is(tOp, ">") || gt.pos.Offset != t.pos.Offset+1 {
		return false
	}
	p.errs = append(p.errs, syntaxErr{pos: t.pos, end: gt.end(), msg: `expected "->" to store the result, found "=>"`})
	p.next()
	return true
}

// nodeBody parses `{ key = value … on name { … } }`.
func (p *parser) nodeBody() *NodeBody {
	open := p.next()
	b := &NodeBody{Pos: open.pos}
	p.list(open, func() {
		t := p.tok()
		e := &Entry{Pos: t.pos}
		switch {
		case t.kind == tIdent && p.peek(1).kind == tAssign:
			e.Key = p.attr()
		case t.word("on") && p.peek(1).kind == tIdent:
			h := &Handler{Pos: p.next().pos}
			h.Name = p.ident()
			h.Body = p.block()
			h.EndPos = p.end
			e.Handler = h
		default:
			if a := p.missingAssign(t); a != nil {
				e.Key = a
				break
			}
			p.itemError(t, "a key or handler")
		}
		e.EndPos = p.end
		b.Entries = append(b.Entries, e)
	})
	b.EndPos = p.end
	return b
}

// isPartToken reports whether t is a token that is a part of a value by
// itself.
func isPartToken(t *token) bool {
	switch t.kind {
	case tVar, tIdent, tNumber, tSQString, tRawString, tLabel, tOp:
		return true
	case tPunct:
		return t.val == ","
	}
	return false
}

// continues reports whether t, the last token of a value at the end of a
// line, asks for more: an operator, a comma, or an operator word.
func continues(t *token) bool {
	switch t.kind {
	case tOp:
		return t.val != "#"
	case tPunct:
		return t.val == ","
	case tIdent:
		switch t.val {
		case "and", "or", "not", "in", "contains", "startsWith", "endsWith", "matches":
			return true
		}
	}
	return false
}

// partsEnd checks the end of a value whose last token is last: a value
// that ends its line with an operator and goes on on the next line is an
// error, since a value goes on to the next line only inside brackets. The
// next line is skipped with it.
func (p *parser) partsEnd(last *token) {
	switch t := p.tok(); {
	case t.kind == tBad:
		p.fail(t, "")
	case p.commentHash(t):
		p.fail(t, "comments start with // or /* */, not #")
	case last != nil && last.is(tOp, "#"):
		// # is a predicate's element, inside brackets: ending a value
		// outside them, it is a comment written as in shell.
		p.fail(last, "comments start with // or /* */, not #")
	case t.kind != tNewline || last == nil || !continues(last):
		return
	}
	// The value goes on on the next line when that line does not start a
	// statement or close the block; otherwise the value is only
	// incomplete, which the compiler reports.
	n := p.peek(1)
	if n.kind == tIdent && !p.peek(2).punct("(") || n.kind == tLabel || n.punct("}") || n.kind == tEOF || n.kind == tNewline {
		return
	}
	p.report(last, "incomplete expression: %q ends the line (a value continues on the next line only inside brackets: wrap it in parentheses)", last.val)
	p.next()
	p.sync()
	panic(bailout{})
}

// expr parses a value: parts up to the end of the line.
func (p *parser) expr() *Expr {
	x := &Expr{Pos: p.tok().pos}
	var last *token
	for {
		t := p.tok()
		var part *Part
		switch {
		case isPartToken(t) && !p.commentHash(t):
			p.next()
			part = &Part{Pos: t.pos, EndPos: p.end, Token: t.val}
			last = t
		case t.kind == tStrOpen || t.kind == tHeredocOpen:
			s := p.string_()
			part = &Part{Pos: s.Pos, EndPos: s.EndPos, Str: s}
			last = nil
		case t.punct("(") || t.punct("[") || t.punct("{"):
			g := p.group()
			part = &Part{Pos: g.Pos, EndPos: g.EndPos, Group: g}
			last = nil
		}
		if part == nil {
			break
		}
		x.Parts = append(x.Parts, part)
	}
	if len(x.Parts) == 0 {
		p.failValue()
	}
	p.partsEnd(last)
	x.EndPos = p.end
	return x
}

// commentHash reports whether t, the current token, is a # that starts a
// comment as in shell or Python: followed by a blank or the end of the
// line. (In a value, # is the element of a predicate, inside brackets.)
func (p *parser) commentHash(t *token) bool {
	if !t.is(tOp, "#") {
		return false
	}
	n := p.peek(1)
	return n.kind == tNewline || n.kind == tEOF || n.pos.Offset > t.pos.Offset+1
}

// failValue reports a missing value.
func (p *parser) failValue() {
	t := p.tok()
	if p.commentHash(t) {
		p.fail(t, "comments start with // or /* */, not #")
	}
	p.failExpected("an expression")
}

// cond parses a value that may not hold a brace outside brackets.
func (p *parser) cond() *Cond {
	x := &Cond{Pos: p.tok().pos}
	var last *token
	for {
		t := p.tok()
		var part *CondPart
		switch {
		case isPartToken(t) && !p.commentHash(t):
			p.next()
			part = &CondPart{Pos: t.pos, EndPos: p.end, Token: t.val}
			last = t
		case t.kind == tStrOpen || t.kind == tHeredocOpen:
			s := p.string_()
			part = &CondPart{Pos: s.Pos, EndPos: s.EndPos, Str: s}
			last = nil
		case t.punct("(") || t.punct("["):
			g := p.group()
			part = &CondPart{Pos: g.Pos, EndPos: g.EndPos, Group: &CondGroup{Pos: g.Pos, EndPos: g.EndPos, Open: g.Open, Inner: g.Inner, Close: g.Close}}
			last = nil
		}
		if part == nil {
			break
		}
		x.Parts = append(x.Parts, part)
	}
	if len(x.Parts) == 0 {
		p.failValue()
	}
	p.partsEnd(last)
	x.EndPos = p.end
	return x
}

// argStarts reports whether the current token starts a node's argument.
func (p *parser) argStarts() bool {
	t := p.tok()
	return isPartToken(t) && !p.commentHash(t) || t.kind == tStrOpen || t.kind == tHeredocOpen ||
		t.punct("(") || t.punct("[") || t.punct("{") && p.mapAhead()
}

// mapAhead reports whether the "{" at the current token opens a map: a
// key and a colon follow it, where a node body starts with `key =`.
func (p *parser) mapAhead() bool {
	j := 1
	for p.peek(j).kind == tNewline {
		j++
	}
	switch t := p.peek(j); t.kind {
	case tLabel, tStrOpen, tSQString:
		return true
	case tIdent, tNumber:
		return p.peek(j+1).is(tOp, ":")
	}
	return false
}

// arg parses a node's positional argument.
func (p *parser) arg() *Arg {
	x := &Arg{Pos: p.tok().pos}
	var last *token
	for {
		t := p.tok()
		var part *ArgPart
		switch {
		case isPartToken(t) && !p.commentHash(t):
			p.next()
			part = &ArgPart{Pos: t.pos, EndPos: p.end, Token: t.val}
			last = t
		case t.kind == tStrOpen || t.kind == tHeredocOpen:
			s := p.string_()
			part = &ArgPart{Pos: s.Pos, EndPos: s.EndPos, Str: s}
			last = nil
		case t.punct("(") || t.punct("[") || t.punct("{") && p.mapAhead():
			g := p.group()
			part = &ArgPart{Pos: g.Pos, EndPos: g.EndPos, Group: &ArgGroup{Pos: g.Pos, EndPos: g.EndPos, Open: g.Open, Inner: g.Inner, Close: g.Close}}
			last = nil
		}
		if part == nil {
			break
		}
		x.Parts = append(x.Parts, part)
	}
	p.partsEnd(last)
	x.EndPos = p.end
	return x
}

// closers maps an opening bracket to its closing one.
var closers = map[string]string{"(": ")", "[": "]", "{": "}"}

// group parses a bracketed group of a value, newlines allowed inside.
func (p *parser) group() *Group {
	open := p.next()
	g := &Group{Pos: open.pos, Open: open.val}
	for {
		t := p.tok()
		var part *InnerPart
		switch {
		case t.kind == tNewline:
			p.next()
			continue
		case isPartToken(t) || t.kind == tSemi || t.kind == tAssign || t.kind == tArrow:
			p.next()
			part = &InnerPart{Pos: t.pos, EndPos: p.end, Token: t.val}
		case t.kind == tStrOpen || t.kind == tHeredocOpen:
			s := p.string_()
			part = &InnerPart{Pos: s.Pos, EndPos: s.EndPos, Str: s}
		case t.punct("(") || t.punct("[") || t.punct("{"):
			sub := p.group()
			part = &InnerPart{Pos: sub.Pos, EndPos: sub.EndPos, Group: sub}
		}
		if part != nil {
			g.Inner = append(g.Inner, part)
			continue
		}
		break
	}
	want := closers[open.val]
	switch t := p.tok(); {
	case t.punct(want):
		p.next()
		g.Close = want
	case t.punct("}") && t.pos.Line == open.pos.Line:
		// A "}" on the line of the bracket: written for the closer.
		p.next()
		p.fail(t, "expected %q, found %q", want, t.val)
	case t.punct("}"):
		// The "}" of the block around: the bracket was never closed.
		e := p.report(t, "expected %q, found %q", want, "}")
		if e != nil {
			e.related = append(e.related, relatedPos{pos: open.pos, end: open.end(), msg: fmt.Sprintf("this %q is not closed", open.val)})
		}
		panic(bailout{})
	case t.punct(")") || t.punct("]"):
		p.next()
		p.fail(t, "expected %q, found %q", want, t.val)
	case t.kind == tEOF:
		e := p.report(t, "expected %q, found end of file", want)
		if e != nil {
			e.related = append(e.related, relatedPos{pos: open.pos, end: open.end(), msg: fmt.Sprintf("this %q is not closed", open.val)})
		}
		panic(bailout{})
	default:
		p.fail(t, "expected %q, found %s", want, describe(t))
	}
	g.EndPos = p.end
	return g
}

// string_ parses a "…" or """…""" literal.
func (p *parser) string_() *String {
	open := p.next()
	s := &String{Pos: open.pos, Heredoc: open.kind == tHeredocOpen}
	for {
		t := p.tok()
		switch t.kind {
		case tChars, tHChars, tLt, tQuote:
			p.next()
			s.Parts = append(s.Parts, &StrPart{Pos: t.pos, EndPos: p.end, Text: t.val})
			continue
		case tEscaped:
			p.next()
			s.Parts = append(s.Parts, &StrPart{Pos: t.pos, EndPos: p.end, Escape: t.val})
			continue
		case tInterpOpen:
			p.next()
			in := p.interp()
			s.Parts = append(s.Parts, &StrPart{Pos: t.pos, EndPos: p.end, Interp: in})
			continue
		case tStrClose, tHeredocClose:
			p.next()
			s.EndPos = p.end
			return s
		}
		// The scanner reported the string that does not close.
		p.fail(t, "unterminated string literal")
	}
}

// interp parses the tokens of a << >> up to and including the >>.
func (p *parser) interp() *Interp {
	in := &Interp{Pos: p.tok().pos}
	for {
		t := p.tok()
		switch t.kind {
		case tVar, tIdent, tNumber, tIString, tSQString, tRawString, tOp, tPunct, tAssign, tSemi:
			p.next()
			in.Tokens = append(in.Tokens, t.val)
			in.EndPos = p.end
			continue
		case tInterpClose:
			if len(in.Tokens) == 0 {
				in.EndPos = in.Pos
			}
			p.next()
			return in
		}
		p.fail(t, "unclosed << in string (missing >>)")
	}
}

// statementHints say what a statement or item needs, keyed by the word it
// starts with, when it does not parse from the token after that word.
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
	"on":       "a handler `on name { … }` belongs inside the body of its node",
	"flow":     "flow needs a block: `flow { … }`",
	"tool":     "a tool is declared in the workflow block, next to the flow, not inside it",
	"mcp":      "an MCP server is declared at the top level of a file, beside the workflows: `mcp name { command = \"…\" }`",
	"->":       "-> must follow its node on the same line and name a path: `say \"x\" -> $out`",
	"=":        "unexpected \"=\": write each `key = value` on a line of its own, or separate them with \";\"",
}
