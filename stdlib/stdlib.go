package stdlib

import (
	"context"
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

	// ToolCall, when set, is told of each backend tool call of a model
	// node: metrics time the calls through it, tracers trace them. Join
	// several observers with ToolCallObserver.And.
	ToolCall ToolCallObserver
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

// ToolCallInfo is a backend tool call of a model node, as a
// ToolCallObserver sees it: its tool's kind ("expr" for a tool of
// `result = expr` alone, "http", "call", or "mcp" for a tool of an MCP
// server), the tool's name and the model's id of the call.
type ToolCallInfo struct {
	Kind, Name, ID string
}

// ToolCallObserver is called as a tool call starts; it returns the context
// the tool runs in and the function called with the call's error (nil
// when it succeeded) when the call ends.
type ToolCallObserver func(ctx context.Context, call ToolCallInfo) (context.Context, func(err error))

// And is an observer that tells o, then next, of each call; either may be
// nil.
func (o ToolCallObserver) And(next ToolCallObserver) ToolCallObserver {
	if o == nil {
		return next
	}
	if next == nil {
		return o
	}
	return func(ctx context.Context, call ToolCallInfo) (context.Context, func(error)) {
		ctx, endO := o(ctx, call)
		ctx, endNext := next(ctx, call)
		return ctx, func(err error) {
			endNext(err)
			endO(err)
		}
	}
}
