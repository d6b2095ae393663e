package compiler

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aguic/aguic/vm"
	"github.com/expr-lang/expr/ast"
)

// prediction is one entry of a predictions key: a key of the client's
// state and the tool argument that predicts it, as written.
type prediction struct {
	key, from string
}

// predictions reads a key of TypePredictions: a map literal of state keys
// to string literals. It reports what does not fit and returns the entries
// that do.
func (c *fileCompiler) predictions(v *vm.Value, ks *vm.KeySpec) []prediction {
	if v == nil || v.Expr == nil {
		if v != nil && v.Template != nil {
			c.diags.Errorf(v.Span, CodeWrongType, "%s expects a map of state keys to tool arguments, such as %s, found a string", ks.Name, predictionExample(ks))
		}
		return nil
	}
	m, ok := v.Expr.Program.Node().(*ast.MapNode)
	if !ok {
		c.diags.Errorf(v.Span, CodeWrongType, "%s expects a map literal of state keys to tool arguments, such as %s, found %s", ks.Name, predictionExample(ks), v.Source)
		return nil
	}
	var out []prediction
	seen := map[string]bool{}
	for _, p := range m.Pairs {
		pair := p.(*ast.PairNode)
		k, kok := pair.Key.(*ast.StringNode)
		from, vok := pair.Value.(*ast.StringNode)
		switch {
		case !kok:
			c.diags.Errorf(v.Span, CodeWrongType, "%s: a state key must be written as a name or a string, found %s", ks.Name, pair.Key.String())
		case !stateKey(k.Value):
			c.diags.Errorf(v.Span, CodePredict, "%s: %q is not a key of the state's top level: write a name of letters, digits, _ and - such as \"document\"", ks.Name, k.Value)
		case seen[k.Value]:
			c.diags.Errorf(v.Span, CodeDuplicate, "%s: the state key %q is predicted twice", ks.Name, k.Value)
		case !vok || from.Value == "":
			c.diags.Errorf(v.Span, CodeWrongType, "%s: the state key %q must map to a tool argument's name as a string literal, such as %s, found %s", ks.Name, k.Value, predictionExample(ks), pair.Value.String())
		default:
			seen[k.Value] = true
			out = append(out, prediction{key: k.Value, from: from.Value})
		}
	}
	return out
}

// predictionExample is an example value of a predictions key.
func predictionExample(ks *vm.KeySpec) string {
	if ks.Of == "tools" {
		return `{document: "write_document.document"}`
	}
	return `{document: "document"}`
}

