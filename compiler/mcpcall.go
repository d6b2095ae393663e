package compiler

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/mcplock"
	"github.com/aguic/aguic/vm"
	"github.com/expr-lang/expr/ast"
)

// callsServer reports whether nodes of the kind call a tool of an MCP
// server: the word names the server, the argument the tool.
func callsServer(spec *vm.KindSpec) bool {
	return spec != nil && spec.Word != nil && spec.Word.Servers && spec.Arg != nil && spec.Arg.Type == vm.TypeServerTool
}

// serverWord checks the word of a node whose word names an MCP server and
// returns the index of the argument's first part.
func (l *lowerer) serverWord(n *lang.Node, out *vm.Node, spec *vm.KindSpec, kindSpan diag.Span) int {
	c := l.c
	word := firstWord(n.Arg)
	if word == "" {
		c.diags.Errorf(kindSpan, CodeWord, "%s needs a %s: the name of an mcp server the files declare, such as `%s everything \"echo\"`", spec.Name, spec.Word.Name, spec.Name)
		return 0
	}
	out.Word = word
	if c.servers[word] == nil && !c.parseFailed {
		p := n.Arg.Parts[0]
		hint := suggest(word, c.serverNames)
		if len(c.serverNames) == 0 {
			hint = fmt.Sprintf(": declare it beside the workflows, `mcp %s { command = \"…\" }`", word)
		}
		c.diags.Errorf(c.span(p.Pos, p.EndPos), CodeUnknownServer, "unknown mcp server %q%s", word, hint)
	}
	return 1
}

// serverToolArg compiles the argument of a node that calls a server's
// tool: the tool's name, a string literal the server must list (when it
// is locked) and allow.
func (l *lowerer) serverToolArg(s syntax, spec *vm.KindSpec, out *vm.Node, sc *scope) *vm.Value {
	c := l.c
	span := c.span(s.pos, s.end)
	name, ok := "", false
	if s.single != nil && len(s.tokens) == 1 {
		name, ok = s.single.Literal()
	}
	if !ok || name == "" {
		c.diags.Errorf(span, CodeWrongType, "%s's %s must be a string literal without <<…>>, such as \"echo\"", spec.Name, spec.Arg.Name)
		return nil
	}
	v := c.value(s, vm.TypeString, nil, sc.env, spec.Name+"'s "+spec.Arg.Name)
	srv := c.servers[out.Word]
	if srv == nil || !c.checkLockedTool(srv, name, span) {
		return v
	}
	if !srv.Allows(name) {
		c.diags.Errorf(span, CodeToolNotAllowed, "tool %q of mcp server %q is left out by the server's tools list%s", name, srv.Name, listHint(srv.Tools, name, "it allows"))
	}
	return v
}

// listHint suggests the closest of names to name, or lists them after
// intro.
func listHint(names []string, name, intro string) string {
	if s := suggest(name, names); s != "" {
		return s
	}
	if len(names) == 0 {
		return fmt.Sprintf(" (%s none)", intro)
	}
	return fmt.Sprintf(" (%s %s)", intro, andList(quoteAll(names)))
}

// calledTool returns the server a node that calls a server's tool names,
// and that tool as the server's lock lists it; nil for what is unknown.
func (c *fileCompiler) calledTool(n *vm.Node) (*vm.Server, *mcplock.Tool) {
	if n == nil || !callsServer(n.Spec) {
		return nil, nil
	}
	srv := c.servers[n.Word]
	if srv == nil || n.Arg == nil || n.Arg.Template == nil || len(n.Arg.Template.Parts) != 1 {
		return srv, nil
	}
	return srv, srv.Locked.Tool(n.Arg.Template.Parts[0].Text)
}

