package vm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aguic/aguic/vm"
)

// BenchmarkNodes runs a chain of 200 set and if nodes without persistence
// and reports the interpreter's cost per node.
func BenchmarkNodes(b *testing.B) {
	var flow strings.Builder
	flow.WriteString("set $i = 0\n")
	for range 100 {
		flow.WriteString("set $i = $i + 1\nif $i > 1000 { set $big = true }\n")
	}
	m := machine(b, "wf 1\nworkflow w {\n flow {\n"+flow.String()+"\n }\n}\n")
	nodes := 0
	for b.Loop() {
		f, err := m.NewFrame("w", nil)
		if err != nil {
			b.Fatal(err)
		}
		if o := m.Run(context.Background(), f, nil, vm.Observer{}); o.Status != vm.Finished {
			b.Fatalf("%+v %v", o, o.Err)
		}
		nodes += f.Visits
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(nodes), "ns/node")
}

// BenchmarkTemplate renders a template with four interpolations.
func BenchmarkTemplate(b *testing.B) {
	m := machine(b, `wf 1
workflow w {
  flow {
    set $user = {name: "Ada", plan: "pro", items: [1, 2, 3]}
    top: note "Hello <<$user.name>>, your <<$user.plan>> plan has <<len($user.items)>> items: <<$user.items>>."
    goto top
  }
}
`)
	m.MaxVisits = 1 << 30
	f, err := m.NewFrame("w", nil)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	stop := vm.SinkFunc(func(vm.Event) error {
		n++
		if n > b.N {
			return fmt.Errorf("stop")
		}
		return nil
	})
	b.ResetTimer()
	m.Run(context.Background(), f, nil, vm.Observer{Events: stop})
}
