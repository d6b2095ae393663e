package stdlib

import (
	"os"

	"github.com/aguic/aguic/vm"
)

// Options configures what RegisterWith registers.
type Options struct {
	// Getenv reads one variable of the server's environment for the env
	// builtin; nil means os.Getenv. Tests pass a map lookup instead.
	Getenv func(name string) string
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
	for _, k := range kinds() {
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
