package compiler

import (
	"slices"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/vm"
	"github.com/alecthomas/participle/v2/lexer"
)

// workflowAttrs are the attributes a workflow block accepts.
var workflowAttrs = []string{"title", "description", "conversation", "busy"}

// toolAttrs are the attributes a tool block accepts.
var toolAttrs = []string{"description", "parameters", "result"}

func (c *fileCompiler) span(pos, end lexer.Position) diag.Span {
	return lang.SpanOf(c.file.Name, pos, end)
}

// workflow checks one workflow block and lowers its flow.
func (c *fileCompiler) workflow(w *lang.Workflow) *vm.Workflow {
	c.reads = map[string]diag.Span{}
	c.writes = map[string]bool{}
	wf := &vm.Workflow{ID: w.Name.Name, Span: c.span(w.Pos, w.EndPos)}

	seen := map[string]diag.Span{} // attribute → where it is first set
	var flows []*lang.Member
	var tools []*lang.Tool
	for _, m := range w.Members {
		switch {
		case m.Flow != nil:
			flows = append(flows, m)
		case m.Tool != nil:
			tools = append(tools, m.Tool)
		case m.Attr != nil:
			c.workflowAttr(wf, m.Attr, seen)
		}
	}
	toolNames := map[string]diag.Span{} // tool → where its name is first declared
	for _, t := range tools {
		span := c.span(t.Name.Pos, t.Name.EndPos)
		if first, dup := toolNames[t.Name.Name]; dup {
			c.diags.Add(diag.Errorf(span, CodeDuplicateTool, "tool %q is already defined in workflow %q", t.Name.Name, wf.ID).WithRelated(first, firstDefined))
			continue
		}
		toolNames[t.Name.Name] = span
		wf.Tools = append(wf.Tools, &vm.Tool{Name: t.Name.Name, Span: c.span(t.Pos, t.EndPos)})
	}
	for _, t := range tools {
		if tool := wf.Tool(t.Name.Name); tool != nil && tool.Span == c.span(t.Pos, t.EndPos) {
			c.tool(wf, tool, t)
		}
	}

	switch len(flows) {
	case 0:
		c.diags.Errorf(c.span(w.Name.Pos, w.Name.EndPos), CodeFlow, "workflow %q has no flow block", wf.ID)
	default:
		first := c.span(flows[0].Pos, flows[0].Pos)
		for _, extra := range flows[1:] {
			c.diags.Add(diag.Errorf(c.span(extra.Pos, extra.Pos), CodeFlow, "workflow %q has more than one flow block", wf.ID).WithRelated(first, firstDefined))
		}
		l := newLowerer(c, wf)
		l.flow(flows[0].Flow)
	}
	c.checkRoots()
	return wf
}

func (c *fileCompiler) workflowAttr(wf *vm.Workflow, a *lang.Attr, seen map[string]diag.Span) {
	name := a.Name.Name
	span := c.span(a.Name.Pos, a.Name.EndPos)
	if first, dup := seen[name]; dup {
		c.diags.Add(diag.Errorf(span, CodeDuplicate, "attribute %q is already set", name).WithRelated(first, firstSet))
		return
	}
	seen[name] = span
	switch name {
	case "title":
		wf.Title, _ = c.literalString(a, "a workflow's title")
	case "description":
		wf.Description, _ = c.literalString(a, "a workflow's description")
	case "conversation":
		switch tokens := exprSyntax(a.Value).tokens; {
		case len(tokens) == 1 && tokens[0] == "true":
			wf.Conversation = true
		case len(tokens) == 1 && tokens[0] == "false":
		default:
			c.diags.Errorf(c.span(a.Value.Pos, a.Value.EndPos), CodeWrongType, "conversation must be true or false")
		}
	case "busy":
		policy, ok := c.literalString(a, "busy")
		if !ok {
			return
		}
		if !slices.Contains(vm.BusyPolicies, policy) {
			c.diags.Errorf(c.span(a.Value.Pos, a.Value.EndPos), CodeWrongType, "busy must be one of %s, found %q%s", orList(quoteAll(vm.BusyPolicies)), policy, suggest(policy, vm.BusyPolicies))
			return
		}
		wf.Busy = policy
	default:
		c.diags.Errorf(span, CodeUnknownAttr, "unknown workflow attribute %q%s", name, suggest(name, workflowAttrs))
	}
}

