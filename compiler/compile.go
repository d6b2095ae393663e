// Package compiler checks .wf files and lowers their workflows to the graph
// the VM runs.
//
// Compile takes the source files of one program and a *vm.Registry that
// describes the node kinds and builtins, and returns a *vm.Program and every
// diagnostic of every file at once, sorted by position: a syntax error in
// one file never hides another file's errors. Every expression and template
// is compiled by expr here, and its errors point at their exact line and
// column in the .wf file; their codes come from the phase of expr that
// failed and the types its checker found, not from expr's wording. A
// diagnostic about a name declared twice has a related span at the first
// declaration. The compiler learns node kinds only from the registry; it
// never imports the stdlib.
package compiler

import (
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/vm"
	"github.com/expr-lang/expr"
)

// Source is one source file's name and text: a .wf file, or a lock file
// of MCP servers when its base name is mcplock.FileName.
type Source struct {
	Name string
	Text []byte
}

// Diagnostic codes of the checks. Syntax codes (WF001–WF004) are lang's.
const (
	CodeUnknownKind     = "WF101" // unknown node kind
	CodeUnknownKey      = "WF102" // unknown key of a node or tool
	CodeUnknownHandler  = "WF103" // unknown `on` handler
	CodeUnknownFunc     = "WF104" // call of an unknown function
	CodeMissingKey      = "WF105" // required key missing
	CodeWrongType       = "WF106" // a value of the wrong type
	CodeArg             = "WF107" // positional argument missing or not allowed
	CodeWord            = "WF108" // missing or unknown mode or method word
	CodeDuplicate       = "WF109" // key, handler, attribute or branch given twice
	CodeMissingHandler  = "WF110" // required handler missing
	CodeNoResult        = "WF111" // `-> $path` on a node without a result
	CodePredict         = "WF112" // a prediction of a state key that does not fit the tool call
	CodeUnknownAttr     = "WF120" // unknown workflow attribute
	CodeDuplicateID     = "WF121" // two workflows with one id
	CodeFlow            = "WF122" // workflow without a flow, or with two
	CodeDuplicateLabel  = "WF123" // a label used twice in a workflow
	CodeUndefinedLabel  = "WF124" // goto to a label that does not exist
	CodeGotoScope       = "WF125" // goto into a nested block, or out of a step or branch
	CodeUnreachable     = "WF126" // a statement control never reaches
	CodeSwitch          = "WF127" // switch without default, or default not last
	CodeWhileMax        = "WF128" // while without a positive max
	CodeDuplicateTool   = "WF130" // two tools with one name
	CodeToolShape       = "WF131" // a tool without one implementation
	CodeSuspendLabel    = "WF140" // a suspending node without a label
	CodeSuspendPlace    = "WF141" // a suspending node inside step, parallel or for
	CodeConversation    = "WF142" // a conversation-only node in a stateless workflow
	CodeParallelWrite   = "WF143" // two parallel branches write the same path
	CodeParallelEnd     = "WF144" // end or goto leaving a parallel branch
	CodeParallelEmpty   = "WF145" // parallel without branches
	CodeExpr            = "WF150" // an expression or template that does not compile
	CodeNotBool         = "WF151" // a condition that is not boolean
	CodeBadCall         = "WF152" // a builtin called with wrong arguments
	CodeUnknownName     = "WF153" // an unknown bare name
	CodeUnwrittenRoot   = "WF160" // a context root read but never written (warning)
	CodeUnknownWorkflow = "WF170" // call of an unknown workflow
	CodeCallCycle       = "WF171" // workflows that call each other in a cycle
	CodeCallConvo       = "WF172" // call of a conversation workflow

	CodeServerDecl        = "WF180" // an mcp server without exactly one of command and url, with a key its transport does not take, or an unknown attribute
	CodeDuplicateServer   = "WF181" // two mcp servers with one name
	CodeUnknownServer     = "WF182" // a call of an mcp server no file declares
	CodeServerContext     = "WF183" // an mcp server's value that reads the context
	CodeLiteralSecret     = "WF184" // a secret written as a literal in an mcp server's env or headers (warning)
	CodeNotLocked         = "WF185" // an mcp server that mcp.lock.json does not lock (warning)
	CodeStaleLock         = "WF186" // an mcp server declared otherwise than when it was locked (warning)
	CodeLockFile          = "WF187" // an mcp.lock.json that cannot be read
	CodeUnknownServerTool = "WF188" // a tool the locked mcp server does not list
	CodeToolNotAllowed    = "WF189" // a tool the mcp server's tools list leaves out
	CodeToolArgs          = "WF190" // a call's arguments that do not fit the tool's input schema
	CodeToolClash         = "WF191" // a tools list that offers two tools with one name, or names both a tool and a server
)

