package lang

import "github.com/alecthomas/participle/v2/lexer"

// The AST. Every node carries Pos (its first token) and EndPos (just past
// its last token), filled in by the parser; Span converts them. The struct
// tags are the grammar: participle reads them.

// File is one .wf source file: workflows and MCP server declarations, in
// any order (Decls gives them in source order).
type File struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Version   *Version    `parser:"( Newline | Semi )* @@"`
	Workflows []*Workflow `parser:"( @@"`
	Servers   []*Server   `parser:"| @@ | Newline | Semi )*"`

	Name     string     `parser:""` // the file name given to Parse
	Comments []*Comment `parser:""` // every comment, in source order
}

// Comment is a // or /* */ comment, kept beside the tree for the formatter.
type Comment struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Text   string
}

// Version is the required first line `wf 1`.
type Version struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Number string `parser:"\"wf\" @Number"`
}

// Ident is a name with its position.
type Ident struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Name string `parser:"@Ident"`
}

// Workflow is a `workflow id { … }` block.
type Workflow struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Name    *Ident    `parser:"\"workflow\" @@ \"{\""`
	Members []*Member `parser:"( @@ | Newline | Semi )* \"}\""`
}

// Server is a top-level `mcp name { key = value … }` declaration of an
// MCP server whose tools workflows use. Its body holds attributes only.
type Server struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Name  *Ident  `parser:"\"mcp\" @@ \"{\""`
	Attrs []*Attr `parser:"( @@ | Newline | Semi )* \"}\""`
}

// Member is one entry of a workflow: an attribute, a tool or the flow.
type Member struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Tool *Tool  `parser:"( @@"`
	Flow *Block `parser:"| \"flow\" @@"`
	Attr *Attr  `parser:"| @@ )"`
}

// Attr is `name = value`.
type Attr struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Name  *Ident `parser:"@@ Assign"`
	Value *Expr  `parser:"@@"`
}

// Tool is a `tool name { … }` declaration of a backend tool.
type Tool struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Name  *Ident      `parser:"\"tool\" @@ \"{\""`
	Items []*ToolItem `parser:"( @@ | Newline | Semi )* \"}\""`
}

// ToolItem is an attribute of a tool (`description = …`) or its
// implementation statement (`http GET "…"`, `call other`). The grammar
// accepts any mix; the compiler tells them apart.
type ToolItem struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Name  *Ident    `parser:"@@"`
	Value *Expr     `parser:"( Assign @@ )?"`
	Arg   *Arg      `parser:"@@?"`
	Body  *NodeBody `parser:"@@?"`
	Out   *Path     `parser:"( Arrow @@ )?"`
}

// Block is `{ statements }`.
type Block struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Stmts []*Stmt `parser:"\"{\" ( @@ | Newline | Semi )* \"}\""`
}

// Stmt is one statement, optionally labelled.
type Stmt struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Label    *Label    `parser:"@@?"`
	Node     *Node     `parser:"( (?! \"set\" | \"if\" | \"switch\" | \"for\" | \"while\" | \"goto\" | \"step\" | \"parallel\" | \"try\" | \"end\" | \"fail\" | \"else\" | \"case\" | \"default\" | \"branch\" | \"catch\" | \"on\" ) @@"`
	Set      *Set      `parser:"| @@"`
	If       *If       `parser:"| @@"`
	Switch   *Switch   `parser:"| @@"`
	For      *For      `parser:"| @@"`
	While    *While    `parser:"| @@"`
	Goto     *Goto     `parser:"| @@"`
	Step     *Step     `parser:"| @@"`
	Parallel *Parallel `parser:"| @@"`
	Try      *Try      `parser:"| @@"`
	End      *End      `parser:"| @@"`
	Fail     *Fail     `parser:"| @@ )"`
}

// Label is `name:` before a statement.
type Label struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Text string `parser:"@Label Newline*"` // with the colon; see Name
}

