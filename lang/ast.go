package lang

// The AST. Every node carries Pos (its first token) and EndPos (just past
// its last token), filled in by the parser; SpanOf converts them. The
// grammar is in the package documentation.

// File is one .wf source file: workflows and MCP server declarations, in
// any order (Decls gives them in source order).
type File struct {
	Pos    Position
	EndPos Position

	Version   *Version
	Workflows []*Workflow
	Servers   []*Server

	Name     string     // the file name given to Parse
	Comments []*Comment // every comment, in source order

	// Lost is set when text outside any workflow or server did not parse,
	// so a declaration may be missing from the tree.
	Lost bool
}

// Comment is a // or /* */ comment, kept beside the tree for the formatter.
type Comment struct {
	Pos    Position
	EndPos Position
	Text   string
}

// Version is the required first line `wf 1`.
type Version struct {
	Pos    Position
	EndPos Position

	Number string
}

// Ident is a name with its position.
type Ident struct {
	Pos    Position
	EndPos Position

	Name string
}

// Workflow is a `workflow id { … }` block.
type Workflow struct {
	Pos    Position
	EndPos Position

	Name    *Ident
	Members []*Member
}

// Server is a top-level `mcp name { key = value … }` declaration of an
// MCP server whose tools workflows use. Its body holds attributes only.
type Server struct {
	Pos    Position
	EndPos Position

	Name  *Ident
	Attrs []*Attr
}

// Member is one entry of a workflow: an attribute, a tool or the flow.
type Member struct {
	Pos    Position
	EndPos Position

	Tool *Tool
	Flow *Block
	Attr *Attr
}

// Attr is `name = value`.
type Attr struct {
	Pos    Position
	EndPos Position

	Name  *Ident
	Value *Expr
}

// Tool is a `tool name { … }` declaration of a backend tool.
type Tool struct {
	Pos    Position
	EndPos Position

	Name  *Ident
	Items []*ToolItem
}

// ToolItem is an attribute of a tool (`description = …`) or its
// implementation statement (`http GET "…"`, `call other`). The grammar
// accepts any mix; the compiler tells them apart.
type ToolItem struct {
	Pos    Position
	EndPos Position

	Name  *Ident
	Value *Expr
	Arg   *Arg
	Body  *NodeBody
	Out   *Path
}

// Block is `{ statements }`.
type Block struct {
	Pos    Position
	EndPos Position

	Stmts []*Stmt
}

// Stmt is one statement, optionally labelled.
type Stmt struct {
	Pos    Position
	EndPos Position

	Label    *Label
	Node     *Node
	Set      *Set
	If       *If
	Switch   *Switch
	For      *For
	While    *While
	Goto     *Goto
	Step     *Step
	Parallel *Parallel
	Try      *Try
	End      *End
	Fail     *Fail

	// Bad marks a statement that did not parse: it has no form, only its
	// label when it had one, and its syntax error was reported.
	Bad bool
}

// Label is `name:` before a statement.
type Label struct {
	Pos    Position
	EndPos Position

	Text string // with the colon; see Name
}

// Set is `set $path = value` or `set { $a = 1; $b = 2 }`.
type Set struct {
	Pos    Position
	EndPos Position

	Group   bool
	Assigns []*Assign
}

// Assign is `$path = value`.
type Assign struct {
	Pos    Position
	EndPos Position

	Path  *Path
	Value *Expr
}

// If is `if cond { } else if cond { } else { }`.
type If struct {
	Pos    Position
	EndPos Position

	Cond   *Cond
	Then   *Block
	ElseIf *If
	Else   *Block
}

// Switch is `switch { case cond { } … default { } }`.
type Switch struct {
	Pos    Position
	EndPos Position

	Cases []*Case
}

// Case is one `case cond { }` or `default { }` of a switch.
type Case struct {
	Pos    Position
	EndPos Position

	Default bool
	Cond    *Cond
	Body    *Block
}

// For is `for x in list { }`.
type For struct {
	Pos    Position
	EndPos Position

	Var  *Ident
	Iter *Cond
	Body *Block
}

// While is `while cond max N { }`. The parser splits a trailing `max N`
// off the condition into Max.
type While struct {
	Pos    Position
	EndPos Position

	Cond *Cond
	Body *Block

	Max *Max
}

