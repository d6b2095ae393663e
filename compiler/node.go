package compiler

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/vm"
	"github.com/expr-lang/expr/ast"
)

// node checks a node statement against its kind's declaration and lowers it.
func (l *lowerer) node(n *lang.Node, id, labelName string, sc *scope, next string) *vm.Node {
	c := l.c
	out := &vm.Node{ID: id, Kind: n.Kind.Name, Label: labelName, Span: c.span(n.Pos, n.EndPos), Keys: map[string]*vm.Value{}}
	l.add(out, sc)
	kindSpan := c.span(n.Kind.Pos, n.Kind.EndPos)
	argStart := 0 // index of the first Arg part that is the argument

	spec := c.reg.Kind(n.Kind.Name)
	if modes := c.reg.Modes(n.Kind.Name); len(modes) > 0 {
		word := firstWord(n.Arg)
		switch {
		case word == "":
			c.diags.Errorf(kindSpan, CodeWord, "%s needs a mode: %s", n.Kind.Name, orList(modes))
		case !slices.Contains(modes, word):
			p := n.Arg.Parts[0]
			c.diags.Errorf(c.span(p.Pos, p.EndPos), CodeWord, "unknown %s mode %q%s", n.Kind.Name, word, suggest(word, modes))
		default:
			spec = c.reg.Kind(n.Kind.Name + " " + word)
			out.Kind = spec.Name
			argStart = 1
		}
		if spec == nil {
			l.unknownKind(n, out, sc, next)
			return out
		}
	}
	if spec == nil {
		c.diags.Errorf(kindSpan, CodeUnknownKind, "unknown node kind %q%s", n.Kind.Name, suggest(n.Kind.Name, c.reg.KindNames()))
		l.unknownKind(n, out, sc, next)
		return out
	}
	out.Spec = spec

	switch {
	case spec.Word != nil && spec.Word.Servers:
		argStart = l.serverWord(n, out, spec, kindSpan)
	case spec.Word != nil:
		word := firstWord(n.Arg)
		switch {
		case word == "":
			c.diags.Errorf(kindSpan, CodeWord, "%s needs a %s: %s", spec.Name, spec.Word.Name, orList(spec.Word.Values))
		case !slices.Contains(spec.Word.Values, word):
			p := n.Arg.Parts[0]
			hint := suggest(word, spec.Word.Values)
			if up := strings.ToUpper(word); slices.Contains(spec.Word.Values, up) {
				hint = fmt.Sprintf(" (did you mean %q?)", up)
			}
			c.diags.Errorf(c.span(p.Pos, p.EndPos), CodeWord, "unknown %s %s %q%s", spec.Name, spec.Word.Name, word, hint)
			argStart = 1
		default:
			out.Word = word
			argStart = 1
		}
	}

	hasArg := n.Arg != nil && len(n.Arg.Parts) > argStart
	switch {
	case spec.Arg == nil && hasArg:
		p := n.Arg.Parts[argStart]
		c.diags.Errorf(c.span(p.Pos, n.Arg.EndPos), CodeArg, "%s takes no argument", spec.Name)
	case spec.Arg != nil && spec.Arg.Required && !hasArg && n.Body != nil && len(n.Body.Entries) == 0 && n.Body.Pos.Line == n.Body.EndPos.Line:
		// `output {}`: an empty pair of braces where an argument is needed
		// is the empty map, not an empty body.
		src := &exprSource{}
		src.synthetic("{}", n.Body.Pos.Offset)
		x, _ := c.compileExpr(src, sc.env, false)
		out.Arg = &vm.Value{Span: c.span(n.Body.Pos, n.Body.EndPos), Source: "{}", Expr: x}
	case spec.Arg != nil && spec.Arg.Required && !hasArg:
		c.diags.Errorf(kindSpan, CodeArg, "%s needs %s argument", spec.Name, withArticle(spec.Arg.Name))
	case spec.Arg != nil && hasArg:
		out.Arg = l.arg(n.Arg, argStart, spec, out, sc)
	}

	misplaced := !l.wfConversation() && spec.Convo
	if misplaced && !l.c.convoUnsure {
		c.diags.Errorf(kindSpan, CodeConversation, "%s is only allowed in a conversation workflow (set conversation = true)", spec.Name)
	}

	keys := map[string]diag.Span{} // key → where it is first set
	has := func(key string) bool { _, ok := keys[key]; return ok }
	// The keys that misspelt keys stand for: a key reported unknown is not
	// also reported missing, nor its absence acted upon.
	meant := map[string]bool{}
	if n.Body != nil {
		for _, e := range n.Body.Entries {
			if e.Key == nil {
				continue
			}
			name := e.Key.Name.Name
			nameSpan := c.span(e.Key.Name.Pos, e.Key.Name.EndPos)
			ks := spec.Key(name)
			switch {
			case ks == nil:
				names := keyNames(spec)
				c.diags.Errorf(nameSpan, CodeUnknownKey, "unknown key %q for %s%s", name, spec.Name, suggest(name, names))
				if m := spec.Key(closest(name, names)); m != nil && !has(m.Name) {
					meant[m.Name] = true
					if m.Writes && m.Type == vm.TypePath {
						l.wrote(c.quietPath(e.Key.Value), sc)
					}
				}
				continue
			case has(name):
				c.diags.Add(diag.Errorf(nameSpan, CodeDuplicate, "key %q is already set", name).WithRelated(keys[name], firstSet))
				continue
			}
			keys[name] = nameSpan
			out.Keys[name] = l.key(e.Key, ks, out, sc)
		}
	}
	l.checkPredictions(out, spec, meant)
	for _, ks := range spec.Keys {
		if has(ks.Name) || meant[ks.Name] {
			continue
		}
		if ks.Required {
			c.diags.Errorf(kindSpan, CodeMissingKey, "%s needs key %q", spec.Name, ks.Name)
		}
		if ks.Type == vm.TypeArguments {
			l.checkCallArgs(out, nil, nil, sc)
		}
		if ks.Writes && ks.Path != "" && persists(spec, out) {
			root, rest, _ := strings.Cut(strings.TrimPrefix(ks.Path, "$"), ".")
			p := &vm.Path{Root: root, Span: kindSpan}
			for _, k := range strings.Split(rest, ".") {
				if k != "" {
					p.Keys = append(p.Keys, vm.PathKey{Name: k})
				}
			}
			l.wrote(p, sc)
		}
	}
	l.lowerHandlers(n, out, sc, next, spec)

	if n.Out != nil {
		if spec.Result == "" {
			c.diags.Errorf(c.span(n.Out.Pos, n.Out.EndPos), CodeNoResult, "%s has no result to store in %s", spec.Name, "$"+strings.TrimPrefix(n.Out.Root, "$"))
		} else {
			out.Out = c.pathOf(n.Out)
			l.wrote(out.Out, sc)
		}
	}

	switch spec.Suspend {
	case vm.SuspendAlways:
		out.Suspends = true
	case vm.SuspendFrontendTools:
		if tk := spec.ToolsKey(); tk != nil {
			if v := out.Keys[tk.Name]; v != nil && l.wfConversation() && v.Frontend {
				out.Suspends = true
			}
		}
	}
	if out.Suspends && sc.kind != "tool" && !misplaced {
		if labelName == "" {
			c.diags.Errorf(kindSpan, CodeSuspendLabel, "%s pauses the run and needs a label to resume at, e.g. `wait: %s`", spec.Name, n.Kind.Name)
		}
		if where := sc.within("step", "branch", "for"); where != "" {
			c.diags.Errorf(kindSpan, CodeSuspendPlace, "%s pauses the run and cannot be inside %s", spec.Name, placeName(where))
		}
	}
	return out
}