// Set is `set $path = value` or `set { $a = 1; $b = 2 }`.
type Set struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Group   bool      `parser:"\"set\" ( @\"{\""`
	Assigns []*Assign `parser:"( @@ | Newline | Semi )* \"}\" | @@ )"`
}

// Assign is `$path = value`.
type Assign struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Path  *Path `parser:"@@ Assign"`
	Value *Expr `parser:"@@"`
}

// If is `if cond { } else if cond { } else { }`.
type If struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Cond   *Cond  `parser:"\"if\" @@"`
	Then   *Block `parser:"@@"`
	ElseIf *If    `parser:"( \"else\" ( @@"`
	Else   *Block `parser:"| @@ ) )?"`
}

// Switch is `switch { case cond { } … default { } }`.
type Switch struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Cases []*Case `parser:"\"switch\" \"{\" ( @@ | Newline | Semi )* \"}\""`
}

// Case is one `case cond { }` or `default { }` of a switch.
type Case struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Default bool   `parser:"( @\"default\""`
	Cond    *Cond  `parser:"| \"case\" @@ )"`
	Body    *Block `parser:"@@"`
}

// For is `for x in list { }`.
type For struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Var  *Ident `parser:"\"for\" @@ \"in\""`
	Iter *Cond  `parser:"@@"`
	Body *Block `parser:"@@"`
}

// While is `while cond max N { }`. The parser splits a trailing `max N`
// off the condition into Max.
type While struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Cond *Cond  `parser:"\"while\" @@"`
	Body *Block `parser:"@@"`

	Max *Max `parser:""`
}

// Max is the `max N` bound of a while loop.
type Max struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Value  string
}

// Goto is `goto label`.
type Goto struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Target *Ident `parser:"\"goto\" @@"`
}

// Step is `step "name" { }`.
type Step struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Name *String `parser:"\"step\" @@"`
	Body *Block  `parser:"@@"`
}

// Parallel is `parallel { branch a { } branch b { } }`.
type Parallel struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Branches []*Branch `parser:"\"parallel\" \"{\" ( @@ | Newline | Semi )* \"}\""`
}

// Branch is one `branch name { }` of a parallel.
type Branch struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Name *Ident `parser:"\"branch\" @@"`
	Body *Block `parser:"@@"`
}

// Try is `try { } catch e { }`.
type Try struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Body  *Block `parser:"\"try\" @@ \"catch\""`
	Var   *Ident `parser:"@@?"`
	Catch *Block `parser:"@@"`
}

// End is `end`.
type End struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Keyword string `parser:"@\"end\""`
}

// Fail is `fail "message"`.
type Fail struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Message *Expr `parser:"\"fail\" @@"`
}

// Node is the generic node statement:
// kind [word] [arg] [{ key = value … on name { … } }] [-> $path].
// The word, if the kind takes one, is the first part of Arg; the compiler
// splits it off with the kind's declaration in hand.
type Node struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Kind *Ident    `parser:"@@"`
	Arg  *Arg      `parser:"@@?"`
	Body *NodeBody `parser:"@@?"`
	Out  *Path     `parser:"( Arrow @@ )?"`
}

// NodeBody is the `{ … }` of a node: keys and handlers.
type NodeBody struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Entries []*Entry `parser:"\"{\" ( @@ | Newline | Semi )* \"}\""`
}

// Entry is `key = value` or `on name { statements }`.
type Entry struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Key     *Attr    `parser:"( @@"`
	Handler *Handler `parser:"| @@ )"`
}

// Handler is `on name { statements }`.
type Handler struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Name *Ident `parser:"\"on\" @@"`
	Body *Block `parser:"@@"`
}

// Path is a context path: $root.key[0].key.
type Path struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Root string     `parser:"@Var"`
	Keys []*PathKey `parser:"@@*"`
}

// PathKey is one step of a path: `.name` or `[index]`.
type PathKey struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Name  string `parser:"  \".\" @Ident"`
	Index string `parser:"| \"[\" @Number \"]\""`
}

