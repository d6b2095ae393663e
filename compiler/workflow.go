package compiler

import (
	"slices"
	"strings"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/vm"
)

// workflowAttrs are the attributes a workflow block accepts.
var workflowAttrs = []string{"title", "description", "conversation", "busy"}

// toolAttrs are the attributes a tool block accepts.
var toolAttrs = []string{"description", "parameters", "result"}

func (c *fileCompiler) span(pos, end lang.Position) diag.Span {
	return lang.SpanOf(c.file.Name, pos, end)
}

// workflow checks one workflow block and lowers its flow.
func (c *fileCompiler) workflow(w *lang.Workflow) *vm.Workflow {
	c.reads = map[string]diag.Span{}
	c.writes = map[string]bool{}
	c.bound = map[string]bool{}
	c.convoUnsure = false
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
	for _, m := range flows {
		c.declareWrites(m.Flow.Stmts)
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

// declareWrites records the roots that the statements of a flow write by
// `set` and `-> $path` before the flow is lowered, so that an expression
// checked before the statement that writes a root (the statements of a
// block are lowered last first, and tools before the flow) may suggest
// it for a bare name.
func (c *fileCompiler) declareWrites(stmts []*lang.Stmt) {
	eachStmt(stmts, func(st *lang.Stmt) {
		switch {
		case st.Set != nil:
			for _, a := range st.Set.Assigns {
				if a.Path != nil {
					c.write(strings.TrimPrefix(a.Path.Root, "$"))
				}
			}
		case st.Node != nil && st.Node.Out != nil:
			c.write(strings.TrimPrefix(st.Node.Out.Root, "$"))
		}
	})
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
		if !c.conversation(wf, a) {
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
		if closest(name, workflowAttrs) == "conversation" {
			// `conversaton = true`: the checks that depend on the mode
			// follow what was meant, without a second report.
			c.conversation(wf, a)
		}
	}
}

// conversation sets the workflow's mode from the value of its
// conversation attribute; false means the value is neither true nor
// false, and the mode is unsure: the checks that depend on it are left
// out.
func (c *fileCompiler) conversation(wf *vm.Workflow, a *lang.Attr) bool {
	switch tokens := exprSyntax(a.Value).tokens; {
	case len(tokens) == 1 && tokens[0] == "true":
		wf.Conversation = true
	case len(tokens) == 1 && tokens[0] == "false":
	default:
		c.convoUnsure = true
		return false
	}
	return true
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

// tool checks a tool block: its attributes and its implementation, a
// `result = expr`, a node of a kind that implements tools, or a node and
// a result that shapes what the node gives.
func (c *fileCompiler) tool(wf *vm.Workflow, tool *vm.Tool, t *lang.Tool) {
	seen := map[string]diag.Span{} // attribute → where it is first set
	misspelt := map[string]bool{}  // attributes given under a misspelt name
	var nodes []*lang.ToolItem
	var result *lang.ToolItem
	for _, item := range t.Items {
		name := item.Name.Name
		span := c.span(item.Name.Pos, item.Name.EndPos)
		if item.Value == nil {
			nodes = append(nodes, item)
			continue
		}
		if item.Arg != nil || item.Body != nil || item.Out != nil {
			c.diags.Errorf(c.span(item.Pos, item.EndPos), CodeToolShape, "expected newline after the value of %q", name)
			if name == "result" && result == nil {
				result = item
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
			tool.Parameters = c.value(exprSyntax(item.Value), vm.TypeObject, nil, env{args: true}, "parameters")
		case "result":
			result = item
		default:
			c.diags.Errorf(span, CodeUnknownKey, "unknown tool key %q%s", name, suggest(name, toolAttrs))
			// A misspelt attribute stands for the one it names: it is
			// not reported missing as well.
			switch closest(name, toolAttrs) {
			case "description":
				misspelt["description"] = true
			case "result":
				if result == nil {
					result = item
				}
			}
		}
	}
	// A server's tool describes itself: its description and parameters
	// are the defaults of a tool it implements.
	servesTool := len(nodes) == 1 && callsServer(c.reg.Kind(nodes[0].Name.Name))
	_, described := seen["description"]
	_, parameterized := seen["parameters"]
	if tool.Description == "" && !described && !servesTool && !misspelt["description"] {
		c.diags.Errorf(c.span(t.Name.Pos, t.Name.EndPos), CodeMissingKey, "tool %q needs a description", tool.Name)
	}
	if len(nodes) == 0 && result == nil {
		c.diags.Errorf(c.span(t.Name.Pos, t.Name.EndPos), CodeToolShape, "tool %q needs an implementation: result = expr, or a %s node", tool.Name, orList(c.toolKinds()))
		return
	}
	if len(nodes) > 1 {
		c.diags.Errorf(c.span(nodes[1].Pos, nodes[1].EndPos), CodeToolShape, "tool %q has more than one implementation", tool.Name)
		return
	}
	e := env{args: true, unbound: c.toolVars()}
	if len(nodes) == 1 {
		if !c.toolNode(wf, tool, nodes[0], result) {
			return
		}
		if servesTool {
			c.toolFromLock(tool, described, parameterized)
		}
		e.bound = c.reg.Kind(nodes[0].Name.Name).Tool.Var
		delete(e.unbound, e.bound)
		if e.bound != "" {
			c.bound[e.bound] = true
		}
	}
	if result != nil && result.Value != nil {
		tool.Result = c.value(exprSyntax(result.Value), vm.TypeAny, nil, e, "result")
	}
}

// toolNode checks and lowers the node that implements a tool, beside the
// tool's result when it has one; false means it reported why it cannot.
func (c *fileCompiler) toolNode(wf *vm.Workflow, tool *vm.Tool, item, result *lang.ToolItem) bool {
	kind := item.Name.Name
	spec := c.reg.Kind(kind)
	if spec == nil || spec.Tool == nil {
		c.diags.Errorf(c.span(item.Name.Pos, item.Name.EndPos), CodeToolShape, "a tool is implemented by result = expr or a %s node, not %q%s", orList(c.toolKinds()), kind, suggest(kind, c.toolKinds()))
		return false
	}
	ok := true
	if result != nil && spec.Tool.Var == "" {
		c.diags.Errorf(c.span(result.Name.Pos, result.Name.EndPos), CodeToolShape, "tool %q: result = expr cannot shape the result of a %s node (only %s nodes' results can be shaped); alone, it is the tool's implementation", tool.Name, kind, orList(c.shapedToolKinds()))
		ok = false
	}
	if item.Out != nil {
		hint := ""
		if spec.Tool.Var != "" {
			hint = ": shape it with result = expr, reading $" + spec.Tool.Var
		}
		c.diags.Errorf(c.span(item.Out.Pos, item.Out.EndPos), CodeToolShape, "the result of a tool's %s node goes to the model, not to %s%s", kind, "$"+strings.TrimPrefix(item.Out.Root, "$"), hint)
		ok = false
	}
	if !ok {
		return false
	}
	l := newLowerer(c, wf)
	node := &lang.Node{Pos: item.Pos, EndPos: item.EndPos, Kind: item.Name, Arg: item.Arg, Body: item.Body}
	tool.Impl = l.node(node, "tool."+tool.Name, "", &scope{kind: "tool", env: env{args: true}}, "")
	return true
}

// toolKinds are the node kinds that may implement a tool (KindSpec.Tool).
func (c *fileCompiler) toolKinds() []string {
	var kinds []string
	for _, k := range c.reg.Kinds() {
		if k.Tool != nil {
			kinds = append(kinds, k.Name)
		}
	}
	return kinds
}

// shapedToolKinds are the tool kinds whose result a tool's result = expr
// may shape (ToolSpec.Var).
func (c *fileCompiler) shapedToolKinds() []string {
	var kinds []string
	for _, k := range c.reg.Kinds() {
		if k.Tool != nil && k.Tool.Var != "" {
			kinds = append(kinds, k.Name)
		}
	}
	return kinds
}

// toolVars maps the variables of the tool kinds' results, such as
// "response", to their kinds: each is bound only in the result of a tool
// with a node of its kind.
func (c *fileCompiler) toolVars() map[string]string {
	vars := map[string]string{}
	for _, k := range c.reg.Kinds() {
		if k.Tool != nil && k.Tool.Var != "" {
			vars[k.Tool.Var] = k.Name
		}
	}
	return vars
}