func (l *lowerer) wfConversation() bool { return l.wf.Conversation }

// unknownKind lowers what can be of a node whose kind is unknown, already
// reported: its handlers, and the write of its `-> $path`, so that reads
// of the path are not reported as never written.
func (l *lowerer) unknownKind(n *lang.Node, out *vm.Node, sc *scope, next string) {
	l.lowerHandlers(n, out, sc, next, nil)
	if n.Out != nil {
		l.wrote(l.c.pathOf(n.Out), sc)
	}
}

func placeName(kind string) string {
	switch kind {
	case "branch":
		return "a parallel branch"
	case "for":
		return "a for loop"
	}
	return "a step"
}

// persists reports whether a node writes the default paths of the
// writing keys it leaves out.
func persists(spec *vm.KindSpec, n *vm.Node) bool {
	return spec.Persists == nil || spec.Persists(n)
}

// lowerHandlers lowers the `on` blocks of a node and its next edge.
func (l *lowerer) lowerHandlers(n *lang.Node, out *vm.Node, sc *scope, next string, spec *vm.KindSpec) {
	c := l.c
	seen := map[string]diag.Span{} // handler → where it is first defined
	meant := map[string]bool{}     // the handlers misspelt handlers stand for
	if n.Body != nil {
		for _, e := range n.Body.Entries {
			h := e.Handler
			if h == nil {
				continue
			}
			name := h.Name.Name
			nameSpan := c.span(h.Name.Pos, h.Name.EndPos)
			if spec != nil && spec.Handler(name) == nil {
				var names []string
				for _, hs := range spec.Handlers {
					names = append(names, hs.Name)
				}
				if len(names) == 0 {
					c.diags.Errorf(nameSpan, CodeUnknownHandler, "%s has no handlers, found \"on %s\"", spec.Name, name)
				} else {
					c.diags.Errorf(nameSpan, CodeUnknownHandler, "unknown handler %q for %s%s", name, spec.Name, suggest(name, names))
					meant[closest(name, names)] = true
				}
			}
			if first, dup := seen[name]; dup {
				c.diags.Add(diag.Errorf(nameSpan, CodeDuplicate, "handler %q is already defined", name).WithRelated(first, firstDefined))
				l.orphan(h.Body, sc.child("handler"), fmt.Sprintf("%s.%s#%d", out.ID, name, len(seen)+1))
				continue
			}
			seen[name] = nameSpan
			entry := l.block(h.Body.Stmts, sc.child("handler"), out.ID+"."+name, next)
			out.Edges = append(out.Edges, vm.Edge{Label: name, To: entry})
		}
	}
	covered := spec != nil && len(spec.Handlers) > 0
	if spec != nil {
		for _, hs := range spec.Handlers {
			if _, defined := seen[hs.Name]; !defined {
				covered = false
				if hs.Required && !meant[hs.Name] {
					c.diags.Errorf(c.span(n.Kind.Pos, n.Kind.EndPos), CodeMissingHandler, "%s needs an `on %s { … }` handler", spec.Name, hs.Name)
				}
			}
		}
	}
	// Control leaves through next when an outcome has no handler; a node
	// with a handler for every outcome has no next edge of its own.
	if !covered {
		out.Edges = append([]vm.Edge{{Label: vm.EdgeNext, To: next}}, out.Edges...)
	}
}