// Max is the `max N` bound of a while loop.
type Max struct {
	Pos    Position
	EndPos Position
	Value  string
}

// Goto is `goto label`.
type Goto struct {
	Pos    Position
	EndPos Position

	Target *Ident
}

// Step is `step "name" { }`.
type Step struct {
	Pos    Position
	EndPos Position

	Name *String
	Body *Block
}

// Parallel is `parallel { branch a { } branch b { } }`.
type Parallel struct {
	Pos    Position
	EndPos Position

	Branches []*Branch
}

// Branch is one `branch name { }` of a parallel.
type Branch struct {
	Pos    Position
	EndPos Position

	Name *Ident
	Body *Block
}

// Try is `try { } catch e { }`.
type Try struct {
	Pos    Position
	EndPos Position

	Body  *Block
	Var   *Ident
	Catch *Block
}

// End is `end`.
type End struct {
	Pos    Position
	EndPos Position

	Keyword string
}

// Fail is `fail "message"`.
type Fail struct {
	Pos    Position
	EndPos Position

	Message *Expr
}

// Node is the generic node statement:
// kind [word] [arg] [{ key = value … on name { … } }] [-> $path].
// The word, if the kind takes one, is the first part of Arg; the compiler
// splits it off with the kind's declaration in hand.
type Node struct {
	Pos    Position
	EndPos Position

	Kind *Ident
	Arg  *Arg
	Body *NodeBody
	Out  *Path
}

// NodeBody is the `{ … }` of a node: keys and handlers.
type NodeBody struct {
	Pos    Position
	EndPos Position

	Entries []*Entry
}

// Entry is `key = value` or `on name { statements }`.
type Entry struct {
	Pos    Position
	EndPos Position

	Key     *Attr
	Handler *Handler
}

// Handler is `on name { statements }`.
type Handler struct {
	Pos    Position
	EndPos Position

	Name *Ident
	Body *Block
}

// Path is a context path: $root.key[0].key.
type Path struct {
	Pos    Position
	EndPos Position

	Root string
	Keys []*PathKey
}

// PathKey is one step of a path: `.name` or `[index]`.
type PathKey struct {
	Pos    Position
	EndPos Position

	Name  string
	Index string
}

// Expr is a value as written: a run of tokens with balanced brackets that
// ends at the end of the line (newlines inside brackets do not count). The
// compiler hands its text to expr, or treats it as a template when it is a
// single string literal.
type Expr struct {
	Pos    Position
	EndPos Position

	Parts []*Part
}

// Cond is an Expr that may not hold braces outside brackets, so the block
// that follows a condition, a list or an argument is not taken for a map.
// Write `if x == ({a: 1}) { … }` for a map literal there.
type Cond struct {
	Pos    Position
	EndPos Position

	Parts []*CondPart
}

// Arg is the positional argument of a node: like a Cond, but a brace
// opens a map when a key follows it (`{name: …`, `{"k": …`), so
// `output {answer: $a}` works while `say "x" { role = "user" }` still has
// a body: a node body never starts with a key and a colon.
type Arg struct {
	Pos    Position
	EndPos Position

	Parts []*ArgPart
}

// ArgPart is one token or bracketed group of an Arg.
type ArgPart struct {
	Pos    Position
	EndPos Position

	Token string
	Str   *String
	Group *ArgGroup
}

// ArgGroup is a Group of an Arg: a brace opens one only before a key.
type ArgGroup struct {
	Pos    Position
	EndPos Position

	Open  string
	Inner []*InnerPart
	Close string
}

// Part is one token or bracketed group of an Expr.
type Part struct {
	Pos    Position
	EndPos Position

	Token string
	Str   *String
	Group *Group
}

// CondPart is one token or bracketed group of a Cond.
type CondPart struct {
	Pos    Position
	EndPos Position

	Token string
	Str   *String
	Group *CondGroup
}

// Group is `( … )`, `[ … ]` or `{ … }` in an expression. Inside brackets
// newlines are allowed. The parser checks that Close matches Open.
type Group struct {
	Pos    Position
	EndPos Position

	Open  string
	Inner []*InnerPart
	Close string
}

// CondGroup is a Group that opens with a parenthesis or a bracket.
type CondGroup struct {
	Pos    Position
	EndPos Position

	Open  string
	Inner []*InnerPart
	Close string
}

