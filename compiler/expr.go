package compiler

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/vm"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/file"
	exprlexer "github.com/expr-lang/expr/parser/lexer"
	"github.com/expr-lang/expr/types"
)

// textFunc is the function desugared templates call to stringify a value.
const textFunc = "text"

// exprSource is an expression as handed to expr, with a map back to the
// .wf file so errors point at the exact column.
type exprSource struct {
	b    strings.Builder
	segs []segment
}

// segment is a run of exprSource that came from one place of the file.
type segment struct {
	out      int  // byte offset in the source where the run starts
	file     int  // byte offset in the .wf file it maps to
	verbatim bool // bytes map one to one; otherwise all map to file
}

func (s *exprSource) verbatim(text string, fileOff int) {
	s.segs = append(s.segs, segment{out: s.b.Len(), file: fileOff, verbatim: true})
	s.b.WriteString(text)
}

func (s *exprSource) synthetic(text string, fileOff int) {
	s.segs = append(s.segs, segment{out: s.b.Len(), file: fileOff})
	s.b.WriteString(text)
}

// fileOffset maps a byte offset of the source to a byte offset of the file.
func (s *exprSource) fileOffset(out int) int {
	i, found := slices.BinarySearchFunc(s.segs, out, func(g segment, out int) int { return g.out - out })
	if !found {
		i--
	}
	if i < 0 {
		return s.segs[0].file
	}
	g := s.segs[i]
	if g.verbatim {
		return g.file + out - g.out
	}
	return g.file
}

// env is what an expression may name besides $roots and builtins.
type env struct {
	locals []string // loop variables and catch bindings in scope
	tools  []string // backend tool names, for a tools key
	args   bool     // inside a tool: $args holds the arguments
	// In a tool's result: the variable that holds the result of the tool's
	// node (ToolSpec.Var), and those of the other tool kinds, each mapped
	// to its kind, which are errors there.
	bound   string
	unbound map[string]string
	// servers are the MCP servers' names, for a tools key; constant says
	// that the value is an MCP server's, which may not read the context.
	servers  []string
	constant bool
}

func (e env) with(local string) env {
	e.locals = append(slices.Clip(e.locals), local)
	return e
}

// syntax is the shape of a written value, whichever grammar node holds it.
type syntax struct {
	pos, end lang.Position
	single   *lang.String   // the value is exactly one string literal
	strings  []*lang.String // every string literal inside, in order
	tokens   []string       // the top-level tokens; "" for strings and groups
}

// makeSyntax describes the n parts of a value; part returns the token or
// the string literal of part i, and strings every literal inside.
func makeSyntax(pos, end lang.Position, n int, part func(i int) (string, *lang.String), strings []*lang.String) syntax {
	s := syntax{pos: pos, end: end, strings: strings}
	for i := range n {
		token, _ := part(i)
		s.tokens = append(s.tokens, token)
	}
	if _, str := part(0); n == 1 && str != nil {
		s.single = str
	}
	return s
}

func exprSyntax(e *lang.Expr) syntax {
	return makeSyntax(e.Pos, e.EndPos, len(e.Parts), func(i int) (string, *lang.String) { return e.Parts[i].Token, e.Parts[i].Str }, collectStrings(e))
}

func condSyntax(c *lang.Cond) syntax {
	return makeSyntax(c.Pos, c.EndPos, len(c.Parts), func(i int) (string, *lang.String) { return c.Parts[i].Token, c.Parts[i].Str }, collectStrings(c))
}

// argRest is the syntax of a's parts from index i on.
func argRest(a *lang.Arg, i int) syntax {
	parts := a.Parts[i:]
	return makeSyntax(parts[0].Pos, a.EndPos, len(parts), func(i int) (string, *lang.String) { return parts[i].Token, parts[i].Str }, collectStrings(parts))
}

func collectStrings(n any) []*lang.String {
	var out []*lang.String
	lang.Inspect(n, func(n any) bool {
		if s, ok := n.(*lang.String); ok {
			out = append(out, s)
			return false
		}
		return true
	})
	return out
}

// plain reports whether expr reads the string literal as written.
func plain(s *lang.String) bool {
	if s.Heredoc {
		return false
	}
	for _, p := range s.Parts {
		if p.Interp != nil || p.Escape == `\<<` || p.Escape == "\\\n" || p.Escape == `\'` {
			return false
		}
	}
	return true
}

