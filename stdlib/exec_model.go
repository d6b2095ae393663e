package stdlib

import "github.com/aguic/aguic/vm"

// attachModel sets the Exec of model.
func attachModel(r *vm.Registry, opts Options) {}
