package stdlib

import (
	"github.com/aguic/aguic/mcpclient"
	"net/http"
	"os"

	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// Options configures what RegisterWith registers.
type Options struct {
	// Getenv reads one variable of the server's environment for the env
	// builtin; nil means os.Getenv. Tests pass a map lookup instead.
	Getenv func(name string) string

	// HTTPClient makes the requests of http nodes and tools; nil means a
	// client of its own. Each request's timeout comes from the node.
	HTTPClient *http.Client

	// Models resolves a model node's "provider/model" name to the provider
	// that serves it; nil means every model call fails with a clear error.
	Models func(name string) (llm.Provider, error)

	// DefaultModel is the model of model nodes that name none, unless the
	// turn's request chose one (vm.RequestModel).
	DefaultModel string

	// MCP holds the connections to the MCP servers the program declares,
	// for mcp nodes and the servers' tools a model node offers; nil means
	// every such call fails with a clear error. Its owner closes it.
	MCP *mcpclient.Pool

	// ToolCall, when set, learns of each backend tool call of a model
	// node: it is called as the call starts, with the tool's kind
	// ("expr" for a tool of `result = expr` alone, "http", "call", or
	// "mcp" for a tool of an MCP server) and name, and returns the
	// function called when the call ends, with whether it failed.
	ToolCall func(kind, name string) (end func(failed bool))
}

// Register adds every node kind and builtin function of the stdlib to r,
// with env reading the process environment. It panics if r already holds
// one of their names.
func Register(r *vm.Registry) { RegisterWith(r, Options{}) }

// RegisterWith is Register with options.
func RegisterWith(r *vm.Registry, opts Options) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	for _, k := range kinds(opts) {
		r.AddKind(k)
	}
	for _, b := range builtins(opts) {
		r.AddBuiltin(b)
	}
}

// Registry returns a new registry holding everything Register adds.
func Registry() *vm.Registry {
	r := vm.NewRegistry()
	Register(r)
	return r
}
