package vm

import (
	"fmt"
	"github.com/expr-lang/expr"
	"slices"
	"sort"
	"strings"
)

// Type is the type a key or argument accepts, as far as the compiler checks it.
type Type int

// The checked types.
const (
	TypeAny      Type = iota
	TypeString        // a string or template
	TypeBool          // true or false
	TypeInt           // a whole number
	TypeNumber        // any number
	TypeObject        // a map
	TypeList          // an array
	TypeDuration      // a string time.ParseDuration accepts: "20s"
	TypeBackoff       // "1s..8s": the first and the longest wait of an exponential backoff
	TypePath          // a context path written as $root.key: read or written by the node
	TypeTools         // a list of backend tool names and expressions giving frontend tools
	TypeWorkflow      // a workflow id written as a bare identifier
	// TypePredictions is a map literal of the shared state's keys to the
	// tool arguments that predict them: {document: "document"}, or, when
	// the key's Of names a tools key, {document: "write_document.document"}.
	TypePredictions
	// TypeServerTool is the name of a tool of the MCP server the node's
	// word names (WordSpec.Servers): a string literal without <<…>>, which
	// must be a tool the server's lock lists and its tools list allows.
	TypeServerTool
	// TypeArguments is an object of the arguments of the tool the node's
	// argument names (TypeServerTool): a map literal is checked against
	// the tool's locked input schema.
	TypeArguments
	// TypeModel is a model named "provider/model", a string: a literal
	// needs both parts, and a provider part that is not a misspelling of
	// one of the key's Providers.
	TypeModel
	// TypeURL is an absolute http or https URL, a string: a literal, or
	// the literal start of a template before its first <<…>> when it
	// decides, must be one.
	TypeURL
)

var typeNames = [...]string{"any", "string", "bool", "int", "number", "object", "list", "duration", "backoff", "path", "tools", "workflow", "predictions", "server tool", "arguments", "model", "url"}

func (t Type) String() string { return typeNames[t] }

// KindSpec declares one node kind: its shape, keys, handlers and result.
type KindSpec struct {
	Name     string    // "say", "http", or "state sync" for a kind with a mode word
	Doc      string    // one sentence for the reference
	Word     *WordSpec // a bare leading word, such as http's method; nil if none
	Arg      *ArgSpec  // the positional argument; nil if none is allowed
	Keys     []KeySpec // the body's keys
	Handlers []Handler // the `on name { }` handlers it may have
	Suspend  Suspend   // whether it may suspend the run
	Convo    bool      // allowed only in conversation workflows
	Result   string    // what `-> $path` receives; "" means the kind has no result
	// Pure says that running a node of the kind again repeats nothing
	// outside the run: no model, HTTP or tool call. A saved run is not
	// checkpointed after a pure node; after a crash it runs again.
	Pure    bool
	Example string // a short .wf snippet using the kind
	Exec    Exec   // runs a node of the kind

	// What other layers need to know of the kind, each optional.

	// Gives reports what a node of the kind lets the agent of its workflow
	// do, for the capabilities a server lists.
	Gives func(n *Node) Gives
	// Model reports the model a node of the kind calls: its name when the
	// node writes it as a literal ("" for the default model), or computed
	// when only the run knows it; ok is false when the node calls none.
	// Start-up checks resolve the literal ones.
	Model func(n *Node) (name string, computed, ok bool)
	// Detail is what a graph shows of a node besides its word and
	// argument, for a node that has neither.
	Detail func(n *Node) string
	// Persists reports whether a node writes the default paths
	// (KeySpec.Path) of the writing keys it leaves out; nil: it does.
	Persists func(n *Node) bool
	// Tool, when set, lets a node of the kind implement a `tool` a workflow
	// declares, and says what the model gets from it.
	Tool *ToolSpec
}

// ToolSpec says what a node that implements a tool hands the model.
type ToolSpec struct {
	// Doc says what the model gets, for the reference: one sentence.
	Doc string
	// Shape turns the node's result into what the model gets when the tool
	// has no `result = expr`; nil hands the result over as it is.
	Shape func(result any) any
	// Var names the variable, without its $, that holds the node's result
	// in the tool's `result = expr`, which then shapes what the model gets;
	// "" means a tool the kind implements cannot have a result.
	Var string
}

// Gives is what a node lets the agent of its workflow do.
type Gives struct {
	Reasoning      bool   // it streams a model's reasoning
	Tools          bool   // it calls tools
	ClientTools    bool   // it calls the client's frontend tools
	Approvals      bool   // it asks the client to run a tool and waits for the result
	Interrupts     bool   // it opens interrupts and waits for their answers
	HumanInTheLoop bool   // it pauses for the user
	StateSnapshots bool   // it sends the whole shared state
	StateDeltas    bool   // it sends changes of the shared state
	Structured     bool   // it asks a model for JSON that matches a schema
	Images         bool   // it sends images to a model
	Calls          string // the workflow it delegates to; "" for none
}

// ToolsKey returns the kind's key of TypeTools, or nil.
func (k *KindSpec) ToolsKey() *KeySpec {
	for i := range k.Keys {
		if k.Keys[i].Type == TypeTools {
			return &k.Keys[i]
		}
	}
	return nil
}

