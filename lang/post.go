package lang

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/aguic/aguic/lang/diag"
)

// Name returns the label without its colon.
func (l *Label) Name() string { return strings.TrimSuffix(l.Text, ":") }

// NameSpan returns the span of the label's name, colon excluded.
func (l *Label) NameSpan(file string) diag.Span {
	end := l.Pos
	end.Advance(l.Name())
	return SpanOf(file, l.Pos, end)
}

// SpanOf converts a start and an end position into a span of file.
func SpanOf(file string, pos, end Position) diag.Span {
	return diag.Span{
		File:  file,
		Start: diag.Pos{Offset: pos.Offset, Line: pos.Line, Col: pos.Column},
		End:   diag.Pos{Offset: end.Offset, Line: end.Line, Col: end.Column},
	}
}

// Inspect walks the tree under node depth first, calling f for every AST
// node (pointer to an AST struct) before its children; when f returns
// false the children are skipped.
func Inspect(node any, f func(node any) bool) {
	inspect(reflect.ValueOf(node), f)
}

var positionType = reflect.TypeFor[Position]()

// fieldCache maps an AST struct type to the indexes of its fields that may
// hold nodes: exported pointers and slices.
var fieldCache sync.Map

func childFields(t reflect.Type) []int {
	if v, ok := fieldCache.Load(t); ok {
		return v.([]int)
	}
	var out []int
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && f.Type != positionType && (f.Type.Kind() == reflect.Pointer || f.Type.Kind() == reflect.Slice) {
			out = append(out, i)
		}
	}
	fieldCache.Store(t, out)
	return out
}

func inspect(v reflect.Value, f func(any) bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || v.Elem().Kind() != reflect.Struct {
			return
		}
		if !f(v.Interface()) {
			return
		}
		s := v.Elem()
		for _, i := range childFields(s.Type()) {
			inspect(s.Field(i), f)
		}
	case reflect.Slice:
		for i := range v.Len() {
			inspect(v.Index(i), f)
		}
	}
}

// postParse checks what the grammar cannot express: escapes, the language version, keywords used as names; and splits the
// `max N` of while loops off their conditions.
type postParse struct {
	file  *File
	semis []int // offsets of every ";" token, ascending
	diags diag.List
}

func (p *postParse) errorf(pos, end Position, code, format string, args ...any) {
	p.diags.Errorf(SpanOf(p.file.Name, pos, end), code, format, args...)
}

func (p *postParse) run() {
	f := p.file
	if v := f.Version; v != nil && v.Number != "1" {
		p.errorf(v.Pos, v.EndPos, CodeVersion, "unsupported language version %s (this aguic reads wf %d)", v.Number, LanguageVersion)
	}
	if decls := f.Decls(); f.Version != nil && len(decls) > 0 {
		pos, keyword := declStart(decls[0])
		if !p.separated(f.Version.EndPos, pos) {
			p.errorf(pos, pos, CodeSyntax, "expected newline after the wf line, found %q", keyword)
		}
	}
	Inspect(f, func(n any) bool {
		switch n := n.(type) {
		case *StrPart:
			p.checkStrPart(n)
		case *While:
			p.splitMax(n)
		case *Workflow:
			p.checkName(n.Name, "a workflow")
			checkSeparated(p, n.Members)
		case *Server:
			p.checkName(n.Name, "an MCP server")
			checkSeparated(p, n.Attrs)
		case *Tool:
			p.checkName(n.Name, "a tool")
			checkSeparated(p, n.Items)
		case *Label:
			if IsKeyword(n.Name()) {
				p.errorf(n.Pos, n.EndPos, CodeReserved, "%q is a keyword and cannot name a label", n.Name())
			}
		case *For:
			p.checkName(n.Var, "a loop variable")
		case *Try:
			p.checkName(n.Var, "an error variable")
		case *Branch:
			p.checkName(n.Name, "a branch")
		case *Block:
			checkSeparated(p, n.Stmts)
		case *Member:
			// Members are checked through their workflow.
		case *Set:
			if n.Group {
				checkSeparated(p, n.Assigns)
			}
		case *Switch:
			checkSeparated(p, n.Cases)
		case *Parallel:
			checkSeparated(p, n.Branches)
		case *NodeBody:
			checkSeparated(p, n.Entries)
		case *Node:
			if IsKeyword(n.Kind.Name) {
				p.errorf(n.Kind.Pos, n.Kind.EndPos, CodeSyntax, "incomplete %s statement", n.Kind.Name)
			}
		}
		return true
	})
}

// declStart returns where a top-level declaration starts and its keyword.
func declStart(d any) (Position, string) {
	if s, ok := d.(*Server); ok {
		return s.Pos, "mcp"
	}
	return d.(*Workflow).Pos, "workflow"
}

func (p *postParse) checkName(id *Ident, what string) {
	if id != nil && IsKeyword(id.Name) {
		p.errorf(id.Pos, id.EndPos, CodeReserved, "%q is a keyword and cannot name %s", id.Name, what)
	}
}

func (p *postParse) checkStrPart(s *StrPart) {
	switch {
	case s.Escape != "":
		if _, ok := unescape(s.Escape); !ok {
			p.errorf(s.Pos, s.EndPos, CodeSyntax, "unknown escape sequence %s", s.Escape)
		}
	case s.Interp != nil && len(s.Interp.Tokens) == 0:
		p.errorf(s.Pos, s.EndPos, CodeSyntax, "empty interpolation: write an expression between << and >>")
	}
}

// splitMax moves a trailing `max N` of a while condition into While.Max.
func (p *postParse) splitMax(w *While) {
	parts := w.Cond.Parts
	n := len(parts)
	if n < 2 || parts[n-2].Token != "max" || !isNumber(parts[n-1].Token) {
		return
	}
	w.Max = &Max{Pos: parts[n-2].Pos, EndPos: parts[n-1].EndPos, Value: parts[n-1].Token}
	if n == 2 {
		p.errorf(w.Cond.Pos, w.Cond.EndPos, CodeSyntax, "expected a condition after while, found max")
		return
	}
	w.Cond.Parts = parts[:n-2]
	w.Cond.EndPos = parts[n-3].EndPos
}

func isNumber(s string) bool {
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// unescape decodes one escape sequence of a string literal.
func unescape(esc string) (string, bool) {
	if esc == `\<<` {
		return "<<", true
	}
	switch esc {
	case `\"`:
		return `"`, true
	case `\'`:
		return `'`, true
	case "\\\n":
		return "", true
	}
	s, err := strconvUnquote(esc)
	return s, err == nil
}

// positioned is any AST node.
type positioned interface {
	span() (Position, Position)
}

// checkSeparated reports statements or entries that follow each other on
// one line without a semicolon between them.
func checkSeparated[T positioned](p *postParse, list []T) {
	for i := 1; i < len(list); i++ {
		if s, ok := any(list[i]).(*Stmt); ok && s.Bad {
			continue // its syntax error says more
		}
		_, prevEnd := list[i-1].span()
		next, nextEnd := list[i].span()
		if !p.separated(prevEnd, next) {
			p.errorf(next, nextEnd, CodeSyntax, "expected newline or \";\" before this, found it on the same line")
		}
	}
}

// separated reports whether a newline or a semicolon lies between end and next.
func (p *postParse) separated(end, next Position) bool {
	if next.Line > end.Line {
		return true
	}
	i, _ := slices.BinarySearch(p.semis, end.Offset)
	return i < len(p.semis) && p.semis[i] < next.Offset
}
