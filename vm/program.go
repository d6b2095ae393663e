package vm

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/mcplock"
	exprvm "github.com/expr-lang/expr/vm"
)

// Program is every workflow compiled from one set of source files.
type Program struct {
	Workflows []*Workflow // sorted by id
	Servers   []*Server   // the MCP servers the sources declare, sorted by name
	Hash      string      // the version: the hash of the bundle of its sources
}

// Server returns the MCP server declared with the given name, or nil.
func (p *Program) Server(name string) *Server {
	for _, s := range p.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Server is an `mcp name { … }` declaration: a Model Context Protocol
// server whose tools workflows call, started as a command (stdio) or
// reached at a URL (streamable HTTP). Its values may call builtins such as
// env() but read no context: EvalConst evaluates them.
type Server struct {
	Name    string
	Command *Value // stdio: the program to start; nil for a server reached by URL
	Args    *Value // stdio: a list of strings, or nil
	Env     *Value // stdio: an object of strings added to the environment, or nil
	URL     *Value // streamable HTTP: the endpoint; nil for a stdio server
	Headers *Value // streamable HTTP: an object of strings sent with every request, or nil
	// Tools are the tools workflows may use (`tools = ["a", "b"]`); nil
	// allows every tool the server lists.
	Tools []string
	// Timeout bounds one tool call (0: the default); Retry is how many more
	// times a call that could not reach the server is tried, waiting
	// Backoff ("first..longest", "" for the default) between tries.
	Timeout time.Duration
	Retry   int
	Backoff string
	// Locked is what the lock file next to the declaring file records of
	// the server, or nil when it has no entry for it.
	Locked *mcplock.Server
	File   string    // the declaring file's name, as given to the compiler
	Span   diag.Span // the whole declaration
}

// Allows reports whether workflows may use the server's tool name.
func (s *Server) Allows(name string) bool {
	return s.Tools == nil || slices.Contains(s.Tools, name)
}

// Workflow returns the workflow with the given id, or nil.
func (p *Program) Workflow(id string) *Workflow {
	i, ok := slices.BinarySearchFunc(p.Workflows, id, func(w *Workflow, id string) int {
		switch {
		case w.ID < id:
			return -1
		case w.ID > id:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return p.Workflows[i]
}

// The busy policies: what a request does that arrives while a run of its
// thread is in progress.
const (
	BusyReject    = "reject"    // it is refused (409); the default
	BusyEnqueue   = "enqueue"   // it runs when the runs before it have ended, in order
	BusyInterrupt = "interrupt" // the run in progress is cancelled, then it runs
)

// BusyPolicies are the values of a workflow's busy attribute.
var BusyPolicies = []string{BusyReject, BusyEnqueue, BusyInterrupt}

// Workflow is one `workflow` block lowered to a graph.
type Workflow struct {
	ID           string
	Title        string
	Description  string
	Conversation bool
	Busy         string    // what a request on a thread that runs does: BusyReject ("" too), BusyEnqueue or BusyInterrupt
	Span         diag.Span // the whole workflow block
	Hash         string    // the program's version (Program.Hash)
	Entry        string    // id of the first node; "" for an empty flow
	Nodes        []*Node   // in source order
	Tools        []*Tool   // backend tools, in source order

	indexed sync.Once        // builds index, at the first Node
	index   map[string]*Node // Nodes by id
}

// Node returns the node with the given id, or nil. Safe for concurrent
// use: the runs of a program share its workflows.
func (w *Workflow) Node(id string) *Node {
	w.indexed.Do(func() {
		w.index = make(map[string]*Node, len(w.Nodes))
		for _, n := range w.Nodes {
			w.index[n.ID] = n
		}
	})
	return w.index[id]
}

// Tool returns the backend tool with the given name, or nil.
func (w *Workflow) Tool(name string) *Tool {
	for _, t := range w.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Tool is a backend tool a model node may call.
type Tool struct {
	Name        string
	Description string
	Parameters  *Value // JSON Schema of the arguments; nil means any object
	Result      *Value // `result = expr`: the implementation, or beside Impl what shapes its result; or nil
	Impl        *Node  // the `http …` or `call …` implementation, or nil
	Span        diag.Span
}

// The control kinds the compiler lowers statements into. Node kinds of the
// stdlib ("say", "model", "http", "state sync"…) are named by their KindSpec.
const (
	KindSet      = "set"      // Assigns; edge next
	KindIf       = "if"       // Cond; edges true, false
	KindSwitch   = "switch"   // Cases; edges "case 1"…, default
	KindFor      = "for"      // Var in Iter; edges body, next
	KindWhile    = "while"    // Cond, Max; edges body, next
	KindStep     = "step"     // Name; STEP_STARTED; edge next
	KindStepEnd  = "step_end" // Name; STEP_FINISHED; edge next
	KindParallel = "parallel" // edges "branch NAME"…, each ends at the join
	KindTry      = "try"      // enters a try block; edge next
	KindJoin     = "join"     // merges the branches; edge next
	KindCatch    = "catch"    // binds the error to Var; edge next
	KindEnd      = "end"      // finishes the run
	KindFail     = "fail"     // Arg is the message; ends with RUN_ERROR
)

// The edge labels the compiler produces.
const (
	EdgeNext    = "next"
	EdgeTrue    = "true"
	EdgeFalse   = "false"
	EdgeBody    = "body"
	EdgeDefault = "default"
	EdgeError   = "error"
)

// Node is one vertex of a workflow graph.
type Node struct {
	ID    string    // the label, or an id derived from the statement's path
	Kind  string    // a Kind* constant or a KindSpec name
	Spec  *KindSpec // the kind of a node of a registered kind; nil for the Kind* constants
	Label string    // the label written in the source, if any
	Span  diag.Span

	Word string            // the leading word of kinds that take one (http's method)
	Arg  *Value            // the positional argument
	Keys map[string]*Value // the body's `key = value` entries as written
	Out  *Path             // `-> $path`, or nil

	Assigns []Assign // KindSet
	Cond    *Value   // KindIf, KindWhile
	Cases   []*Value // KindSwitch, one per "case N" edge
	Var     string   // KindFor's loop variable, KindCatch's error variable
	Iter    *Value   // KindFor's list
	Max     int      // KindWhile's iteration bound
	Name    string   // KindStep / KindStepEnd step name; KindParallel branch names joined

	Suspends bool   // whether the node may suspend the run
	Edges    []Edge // named successors, in a fixed order
}

// Edge is a named successor of a node.
type Edge struct {
	Label string
	To    string
}

// Next returns the target of the edge with the given label, or "".
func (n *Node) Next(label string) string {
	for _, e := range n.Edges {
		if e.Label == label {
			return e.To
		}
	}
	return ""
}

// Assign is one `$path = value` of a set statement.
type Assign struct {
	Path  *Path
	Value *Value
}

// Path is a context path written as $root.key[0].key.
type Path struct {
	Root string    // without the $
	Keys []PathKey // the steps after the root
	Span diag.Span
}

// PathKey is one step of a path: an object key, or a list index when Name
// is empty.
type PathKey struct {
	Name  string
	Index int
}

// String renders p as written: $root.a[0].b.
func (p *Path) String() string {
	s := "$" + p.Root
	for _, k := range p.Keys {
		if k.Name == "" {
			s += "[" + strconv.Itoa(k.Index) + "]"
		} else {
			s += "." + k.Name
		}
	}
	return s
}

// Value is a compiled expression or string template.
type Value struct {
	Span     diag.Span
	Source   string    // the text as written in the .wf file
	Expr     *Expr     // set for expressions
	Template *Template // set for string literals, with or without <<…>>
	Path     *Path     // set for keys of TypePath
	Tools    []string  // for keys of TypeTools: the backend tool names listed
	Servers  []string  // for keys of TypeTools: the MCP servers listed, whose tools it offers
	Frontend bool      // for keys of TypeTools: the list also takes tools from the context (the client's)
}

// Expr is one expr-lang expression compiled at check time.
type Expr struct {
	Source  string // the expression handed to expr
	Program *exprvm.Program
}

// Template is a string with <<expr>> interpolations.
type Template struct {
	Parts []TemplatePart
}

// Single returns the expression of a template that is exactly one <<expr>>:
// such a template keeps the value's type.
func (t *Template) Single() *Expr {
	if len(t.Parts) == 1 && t.Parts[0].Expr != nil {
		return t.Parts[0].Expr
	}
	return nil
}

// TemplatePart is literal text or one interpolated expression.
type TemplatePart struct {
	Text string
	Expr *Expr
}
