package compiler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/vm"
)

// scope is a block being lowered: what encloses it and what it may name.
type scope struct {
	parent *scope
	kind   string // flow, then, else, case, for, while, step, branch, try, catch, handler, tool
	catch  string // the catch node errors raised here go to; "" for none
	env    env
	writes *[]write // the enclosing parallel branch's writes, or nil
}

// within reports whether s or one of its ancestors is of one of kinds.
func (s *scope) within(kinds ...string) string {
	for ; s != nil; s = s.parent {
		if slices.Contains(kinds, s.kind) {
			return s.kind
		}
	}
	return ""
}

func (s *scope) child(kind string) *scope {
	return &scope{parent: s, kind: kind, catch: s.catch, env: s.env, writes: s.writes}
}

// checkLocal rejects a variable name that a builtin function already has:
// expressions would see the function, not the variable.
func (c *fileCompiler) checkLocal(id *lang.Ident, what string) {
	if c.funcs[id.Name] {
		c.diags.Errorf(c.span(id.Pos, id.EndPos), lang.CodeReserved, "%q is a builtin function and cannot name %s", id.Name, what)
	}
}

// write is one path a statement writes, for the parallel check.
type write struct {
	path *vm.Path
	span diag.Span
}

// label is where a label was defined.
type label struct {
	id    string
	scope *scope
	span  diag.Span
}

// jump is a goto waiting for every label to be known.
type jump struct {
	target string
	scope  *scope
	span   diag.Span
}

// lowerer turns one workflow's flow into graph nodes.
type lowerer struct {
	c       *fileCompiler
	wf      *vm.Workflow
	nodes   []*vm.Node
	labels  map[string]*label
	jumps   []jump
	catches map[*vm.Node]string  // node → the catch its errors go to
	orphans map[*lang.Block]bool // duplicate blocks, checked but not wired
	// dupIDs are the node ids of the statements whose label an earlier
	// statement has: each gets one of its own ("greet#2").
	dupIDs map[*lang.Stmt]string
	// meant are the labels that gotos to undefined labels may have meant:
	// the closest one, or every label when none is close. The
	// reachability check counts them as reached.
	meant []string
}

func newLowerer(c *fileCompiler, wf *vm.Workflow) *lowerer {
	return &lowerer{c: c, wf: wf, labels: map[string]*label{}, catches: map[*vm.Node]string{}, orphans: map[*lang.Block]bool{}, dupIDs: map[*lang.Stmt]string{}}
}

// flow lowers the flow block and runs the checks that need the whole graph.
func (l *lowerer) flow(b *lang.Block) {
	root := &scope{kind: "flow"}
	l.declareLabels(b.Stmts)
	l.wf.Entry = l.block(b.Stmts, root, "", "")
	for _, n := range l.nodes {
		if catch := l.catches[n]; catch != "" {
			n.Edges = append(n.Edges, vm.Edge{Label: vm.EdgeError, To: catch})
		}
	}
	l.resolveJumps()
	slices.SortStableFunc(l.nodes, func(a, b *vm.Node) int { return a.Span.Start.Offset - b.Span.Start.Offset })
	l.wf.Nodes = l.nodes
	l.checkReachable(b.Stmts)
}

// add records a lowered node; a node inside a try body gets its error edge
// once every other edge is known (see flow).
func (l *lowerer) add(n *vm.Node, sc *scope) *vm.Node {
	if sc.catch != "" && n.Kind != vm.KindCatch {
		l.catches[n] = sc.catch
	}
	l.nodes = append(l.nodes, n)
	return n
}

// stmtID is the node id of the i-th (from 1) statement of a block.
func (l *lowerer) stmtID(st *lang.Stmt, prefix string, i int) string {
	if id := l.dupIDs[st]; id != "" {
		return id
	}
	if st.Label != nil {
		return st.Label.Name()
	}
	if prefix == "" {
		return strconv.Itoa(i)
	}
	return prefix + "." + strconv.Itoa(i)
}

// block lowers statements that continue at next and returns the id of the
// first node control reaches ("" ends the flow).
func (l *lowerer) block(stmts []*lang.Stmt, sc *scope, prefix, next string) string {
	ids := make([]string, len(stmts))
	for i, st := range stmts {
		ids[i] = l.stmtID(st, prefix, i+1)
		if st.Label != nil && l.dupIDs[st] == "" {
			l.defineLabel(st.Label, sc)
		}
	}
	entry := next
	for i := len(stmts) - 1; i >= 0; i-- {
		entry = l.stmt(stmts[i], ids[i], sc, entry)
	}
	return entry
}