// literalString returns the text of a value that must be a string literal
// without interpolation.
func (c *fileCompiler) literalString(a *lang.Attr, what string) (string, bool) {
	s := exprSyntax(a.Value)
	if s.single != nil {
		if text, ok := s.single.Literal(); ok {
			return text, true
		}
	}
	c.diags.Errorf(c.span(a.Value.Pos, a.Value.EndPos), CodeWrongType, "%s must be a string literal without <<…>>", what)
	return "", false
}

// tool checks a tool block: its attributes and its one implementation.
func (c *fileCompiler) tool(wf *vm.Workflow, tool *vm.Tool, t *lang.Tool) {
	e := env{args: true}
	seen := map[string]diag.Span{} // attribute → where it is first set
	var impls []*lang.ToolItem
	for _, item := range t.Items {
		name := item.Name.Name
		span := c.span(item.Name.Pos, item.Name.EndPos)
		if item.Value == nil {
			impls = append(impls, item)
			continue
		}
		if item.Arg != nil || item.Body != nil || item.Out != nil {
			c.diags.Errorf(c.span(item.Pos, item.EndPos), CodeToolShape, "expected newline after the value of %q", name)
			if name == "result" {
				impls = append(impls, item)
			}
			continue
		}
		if first, dup := seen[name]; dup {
			c.diags.Add(diag.Errorf(span, CodeDuplicate, "%q is already set in tool %q", name, tool.Name).WithRelated(first, firstSet))
			continue
		}
		seen[name] = span
		attr := &lang.Attr{Pos: item.Pos, EndPos: item.EndPos, Name: item.Name, Value: item.Value}
		switch name {
		case "description":
			tool.Description, _ = c.literalString(attr, "a tool's description")
		case "parameters":
			tool.Parameters = c.value(exprSyntax(item.Value), vm.TypeObject, nil, e, "parameters")
		case "result":
			tool.Result = c.value(exprSyntax(item.Value), vm.TypeAny, nil, e, "result")
			impls = append(impls, item)
		default:
			c.diags.Errorf(span, CodeUnknownKey, "unknown tool key %q%s", name, suggest(name, toolAttrs))
		}
	}
	if _, set := seen["description"]; tool.Description == "" && !set {
		c.diags.Errorf(c.span(t.Name.Pos, t.Name.EndPos), CodeMissingKey, "tool %q needs a description", tool.Name)
	}
	switch len(impls) {
	case 0:
		c.diags.Errorf(c.span(t.Name.Pos, t.Name.EndPos), CodeToolShape, "tool %q needs an implementation: result = expr, or a %s node", tool.Name, orList(c.toolKinds()))
		return
	case 1:
	default:
		c.diags.Errorf(c.span(impls[1].Pos, impls[1].EndPos), CodeToolShape, "tool %q has more than one implementation", tool.Name)
		return
	}
	item := impls[0]
	if item.Value != nil {
		return
	}
	if spec := c.reg.Kind(item.Name.Name); spec == nil || !spec.Tool {
		c.diags.Errorf(c.span(item.Name.Pos, item.Name.EndPos), CodeToolShape, "a tool is implemented by result = expr or a %s node, not %q", orList(c.toolKinds()), item.Name.Name)
		return
	}
	l := newLowerer(c, wf)
	node := &lang.Node{Pos: item.Pos, EndPos: item.EndPos, Kind: item.Name, Arg: item.Arg, Body: item.Body, Out: item.Out}
	tool.Impl = l.node(node, "tool."+tool.Name, "", &scope{kind: "tool", env: e}, "")
}

// toolKinds are the node kinds that may implement a tool (KindSpec.Tool).
func (c *fileCompiler) toolKinds() []string {
	var kinds []string
	for _, k := range c.reg.Kinds() {
		if k.Tool {
			kinds = append(kinds, k.Name)
		}
	}
	return kinds
}
