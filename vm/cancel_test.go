package vm_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aguic/aguic/vm"
)

// costly are evaluations that take a good part of a second: expr's VM
// cannot be stopped inside them.
var costly = []struct{ name, flow string }{
	{"a loop that joins strings", `set $y = reduce(1..400, #acc + $s, "")`},
	{"a template over a large value", `set $y = "all: <<toJSON(map(1..15, $list))>>"`},
	{"a condition", `if len(reduce(1..400, #acc + $s, "")) > 0 { set $y = 1 }`},
}

// costlyContext is the context of the costly flows: $s is 10 kB, $list a
// thousand strings of a kilobyte.
func costlyContext() map[string]any {
	list := make([]any, 1000)
	for i := range list {
		list[i] = strings.Repeat("y", 1000)
	}
	return map[string]any{"s": strings.Repeat("z", 10_000), "list": list}
}

// costlySink calls start when the first node that is not a note starts,
// and records the notes and the codes of the errors nodes ended with.
type costlySink struct {
	start  func()
	mu     sync.Mutex
	notes  []string
	errors []string
}

func (s *costlySink) Emit(e vm.Event) error {
	if e.Type == vm.Custom {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.notes = append(s.notes, vm.Text(e.Value))
	}
	return nil
}

func (s *costlySink) NodeStarted(n *vm.Node) error {
	if n.Kind != "note" && s.start != nil {
		s.start()
		s.start = nil
	}
	return nil
}

func (s *costlySink) NodeFinished(n *vm.Node, end vm.NodeEnd) error {
	if end.Err != nil {
		s.errors = append(s.errors, n.Kind+" "+end.Err.Code)
	}
	return nil
}

// costlyRun runs one of the costly flows between two notes, and checks
// that the costly node, and nothing after it, ended with the error code.
func costlyRun(t *testing.T, flow string, edit func(*vm.Machine), ctx context.Context, start func(), want vm.Status, code string) {
	t.Helper()
	t.Cleanup(func() { waitAbandoned(t) })
	m := machine(t, "wf 1\nworkflow w {\n flow {\n note \"before\"\n "+flow+"\n note \"after\"\n }\n}\n")
	if edit != nil {
		edit(m)
	}
	f, err := m.NewFrame("w", costlyContext())
	if err != nil {
		t.Fatal(err)
	}
	sink := &costlySink{start: start}
	o := m.Run(ctx, f, nil, vm.Observer{Events: sink, Nodes: sink})
	if o.Status != want || (o.Err != nil) != (want == vm.Failed) || o.Err != nil && o.Err.Code != code {
		t.Fatalf("outcome %+v (%v), want %s %s", o, o.Err, want, code)
	}
	if _, ok := f.Context["y"]; ok || strings.Join(sink.notes, " ") != "before" {
		t.Errorf("the run went on: $y set %v, notes %q", ok, sink.notes)
	}
	if len(sink.errors) != 1 || !strings.HasSuffix(sink.errors[0], " "+code) {
		t.Errorf("the nodes ended with the errors %q, want the costly node's %s", sink.errors, code)
	}
}

// waitAbandoned waits until the evaluations the runs gave up on have
// ended: they are bounded.
func waitAbandoned(t *testing.T) {
	for start := time.Now(); vm.Abandoned() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("%d abandoned evaluations still run after a minute", vm.Abandoned())
		}
	}
}

// TestCancelCostlyEvaluation cancels a run while one node evaluates: the
// run ends cancelled without the node's result, and the flow goes no
// further.
func TestCancelCostlyEvaluation(t *testing.T) {
	for _, tc := range costly {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			costlyRun(t, tc.flow, nil, ctx, func() { time.AfterFunc(10*time.Millisecond, cancel) }, vm.Cancelled, vm.ErrCancelled)
		})
	}
}

// TestDeadlineCostlyEvaluation lets the run's deadline pass while one node
// evaluates: the run fails with the code deadline.
func TestDeadlineCostlyEvaluation(t *testing.T) {
	for _, tc := range costly {
		t.Run(tc.name, func(t *testing.T) {
			short := func(m *vm.Machine) { m.Deadline = 10 * time.Millisecond }
			costlyRun(t, tc.flow, short, context.Background(), nil, vm.Failed, vm.ErrDeadline)
		})
	}
}