// Expr is a value as written: a run of tokens with balanced brackets that
// ends at the end of the line (newlines inside brackets do not count). The
// compiler hands its text to expr, or treats it as a template when it is a
// single string literal.
type Expr struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Parts []*Part `parser:"@@+"`
}

// Cond is an Expr that may not hold braces outside brackets, so the block
// that follows a condition, a list or an argument is not taken for a map.
// Write `if x == ({a: 1}) { … }` for a map literal there.
type Cond struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Parts []*CondPart `parser:"@@+"`
}

// Arg is the positional argument of a node: like a Cond, but a brace
// opens a map when a key follows it (`{name: …`, `{"k": …`), so
// `output {answer: $a}` works while `say "x" { role = "user" }` still has
// a body: a node body never starts with a key and a colon.
type Arg struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Parts []*ArgPart `parser:"@@+"`
}

// ArgPart is one token or bracketed group of an Arg.
type ArgPart struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Token string    `parser:"  @( Var | Ident | Number | SQString | RawString | Label | Op | \",\" )"`
	Str   *String   `parser:"| @@"`
	Group *ArgGroup `parser:"| @@"`
}

// ArgGroup is a Group of an Arg: a brace opens one only before a key.
type ArgGroup struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Open  string       `parser:"( @( \"(\" | \"[\" ) | @\"{\" (?= Newline* ( Label | StrOpen | SQString | Ident \":\" | Number \":\" ) ) )"`
	Inner []*InnerPart `parser:"( Newline | @@ )*"`
	Close string       `parser:"@( \")\" | \"]\" | \"}\" )"`
}

// Part is one token or bracketed group of an Expr.
type Part struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Token string  `parser:"  @( Var | Ident | Number | SQString | RawString | Label | Op | \",\" )"`
	Str   *String `parser:"| @@"`
	Group *Group  `parser:"| @@"`
}

// CondPart is one token or bracketed group of a Cond.
type CondPart struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Token string     `parser:"  @( Var | Ident | Number | SQString | RawString | Label | Op | \",\" )"`
	Str   *String    `parser:"| @@"`
	Group *CondGroup `parser:"| @@"`
}

// Group is `( … )`, `[ … ]` or `{ … }` in an expression. Inside brackets
// newlines are allowed. The parser checks that Close matches Open.
type Group struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Open  string       `parser:"@( \"(\" | \"[\" | \"{\" )"`
	Inner []*InnerPart `parser:"( Newline | @@ )*"`
	Close string       `parser:"@( \")\" | \"]\" | \"}\" )"`
}

// CondGroup is a Group that opens with a parenthesis or a bracket.
type CondGroup struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Open  string       `parser:"@( \"(\" | \"[\" )"`
	Inner []*InnerPart `parser:"( Newline | @@ )*"`
	Close string       `parser:"@( \")\" | \"]\" | \"}\" )"`
}

// InnerPart is one token or group inside brackets.
type InnerPart struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Token string  `parser:"  @( Var | Ident | Number | SQString | RawString | Label | Op | \",\" | Semi | Assign | Arrow )"`
	Str   *String `parser:"| @@"`
	Group *Group  `parser:"| @@"`
}

// String is a "…" or """…""" literal with <<expr>> interpolations.
type String struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Heredoc bool       `parser:"( @HeredocOpen"`
	Parts   []*StrPart `parser:"@@* HeredocClose | StrOpen @@* StrClose )"`
}

// StrPart is literal text, an escape sequence, or an interpolation.
type StrPart struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Text   string  `parser:"@( Chars | HChars | Lt | Quote )"`
	Escape string  `parser:"| @Escaped"`
	Interp *Interp `parser:"| InterpOpen @@ InterpClose"`
}

// Interp is the expression between << and >>.
type Interp struct {
	Pos    lexer.Position
	EndPos lexer.Position

	Tokens []string `parser:"@( Var | Ident | Number | IString | SQString | RawString | Op | Punct | Assign | Semi )*"`
}