// The messages of related spans that point at the first of two
// declarations of one name.
const (
	firstDefined = "first defined here"
	firstSet     = "first set here"
)

// builtinRoots are the context roots that exist without being written.
var builtinRoots = []string{"agent", "input", "user"}

// Compile checks and lowers every workflow of srcs against reg. The program
// is nil when any file has an error; the diagnostics are sorted. Sources
// are read as lang.Clean returns them (no byte order mark, LF line ends).
//
// A source whose base name is mcplock.FileName is the lock file of the MCP
// servers declared by the .wf files of its directory: the servers get
// their Locked entry from it, and the calls of their tools are checked
// against it.
func Compile(reg *vm.Registry, srcs ...Source) (*vm.Program, diag.List) {
	return compile(reg, false, srcs)
}

// Check reports the diagnostics Compile reports for srcs, without the
// program: what it builds of a file is let go once the file is checked,
// and the file's syntax tree is parsed again then rather than kept from
// the first pass (which only learns the names the files declare), so that
// checking many files holds little more than their text in memory.
func Check(reg *vm.Registry, srcs ...Source) diag.List {
	_, diags := compile(reg, true, srcs)
	return diags
}

// compile is Compile, or Check when checkOnly.
func compile(reg *vm.Registry, checkOnly bool, srcs []Source) (*vm.Program, diag.List) {
	sh := newShared(reg)
	cleaned := make([]Source, len(srcs))
	var wfSrcs, lockSrcs []Source
	for i, s := range srcs {
		cleaned[i] = Source{Name: s.Name, Text: lang.Clean(s.Text)}
		if isLock(s.Name) {
			lockSrcs = append(lockSrcs, cleaned[i])
		} else {
			wfSrcs = append(wfSrcs, cleaned[i])
		}
	}
	locks, lockDiags := readLocks(lockSrcs)
	parsed := make([]*fileCompiler, len(wfSrcs))
	kinds := reg.KindNames()
	forEach(len(wfSrcs), func(i int) {
		text := wfSrcs[i].Text
		f, diags := lang.Parse(wfSrcs[i].Name, text, lang.WithKinds(kinds))
		if checkOnly && f != nil {
			f = declarations(f)
		}
		parsed[i] = &fileCompiler{shared: sh, src: text, file: diag.NewFile(wfSrcs[i].Name, text), ast: f, diags: diags}
	})

	// Workflow ids across files, first occurrence wins.
	ids := map[string]bool{}
	first := map[string]diag.Span{}
	for _, fc := range parsed {
		if fc.ast == nil {
			continue
		}
		for _, w := range fc.ast.Workflows {
			span := fc.span(w.Name.Pos, w.Name.EndPos)
			if ids[w.Name.Name] {
				fc.diags.Add(diag.Errorf(span, CodeDuplicateID, "workflow %q is already defined", w.Name.Name).WithRelated(first[w.Name.Name], firstDefined))
				fc.skip = append(fc.skip, w.Pos.Offset)
				continue
			}
			ids[w.Name.Name] = true
			first[w.Name.Name] = span
		}
	}
	sh.workflowIDs = ids
	for _, fc := range parsed {
		sh.parseFailed = sh.parseFailed || fc.ast == nil || fc.ast.Lost
	}
	servers := sh.declareServers(parsed, locks)

	forEach(len(parsed), func(i int) {
		fc := parsed[i]
		if checkOnly && fc.ast != nil {
			// The whole tree, again: the first pass kept only declarations.
			fc.ast, _ = lang.Parse(fc.file.Name, fc.src, lang.WithKinds(kinds))
		}
		if fc.ast == nil {
			return
		}
		syntax := len(fc.diags)
		fc.compile()
		fc.diags = afterSyntaxErrors(fc.ast, fc.diags[:syntax], fc.diags[syntax:])
		if checkOnly {
			// What the checks across files need of a workflow: its id and
			// whether it is a conversation.
			for i, w := range fc.workflows {
				fc.workflows[i] = &vm.Workflow{ID: w.ID, Conversation: w.Conversation}
			}
			fc.ast = nil
		}
	})

	all := lockDiags
	var hash string
	if !checkOnly {
		_, hash = Bundle(cleaned)
	}
	prog := &vm.Program{Hash: hash, Servers: servers}
	var calls []callRef
	for _, fc := range parsed {
		all = append(all, fc.diags...)
		for _, w := range fc.workflows {
			w.Hash = hash
		}
		prog.Workflows = append(prog.Workflows, fc.workflows...)
		calls = append(calls, fc.calls...)
	}
	all = append(all, callCycles(calls)...)
	convo := map[string]bool{}
	for _, w := range prog.Workflows {
		convo[w.ID] = w.Conversation
	}
	for _, c := range calls {
		if convo[c.to] {
			all.Errorf(c.span, CodeCallConvo, "call of conversation workflow %q: a called workflow runs to its end in one go, so it cannot be a conversation", c.to)
		}
	}
	all.Sort()
	if all.HasErrors() {
		return nil, all
	}
	slices.SortFunc(prog.Workflows, func(a, b *vm.Workflow) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return prog, all
}

// declarations is what the first pass of Check keeps of a file's tree:
// its MCP servers, and its workflows' names without their bodies.
func declarations(f *lang.File) *lang.File {
	d := &lang.File{Pos: f.Pos, EndPos: f.EndPos, Name: f.Name, Servers: f.Servers, Lost: f.Lost}
	for _, w := range f.Workflows {
		d.Workflows = append(d.Workflows, &lang.Workflow{Pos: w.Pos, EndPos: w.EndPos, Name: w.Name})
	}
	return d
}

// afterSyntaxErrors returns the syntax diagnostics of file followed by its
// other diagnostics, less those that may only follow from text that did
// not parse: in a workflow or MCP server with a syntax error, a check that
// something is missing, unreachable or never written may be wrong, since
// the text that did not parse may hold it. Checks of what did parse stay.
func afterSyntaxErrors(file *lang.File, syntax, others diag.List) diag.List {
	if !slices.ContainsFunc(syntax, func(d diag.Diagnostic) bool { return d.Code == lang.CodeSyntax }) {
		return append(syntax, others...)
	}
	var broken [][2]int // offsets of the declarations with a syntax error
	for _, d := range file.Decls() {
		var pos, end lang.Position
		switch d := d.(type) {
		case *lang.Workflow:
			pos, end = d.Pos, d.EndPos
		case *lang.Server:
			pos, end = d.Pos, d.EndPos
		}
		for _, e := range syntax {
			if (e.Code == lang.CodeSyntax || e.Code == lang.CodeDepth) && e.Span.Start.Offset >= pos.Offset && e.Span.Start.Offset <= end.Offset {
				broken = append(broken, [2]int{pos.Offset, end.Offset})
				break
			}
		}
	}
	out := syntax
	for _, d := range others {
		at := d.Span.Start.Offset
		inBroken := slices.ContainsFunc(broken, func(r [2]int) bool { return r[0] <= at && at <= r[1] })
		if inBroken && mayFollowFromSyntax(d) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// mayFollowFromSyntax reports whether d says that something is missing,
// unreachable or never written: what text that did not parse may hold.
func mayFollowFromSyntax(d diag.Diagnostic) bool {
	switch d.Code {
	case CodeMissingKey, CodeMissingHandler, CodeUndefinedLabel, CodeUnreachable,
		CodeToolShape, CodeParallelEmpty, CodeUnwrittenRoot, CodeServerDecl:
		return true
	case CodeFlow:
		return strings.Contains(d.Message, "has no flow")
	case CodeSwitch:
		return strings.Contains(d.Message, "needs a default")
	}
	return false
}

// forEach runs fn(0…n-1) on up to GOMAXPROCS goroutines.
func forEach(n int, fn func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// shared is what every file's compilation reads and nothing writes.
type shared struct {
	reg         *vm.Registry
	baseOpts    []expr.Option
	funcs       map[string]bool
	funcNames   []string
	workflowIDs map[string]bool
	parseFailed bool // some file has a syntax error: its workflows are unknown
	// The MCP servers of every file, the first of each name, and their
	// names, sorted.
	servers     map[string]*vm.Server
	serverNames []string
}

func newShared(reg *vm.Registry) *shared {
	sh := &shared{reg: reg, funcs: map[string]bool{}}
	sh.baseOpts = reg.ExprOptions()
	if reg.Builtin(textFunc) == nil {
		sh.baseOpts = append(sh.baseOpts, expr.Function(textFunc, func(args ...any) (any, error) { return vm.Text(args[0]), nil }, new(func(any) string)))
	}
	for _, name := range builtinNames() {
		sh.funcs[name] = true
	}
	for _, b := range reg.Builtins() {
		sh.funcs[b.Name] = true
	}
	sh.funcs[textFunc] = true
	for name := range sh.funcs {
		sh.funcNames = append(sh.funcNames, name)
	}
	sort.Strings(sh.funcNames)
	return sh
}

// callRef is one `call` of a workflow, for the cycle check.
type callRef struct {
	from, to string
	span     diag.Span
}

// callCycles reports every call that closes a cycle of workflows.
func callCycles(calls []callRef) diag.List {
	graph := map[string][]callRef{}
	for _, c := range calls {
		graph[c.from] = append(graph[c.from], c)
	}
	var out diag.List
	for _, c := range calls {
		if path := reaches(graph, c.to, c.from, map[string]bool{}); path != nil {
			cycle := append([]string{c.from}, path...)
			out.Errorf(c.span, CodeCallCycle, "recursive call: %s", joinArrow(cycle))
		}
	}
	return out
}

// reaches returns the workflows on a path of calls from `from` to `to`.
func reaches(graph map[string][]callRef, from, to string, seen map[string]bool) []string {
	if from == to {
		return []string{to}
	}
	if seen[from] {
		return nil
	}
	seen[from] = true
	for _, c := range graph[from] {
		if p := reaches(graph, c.to, to, seen); p != nil {
			return append([]string{from}, p...)
		}
	}
	return nil
}

func joinArrow(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += " -> "
		}
		s += n
	}
	return s
}

// fileCompiler compiles the workflows of one parsed file.
type fileCompiler struct {
	*shared
	src   []byte
	file  *diag.File
	ast   *lang.File
	diags diag.List
	skip  []int // offsets of the workflows whose ids are duplicates, already reported: checked, not kept

	workflows []*vm.Workflow
	calls     []callRef // calls of the workflows kept in the program

	// per workflow
	reads  map[string]diag.Span // root → first read
	writes map[string]bool
	bound  map[string]bool // variables a tool's result reads, such as "response": suggestions for a misspelt root
	// convoUnsure says that the workflow's conversation attribute has a
	// value that is neither true nor false, already reported: the checks
	// that depend on the mode are left out.
	convoUnsure bool
}

func (c *fileCompiler) compile() {
	for _, w := range c.ast.Workflows {
		calls := len(c.calls)
		wf := c.workflow(w)
		if slices.Contains(c.skip, w.Pos.Offset) {
			// A duplicate is checked, so its errors show, but not kept.
			c.calls = c.calls[:calls]
			continue
		}
		c.workflows = append(c.workflows, wf)
	}
}

// read records a read of $root.
func (c *fileCompiler) read(root string, span diag.Span) {
	if _, seen := c.reads[root]; !seen {
		c.reads[root] = span
	}
}

// write records a write of $root.
func (c *fileCompiler) write(root string) { c.writes[root] = true }

// rootNames lists the roots an expression may read: builtin and written.
func (c *fileCompiler) rootNames() []string {
	names := make([]string, 0, len(builtinRoots)+len(c.writes))
	for _, r := range builtinRoots {
		names = append(names, "$"+r)
	}
	for r := range c.writes {
		names = append(names, "$"+r)
	}
	sort.Strings(names)
	return names
}

// checkRoots warns about roots read but never written.
func (c *fileCompiler) checkRoots() {
	roots := make([]string, 0, len(c.reads))
	for r := range c.reads {
		roots = append(roots, r)
	}
	sort.Strings(roots)
	for _, r := range roots {
		if c.writes[r] || slices.Contains(builtinRoots, r) {
			continue
		}
		names := c.rootNames()
		for v := range c.bound {
			names = append(names, "$"+v)
		}
		c.diags.Warningf(c.reads[r], CodeUnwrittenRoot, "$%s is read but nothing writes it%s", r, suggest("$"+r, names))
	}
}