// cancelAt is a sink that cancels the run at its n-th event.
type cancelAt struct {
	n, seen int
	cancel  func()
}

func (c *cancelAt) Emit(vm.Event) error {
	if c.seen++; c.seen == c.n {
		c.cancel()
	}
	return nil
}

// TestCancelBetweenNodes cancels a loop of quick nodes: the run notices
// at the next node.
func TestCancelBetweenNodes(t *testing.T) {
	m := machine(t, "wf 1\nworkflow w {\n flow {\n set $i = 0\n while $i < 1000 max 1000 {\n set $i = $i + 1\n note \"x\"\n }\n output $i\n }\n}\n")
	m.MaxVisits = 10_000
	f, err := m.NewFrame("w", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := m.Run(ctx, f, nil, vm.Observer{Events: &cancelAt{n: 250, cancel: cancel}})
	if o.Status != vm.Cancelled {
		t.Fatalf("outcome %+v (%v), want cancelled", o, o.Err)
	}
	// set $i = 0, then 250 times while, set, note: the 250th note cancels.
	if f.Visits != 1+3*250 {
		t.Errorf("the run visited %d nodes; cancelled in the 250th note, it should visit no more", f.Visits)
	}
	if i, _ := f.Context["i"].(int); i >= 1000 {
		t.Errorf("$i is %d: the loop ran to its end", i)
	}
}

// TestEvalCancellable checks an evaluation gives the same value, or the
// same error, whether its run can be cancelled or not.
func TestEvalCancellable(t *testing.T) {
	for _, flow := range []string{
		`output {a: 1 + 2, b: $n.x ?? "none", c: [1, 2][1], d: "x" in ["x"], e: $n == nil && true}`,
		`output {a: map([1, 2, 3], # * 2), b: upper("ab"), c: "x" matches "^x$", d: sort([3, 1, 2])}`,
		`output "text: <<[1, 2]>> <<{a: 1}>> <<nil>> <<"s">>"`,
		`output "<<map([1, 2], # + 1)>>"`,
		`output "plain"`,
		`output 1 / 0`,
		`output int("x")`,
		`if len(filter([1, 2, 3], # > 1)) == 2 { output "two" }`,
	} {
		src := "wf 1\nworkflow w {\n flow {\n " + flow + "\n }\n}\n"
		var got [2]string
		for i, cancellable := range []bool{false, true} {
			ctx := context.Background()
			if cancellable {
				c, cancel := context.WithCancel(ctx)
				defer cancel()
				ctx = c
			}
			m := machine(t, src)
			f, err := m.NewFrame("w", nil)
			if err != nil {
				t.Fatal(err)
			}
			o := m.Run(ctx, f, nil, vm.Observer{Events: &recorder{}})
			got[i] = string(o.Status) + " " + vm.Text(o.Result)
			if o.Err != nil {
				got[i] += " " + o.Err.Code + ": " + o.Err.Message
			}
		}
		if got[0] != got[1] {
			t.Errorf("%s:\nnot cancellable: %s\ncancellable:     %s", flow, got[0], got[1])
		}
	}
}

// BenchmarkTemplateCancellable is BenchmarkTemplate in a run that can be
// cancelled, as every run of the server can.
func BenchmarkTemplateCancellable(b *testing.B) {
	m := machine(b, `wf 1
workflow w {
  flow {
    set $user = {name: "Ada", plan: "pro", items: [1, 2, 3]}
    top: note "Hello <<$user.name>>, your <<$user.plan>> plan has <<len($user.items)>> items: <<$user.items>>."
    set $n = ($n ?? 0) + 1
    goto top
  }
}
`)
	m.MaxVisits = 1 << 30
	f, err := m.NewFrame("w", nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	stop := vm.SinkFunc(func(vm.Event) error {
		if n++; n > b.N {
			cancel()
		}
		return nil
	})
	b.ResetTimer()
	m.Run(ctx, f, nil, vm.Observer{Events: stop})
}