// defineLabel records where a label is, for the gotos; declareLabels
// has already set the duplicates apart.
func (l *lowerer) defineLabel(lb *lang.Label, sc *scope) {
	l.labels[lb.Name()] = &label{id: lb.Name(), scope: sc, span: lb.NameSpan(l.c.file.Name)}
}

// declareLabels reports, in file order, each label an earlier statement
// of the flow already has, and gives that statement a node id of its
// own, so that the graph and the reachability check keep the two apart:
// the duplicate is the only error.
func (l *lowerer) declareLabels(stmts []*lang.Stmt) {
	first := map[string]diag.Span{}
	count := map[string]int{}
	eachStmt(stmts, func(st *lang.Stmt) {
		if st.Label == nil {
			return
		}
		name := st.Label.Name()
		span := st.Label.NameSpan(l.c.file.Name)
		f, dup := first[name]
		if !dup {
			first[name] = span
			count[name] = 1
			return
		}
		count[name]++
		l.dupIDs[st] = fmt.Sprintf("%s#%d", name, count[name])
		l.c.diags.Add(diag.Errorf(span, CodeDuplicateLabel, "label %q is already defined", name).WithRelated(f, firstDefined))
	})
}

// eachStmt calls fn for every statement of stmts and of the blocks nested
// in them, in file order.
func eachStmt(stmts []*lang.Stmt, fn func(st *lang.Stmt)) {
	for _, st := range stmts {
		fn(st)
		eachBlock(st, func(b *lang.Block) { eachStmt(b.Stmts, fn) })
	}
}

// eachBlock calls fn for every block directly nested in st, in file order.
func eachBlock(st *lang.Stmt, fn func(b *lang.Block)) {
	block := func(b *lang.Block) {
		if b != nil {
			fn(b)
		}
	}
	switch {
	case st.If != nil:
		for s := st.If; s != nil; s = s.ElseIf {
			block(s.Then)
			block(s.Else)
		}
	case st.Switch != nil:
		for _, cs := range st.Switch.Cases {
			block(cs.Body)
		}
	case st.For != nil:
		block(st.For.Body)
	case st.While != nil:
		block(st.While.Body)
	case st.Step != nil:
		block(st.Step.Body)
	case st.Parallel != nil:
		for _, b := range st.Parallel.Branches {
			block(b.Body)
		}
	case st.Try != nil:
		block(st.Try.Body)
		block(st.Try.Catch)
	case st.Node != nil && st.Node.Body != nil:
		for _, e := range st.Node.Body.Entries {
			if e.Handler != nil {
				block(e.Handler.Body)
			}
		}
	}
}