// source builds the expr text of a value, desugaring string literals with
// interpolations into concatenations of text() calls.
func (c *fileCompiler) source(s syntax) *exprSource {
	out := &exprSource{}
	cursor := s.pos.Offset
	for _, str := range s.strings {
		if plain(str) {
			continue
		}
		out.verbatim(string(c.src[cursor:str.Pos.Offset]), cursor)
		c.desugar(out, str)
		cursor = str.EndPos.Offset
	}
	out.verbatim(string(c.src[cursor:s.end.Offset]), cursor)
	return out
}

func (c *fileCompiler) desugar(out *exprSource, s *lang.String) {
	parts := s.Segments()
	if len(parts) == 1 && parts[0].Interp == nil {
		out.synthetic(strconv.Quote(parts[0].Text), s.Pos.Offset)
		return
	}
	out.synthetic("(", s.Pos.Offset)
	for i, p := range parts {
		if i > 0 {
			out.synthetic(" + ", s.Pos.Offset)
		}
		if p.Interp == nil {
			out.synthetic(strconv.Quote(p.Text), s.Pos.Offset)
			continue
		}
		wrap := len(parts) > 1
		if wrap {
			out.synthetic(textFunc+"(", p.Interp.Pos.Offset)
		}
		out.verbatim(string(c.src[p.Interp.Pos.Offset:p.Interp.EndPos.Offset]), p.Interp.Pos.Offset)
		if wrap {
			out.synthetic(")", p.Interp.EndPos.Offset)
		}
	}
	out.synthetic(")", s.EndPos.Offset)
}

// refs collects what an expression names, for checks expr cannot make.
type refs struct {
	idents  []*ast.IdentifierNode
	callees map[*ast.IdentifierNode]bool
	lets    []string
	members []*ast.MemberNode // field reads, for the shapes of the builtin roots
}

func (r *refs) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		r.idents = append(r.idents, n)
	case *ast.MemberNode:
		r.members = append(r.members, n)
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok {
			r.callees[id] = true
		}
	case *ast.VariableDeclaratorNode:
		r.lets = append(r.lets, n.Name)
	}
}

// nilSafe makes every member access behave like `?.`: a missing path
// reads as nil instead of failing, as the language promises.
type nilSafe struct{}

func (nilSafe) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok || m.Method {
		return
	}
	m.Optional = true
	c := &ast.ChainNode{Node: m}
	c.SetLocation(m.Location())
	*node = c
}

// compileExpr compiles a value's expression, or a condition's (asBool),
// which must be boolean when its type is known. It returns nil after
// reporting the error when the expression does not compile.
func (c *fileCompiler) compileExpr(src *exprSource, e env, asBool bool) (*vm.Expr, reflect.Type) {
	text := src.b.String()
	r := &refs{callees: map[*ast.IdentifierNode]bool{}}
	types := types.Map{types.Extra: types.Any}
	opts := append(slices.Clip(c.baseOpts), expr.Env(types), expr.Patch(r), expr.Patch(nilSafe{}))
	program, err := buildExpr(text, opts, asBool)
	if bad := c.checkRefs(src, text, r, e); bad {
		return nil, nil
	}
	c.checkMembers(src, text, r.members)
	if err != nil {
		c.exprError(src, text, err)
		return nil, nil
	}
	return &vm.Expr{Source: text, Program: program}, program.Node().Type()
}

