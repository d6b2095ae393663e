package vm_test

import (
	"sync"
	"testing"

	"github.com/aguic/aguic/vm"
)

// TestNodeConcurrently: the runs of a program share its workflows, and
// look their nodes up at once (go test -race).
func TestNodeConcurrently(t *testing.T) {
	w := &vm.Workflow{Nodes: []*vm.Node{{ID: "a"}, {ID: "b"}}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if w.Node("b") == nil || w.Node("c") != nil {
				t.Error("Node: wrong lookup")
			}
		})
	}
	wg.Wait()
}