// stmt lowers one statement and returns its entry node id.
func (l *lowerer) stmt(st *lang.Stmt, id string, sc *scope, next string) string {
	c := l.c
	span := c.span(st.Pos, st.EndPos)
	labelName := ""
	if st.Label != nil {
		labelName = st.Label.Name()
	}
	node := func(kind string) *vm.Node {
		return &vm.Node{ID: id, Kind: kind, Label: labelName, Span: span}
	}
	switch {
	case st.Bad:
		// A statement that did not parse (its syntax error is reported):
		// a node that goes on, so the flow around it is checked as written.
		n := node(vm.KindSet)
		n.Edges = []vm.Edge{{Label: vm.EdgeNext, To: next}}
		l.add(n, sc)
		return id

	case st.Set != nil:
		n := node(vm.KindSet)
		for _, a := range st.Set.Assigns {
			p := c.pathOf(a.Path)
			l.wrote(p, sc)
			n.Assigns = append(n.Assigns, vm.Assign{Path: p, Value: c.value(exprSyntax(a.Value), vm.TypeAny, nil, sc.env, "")})
		}
		n.Edges = []vm.Edge{{Label: vm.EdgeNext, To: next}}
		l.add(n, sc)
		return id

	case st.If != nil:
		return l.ifStmt(st.If, id, labelName, span, sc, next)

	case st.Switch != nil:
		n := node(vm.KindSwitch)
		l.add(n, sc)
		hasDefault := false
		var firstDefault diag.Span
		for i, cs := range st.Switch.Cases {
			if cs.Default {
				if hasDefault {
					c.diags.Add(diag.Errorf(c.span(cs.Pos, cs.Pos), CodeSwitch, "switch has more than one default").WithRelated(firstDefault, firstDefined))
					l.orphan(cs.Body, sc.child("case"), fmt.Sprintf("%s.default%d", id, i+1))
					continue
				}
				hasDefault = true
				firstDefault = c.span(cs.Pos, cs.Pos)
				n.Edges = append(n.Edges, vm.Edge{Label: vm.EdgeDefault, To: l.block(cs.Body.Stmts, sc.child("case"), id+".default", next)})
				continue
			}
			if hasDefault {
				c.diags.Errorf(c.span(cs.Pos, cs.Pos), CodeSwitch, "case after default: default must come last")
			}
			n.Cases = append(n.Cases, c.cond(condSyntax(cs.Cond), sc.env))
			label := fmt.Sprintf("case %d", len(n.Cases))
			n.Edges = append(n.Edges, vm.Edge{Label: label, To: l.block(cs.Body.Stmts, sc.child("case"), fmt.Sprintf("%s.case%d", id, i+1), next)})
		}
		if !hasDefault {
			c.diags.Errorf(c.span(st.Switch.Pos, st.Switch.Pos), CodeSwitch, "switch needs a default case")
			n.Edges = append(n.Edges, vm.Edge{Label: vm.EdgeDefault, To: next})
		}
		return id

	case st.For != nil:
		n := node(vm.KindFor)
		n.Var = st.For.Var.Name
		c.checkLocal(st.For.Var, "a loop variable")
		n.Iter = c.value(condSyntax(st.For.Iter), vm.TypeList, nil, sc.env, "a for loop's list")
		l.add(n, sc)
		body := sc.child("for")
		body.env = body.env.with(n.Var)
		n.Edges = []vm.Edge{{Label: vm.EdgeBody, To: l.block(st.For.Body.Stmts, body, id+".body", id)}, {Label: vm.EdgeNext, To: next}}
		return id

	case st.While != nil:
		n := node(vm.KindWhile)
		n.Cond = c.cond(condSyntax(st.While.Cond), sc.env)
		if m := st.While.Max; m == nil {
			c.diags.Errorf(c.span(st.While.Pos, st.While.Body.Pos), CodeWhileMax, "while needs a bound: write `while cond max N { … }`")
		} else if v, err := strconv.ParseInt(m.Value, 0, 64); err != nil || v < 1 {
			c.diags.Errorf(c.span(m.Pos, m.EndPos), CodeWhileMax, "max must be a positive whole number, found %s", m.Value)
		} else {
			n.Max = int(v)
		}
		l.add(n, sc)
		n.Edges = []vm.Edge{{Label: vm.EdgeBody, To: l.block(st.While.Body.Stmts, sc.child("while"), id+".body", id)}, {Label: vm.EdgeNext, To: next}}
		return id

	case st.Goto != nil:
		t := st.Goto.Target
		if labelName != "" {
			c.diags.Errorf(st.Label.NameSpan(c.file.Name), CodeGotoScope, "a goto cannot be labelled")
		}
		l.jumps = append(l.jumps, jump{target: t.Name, scope: sc, span: c.span(t.Pos, t.EndPos)})
		return t.Name

	case st.Step != nil:
		n := node(vm.KindStep)
		if name, ok := st.Step.Name.Literal(); ok && name != "" {
			n.Name = name
		} else {
			c.diags.Errorf(c.span(st.Step.Name.Pos, st.Step.Name.EndPos), CodeWrongType, "a step's name must be a non-empty string literal without <<…>>")
		}
		end := &vm.Node{ID: id + ".end", Kind: vm.KindStepEnd, Name: n.Name, Span: c.span(st.Step.Body.EndPos, st.Step.Body.EndPos)}
		end.Edges = []vm.Edge{{Label: vm.EdgeNext, To: next}}
		l.add(n, sc)
		n.Edges = []vm.Edge{{Label: vm.EdgeNext, To: l.block(st.Step.Body.Stmts, sc.child("step"), id, end.ID)}}
		l.add(end, sc)
		return id

	case st.Parallel != nil:
		return l.parallel(st.Parallel, node(vm.KindParallel), sc, next)

	case st.Try != nil:
		n := node(vm.KindTry)
		catch := &vm.Node{ID: id + ".catch", Kind: vm.KindCatch, Span: c.span(st.Try.Catch.Pos, st.Try.Catch.Pos)}
		cs := sc.child("catch")
		if v := st.Try.Var; v != nil {
			c.checkLocal(v, "an error variable")
			catch.Var = v.Name
			cs.env = cs.env.with(v.Name)
		}
		l.add(n, sc)
		body := sc.child("try")
		body.catch = catch.ID
		n.Edges = []vm.Edge{{Label: vm.EdgeNext, To: l.block(st.Try.Body.Stmts, body, id, next)}}
		l.add(catch, sc)
		catch.Edges = []vm.Edge{{Label: vm.EdgeNext, To: l.block(st.Try.Catch.Stmts, cs, catch.ID, next)}}
		return id

	case st.End != nil:
		if sc.within("branch") != "" {
			c.diags.Errorf(span, CodeParallelEnd, "end is not allowed inside a parallel branch")
		}
		l.add(node(vm.KindEnd), sc)
		return id

	case st.Fail != nil:
		n := node(vm.KindFail)
		n.Arg = c.value(exprSyntax(st.Fail.Message), vm.TypeString, nil, sc.env, "a fail message")
		l.add(n, sc)
		return id

	case st.Node != nil:
		n := l.node(st.Node, id, labelName, sc, next)
		n.Span = span
		return id
	}
	panic("compiler: statement without a form")
}

