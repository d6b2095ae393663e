package stdlib

import "github.com/aguic/aguic/vm"

// attachMessages sets the Exec of say, emit, output, backend_tool,
// frontend_tool, suspend and interrupt.
func attachMessages(r *vm.Registry, opts Options) {}