func keyNames(spec *vm.KindSpec) []string {
	names := make([]string, len(spec.Keys))
	for i, k := range spec.Keys {
		names[i] = k.Name
	}
	return names
}

// firstWord returns the first part of an argument when it is a bare name.
func firstWord(arg *lang.Arg) string {
	if arg == nil || len(arg.Parts) == 0 {
		return ""
	}
	t := arg.Parts[0].Token
	if t == "" || !isIdent(t) {
		return ""
	}
	return t
}

func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// withArticle is "a name" or "an activity id": "an" before a vowel other
// than u, whose words here ("url") start with a consonant's sound.
func withArticle(noun string) string {
	if noun != "" && strings.ContainsRune("aeioAEIO", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// arg compiles the positional argument of node out.
func (l *lowerer) arg(arg *lang.Arg, start int, spec *vm.KindSpec, out *vm.Node, sc *scope) *vm.Value {
	c := l.c
	s := argRest(arg, start)
	if spec.Arg.Type == vm.TypeServerTool {
		return l.serverToolArg(s, spec, out, sc)
	}
	if spec.Arg.Type == vm.TypeWorkflow {
		span := c.span(s.pos, s.end)
		if len(s.tokens) != 1 || !isIdent(s.tokens[0]) {
			c.diags.Errorf(span, CodeWrongType, "%s expects a workflow id, found %s", spec.Name, string(c.src[s.pos.Offset:s.end.Offset]))
			return nil
		}
		target := s.tokens[0]
		if !c.workflowIDs[target] && !c.parseFailed {
			ids := make([]string, 0, len(c.workflowIDs))
			for id := range c.workflowIDs {
				ids = append(ids, id)
			}
			c.diags.Errorf(span, CodeUnknownWorkflow, "call of unknown workflow %q%s", target, suggest(target, ids))
		} else {
			c.calls = append(c.calls, callRef{from: l.wf.ID, to: target, span: span})
		}
		return &vm.Value{Span: span, Source: target}
	}
	v := c.value(s, modelOrURL(spec.Arg.Type), nil, sc.env, spec.Name+"'s "+spec.Arg.Name)
	c.checkLiteral(v, spec.Arg.Type, nil)
	return v
}

// key compiles one `key = value` of a node.
func (l *lowerer) key(a *lang.Attr, ks *vm.KeySpec, n *vm.Node, sc *scope) *vm.Value {
	c := l.c
	s := exprSyntax(a.Value)
	switch ks.Type {
	case vm.TypePath:
		p := c.pathFromSyntax(a.Value)
		if p == nil {
			return nil
		}
		if ks.Writes {
			l.wrote(p, sc)
		} else {
			c.read(p.Root, p.Span)
		}
		return &vm.Value{Span: p.Span, Source: p.String(), Path: p}
	case vm.TypeTools:
		e := sc.env
		for _, t := range l.wf.Tools {
			e.tools = append(e.tools, t.Name)
		}
		e.servers = c.serverNames
		v := c.value(s, vm.TypeList, nil, e, ks.Name)
		if v != nil && v.Expr != nil {
			v.Tools, v.Servers, v.Frontend = toolRefs(v.Expr, e.tools, e.servers)
			c.checkOffered(v)
		}
		return v
	case vm.TypeArguments:
		v, src := c.valueSource(s, vm.TypeObject, nil, sc.env, ks.Name)
		l.checkCallArgs(n, v, src, sc)
		return v
	case vm.TypePredictions:
		// A map literal, whose entries checkPredictions reads.
		return c.value(s, vm.TypeAny, nil, sc.env, ks.Name)
	}
	v := c.value(s, modelOrURL(ks.Type), ks.Enum, sc.env, ks.Name)
	c.checkLiteral(v, ks.Type, ks.Providers)
	if ks.Writes && v != nil && v.Expr != nil {
		if m, ok := v.Expr.Program.Node().(*ast.MapNode); ok {
			for _, pair := range m.Pairs {
				if k, ok := pair.(*ast.PairNode).Key.(*ast.StringNode); ok {
					l.wrote(&vm.Path{Root: k.Value, Span: v.Span}, sc)
				}
			}
		}
	}
	return v
}

// pathOf converts a parsed $path.
func (c *fileCompiler) pathOf(p *lang.Path) *vm.Path {
	out := &vm.Path{Root: strings.TrimPrefix(p.Root, "$"), Span: c.span(p.Pos, p.EndPos)}
	if out.Root == "env" {
		c.diags.Errorf(out.Span, lang.CodeReserved, "$env is reserved: it names the whole expression environment; use another root")
	}
	c.checkPathFields(p)
	for _, k := range p.Keys {
		if k.Name != "" {
			out.Keys = append(out.Keys, vm.PathKey{Name: k.Name})
			continue
		}
		i64, err := strconv.ParseInt(k.Index, 0, 64)
		i := int(i64)
		if err != nil || i < 0 {
			c.diags.Errorf(c.span(k.Pos, k.EndPos), CodeWrongType, "a path index must be a whole number of at least 0, found %s", k.Index)
		}
		out.Keys = append(out.Keys, vm.PathKey{Index: i})
	}
	return out
}

// pathFromSyntax reads a value that must be a plain context path.
func (c *fileCompiler) pathFromSyntax(e *lang.Expr) *vm.Path {
	p := c.quietPath(e)
	if p == nil {
		c.diags.Errorf(c.span(e.Pos, e.EndPos), CodeWrongType, "expected a context path such as $input.chat, found %s", string(c.src[e.Pos.Offset:e.EndPos.Offset]))
		return nil
	}
	c.checkSyntaxFields(e)
	return p
}

// quietPath reads a value that is a plain context path, or returns nil
// without reporting anything.
func (c *fileCompiler) quietPath(e *lang.Expr) *vm.Path {
	if e == nil {
		return nil
	}
	ts := exprSyntax(e).tokens
	ok := len(ts) >= 1 && strings.HasPrefix(ts[0], "$") && len(ts)%2 == 1
	for i := 1; ok && i < len(ts); i += 2 {
		ok = ts[i] == "." && isIdent(ts[i+1])
	}
	if !ok {
		return nil
	}
	p := &vm.Path{Root: ts[0][1:], Span: c.span(e.Pos, e.EndPos)}
	for i := 2; i < len(ts); i += 2 {
		p.Keys = append(p.Keys, vm.PathKey{Name: ts[i]})
	}
	return p
}

// cond compiles a condition, which must be boolean when its type is known.
func (c *fileCompiler) cond(s syntax, e env) *vm.Value {
	v := &vm.Value{Span: c.span(s.pos, s.end), Source: string(c.src[s.pos.Offset:s.end.Offset])}
	if s.single != nil {
		segs := s.single.Segments()
		if len(segs) != 1 || segs[0].Interp == nil {
			c.diags.Errorf(v.Span, CodeNotBool, "a condition must be boolean, found a string")
			return v
		}
		// "<<expr>>" keeps the value's type: the condition is expr.
		in := segs[0].Interp
		src := &exprSource{}
		src.verbatim(string(c.src[in.Pos.Offset:in.EndPos.Offset]), in.Pos.Offset)
		v.Expr, _ = c.compileExpr(src, e, true)
		return v
	}
	v.Expr, _ = c.compileExpr(c.source(s), e, true)
	return v
}

// value compiles a value: a template when it is one string literal, else
// an expression; then checks it against the wanted type where it can.
func (c *fileCompiler) value(s syntax, want vm.Type, enum []string, e env, what string) *vm.Value {
	v, _ := c.valueSource(s, want, enum, e, what)
	return v
}

// valueSource is value that also returns the expression's source, which
// maps the places of its parts back to the file; nil for a template.
func (c *fileCompiler) valueSource(s syntax, want vm.Type, enum []string, e env, what string) (*vm.Value, *exprSource) {
	v := &vm.Value{Span: c.span(s.pos, s.end), Source: string(c.src[s.pos.Offset:s.end.Offset])}
	if s.single != nil {
		v.Template = c.template(s.single, e)
		c.checkTemplate(v, want, enum, what)
		return v, nil
	}
	src := c.source(s)
	x, t := c.compileExpr(src, e, false)
	v.Expr = x
	if x != nil && !typeFits(t, want) {
		c.diags.Errorf(v.Span, CodeWrongType, "%s expects %s, found %s", what, article(want), describeType(t))
	}
	return v, src
}

// template compiles each interpolation of a string literal.
func (c *fileCompiler) template(s *lang.String, e env) *vm.Template {
	t := &vm.Template{}
	for _, p := range s.Segments() {
		if p.Interp == nil {
			t.Parts = append(t.Parts, vm.TemplatePart{Text: p.Text})
			continue
		}
		src := &exprSource{}
		src.verbatim(string(c.src[p.Interp.Pos.Offset:p.Interp.EndPos.Offset]), p.Interp.Pos.Offset)
		x, _ := c.compileExpr(src, e, false)
		t.Parts = append(t.Parts, vm.TemplatePart{Expr: x})
	}
	return t
}

// checkTemplate checks a template against the wanted type.
func (c *fileCompiler) checkTemplate(v *vm.Value, want vm.Type, enum []string, what string) {
	if v.Template.Single() != nil {
		return // keeps the value's type, known only at run time
	}
	text, literal := "", true
	for _, p := range v.Template.Parts {
		if p.Expr != nil || p.Text == "" && len(v.Template.Parts) > 1 {
			literal = false
		}
		text += p.Text
	}
	switch want {
	case vm.TypeAny, vm.TypeString:
	case vm.TypeDuration:
		if literal {
			if d, err := time.ParseDuration(text); err != nil || d <= 0 {
				c.diags.Errorf(v.Span, CodeWrongType, "%s expects a positive duration such as \"20s\", found %q", what, text)
			}
		}
		return
	case vm.TypeBackoff:
		if literal {
			if _, _, err := vm.ParseBackoff(text); err != nil {
				c.diags.Errorf(v.Span, CodeWrongType, "%s expects a backoff such as \"1s..8s\": %v", what, err)
			}
		}
		return
	default:
		c.diags.Errorf(v.Span, CodeWrongType, "%s expects %s, found a string", what, article(want))
		return
	}
	if literal && len(enum) > 0 && !slices.Contains(enum, text) {
		c.diags.Errorf(v.Span, CodeWrongType, "%s must be one of %s, found %q%s", what, orList(quoteAll(enum)), text, suggest(text, enum))
	}
}

func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = fmt.Sprintf("%q", w)
	}
	return out
}

