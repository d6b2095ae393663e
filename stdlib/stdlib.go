package stdlib

import (
	"context"
	"net/http"
	"os"

	"github.com/aguic/aguic/mcpclient"

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

	// DefaultModel is the model of model nodes that name none.
	DefaultModel string

	// MCP holds the connections to the MCP servers the program declares,
	// for mcp nodes and the servers' tools a model node offers; nil means
	// every such call fails with a clear error. Its owner closes it.
	MCP *mcpclient.Pool

	// TraceTool, when set, is told of each backend tool call of a model
	// node (a tool the workflow declares, or an MCP server's): it is
	// called as the call starts, with the tool's name and the model's id
	// of the call, and returns the context the tool runs in and the
	// function called with the call's error (nil when it succeeded) when
	// it ends. A tracer traces the call so; nil costs nothing.
	TraceTool func(ctx context.Context, name, callID string) (context.Context, func(error))
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