// checkRefs reports unknown names and functions, and records $root reads.
func (c *fileCompiler) checkRefs(src *exprSource, text string, r *refs, e env) (bad bool) {
	for _, id := range r.idents {
		name := id.Value
		span := c.exprSpan(src, text, id.Location())
		switch {
		case name == "$env":
			c.diags.Errorf(span, lang.CodeReserved, "$env is reserved: it names the whole expression environment; use another root")
			bad = true
		case strings.HasPrefix(name, "$") && e.constant:
			c.diags.Errorf(span, CodeServerContext, "an mcp server's values are evaluated when aguic connects to it, before any run: they cannot read %s", name)
			bad = true
		case strings.HasPrefix(name, "$"):
			root := name[1:]
			if root == "args" {
				if !e.args {
					c.diags.Errorf(span, CodeUnknownName, "$args holds a tool's arguments and exists only inside a tool")
					bad = true
				}
				continue
			}
			if root == e.bound {
				continue
			}
			if kind, ok := e.unbound[root]; ok {
				c.diags.Errorf(span, CodeUnknownName, "$%s holds the result of a tool's %s node and exists only in the result of a tool that has one", root, kind)
				bad = true
				continue
			}
			c.read(root, span)
		case r.callees[id]:
			if !c.funcs[name] {
				c.diags.Errorf(span, CodeUnknownFunc, "unknown function %q%s", name, suggest(name, c.funcNames))
				bad = true
			}
		case slices.Contains(e.tools, name) && slices.Contains(e.servers, name):
			c.diags.Errorf(span, CodeToolClash, "%q names both a tool of this workflow and an mcp server: rename one of them", name)
			bad = true
		case slices.Contains(e.locals, name), slices.Contains(e.tools, name), slices.Contains(e.servers, name), slices.Contains(r.lets, name):
		default:
			cands := slices.Concat(e.locals, e.tools, e.servers)
			hint := suggest(name, cands)
			if hint == "" && !e.constant && slices.Contains(c.rootNames(), "$"+name) {
				hint = fmt.Sprintf(" (did you mean %q?)", "$"+name)
			}
			what := "name"
			if len(e.tools) > 0 || len(e.servers) > 0 {
				what = "tool"
			}
			c.diags.Errorf(span, CodeUnknownName, "unknown %s %q%s", what, name, hint)
			bad = true
		}
	}
	return bad
}

// exprSpan converts an expr location into a span of the .wf file.
func (c *fileCompiler) exprSpan(src *exprSource, text string, loc file.Location) diag.Span {
	from := runeToByte(text, loc.From)
	to := runeToByte(text, max(loc.To, loc.From+1))
	start := src.fileOffset(from)
	end := src.fileOffset(to)
	if end <= start {
		end = start + 1
	}
	return c.file.Span(start, end)
}

func runeToByte(s string, runes int) int {
	i := 0
	for n := 0; n < runes && i < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// exprError reports an expression that did not compile at its place in
// the .wf file. The code comes from the phase that failed and what it
// found (see buildExpr); the place from the error's location.
func (c *fileCompiler) exprError(src *exprSource, text string, err error) {
	whole := c.file.Span(src.segs[0].file, src.fileOffset(len(text)))
	var (
		syn     *exprSyntaxError
		check   *exprCheckError
		notBool *notBoolError
	)
	switch {
	case errors.As(err, &notBool):
		c.diags.Errorf(whole, CodeNotBool, "%s", notBool.Error())
	case errors.As(err, &check):
		code := CodeExpr
		if check.call {
			code = CodeBadCall
		}
		// Some of expr's messages end with a space.
		c.diags.Errorf(c.exprSpan(src, text, check.err.Location), code, "%s", strings.TrimSpace(check.err.Message))
	case errors.As(err, &syn):
		c.syntaxError(src, text, syn.err)
	default:
		c.diags.Errorf(whole, CodeExpr, "%s", err)
	}
}

// syntaxError reports an expression expr's parser rejected.
func (c *fileCompiler) syntaxError(src *exprSource, text string, err *file.Error) {
	span := c.exprSpan(src, text, err.Location)
	tokens := exprTokens(text)
	t, msg, rejected := rejectedToken(tokens, err)
	switch {
	case rejected && t.Kind == exprlexer.EOF:
		end := src.fileOffset(len(text))
		c.diags.Errorf(c.file.Span(end, end+1), CodeExpr, "incomplete expression")
	case rejected && t.Kind == exprlexer.Identifier && (lang.StartsStatement(t.Value) || slices.Contains(c.reg.KindNames(), t.Value)):
		// `say "a" say "b"`: a second statement on the line ran into the
		// first one's argument.
		c.diags.Errorf(span, lang.CodeSyntax, "expected newline or \";\" before %q", t.Value)
	case rejected:
		c.diags.Errorf(span, CodeExpr, "%s", msg)
	case closesCall(tokens, err):
		c.diags.Errorf(span, CodeBadCall, "%s", err.Message)
	default:
		c.diags.Errorf(span, CodeExpr, "%s", err.Message)
	}
}

// builtinNames lists expr's own builtin functions.
func builtinNames() []string {
	names := make([]string, 0, len(builtin.Builtins))
	for _, b := range builtin.Builtins {
		names = append(names, b.Name)
	}
	return names
}
