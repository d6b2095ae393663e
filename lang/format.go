package lang

import (
	"bytes"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/aguic/aguic/lang/diag"
)

// Format prints f, parsed from src, in the one canonical layout: `wf 1`
// first, a blank line between workflows and MCP server declarations (kept
// in source order), two-space indentation, one
// statement, entry or assignment per line, non-empty blocks always
// expanded, the `=` of consecutive `key = value` lines aligned, at most one
// blank line where the source had several, and every comment kept.
// Expressions, conditions and string literals are copied from src as
// written; the continuation lines of an expression that spans several
// lines are reindented with their statement, but bytes inside strings and
// comments never change. Formatting the output again yields it unchanged.
//
// f must be the tree Parse returned for src.
func Format(f *File, src []byte) []byte {
	p := newPrinter(f, src)
	p.file(f)
	return p.render()
}

// FormatSource parses src and formats it. On a syntax error it returns nil
// and the diagnostics.
func FormatSource(name string, src []byte) ([]byte, diag.List) {
	src = Clean(src)
	f, diags := Parse(name, src)
	if f == nil || diags.HasErrors() {
		return nil, diags
	}
	return Format(f, src), diags
}

// indentUnit is one level of indentation.
const indentUnit = "  "

// outLine is one line of output: a statement, entry, closing brace or
// comment. Its text may span several physical lines when it holds a
// multi-line expression, string or block comment.
type outLine struct {
	blank       bool     // preceded by a blank line
	indent      int      // indentation level of the first physical line
	srcIndent   string   // indentation of the source line the line starts on
	hoisted     []string // comments printed on their own lines before this one
	hoistIndent int      // indentation level of the hoisted comments
	text        []byte
	inline      [][2]int // spans of text holding inline comments, leading space included
	space       bool     // the next write is preceded by a space
	cell        int      // offset in text where alignment padding goes, or -1
	run         int      // alignment run, 0 for none
	trail       []string // comments at the end of the line
}

// printer builds the output line by line. Comments are placed in source
// order: before each token the printer places every comment that precedes
// it, on its own line between list items, at the end of the line when it
// follows the last token of a line on the same source line, and inline
// otherwise (a // comment in the middle of a line moves above the line).
type printer struct {
	src        []byte
	comments   []*Comment
	ci         int   // next comment to place
	lineStarts []int // offset of the start of each source line

	lines    []*outLine
	cur      *outLine // the line being built, nil between lines
	indent   int
	lastLine int  // source line of the end of the last token or comment placed
	first    bool // no blank line before the next line (start of a list)
	force    bool // a blank line before the next line
	runID    int
	runOpen  bool     // the last line printed may continue an alignment run
	ownTail  *outLine // the comment line just printed, while nothing follows it
}

func newPrinter(f *File, src []byte) *printer {
	p := &printer{src: src, comments: f.Comments, lineStarts: []int{0}}
	for i, c := range src {
		if c == '\n' {
			p.lineStarts = append(p.lineStarts, i+1)
		}
	}
	return p
}

// lineOf returns the source line (from 1) holding offset off.
func (p *printer) lineOf(off int) int {
	return sort.Search(len(p.lineStarts), func(i int) bool { return p.lineStarts[i] > off })
}

// indentOf returns the leading blanks of the source line holding off.
func (p *printer) indentOf(off int) string {
	start := p.lineStarts[p.lineOf(off)-1]
	end := start
	for end < len(p.src) && (p.src[end] == ' ' || p.src[end] == '\t') {
		end++
	}
	return string(p.src[start:end])
}

// next returns the offset of the first token at or after off, skipping
// blanks, newlines and comments.
func (p *printer) next(off int) int {
	for off < len(p.src) {
		switch p.src[off] {
		case ' ', '\t', '\r', '\n':
			off++
			continue
		}
		i, found := slices.BinarySearchFunc(p.comments, off, func(c *Comment, off int) int { return c.Pos.Offset - off })
		if !found {
			return off
		}
		off = p.comments[i].EndPos.Offset
	}
	return off
}