// Key returns the key spec with the given name, or nil.
func (k *KindSpec) Key(name string) *KeySpec {
	for i := range k.Keys {
		if k.Keys[i].Name == name {
			return &k.Keys[i]
		}
	}
	return nil
}

// Handler returns the handler spec with the given name, or nil.
func (k *KindSpec) Handler(name string) *Handler {
	for i := range k.Handlers {
		if k.Handlers[i].Name == name {
			return &k.Handlers[i]
		}
	}
	return nil
}

// Suspend says when a node kind suspends a run.
type Suspend int

// The suspension rules.
const (
	SuspendNever         Suspend = iota
	SuspendAlways                // suspend, interrupt, frontend_tool
	SuspendFrontendTools         // model: when its tools include the client's frontend tools
)

// WordSpec declares a bare word that follows the kind, such as `http GET`.
type WordSpec struct {
	Name   string   // what the word is, for messages: "method"
	Values []string // the accepted words
	// Servers says that the word names an MCP server the program declares
	// (`mcp name { … }`) instead of one of Values.
	Servers bool
}

// ArgSpec declares the positional argument.
type ArgSpec struct {
	Name     string // what it is, for messages and docs: "text", "url"
	Type     Type
	Required bool
	Doc      string
}

// KeySpec declares one `key = value` of a node body or tool.
type KeySpec struct {
	Name     string
	Type     Type
	Required bool
	Default  any      // the value used when the key is absent; nil for none
	Enum     []string // for string keys: the accepted values
	Writes   bool     // TypePath: the node writes the path; TypeObject: the keys of a literal map are roots the node writes
	Path     string   // TypePath: the path used when the key is absent, such as "$input.chat"
	// Of, for TypePredictions, names the key that says which tool
	// arguments exist: an object key (the call's own arguments, such as
	// args) or a tools key (the tools' arguments, written tool.argument).
	Of string
	// Providers, for TypeModel, are the model providers the library has
	// clients for, such as "openai". A literal whose provider is one of
	// them, or far from all of them (a provider the program resolves
	// itself, or a script that answers any model), is accepted; one that
	// is a misspelling of one of them is an error.
	Providers []string
	Doc       string
}

// Handler declares an `on name { }` block.
type Handler struct {
	Name     string
	Required bool
	Doc      string
}

// Builtin is a function that expressions may call.
type Builtin struct {
	Name      string
	Signature string // as shown in docs: "tail(list, n) list"
	Doc       string
	Fn        func(args ...any) (any, error)
	Types     []any // function types expr checks calls against; none: unchecked
}

// Registry is the set of node kinds and builtins a program is compiled
// against and run with. Fill it once at start-up, then share it read-only.
type Registry struct {
	kinds    map[string]*KindSpec
	builtins map[string]*Builtin
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{kinds: map[string]*KindSpec{}, builtins: map[string]*Builtin{}}
}

// AddKind registers a node kind; registering a name twice panics.
func (r *Registry) AddKind(k *KindSpec) {
	if _, dup := r.kinds[k.Name]; dup {
		panic(fmt.Sprintf("vm: node kind %q registered twice", k.Name))
	}
	r.kinds[k.Name] = k
}

// Kind returns the kind with the given name ("state sync" for a mode), or nil.
func (r *Registry) Kind(name string) *KindSpec { return r.kinds[name] }

// Modes returns the mode words of a kind written with one ("state" →
// "delta", "snapshot", "sync"), sorted; nil for other kinds.
func (r *Registry) Modes(kind string) []string {
	var modes []string
	for name := range r.kinds {
		if rest, ok := strings.CutPrefix(name, kind+" "); ok {
			modes = append(modes, rest)
		}
	}
	sort.Strings(modes)
	return modes
}

// Kinds returns every registered kind sorted by name.
func (r *Registry) Kinds() []*KindSpec {
	out := make([]*KindSpec, 0, len(r.kinds))
	for _, k := range r.kinds {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b *KindSpec) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// KindNames returns the names written first in a node statement: "say",
// "http", "state" (once for all its modes), sorted.
func (r *Registry) KindNames() []string {
	seen := map[string]bool{}
	var out []string
	for name := range r.kinds {
		head, _, _ := strings.Cut(name, " ")
		if !seen[head] {
			seen[head] = true
			out = append(out, head)
		}
	}
	sort.Strings(out)
	return out
}

// AddBuiltin registers a builtin function; registering a name twice panics.
func (r *Registry) AddBuiltin(b *Builtin) {
	if _, dup := r.builtins[b.Name]; dup {
		panic(fmt.Sprintf("vm: builtin %q registered twice", b.Name))
	}
	r.builtins[b.Name] = b
}

// Builtin returns the builtin with the given name, or nil.
func (r *Registry) Builtin(name string) *Builtin { return r.builtins[name] }

// Builtins returns every registered builtin sorted by name.
func (r *Registry) Builtins() []*Builtin {
	out := make([]*Builtin, 0, len(r.builtins))
	for _, b := range r.builtins {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *Builtin) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ExprOptions returns the expr options that make every builtin callable.
// The compiler and the interpreter both compile and run with them.
func (r *Registry) ExprOptions() []expr.Option {
	opts := make([]expr.Option, 0, len(r.builtins))
	for _, b := range r.Builtins() {
		opts = append(opts, expr.Function(b.Name, b.Fn, b.Types...))
	}
	return opts
}
