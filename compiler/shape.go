package compiler

import (
	"slices"
	"strings"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/lang/diag"
	"github.com/expr-lang/expr/ast"
)

// CodeUnknownField is the code of a misspelt field of $agent or $user.
const CodeUnknownField = "WF154"

// shape is what the compiler knows of the fields of a context value: each
// documented field, with its own shape. A nil shape is a value whose
// fields are not fixed: the client's state, a token's claims, a list.
type shape map[string]shape

// messageFields are the fields of an AG-UI message as $agent holds it.
var messageFields = []string{"id", "role", "content", "name", "toolCallId", "toolCalls", "error", "activityType", "encryptedValue", "subagentRunId", "metadata"}

func messageShape(extra ...string) shape {
	s := shape{}
	for _, f := range slices.Concat(messageFields, extra) {
		s[f] = nil
	}
	return s
}

// builtinShapes are the documented shapes of the builtin roots the server
// fills (docs/language.md, "The context"): $agent, built from the AG-UI
// request, and $user, from the request's authentication. $input is the
// workflow's own.
var builtinShapes = map[string]shape{
	"agent": {
		"latestUserMessage": messageShape("images"),
		"latestToolResult":  messageShape("value"),
		"messages":          nil,
		"chat":              nil,
		"state":             nil,
		"context":           nil,
		"tools":             nil,
		"forwardedProps":    nil,
		"_hidden":           {"state": nil},
	},
	"user": {"id": nil, "claims": nil},
}

// checkField checks the last of keys, a path read or written under $root,
// against the documented shape of the root. A field the shape does not
// document is reported only when it misspells one that it does: a request
// hook may add fields of its own to $agent, and messages may carry fields
// of newer protocol versions. Paths under a field that is not documented,
// or whose fields are not fixed, are not checked.
func (c *fileCompiler) checkField(root string, keys []string, span diag.Span) {
	sh, ok := builtinShapes[root]
	if !ok || len(keys) == 0 {
		return
	}
	for _, k := range keys[:len(keys)-1] {
		next, known := sh[k]
		if !known || next == nil {
			return
		}
		sh = next
	}
	field := keys[len(keys)-1]
	if _, known := sh[field]; known {
		return
	}
	names := make([]string, 0, len(sh))
	for name := range sh {
		names = append(names, name)
	}
	slices.Sort(names)
	meant := misspelling(field, names)
	if meant == "" {
		return
	}
	of := "$" + root
	if len(keys) > 1 {
		of += "." + strings.Join(keys[:len(keys)-1], ".")
	}
	c.diags.Errorf(span, CodeUnknownField, "unknown field %q of %s (did you mean %q?)", field, of, meant)
}

// checkPathFields checks each field of a written path, $root.a.b, against
// the shape of its root.
func (c *fileCompiler) checkPathFields(p *lang.Path) {
	root := strings.TrimPrefix(p.Root, "$")
	if _, ok := builtinShapes[root]; !ok {
		return
	}
	var keys []string
	for _, k := range p.Keys {
		if k.Name == "" {
			return // an index: the fields below are a list's element's
		}
		keys = append(keys, k.Name)
		c.checkField(root, keys, c.span(k.Pos, k.EndPos))
	}
}

// checkSyntaxFields checks the fields of a value that is a plain context
// path, $root.a.b, written as the tokens of e.
func (c *fileCompiler) checkSyntaxFields(e *lang.Expr) {
	if e == nil || len(e.Parts) == 0 {
		return
	}
	root := strings.TrimPrefix(e.Parts[0].Token, "$")
	if _, ok := builtinShapes[root]; !ok || !strings.HasPrefix(e.Parts[0].Token, "$") {
		return
	}
	var keys []string
	for i := 2; i < len(e.Parts); i += 2 {
		if e.Parts[i-1].Token != "." || !isIdent(e.Parts[i].Token) {
			return
		}
		keys = append(keys, e.Parts[i].Token)
		c.checkField(root, keys, c.span(e.Parts[i].Pos, e.Parts[i].EndPos))
	}
}

// memberPath returns the root and the fields of a member access such as
// $agent.latestUserMessage.content, the last being m's own; ok is false
// when a part of it is not a field name (an index, a computed key, a
// method call) or it does not start at a $root.
func memberPath(m *ast.MemberNode) (root string, keys []string, ok bool) {
	var node ast.Node = m
	for {
		switch n := node.(type) {
		case *ast.ChainNode:
			node = n.Node
		case *ast.MemberNode:
			s, isStr := n.Property.(*ast.StringNode)
			if !isStr || n.Method {
				return "", nil, false
			}
			keys = append(keys, s.Value)
			node = n.Node
		case *ast.IdentifierNode:
			if !strings.HasPrefix(n.Value, "$") {
				return "", nil, false
			}
			slices.Reverse(keys)
			return n.Value[1:], keys, true
		default:
			return "", nil, false
		}
	}
}

// checkMembers checks the member accesses of an expression that start at
// a builtin root against its shape.
func (c *fileCompiler) checkMembers(src *exprSource, text string, members []*ast.MemberNode) {
	for _, m := range members {
		root, keys, ok := memberPath(m)
		if !ok {
			continue
		}
		if _, builtin := builtinShapes[root]; !builtin {
			continue
		}
		c.checkField(root, keys, c.exprSpan(src, text, m.Property.Location()))
	}
}