// commentText returns a comment as printed: a // comment loses its
// trailing blanks.
func commentText(c *Comment) string {
	if strings.HasPrefix(c.Text, "//") {
		return strings.TrimRight(c.Text, " \t\r")
	}
	return c.Text
}

// blankBefore decides whether a blank line goes before a line that starts
// on source line line.
func (p *printer) blankBefore(line int) bool {
	b := p.force || (!p.first && line > p.lastLine+1)
	p.force, p.first = false, false
	return b
}

// ownComments places the comments before limit on lines of their own.
func (p *printer) ownComments(limit int) {
	for p.ci < len(p.comments) && p.comments[p.ci].Pos.Offset < limit {
		c := p.comments[p.ci]
		p.ci++
		if l := p.ownTail; l != nil && c.Pos.Line == p.lastLine {
			// Comments that share a source line share an output line.
			l.text = append(append(l.text, ' '), commentText(c)...)
		} else {
			l = &outLine{indent: p.indent, cell: -1, blank: p.blankBefore(c.Pos.Line), text: []byte(commentText(c))}
			p.lines = append(p.lines, l)
			p.ownTail = l
		}
		p.lastLine = c.EndPos.Line
		p.runOpen = false
	}
}

// lead places the comments before a list item at pos and starts its line.
func (p *printer) lead(pos Position) {
	p.ownComments(pos.Offset)
	p.startLine(pos.Offset, p.blankBefore(pos.Line))
	if p.cur.blank {
		p.runOpen = false
	}
}

// startLine starts a new output line for the token at off.
func (p *printer) startLine(off int, blank bool) {
	p.ownTail = nil
	p.cur = &outLine{blank: blank, indent: p.indent, hoistIndent: p.indent, srcIndent: p.indentOf(off), cell: -1}
}

// finish places the comments that follow the line's last token on the same
// source line (up to limit, the offset of the next token) at its end, and
// ends the line.
func (p *printer) finish(limit int) {
	for p.ci < len(p.comments) {
		c := p.comments[p.ci]
		if c.Pos.Offset >= limit || c.Pos.Line != p.lastLine {
			break
		}
		p.ci++
		p.cur.trail = append(p.cur.trail, commentText(c))
		p.lastLine = c.EndPos.Line
	}
	p.lines = append(p.lines, p.cur)
	p.cur = nil
}

// place places the comments before off inside the current line.
func (p *printer) place(off int) {
	for p.ci < len(p.comments) && p.comments[p.ci].Pos.Offset < off {
		c := p.comments[p.ci]
		p.ci++
		p.lastLine = c.EndPos.Line
		text := commentText(c)
		l := p.cur
		if len(l.text) == 0 || strings.HasPrefix(text, "//") {
			p.hoist(text)
			continue
		}
		start := len(l.text)
		l.text = append(l.text, ' ')
		l.text = append(l.text, text...)
		l.inline = append(l.inline, [2]int{start, len(l.text)})
		l.space = true
	}
}

// hoist moves a comment, and the inline comments before it, above the
// current line, so that comments keep their order.
func (p *printer) hoist(text string) {
	l := p.cur
	for _, s := range l.inline {
		l.hoisted = append(l.hoisted, string(l.text[s[0]+1:s[1]]))
	}
	for i := len(l.inline) - 1; i >= 0; i-- {
		s := l.inline[i]
		l.text = append(l.text[:s[0]], l.text[s[1]:]...)
		if l.cell > s[0] {
			l.cell -= s[1] - s[0]
		}
	}
	l.inline = nil
	l.hoisted = append(l.hoisted, text)
}

// write appends s to the current line, after a space when space is set
// and the line is not empty.
func (p *printer) write(s string, space bool) {
	l := p.cur
	if len(l.text) > 0 && (space || l.space) {
		l.text = append(l.text, ' ')
	}
	l.space = false
	l.text = append(l.text, s...)
}

// emit prints the token s found at src[off:end].
func (p *printer) emit(off, end int, s string, space bool) {
	p.place(off)
	p.write(s, space)
	p.lastLine = p.lineOf(end)
}

