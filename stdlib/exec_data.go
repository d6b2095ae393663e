package stdlib

import "github.com/aguic/aguic/vm"

// attachData sets the Exec of the state and activity kinds, http and call.
func attachData(r *vm.Registry, opts Options) {}