// typeFits reports whether an expression of type t may be used where want
// is expected; unknown types always fit.
func typeFits(t reflect.Type, want vm.Type) bool {
	if t == nil || t.Kind() == reflect.Interface {
		return true
	}
	k := t.Kind()
	switch want {
	case vm.TypeString, vm.TypeDuration, vm.TypeBackoff:
		return k == reflect.String
	case vm.TypeBool:
		return k == reflect.Bool
	case vm.TypeInt:
		return k >= reflect.Int && k <= reflect.Uint64
	case vm.TypeNumber:
		return k >= reflect.Int && k <= reflect.Float64
	case vm.TypeObject:
		return k == reflect.Map || k == reflect.Struct
	case vm.TypeList:
		return k == reflect.Slice || k == reflect.Array
	}
	return true
}

func article(t vm.Type) string {
	switch t {
	case vm.TypeInt, vm.TypeObject:
		return "an " + t.String()
	case vm.TypeAny:
		return "any value"
	}
	return "a " + t.String()
}

// toolRefs lists the backend tools and the MCP servers a tools value
// names, and whether it may also hold other tools (the client's frontend
// tools): anything in the list that is neither a backend tool's name nor
// a server's.
func toolRefs(x *vm.Expr, tools, servers []string) (backend, offering []string, frontend bool) {
	v := &refs{callees: map[*ast.IdentifierNode]bool{}}
	node := x.Program.Node()
	ast.Walk(&node, v)
	for _, id := range v.idents {
		switch {
		case slices.Contains(tools, id.Value):
			if !slices.Contains(backend, id.Value) {
				backend = append(backend, id.Value)
			}
		case slices.Contains(servers, id.Value):
			if !slices.Contains(offering, id.Value) {
				offering = append(offering, id.Value)
			}
		default:
			frontend = true // a context path, a variable or a function's result
		}
	}
	// A list that is more than the names of backend tools (an object
	// literal, say) may also hold the client's tools.
	if arr, ok := node.(*ast.ArrayNode); !ok || len(arr.Nodes) != len(v.idents) {
		frontend = true
	}
	return backend, offering, frontend
}