func (n *File) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *Comment) span() (lexer.Position, lexer.Position)   { return n.Pos, n.EndPos }
func (n *Version) span() (lexer.Position, lexer.Position)   { return n.Pos, n.EndPos }
func (n *Ident) span() (lexer.Position, lexer.Position)     { return n.Pos, n.EndPos }
func (n *Workflow) span() (lexer.Position, lexer.Position)  { return n.Pos, n.EndPos }
func (n *Server) span() (lexer.Position, lexer.Position)    { return n.Pos, n.EndPos }
func (n *Member) span() (lexer.Position, lexer.Position)    { return n.Pos, n.EndPos }
func (n *Attr) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *Tool) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *ToolItem) span() (lexer.Position, lexer.Position)  { return n.Pos, n.EndPos }
func (n *Block) span() (lexer.Position, lexer.Position)     { return n.Pos, n.EndPos }
func (n *Stmt) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *Label) span() (lexer.Position, lexer.Position)     { return n.Pos, n.EndPos }
func (n *Set) span() (lexer.Position, lexer.Position)       { return n.Pos, n.EndPos }
func (n *Assign) span() (lexer.Position, lexer.Position)    { return n.Pos, n.EndPos }
func (n *If) span() (lexer.Position, lexer.Position)        { return n.Pos, n.EndPos }
func (n *Switch) span() (lexer.Position, lexer.Position)    { return n.Pos, n.EndPos }
func (n *Case) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *For) span() (lexer.Position, lexer.Position)       { return n.Pos, n.EndPos }
func (n *While) span() (lexer.Position, lexer.Position)     { return n.Pos, n.EndPos }
func (n *Max) span() (lexer.Position, lexer.Position)       { return n.Pos, n.EndPos }
func (n *Goto) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *Step) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *Parallel) span() (lexer.Position, lexer.Position)  { return n.Pos, n.EndPos }
func (n *Branch) span() (lexer.Position, lexer.Position)    { return n.Pos, n.EndPos }
func (n *Try) span() (lexer.Position, lexer.Position)       { return n.Pos, n.EndPos }
func (n *End) span() (lexer.Position, lexer.Position)       { return n.Pos, n.EndPos }
func (n *Fail) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *Node) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *NodeBody) span() (lexer.Position, lexer.Position)  { return n.Pos, n.EndPos }
func (n *Entry) span() (lexer.Position, lexer.Position)     { return n.Pos, n.EndPos }
func (n *Handler) span() (lexer.Position, lexer.Position)   { return n.Pos, n.EndPos }
func (n *Path) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *Expr) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *Cond) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *Part) span() (lexer.Position, lexer.Position)      { return n.Pos, n.EndPos }
func (n *CondPart) span() (lexer.Position, lexer.Position)  { return n.Pos, n.EndPos }
func (n *Group) span() (lexer.Position, lexer.Position)     { return n.Pos, n.EndPos }
func (n *CondGroup) span() (lexer.Position, lexer.Position) { return n.Pos, n.EndPos }
func (n *InnerPart) span() (lexer.Position, lexer.Position) { return n.Pos, n.EndPos }
func (n *String) span() (lexer.Position, lexer.Position)    { return n.Pos, n.EndPos }
func (n *StrPart) span() (lexer.Position, lexer.Position)   { return n.Pos, n.EndPos }
func (n *Interp) span() (lexer.Position, lexer.Position)    { return n.Pos, n.EndPos }
func (n *Arg) span() (lexer.Position, lexer.Position)       { return n.Pos, n.EndPos }
func (n *ArgPart) span() (lexer.Position, lexer.Position)   { return n.Pos, n.EndPos }
func (n *ArgGroup) span() (lexer.Position, lexer.Position)  { return n.Pos, n.EndPos }
func (n *PathKey) span() (lexer.Position, lexer.Position)   { return n.Pos, n.EndPos }

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