func (l *lowerer) ifStmt(s *lang.If, id, labelName string, span diag.Span, sc *scope, next string) string {
	c := l.c
	n := &vm.Node{ID: id, Kind: vm.KindIf, Label: labelName, Span: span}
	n.Cond = c.cond(condSyntax(s.Cond), sc.env)
	l.add(n, sc)
	then := l.block(s.Then.Stmts, sc.child("then"), id+".then", next)
	otherwise := next
	switch {
	case s.ElseIf != nil:
		otherwise = l.ifStmt(s.ElseIf, id+".else", "", c.span(s.ElseIf.Pos, s.ElseIf.EndPos), sc, next)
	case s.Else != nil:
		otherwise = l.block(s.Else.Stmts, sc.child("else"), id+".else", next)
	}
	n.Edges = []vm.Edge{{Label: vm.EdgeTrue, To: then}, {Label: vm.EdgeFalse, To: otherwise}}
	return id
}

func (l *lowerer) parallel(p *lang.Parallel, n *vm.Node, sc *scope, next string) string {
	c := l.c
	if len(p.Branches) == 0 {
		c.diags.Errorf(n.Span, CodeParallelEmpty, "parallel needs at least one `branch name { … }`")
	}
	join := &vm.Node{ID: n.ID + ".join", Kind: vm.KindJoin, Span: c.span(p.EndPos, p.EndPos)}
	join.Edges = []vm.Edge{{Label: vm.EdgeNext, To: next}}
	l.add(n, sc)
	var names []string
	var nameSpans []diag.Span
	var writes [][]write
	for _, b := range p.Branches {
		name := b.Name.Name
		span := c.span(b.Name.Pos, b.Name.EndPos)
		if i := slices.Index(names, name); i >= 0 {
			c.diags.Add(diag.Errorf(span, CodeDuplicate, "branch %q is already defined in this parallel", name).WithRelated(nameSpans[i], firstDefined))
			l.orphan(b.Body, sc.child("branch"), fmt.Sprintf("%s.%s#%d", n.ID, name, len(names)+1))
			continue
		}
		names = append(names, name)
		nameSpans = append(nameSpans, span)
		bs := sc.child("branch")
		var w []write
		bs.writes = &w
		entry := l.block(b.Body.Stmts, bs, n.ID+"."+name, join.ID)
		n.Edges = append(n.Edges, vm.Edge{Label: "branch " + name, To: entry})
		writes = append(writes, w)
		if sc.writes != nil {
			*sc.writes = append(*sc.writes, w...)
		}
	}
	n.Name = strings.Join(names, ",")
	l.add(join, sc)
	for j := range writes {
		for i := range j {
			for _, wj := range writes[j] {
				for _, wi := range writes[i] {
					if overlaps(wi.path, wj.path) {
						path := shorter(wi.path, wj.path)
						c.diags.Add(diag.Errorf(wj.span, CodeParallelWrite, "branches %q and %q both write %s", names[i], names[j], path).
							WithRelated(wi.span, fmt.Sprintf("branch %q writes %s here", names[i], wi.path)))
					}
				}
			}
		}
	}
	return n.ID
}

// overlaps reports whether writing a and b touches the same value: one is
// the other or a prefix of it.
func overlaps(a, b *vm.Path) bool {
	if a.Root != b.Root {
		return false
	}
	n := min(len(a.Keys), len(b.Keys))
	return slices.Equal(a.Keys[:n], b.Keys[:n])
}

func shorter(a, b *vm.Path) string {
	if len(a.Keys) <= len(b.Keys) {
		return a.String()
	}
	return b.String()
}