// InnerPart is one token or group inside brackets.
type InnerPart struct {
	Pos    Position
	EndPos Position

	Token string
	Str   *String
	Group *Group
}

// String is a "…" or """…""" literal with <<expr>> interpolations.
type String struct {
	Pos    Position
	EndPos Position

	Heredoc bool
	Parts   []*StrPart
}

// StrPart is literal text, an escape sequence, or an interpolation.
type StrPart struct {
	Pos    Position
	EndPos Position

	Text   string
	Escape string
	Interp *Interp
}

// Interp is the expression between << and >>.
type Interp struct {
	Pos    Position
	EndPos Position

	Tokens []string
}

func (n *File) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *Comment) span() (Position, Position)   { return n.Pos, n.EndPos }
func (n *Version) span() (Position, Position)   { return n.Pos, n.EndPos }
func (n *Ident) span() (Position, Position)     { return n.Pos, n.EndPos }
func (n *Workflow) span() (Position, Position)  { return n.Pos, n.EndPos }
func (n *Server) span() (Position, Position)    { return n.Pos, n.EndPos }
func (n *Member) span() (Position, Position)    { return n.Pos, n.EndPos }
func (n *Attr) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *Tool) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *ToolItem) span() (Position, Position)  { return n.Pos, n.EndPos }
func (n *Block) span() (Position, Position)     { return n.Pos, n.EndPos }
func (n *Stmt) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *Label) span() (Position, Position)     { return n.Pos, n.EndPos }
func (n *Set) span() (Position, Position)       { return n.Pos, n.EndPos }
func (n *Assign) span() (Position, Position)    { return n.Pos, n.EndPos }
func (n *If) span() (Position, Position)        { return n.Pos, n.EndPos }
func (n *Switch) span() (Position, Position)    { return n.Pos, n.EndPos }
func (n *Case) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *For) span() (Position, Position)       { return n.Pos, n.EndPos }
func (n *While) span() (Position, Position)     { return n.Pos, n.EndPos }
func (n *Max) span() (Position, Position)       { return n.Pos, n.EndPos }
func (n *Goto) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *Step) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *Parallel) span() (Position, Position)  { return n.Pos, n.EndPos }
func (n *Branch) span() (Position, Position)    { return n.Pos, n.EndPos }
func (n *Try) span() (Position, Position)       { return n.Pos, n.EndPos }
func (n *End) span() (Position, Position)       { return n.Pos, n.EndPos }
func (n *Fail) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *Node) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *NodeBody) span() (Position, Position)  { return n.Pos, n.EndPos }
func (n *Entry) span() (Position, Position)     { return n.Pos, n.EndPos }
func (n *Handler) span() (Position, Position)   { return n.Pos, n.EndPos }
func (n *Path) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *Expr) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *Cond) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *Part) span() (Position, Position)      { return n.Pos, n.EndPos }
func (n *CondPart) span() (Position, Position)  { return n.Pos, n.EndPos }
func (n *Group) span() (Position, Position)     { return n.Pos, n.EndPos }
func (n *CondGroup) span() (Position, Position) { return n.Pos, n.EndPos }
func (n *InnerPart) span() (Position, Position) { return n.Pos, n.EndPos }
func (n *String) span() (Position, Position)    { return n.Pos, n.EndPos }
func (n *StrPart) span() (Position, Position)   { return n.Pos, n.EndPos }
func (n *Interp) span() (Position, Position)    { return n.Pos, n.EndPos }
func (n *Arg) span() (Position, Position)       { return n.Pos, n.EndPos }
func (n *ArgPart) span() (Position, Position)   { return n.Pos, n.EndPos }
func (n *ArgGroup) span() (Position, Position)  { return n.Pos, n.EndPos }
func (n *PathKey) span() (Position, Position)   { return n.Pos, n.EndPos }

// Decls returns the file's workflows (*Workflow) and MCP server
// declarations (*Server) in source order.
func (f *File) Decls() []any {
	out := make([]any, 0, len(f.Workflows)+len(f.Servers))
	w, s := 0, 0
	for w < len(f.Workflows) || s < len(f.Servers) {
		if s == len(f.Servers) || w < len(f.Workflows) && f.Workflows[w].Pos.Offset < f.Servers[s].Pos.Offset {
			out = append(out, f.Workflows[w])
			w++
			continue
		}
		out = append(out, f.Servers[s])
		s++
	}
	return out
}