// keyword prints the keyword s found at off.
func (p *printer) keyword(off int, s string) { p.emit(off, off+len(s), s, true) }

// ident prints a name.
func (p *printer) ident(id *Ident) { p.emit(id.Pos.Offset, id.EndPos.Offset, id.Name, true) }

// equals prints the `=` at off; when align is set, the `=` of this line
// lines up with its neighbours.
func (p *printer) equals(off int, align bool) {
	p.place(off)
	if align && bytes.IndexByte(p.cur.text, '\n') < 0 {
		p.cur.cell = len(p.cur.text)
	}
	p.write("=", true)
	p.lastLine = p.lineOf(off + 1)
}

// verbatim prints node as written, comments inside included. When it
// spans several lines, its continuation lines shift by as many columns as
// the line's indentation changed and lose their trailing blanks; bytes
// inside strings and comments never change.
func (p *printer) verbatim(node positioned) {
	pos, end := node.span()
	p.verbatimSpan(node, pos, end)
}

// verbatimSpan prints src[pos:end], a part of node, as written.
func (p *printer) verbatimSpan(node any, pos, end Position) {
	p.place(pos.Offset)
	p.write(p.reindent(node, pos.Offset, end.Offset), true)
	for p.ci < len(p.comments) && p.comments[p.ci].Pos.Offset < end.Offset {
		p.ci++
	}
	p.lastLine = end.Line
}

// reindent returns src[start:end], a part of node, with the continuation
// lines shifted to the current line's indentation.
func (p *printer) reindent(node any, start, end int) string {
	text := p.src[start:end]
	if bytes.IndexByte(text, '\n') < 0 {
		return string(text)
	}
	newlines := p.codeNewlines(node, start, end)
	delta := p.cur.indent*len(indentUnit) - width(p.cur.srcIndent)
	var b []byte
	off := start
	for _, nl := range newlines {
		b = append(b, p.src[off:nl]...)
		b = bytes.TrimRight(b, " \t\r")
		b = append(b, '\n')
		ws := nl + 1
		for ws < end && (p.src[ws] == ' ' || p.src[ws] == '\t') {
			ws++
		}
		lead := width(string(p.src[nl+1 : ws]))
		off = ws
		if ws < end && (p.src[ws] == '\n' || p.src[ws] == '\r') {
			continue // a blank line: no indentation
		}
		b = append(b, strings.Repeat(" ", max(0, lead+delta))...)
	}
	b = append(b, p.src[off:end]...)
	return string(b)
}

// width returns the columns a run of blanks takes, a tab counting as one
// level of indentation.
func width(blanks string) int {
	return len(blanks) + strings.Count(blanks, "\t")*(len(indentUnit)-1)
}

// codeNewlines returns the offsets of the newlines in src[start:end],
// which node spans, that lie outside strings and comments.
func (p *printer) codeNewlines(node any, start, end int) []int {
	var protected [][2]int // ascending, not overlapping
	for i := p.ci; i < len(p.comments) && p.comments[i].Pos.Offset < end; i++ {
		if c := p.comments[i]; c.Pos.Offset >= start {
			protected = append(protected, [2]int{c.Pos.Offset, c.EndPos.Offset})
		}
	}
	Inspect(node, func(n any) bool {
		v := reflect.ValueOf(n).Elem()
		pos, _ := v.FieldByName("Pos").Interface().(Position)
		endPos, _ := v.FieldByName("EndPos").Interface().(Position)
		span := [2]int{pos.Offset, endPos.Offset}
		if _, ok := n.(*String); ok {
			protected = append(protected, span)
			return false
		}
		if tok := v.FieldByName("Token"); tok.Kind() == reflect.String && strings.Contains(tok.String(), "\n") {
			protected = append(protected, span) // a raw string
		}
		return true
	})
	slices.SortFunc(protected, func(a, b [2]int) int { return a[0] - b[0] })
	var out []int
	for i := start; i < end; i++ {
		if p.src[i] != '\n' {
			continue
		}
		j := sort.Search(len(protected), func(j int) bool { return protected[j][1] > i })
		if j < len(protected) && protected[j][0] <= i {
			continue
		}
		out = append(out, i)
	}
	return out
}