// wrote records that a statement in sc writes p.
func (l *lowerer) wrote(p *vm.Path, sc *scope) {
	if p == nil {
		return
	}
	l.c.write(p.Root)
	if sc.writes != nil {
		*sc.writes = append(*sc.writes, write{path: p, span: p.Span})
	}
}

// orphan lowers a block that is not wired into the graph (a duplicate
// default, branch or handler) so that its statements are still checked.
func (l *lowerer) orphan(b *lang.Block, sc *scope, prefix string) {
	l.orphans[b] = true
	l.block(b.Stmts, sc, prefix, "")
}

// resolveJumps checks every goto against the labels.
func (l *lowerer) resolveJumps() {
	c := l.c
	names := make([]string, 0, len(l.labels))
	for name := range l.labels {
		names = append(names, name)
	}
	for _, j := range l.jumps {
		lb := l.labels[j.target]
		if lb == nil {
			c.diags.Errorf(j.span, CodeUndefinedLabel, "goto to undefined label %q%s", j.target, suggest(j.target, names))
			if meant := closest(j.target, names); meant != "" {
				l.meant = append(l.meant, meant)
			} else {
				l.meant = append(l.meant, names...)
			}
			continue
		}
		crossed := ""
		s := j.scope
		for ; s != nil && s != lb.scope; s = s.parent {
			if s.kind == "step" || s.kind == "branch" {
				crossed = s.kind
			}
		}
		switch {
		case s == nil:
			c.diags.Errorf(j.span, CodeGotoScope, "goto into a nested block: label %q is not in this block or an enclosing one", j.target)
		case crossed == "step":
			c.diags.Errorf(j.span, CodeGotoScope, "goto cannot leave a step block")
		case crossed == "branch":
			c.diags.Errorf(j.span, CodeParallelEnd, "goto cannot leave a parallel branch")
		}
	}
}

// checkReachable reports the first statement of every run of statements
// that control never reaches.
func (l *lowerer) checkReachable(stmts []*lang.Stmt) {
	reached := map[string]bool{}
	var visit func(id string)
	visit = func(id string) {
		if id == "" || reached[id] {
			return
		}
		reached[id] = true
		if n := l.wf.Node(id); n != nil {
			for _, e := range n.Edges {
				visit(e.To)
			}
		}
	}
	visit(l.wf.Entry)
	// A goto to an undefined label is already an error: the statements
	// it may have meant to reach are not reported as well.
	for _, name := range l.meant {
		visit(name)
	}
	l.reachBlock(stmts, "", true, reached)
}

func (l *lowerer) reachBlock(stmts []*lang.Stmt, prefix string, falls bool, reached map[string]bool) {
	reported := false
	for i, st := range stmts {
		id := l.stmtID(st, prefix, i+1)
		r := falls
		if st.Goto == nil {
			r = reached[id]
		}
		if !r && !reported {
			l.c.diags.Errorf(l.c.span(st.Pos, st.Pos), CodeUnreachable, "unreachable statement")
		}
		reported = !r
		if r {
			l.reachChildren(st, id, reached)
		}
		falls = r && st.Goto == nil && st.End == nil && st.Fail == nil
	}
}

// reachChildren checks the blocks nested in a reachable statement.
func (l *lowerer) reachChildren(st *lang.Stmt, id string, reached map[string]bool) {
	block := func(b *lang.Block, prefix string) {
		if b != nil && !l.orphans[b] {
			l.reachBlock(b.Stmts, prefix, true, reached)
		}
	}
	switch {
	case st.If != nil:
		for s, p := st.If, id; s != nil; s, p = s.ElseIf, p+".else" {
			block(s.Then, p+".then")
			block(s.Else, p+".else")
		}
	case st.Switch != nil:
		for i, cs := range st.Switch.Cases {
			if cs.Default {
				block(cs.Body, id+".default")
			} else {
				block(cs.Body, fmt.Sprintf("%s.case%d", id, i+1))
			}
		}
	case st.For != nil:
		block(st.For.Body, id+".body")
	case st.While != nil:
		block(st.While.Body, id+".body")
	case st.Step != nil:
		block(st.Step.Body, id)
	case st.Parallel != nil:
		for _, b := range st.Parallel.Branches {
			block(b.Body, id+"."+b.Name.Name)
		}
	case st.Try != nil:
		block(st.Try.Body, id)
		block(st.Try.Catch, id+".catch")
	case st.Node != nil && st.Node.Body != nil:
		for _, e := range st.Node.Body.Entries {
			if e.Handler != nil {
				block(e.Handler.Body, id+"."+e.Handler.Name.Name)
			}
		}
	}
}