// stateKey reports whether s may name a key of the client's state: letters,
// digits, _ and -, not starting with a digit or -. A path such as
// "recipe.title" is not one: the client sets a key of its state's top level.
func stateKey(s string) bool {
	for i, r := range s {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && (r == '-' || r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return s != ""
}

// checkPredictions checks each predictions key of node n against the key
// its spec's Of names: a tool argument the call does not have, or a tool
// the model may not call, is an error. Values only the run knows (args
// computed by an expression, the client's tools) are checked when it runs,
// and so are predictions whose Of key is misspelt (meant) or did not
// compile: that error is already reported.
func (l *lowerer) checkPredictions(n *vm.Node, spec *vm.KindSpec, meant map[string]bool) {
	c := l.c
	for i := range spec.Keys {
		ks := &spec.Keys[i]
		v := n.Keys[ks.Name]
		if ks.Type != vm.TypePredictions || v == nil {
			continue
		}
		preds := c.predictions(v, ks)
		of := spec.Key(ks.Of)
		if of == nil || len(preds) == 0 || meant[of.Name] {
			continue
		}
		switch of.Type {
		case vm.TypeObject:
			names, known := literalKeys(n.Keys[of.Name])
			for _, p := range preds {
				if known && !slices.Contains(names, p.from) {
					c.diags.Errorf(v.Span, CodePredict, "%s: the call has no argument %q to predict the state key %q from%s", ks.Name, p.from, p.key, argsHint(names, p.from))
				}
			}
		case vm.TypeTools:
			l.checkToolPredictions(v, ks, n.Keys[of.Name], preds)
		}
	}
}

// checkToolPredictions checks predictions written tool.argument against
// the tools value: a backend tool of the workflow, whose parameters name
// the argument when they are a literal, or any name when the list also
// holds the client's tools.
func (l *lowerer) checkToolPredictions(v *vm.Value, ks *vm.KeySpec, tools *vm.Value, preds []prediction) {
	c := l.c
	for _, p := range preds {
		tool, arg, ok := strings.Cut(p.from, ".")
		if !ok || tool == "" || arg == "" {
			c.diags.Errorf(v.Span, CodePredict, "%s: the state key %q must be predicted by a tool's argument written tool.argument, such as %q, found %q", ks.Name, p.key, "write_document.document", p.from)
			continue
		}
		if tools == nil {
			c.diags.Errorf(v.Span, CodePredict, "%s: the model calls no tool %q: it has no tools key", ks.Name, tool)
			continue
		}
		if tools.Expr == nil {
			return // the tools value did not compile: already reported
		}
		backend, frontend := tools.Tools, tools.Frontend
		if !slices.Contains(backend, tool) {
			offers, complete := c.serverOffers(tools.Servers)
			if lt := offers[tool]; lt != nil {
				if names := slices.Sorted(maps.Keys(schemaMap(lt.InputSchema, "properties"))); !slices.Contains(names, arg) {
					c.diags.Errorf(v.Span, CodePredict, "%s: tool %q has no parameter %q to predict the state key %q from%s", ks.Name, tool, arg, p.key, argsHint(names, arg))
				}
				continue
			}
			if !frontend && complete {
				c.diags.Errorf(v.Span, CodePredict, "%s: %q is not a tool the model may call%s", ks.Name, tool, suggestTool(tool, slices.Concat(backend, slices.Sorted(maps.Keys(offers)))))
			}
			continue
		}
		for _, t := range l.wf.Tools {
			if t.Name != tool {
				continue
			}
			if names, known := schemaProperties(t.Parameters); known && !slices.Contains(names, arg) {
				c.diags.Errorf(v.Span, CodePredict, "%s: tool %q has no parameter %q to predict the state key %q from%s", ks.Name, tool, arg, p.key, argsHint(names, arg))
			}
		}
	}
}

func suggestTool(name string, tools []string) string {
	if len(tools) == 0 {
		return " (its tools list names no tool of this workflow)"
	}
	return suggest(name, tools)
}

// argsHint suggests the closest of names to arg, or lists them.
func argsHint(names []string, arg string) string {
	if s := suggest(arg, names); s != "" {
		return s
	}
	if len(names) == 0 {
		return " (it has none)"
	}
	return fmt.Sprintf(" (it has %s)", orList(quoteAll(names)))
}

// literalKeys returns the keys of a value written as a map literal whose
// keys are all literal; known is false for any other value. An absent
// value is the empty map.
func literalKeys(v *vm.Value) (names []string, known bool) {
	if v == nil {
		return nil, true
	}
	if v.Expr == nil {
		return nil, false
	}
	m, ok := v.Expr.Program.Node().(*ast.MapNode)
	if !ok {
		return nil, false
	}
	return mapKeys(m)
}

func mapKeys(m *ast.MapNode) (names []string, known bool) {
	for _, p := range m.Pairs {
		k, ok := p.(*ast.PairNode).Key.(*ast.StringNode)
		if !ok {
			return nil, false
		}
		names = append(names, k.Value)
	}
	return names, true
}

// schemaProperties returns the property names of a JSON Schema written as
// a map literal with a literal properties map; known is false otherwise.
func schemaProperties(v *vm.Value) (names []string, known bool) {
	if v == nil || v.Expr == nil {
		return nil, false
	}
	m, ok := v.Expr.Program.Node().(*ast.MapNode)
	if !ok {
		return nil, false
	}
	for _, p := range m.Pairs {
		pair := p.(*ast.PairNode)
		if k, ok := pair.Key.(*ast.StringNode); ok && k.Value == "properties" {
			if pm, ok := pair.Value.(*ast.MapNode); ok {
				return mapKeys(pm)
			}
			return nil, false
		}
	}
	return nil, false
}