// hasComments reports whether a comment starts before limit.
func (p *printer) hasComments(limit int) bool {
	return p.ci < len(p.comments) && p.comments[p.ci].Pos.Offset < limit
}

// list prints `{ items }` with the braces at open and close: `{}` when it
// holds neither items nor comments, otherwise one item per line.
func list[T positioned](p *printer, open, close int, items []T, print func(T)) {
	p.emit(open, open+1, "{", true)
	if len(items) == 0 && !p.hasComments(close) {
		p.emit(close, close+1, "}", false)
		return
	}
	start := func(i int) int {
		if i < len(items) {
			pos, _ := items[i].span()
			return pos.Offset
		}
		return close
	}
	p.finish(start(0))
	p.indent++
	p.first, p.runOpen = true, false
	for i, item := range items {
		pos, _ := item.span()
		p.lead(pos)
		l := p.cur
		print(item)
		p.finish(start(i + 1))
		p.align(l)
	}
	p.ownComments(close)
	p.runOpen = false
	p.indent--
	p.first = false
	p.startLine(close, false)
	p.cur.hoistIndent = p.indent + 1
	p.emit(close, close+1, "}", false)
}

// align adds line l, just printed, to the current alignment run when it is
// a `key = value` line.
func (p *printer) align(l *outLine) {
	if l.cell < 0 {
		p.runOpen = false
		return
	}
	if !p.runOpen {
		p.runID++
		p.runOpen = true
	}
	l.run = p.runID
	if l.multiline() {
		p.runOpen = false // a multi-line value ends the run
	}
}

func (l *outLine) multiline() bool {
	if bytes.IndexByte(l.text, '\n') >= 0 {
		return true
	}
	return slices.ContainsFunc(l.trail, func(s string) bool { return strings.Contains(s, "\n") })
}

func (p *printer) file(f *File) {
	p.first = true
	v := f.Version
	p.lead(v.Pos)
	p.keyword(v.Pos.Offset, "wf")
	p.emit(v.EndPos.Offset-len(v.Number), v.EndPos.Offset, v.Number, true)
	for _, d := range f.Decls() {
		pos, _ := d.(positioned).span()
		p.finish(pos.Offset)
		p.force = true
		p.lead(pos)
		switch d := d.(type) {
		case *Workflow:
			p.workflow(d)
		case *Server:
			p.server(d)
		}
	}
	p.finish(len(p.src))
	p.ownComments(len(p.src) + 1)
}

func (p *printer) workflow(w *Workflow) {
	p.keyword(w.Pos.Offset, "workflow")
	p.ident(w.Name)
	list(p, p.next(w.Name.EndPos.Offset), w.EndPos.Offset-1, w.Members, p.member)
}

func (p *printer) server(s *Server) {
	p.keyword(s.Pos.Offset, "mcp")
	p.ident(s.Name)
	list(p, p.next(s.Name.EndPos.Offset), s.EndPos.Offset-1, s.Attrs, p.attr)
}

func (p *printer) member(m *Member) {
	switch {
	case m.Attr != nil:
		p.attr(m.Attr)
	case m.Tool != nil:
		p.tool(m.Tool)
	case m.Flow != nil:
		p.keyword(m.Pos.Offset, "flow")
		p.block(m.Flow)
	}
}

func (p *printer) attr(a *Attr) {
	p.ident(a.Name)
	p.equals(p.next(a.Name.EndPos.Offset), true)
	p.verbatim(a.Value)
}

func (p *printer) tool(t *Tool) {
	p.keyword(t.Pos.Offset, "tool")
	p.ident(t.Name)
	list(p, p.next(t.Name.EndPos.Offset), t.EndPos.Offset-1, t.Items, p.toolItem)
}

func (p *printer) toolItem(t *ToolItem) {
	p.ident(t.Name)
	end := t.Name.EndPos.Offset
	if t.Value != nil {
		p.equals(p.next(end), true)
		p.verbatim(t.Value)
		end = t.Value.EndPos.Offset
	}
	p.nodeRest(end, t.Arg, t.Body, t.Out)
}

