// Package stdlib is the standard library of the .wf language, version 1:
// its node kinds, what each does at run time, and its builtin functions.
//
// What goes in: a *vm.Registry, and Options: how env reads the server's
// environment, the HTTP client of http nodes, the model providers. What comes out: the same
// registry, holding a vm.KindSpec, with its Exec, for every node kind of
// the language —
// "say", "model", "frontend_tool", "backend_tool", "suspend", "interrupt",
// "state sync", "state snapshot", "state delta", "activity sync",
// "activity snapshot", "activity delta", "emit", "http", "call", "output" —
// and a vm.Builtin for every builtin function beyond expr's own: env, json,
// parse_json, uuid, tail and text. The compiler checks workflows against that
// registry and the interpreter runs with it; neither imports this package.
//
// What stays true: every call builds fresh specs, so registries never share
// anything and the package holds no mutable state; every kind, key, argument
// and handler carries a Doc and every kind an Example; a key's Default has
// the Go type of its declared vm.Type (bool, int, float64, string) and an
// Enum key's Default is one of its values. The builtins are pure except env
// (it reads Options.Getenv) and uuid (it reads crypto randomness); json and
// text encode alike: compact JSON, object keys sorted, no HTML escaping.
//
// The interpreter (package vm) runs control flow itself and calls a kind's
// Exec for every other node: exec_messages.go holds the nodes that talk to
// the client (say, emit, output, tool calls, suspend, interrupt),
// exec_data.go state, activity, http and call, exec_model.go the model node.
package stdlib