// checkCallArgs checks the arguments of a node that calls a locked
// server's tool against the tool's input schema: v is the arguments key,
// compiled from src, or nil when the node has none, which passes no
// arguments outside a tool (inside one, it passes the model's).
func (l *lowerer) checkCallArgs(n *vm.Node, v *vm.Value, src *exprSource, sc *scope) {
	c := l.c
	_, tool := c.calledTool(n)
	if tool == nil {
		return
	}
	what := fmt.Sprintf("%s %s %q", n.Kind, n.Word, tool.Name)
	if v == nil {
		if sc.within("tool") != "" {
			return
		}
		if missing := requiredArgs(tool.InputSchema, nil); len(missing) > 0 {
			c.diags.Errorf(n.Arg.Span, CodeToolArgs, "%s needs %s %s: pass %s with args = {…}", what, plural(len(missing), "the argument", "the arguments"), andList(quoteAll(missing)), plural(len(missing), "it", "them"))
		}
		return
	}
	if v.Expr == nil || src == nil {
		return
	}
	if m, ok := v.Expr.Program.Node().(*ast.MapNode); ok {
		c.checkArgsObject(src, m, tool.InputSchema, v.Span, what, "")
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// requiredArgs returns the properties a JSON Schema requires that given
// does not hold.
func requiredArgs(schema map[string]any, given []string) []string {
	req, _ := schema["required"].([]any)
	var out []string
	for _, r := range req {
		if name, ok := r.(string); ok && !slices.Contains(given, name) {
			out = append(out, name)
		}
	}
	return out
}

// checkArgsObject checks a map literal against an object's JSON Schema:
// the properties it requires, those it does not know when it allows no
// others, and the JSON type of every literal value. prefix names the
// object inside the arguments ("" for the arguments themselves, "a." for
// the object in a).
func (c *fileCompiler) checkArgsObject(src *exprSource, m *ast.MapNode, schema map[string]any, span diag.Span, what, prefix string) {
	props := schemaMap(schema, "properties")
	propNames := slices.Sorted(maps.Keys(props))
	names, known := mapKeys(m)
	if known {
		if missing := requiredArgs(schema, names); len(missing) > 0 {
			c.diags.Errorf(span, CodeToolArgs, "%s: missing required %s %s", what, plural(len(missing), "argument", "arguments"), andList(quoteAll(prefixed(prefix, missing))))
		}
	}
	closed := schema["additionalProperties"] == false
	for _, p := range m.Pairs {
		pair := p.(*ast.PairNode)
		key, ok := pair.Key.(*ast.StringNode)
		if !ok {
			continue
		}
		ps, declared := props[key.Value]
		if !declared {
			if closed {
				hint := fmt.Sprintf(" (it takes %s)", andList(quoteAll(prefixed(prefix, propNames))))
				if len(key.Value) > 2 { // a short name is as close to any other
					hint = listHint(prefixed(prefix, propNames), prefix+key.Value, "it takes")
				}
				c.diags.Errorf(c.nodeSpan(src, key), CodeToolArgs, "%s has no argument %q%s", what, prefix+key.Value, hint)
			}
			continue
		}
		pschema, _ := ps.(map[string]any)
		found := jsonType(pair.Value)
		if want := schemaTypes(pschema); found != "" && len(want) > 0 && !typeAllowed(want, found, pair.Value) {
			c.diags.Errorf(c.nodeSpan(src, pair.Value), CodeToolArgs, "%s: argument %q expects %s, found %s", what, prefix+key.Value, orList(jsonArticles(want)), jsonArticle(found))
			continue
		}
		if sub, ok := pair.Value.(*ast.MapNode); ok && pschema != nil {
			c.checkArgsObject(src, sub, pschema, c.nodeSpan(src, sub), what, prefix+key.Value+".")
		}
	}
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// nodeSpan is the span of a node of an expression compiled from src.
func (c *fileCompiler) nodeSpan(src *exprSource, n ast.Node) diag.Span {
	return c.exprSpan(src, src.b.String(), n.Location())
}

// jsonType is the JSON type of a literal: "string", "integer", "number",
// "boolean", "null", "array" or "object"; "" for a value only the run
// knows.
func jsonType(n ast.Node) string {
	switch x := n.(type) {
	case *ast.StringNode:
		return "string"
	case *ast.IntegerNode:
		return "integer"
	case *ast.FloatNode:
		return "number"
	case *ast.BoolNode:
		return "boolean"
	case *ast.NilNode:
		return "null"
	case *ast.ArrayNode:
		return "array"
	case *ast.MapNode:
		return "object"
	case *ast.ConstantNode: // a folded list of literals
		if _, ok := x.Value.([]any); ok {
			return "array"
		}
	}
	return ""
}

// schemaTypes returns the JSON types a schema's type allows: none when it
// says nothing.
func schemaTypes(schema map[string]any) []string {
	switch t := schema["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// typeAllowed reports whether a literal of JSON type found, node n, is one
// of the types want: an integer is a number, and so is a whole number
// written with a decimal point an integer.
func typeAllowed(want []string, found string, n ast.Node) bool {
	for _, w := range want {
		switch {
		case w == found, w == "number" && found == "integer":
			return true
		case w == "integer" && found == "number":
			if f, ok := n.(*ast.FloatNode); ok && f.Value == float64(int64(f.Value)) {
				return true
			}
		}
	}
	return false
}

func jsonArticle(t string) string {
	switch t {
	case "null":
		return "null"
	case "integer", "array", "object":
		return "an " + t
	}
	return "a " + t
}

func jsonArticles(types []string) []string {
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = jsonArticle(t)
	}
	return out
}

// offeredBy returns the tools a server offers a model that lists it: the
// locked ones its tools list allows, or without a lock those it lists;
// nil when only the run knows.
func offeredBy(s *vm.Server) []string {
	switch {
	case s.Locked != nil:
		return slices.DeleteFunc(s.Locked.ToolNames(), func(t string) bool { return !s.Allows(t) })
	case s.Tools != nil:
		return slices.Sorted(slices.Values(s.Tools))
	}
	return nil
}

// checkOffered reports a tools value that offers two tools with one name:
// a workflow's tool and a server's, or two servers'.
func (c *fileCompiler) checkOffered(v *vm.Value) {
	by := map[string]string{} // tool name → who offers it
	for _, t := range v.Tools {
		by[t] = fmt.Sprintf("tool %q of this workflow", t)
	}
	for _, name := range v.Servers {
		srv := c.servers[name]
		if srv == nil {
			continue
		}
		for _, t := range offeredBy(srv) {
			if first, dup := by[t]; dup {
				c.diags.Errorf(v.Span, CodeToolClash, "two tools named %q would be offered: %s and mcp server %q's; leave one out with the server's tools list", t, first, name)
				continue
			}
			by[t] = fmt.Sprintf("mcp server %q's", name)
		}
	}
}

// serverOffers returns the locked tools the listed servers offer, by
// name, and whether that is all they offer (false when one is unlocked).
func (c *fileCompiler) serverOffers(servers []string) (map[string]*mcplock.Tool, bool) {
	out := map[string]*mcplock.Tool{}
	complete := true
	for _, name := range servers {
		srv := c.servers[name]
		if srv == nil || srv.Locked == nil {
			complete = false
			continue
		}
		for _, t := range offeredBy(srv) {
			out[t] = srv.Locked.Tool(t)
		}
	}
	return out, complete
}

// toolFromLock gives a tool implemented by a locked server's tool what
// its block leaves out: the description and the parameters of the
// server's tool.
func (c *fileCompiler) toolFromLock(tool *vm.Tool, described, parameterized bool) {
	_, lt := c.calledTool(tool.Impl)
	if lt == nil {
		return
	}
	if !described {
		tool.Description = lt.Description
	}
	if !parameterized && lt.InputSchema != nil {
		tool.Parameters = c.constValue(lt.InputSchema, tool.Impl.Arg.Span)
	}
}

// constValue compiles a JSON value, such as a locked input schema, into a
// value that gives it; span is where the file mentions it.
func (c *fileCompiler) constValue(v any, span diag.Span) *vm.Value {
	text := exprLiteral(v)
	src := &exprSource{}
	src.synthetic(text, span.Start.Offset)
	x, _ := c.compileExpr(src, env{constant: true}, false)
	return &vm.Value{Span: span, Source: text, Expr: x}
}

// exprLiteral writes a JSON value as an expr literal: maps with quoted
// keys in sorted order, lists, strings, numbers, true, false and nil.
func exprLiteral(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return strconv.Quote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = exprLiteral(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strconv.Quote(k) + ": " + exprLiteral(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return "nil"
}

// schemaMap returns the object a JSON Schema holds at key, or nil.
func schemaMap(schema map[string]any, key string) map[string]any {
	m, _ := schema[key].(map[string]any)
	return m
}