// nodeRest prints the argument, body and `-> $path` of a node or tool
// implementation; end is the offset just past what came before.
func (p *printer) nodeRest(end int, arg *Arg, body *NodeBody, out *Path) {
	if arg != nil {
		p.verbatim(arg)
		end = arg.EndPos.Offset
	}
	if body != nil {
		list(p, body.Pos.Offset, body.EndPos.Offset-1, body.Entries, p.entry)
		end = body.EndPos.Offset
	}
	if out != nil {
		arrow := p.next(end)
		p.emit(arrow, arrow+2, "->", true)
		p.path(out)
	}
}

func (p *printer) entry(e *Entry) {
	switch {
	case e.Handler != nil:
		h := e.Handler
		p.keyword(h.Pos.Offset, "on")
		p.ident(h.Name)
		p.block(h.Body)
	case e.Key != nil:
		p.attr(e.Key)
	}
}

func (p *printer) path(x *Path) {
	p.emit(x.Pos.Offset, x.Pos.Offset+len(x.Root), x.Root, true)
	for _, k := range x.Keys {
		if k.Index != "" {
			p.emit(k.Pos.Offset, k.Pos.Offset+1, "[", false)
			i := p.next(k.Pos.Offset + 1)
			p.emit(i, i+len(k.Index), k.Index, false)
			p.emit(k.EndPos.Offset-1, k.EndPos.Offset, "]", false)
			continue
		}
		p.emit(k.Pos.Offset, k.Pos.Offset+1, ".", false)
		name := p.next(k.Pos.Offset + 1)
		p.emit(name, name+len(k.Name), k.Name, false)
	}
}

func (p *printer) block(b *Block) {
	list(p, b.Pos.Offset, b.EndPos.Offset-1, b.Stmts, p.stmt)
}

func (p *printer) stmt(s *Stmt) {
	if l := s.Label; l != nil {
		p.emit(l.Pos.Offset, l.Pos.Offset+len(l.Text), l.Text, true)
	}
	switch {
	case s.Set != nil:
		p.set(s.Set)
	case s.If != nil:
		p.ifStmt(s.If)
	case s.Switch != nil:
		p.switchStmt(s.Switch)
	case s.For != nil:
		n := s.For
		p.keyword(n.Pos.Offset, "for")
		p.ident(n.Var)
		p.keyword(p.next(n.Var.EndPos.Offset), "in")
		p.verbatim(n.Iter)
		p.block(n.Body)
	case s.While != nil:
		n := s.While
		p.keyword(n.Pos.Offset, "while")
		p.verbatim(n.Cond)
		if n.Max != nil {
			p.keyword(n.Max.Pos.Offset, "max")
			p.emit(n.Max.EndPos.Offset-len(n.Max.Value), n.Max.EndPos.Offset, n.Max.Value, true)
		}
		p.block(n.Body)
	case s.Goto != nil:
		p.keyword(s.Goto.Pos.Offset, "goto")
		p.ident(s.Goto.Target)
	case s.Step != nil:
		n := s.Step
		p.keyword(n.Pos.Offset, "step")
		p.verbatim(n.Name)
		p.block(n.Body)
	case s.Parallel != nil:
		n := s.Parallel
		p.keyword(n.Pos.Offset, "parallel")
		list(p, p.next(n.Pos.Offset+len("parallel")), n.EndPos.Offset-1, n.Branches, p.branch)
	case s.Try != nil:
		n := s.Try
		p.keyword(n.Pos.Offset, "try")
		p.block(n.Body)
		p.keyword(p.next(n.Body.EndPos.Offset), "catch")
		if n.Var != nil {
			p.ident(n.Var)
		}
		p.block(n.Catch)
	case s.End != nil:
		p.keyword(s.End.Pos.Offset, "end")
	case s.Fail != nil:
		p.keyword(s.Fail.Pos.Offset, "fail")
		p.verbatim(s.Fail.Message)
	case s.Node != nil:
		n := s.Node
		p.ident(n.Kind)
		p.nodeRest(n.Kind.EndPos.Offset, n.Arg, n.Body, n.Out)
	default:
		// A statement this printer does not know: as written.
		pos := s.Pos
		if l := s.Label; l != nil {
			off := p.next(l.Pos.Offset + len(l.Text))
			pos = Position{Offset: off, Line: p.lineOf(off)}
		}
		p.verbatimSpan(s, pos, s.EndPos)
	}
}

