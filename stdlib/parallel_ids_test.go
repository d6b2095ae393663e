package stdlib_test

import (
	"context"
	"testing"

	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

// TestParallelIDsAcrossTurns: the messages the branches of a parallel say
// keep unique ids when the flow passes the parallel again, in a later
// turn: a client would otherwise add the later text to the earlier
// message.
func TestParallelIDsAcrossTurns(t *testing.T) {
	m := machine(t, `wf 1

workflow talk {
  conversation = true

  flow {
    top: parallel {
      branch a { say "from a" }
      branch b { say "from b" }
    }
    wait: suspend
    goto top
  }
}
`, stdlib.Options{})
	f, o, rec := vmtest.Run(t, m, "talk", nil)
	for turn := 2; turn <= 3; turn++ {
		if o.Status != vm.Suspended {
			t.Fatalf("turn %d: outcome %s %v", turn-1, o.Status, o.Err)
		}
		f = vmtest.Reload(t, f)
		o = m.Run(context.Background(), f, &vm.Resume{Agent: map[string]any{}}, vm.Observer{Events: rec})
	}
	seen := map[string]bool{}
	for _, e := range rec.Events {
		if e.Type != vm.TextStart {
			continue
		}
		if seen[e.MessageID] {
			t.Errorf("message id %s made twice", e.MessageID)
		}
		seen[e.MessageID] = true
	}
	if len(seen) != 6 {
		t.Errorf("%d text messages in three turns, want 6", len(seen))
	}
}
