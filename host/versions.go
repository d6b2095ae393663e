package host

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// Versions are the program versions a store keeps, compiled on demand for
// the threads pinned to a version that is not the current one: a thread
// runs on the version it started on until it ends, while new threads start
// on the current one. Safe for concurrent use.
type Versions struct {
	st      store.Store
	current *vm.Machine

	mu    sync.Mutex
	cache map[string]*vm.Machine
}

// NewVersions returns the versions st keeps, current among them. A version
// loaded from st runs on a machine like current: same registry, same
// limits.
func NewVersions(st store.Store, current *vm.Machine) *Versions {
	return &Versions{st: st, current: current}
}

// Load returns the machine of version hash; "" is the current version. It
// is a store.Loader.
func (v *Versions) Load(ctx context.Context, hash string) (*vm.Machine, error) {
	if hash == "" || hash == v.current.Program.Hash {
		return v.current, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if m := v.cache[hash]; m != nil {
		return m, nil
	}
	bundle, err := v.st.Source(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("version %s of the workflows is not in the store", short(hash))
	}
	if err != nil {
		return nil, err
	}
	srcs, err := compiler.Unbundle(bundle)
	if err != nil {
		return nil, fmt.Errorf("version %s of the workflows: %w", short(hash), err)
	}
	prog, diags := compiler.Compile(v.current.Registry, srcs...)
	if diags.HasErrors() {
		return nil, fmt.Errorf("version %s of the workflows no longer compiles: %v", short(hash), diags.Err())
	}
	m := *v.current
	m.Program = prog
	if v.cache == nil {
		v.cache = map[string]*vm.Machine{}
	}
	v.cache[hash] = &m
	return &m, nil
}

// short is a version's hash as messages show it.
func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