func (p *printer) set(s *Set) {
	p.keyword(s.Pos.Offset, "set")
	if !s.Group {
		if len(s.Assigns) == 1 {
			p.assign(s.Assigns[0], false)
		}
		return
	}
	list(p, p.next(s.Pos.Offset+len("set")), s.EndPos.Offset-1, s.Assigns, func(a *Assign) { p.assign(a, true) })
}

func (p *printer) assign(a *Assign, align bool) {
	p.path(a.Path)
	p.equals(p.next(a.Path.EndPos.Offset), align)
	p.verbatim(a.Value)
}

func (p *printer) ifStmt(n *If) {
	p.keyword(n.Pos.Offset, "if")
	p.verbatim(n.Cond)
	p.block(n.Then)
	if n.ElseIf == nil && n.Else == nil {
		return
	}
	p.keyword(p.next(n.Then.EndPos.Offset), "else")
	if n.ElseIf != nil {
		p.ifStmt(n.ElseIf)
		return
	}
	p.block(n.Else)
}

func (p *printer) switchStmt(n *Switch) {
	p.keyword(n.Pos.Offset, "switch")
	list(p, p.next(n.Pos.Offset+len("switch")), n.EndPos.Offset-1, n.Cases, func(c *Case) {
		if c.Default {
			p.keyword(c.Pos.Offset, "default")
		} else {
			p.keyword(c.Pos.Offset, "case")
			p.verbatim(c.Cond)
		}
		p.block(c.Body)
	})
}

func (p *printer) branch(b *Branch) {
	p.keyword(b.Pos.Offset, "branch")
	p.ident(b.Name)
	p.block(b.Body)
}

// render lays the lines out: alignment padding, hoisted comments, blank
// lines and indentation.
func (p *printer) render() []byte {
	widths := map[int]int{} // run → width of its widest key
	for _, l := range p.lines {
		if l.run > 0 {
			widths[l.run] = max(widths[l.run], utf8.RuneCount(l.text[:l.cell]))
		}
	}
	codes := make([]string, len(p.lines))
	for i, l := range p.lines {
		code := string(l.text)
		if l.run > 0 {
			pad := widths[l.run] - utf8.RuneCount(l.text[:l.cell])
			code = code[:l.cell] + strings.Repeat(" ", pad) + code[l.cell:]
		}
		codes[i] = strings.Repeat(indentUnit, l.indent) + code
	}
	// Trailing comments of consecutive single-line lines of one run line up.
	commentCol := make([]int, len(p.lines))
	alignedTrail := func(i int) bool {
		l := p.lines[i]
		return l.run > 0 && len(l.trail) > 0 && !l.multiline()
	}
	for i := 0; i < len(p.lines); {
		if !alignedTrail(i) {
			i++
			continue
		}
		j, col := i, 0
		for j < len(p.lines) && alignedTrail(j) && p.lines[j].run == p.lines[i].run {
			col = max(col, utf8.RuneCountInString(codes[j]))
			j++
		}
		for k := i; k < j; k++ {
			commentCol[k] = col
		}
		i = j
	}
	var b bytes.Buffer
	for i, l := range p.lines {
		if l.blank && b.Len() > 0 {
			b.WriteByte('\n')
		}
		for _, h := range l.hoisted {
			b.WriteString(strings.Repeat(indentUnit, l.hoistIndent))
			b.WriteString(h)
			b.WriteByte('\n')
		}
		line := codes[i]
		if len(l.trail) > 0 {
			line += strings.Repeat(" ", max(0, commentCol[i]-utf8.RuneCountInString(line))) + " " + strings.Join(l.trail, " ")
		}
		b.WriteString(strings.TrimRight(line, " \t"))
		b.WriteByte('\n')
	}
	return b.Bytes()
}
