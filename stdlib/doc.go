// Package stdlib is the standard library of the .wf language, version 1:
// its node kinds, what each does at run time, and its builtin functions.
//
// What goes in: a *vm.Registry, and Options: how env reads the server's
// environment, the HTTP client of http nodes, the model providers. What comes out: the same
// registry, holding a vm.KindSpec, with its Exec, for every node kind of
// the language —
// "say", "model", "frontend_tool", "backend_tool", "suspend", "interrupt", "sleep",
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
// Exec for every other node. Each kind lives in one file, with its family
// when it has one: its declaration (keys decoded where it runs), its Exec,
// and the hooks through which other layers learn what they need of it
// without naming it (vm.KindSpec's Gives, Model, Detail, Persists, Tool):
// say.go, model.go (and model_stream.go), frontend_tool.go,
// backend_tool.go, suspend.go, interrupt.go, sleep.go, state.go, activity.go,
// emit.go, http.go, call.go, output.go. kinds.go lists them; toolcalls.go,
// retry.go, keys.go, pace.go (the pauses of paced streams) and predict.go
// (the PredictState events of tool calls) hold what several kinds share.
// Adding a kind is its file, a line in kinds.go, its tests and the
// generated reference.
package stdlib
