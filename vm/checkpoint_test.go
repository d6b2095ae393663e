package vm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/vm"
)

// checkpointRegistry is testRegistry with two kinds that save the run
// inside themselves: `count N` notes 0…N-1, saving after each note the
// next number to note as its state, and goes on from that state; `open`
// saves the run with a text message open.
func checkpointRegistry() *vm.Registry {
	r := testRegistry()
	r.AddKind(&vm.KindSpec{
		Name: "count", Doc: "Counts, saving the run after each number.", Example: `count 3`,
		Arg:    &vm.ArgSpec{Name: "n", Type: vm.TypeInt, Required: true},
		Result: "how many it counted",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			v, err := c.Arg()
			if err != nil {
				return vm.Step{}, err
			}
			n, _ := v.(int)
			i, _ := c.State().(int)
			for ; i < n; i++ {
				if err := c.Emit(vm.Event{Type: vm.Custom, Name: "count", Value: i}); err != nil {
					return vm.Step{}, err
				}
				c.SetState(i + 1)
				if err := c.Checkpoint(); err != nil {
					return vm.Step{}, err
				}
			}
			c.SetState(nil)
			return vm.Step{Result: map[string]any{"counted": n, "saves": c.CanCheckpoint()}}, nil
		},
	})
	r.AddKind(&vm.KindSpec{
		Name: "open", Doc: "Saves the run with a message open.", Example: `open`,
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			if err := c.Emit(vm.Event{Type: vm.TextStart, MessageID: "m1", Role: "assistant"}); err != nil {
				return vm.Step{}, err
			}
			if err := c.Checkpoint(); err != nil {
				return vm.Step{}, err
			}
			return vm.Step{}, c.Emit(vm.Event{Type: vm.TextEnd, MessageID: "m1"})
		},
	})
	return r
}

func checkpointMachine(t *testing.T, flow string) *vm.Machine {
	t.Helper()
	reg := checkpointRegistry()
	src := "wf 1\nworkflow w {\n  conversation = true\n  flow {\n" + flow + "\n  }\n}\nworkflow sub {\n  flow {\n    inner: count 2 -> $r\n    output $r\n  }\n}\n"
	prog, diags := compiler.Compile(reg, compiler.Source{Name: "t.wf", Text: []byte(src)})
	if diags.HasErrors() {
		t.Fatalf("compile: %v", diags.Err())
	}
	return &vm.Machine{Program: prog, Registry: reg, NewID: func() string { return "f1" }}
}

// saved is one checkpoint a saver took: the frame as it was stored, where
// it pointed, and how many events the run had emitted then.
type saved struct {
	frame  string
	node   string
	state  bool // the frame holds a state of its node
	events int
}

// saver is a Saver that keeps every checkpoint, as a store would, and
// counts the events of the run so far.
type saver struct {
	t       *testing.T
	rec     *recorder
	saves   []saved
	effects int
}

func (s *saver) Emit(e vm.Event) error { return s.rec.Emit(e) }

func (s *saver) Effect() error { s.effects++; return nil }

func (s *saver) Checkpoint(f *vm.Frame) error {
	data, err := f.Marshal()
	if err != nil {
		s.t.Fatal(err)
	}
	s.saves = append(s.saves, saved{frame: string(data), node: f.Node, state: f.State[f.Node] != nil, events: len(s.rec.lines)})
	return nil
}

// inside returns the checkpoints taken inside node id: those that hold
// its state (the interpreter's own, before the node, hold none).
func (s *saver) inside(id string) []saved {
	var out []saved
	for _, sv := range s.saves {
		if sv.node == id && sv.state {
			out = append(out, sv)
		}
	}
	return out
}

// TestCheckpointInsideANode: a node that checkpoints inside itself is
// saved with its state at each checkpoint, pointing at itself; a run
// started from any of those saves, as recovery starts it, runs the node
// again with that state and no resume, and emits exactly what the run
// emitted after the save, ending with the same context.
func TestCheckpointInsideANode(t *testing.T) {
	m := checkpointMachine(t, `    note "before"
    c: count 3 -> $c
    note "after"
    output $c`)
	f, err := m.NewFrame("w", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Track()
	full := &saver{t: t, rec: &recorder{}}
	o := m.Run(context.Background(), f, nil, vm.Observer{Events: full, Saver: full})
	if o.Status != vm.Finished || vm.Text(o.Result) != `{"counted":3,"saves":true}` {
		t.Fatalf("outcome %+v %v", o, vm.Text(o.Result))
	}
	want := "CUSTOM before\nCUSTOM 0\nCUSTOM 1\nCUSTOM 2\nCUSTOM after"
	if got := full.rec.String(); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	saves := full.inside("c")
	if len(saves) != 3 {
		t.Fatalf("%d checkpoints inside the node, want 3: %+v", len(saves), full.saves)
	}
	end, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for i, sv := range saves {
		t.Run(fmt.Sprintf("from save %d", i+1), func(t *testing.T) {
			g, err := vm.UnmarshalFrame([]byte(sv.frame))
			if err != nil {
				t.Fatal(err)
			}
			if g.Suspended || g.State["c"] != i+1 {
				t.Fatalf("the save holds suspended %v, state %v; want the node's state %d", g.Suspended, g.State["c"], i+1)
			}
			g.Track()
			again := &saver{t: t, rec: &recorder{}}
			o := m.Run(context.Background(), g, nil, vm.Observer{Events: again, Saver: again})
			if o.Status != vm.Finished || vm.Text(o.Result) != `{"counted":3,"saves":true}` {
				t.Fatalf("outcome %+v %v", o, vm.Text(o.Result))
			}
			if got, want := again.rec.String(), strings.Join(full.rec.lines[sv.events:], "\n"); got != want {
				t.Errorf("the run from the save emits\n%s\nwant what the run emitted after it\n%s", got, want)
			}
			g.Visits = f.Visits
			got, err := g.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(end) {
				t.Errorf("the run from the save ends with\n%s\nwant\n%s", got, end)
			}
		})
	}
}

// TestCheckpointOnlyInTheMainFlow: in a parallel branch, in a called
// workflow and in a run without a Saver, Checkpoint saves nothing and
// CanCheckpoint says so.
func TestCheckpointOnlyInTheMainFlow(t *testing.T) {
	tests := []struct {
		name, flow string
		saver      bool
	}{
		{"parallel branch", `    parallel {
      branch a { c: count 2 -> $c }
      branch b { note "other" }
    }
    output $c`, true},
		{"called workflow", `    call sub -> $c
    output $c`, true},
		{"no saver", `    c: count 2 -> $c
    output $c`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := checkpointMachine(t, tt.flow)
			f, err := m.NewFrame("w", nil)
			if err != nil {
				t.Fatal(err)
			}
			s := &saver{t: t, rec: &recorder{}}
			obs := vm.Observer{Events: s}
			if tt.saver {
				obs.Saver = s
			}
			o := m.Run(context.Background(), f, nil, obs)
			if o.Status != vm.Finished || vm.Text(o.Result) != `{"counted":2,"saves":false}` {
				t.Fatalf("outcome %+v %v", o, vm.Text(o.Result))
			}
			for _, sv := range s.saves {
				if sv.state {
					t.Errorf("a checkpoint inside the node: %s", sv.frame)
				}
			}
		})
	}
}

// TestCheckpointWithAMessageOpen: a node may not save the run with a
// message open, which a run recovered from the save would never close;
// the run fails with an internal error that names the message. Without a
// Saver nothing is saved, and the node goes on.
func TestCheckpointWithAMessageOpen(t *testing.T) {
	m := checkpointMachine(t, `    o: open`)
	f, err := m.NewFrame("w", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &saver{t: t, rec: &recorder{}}
	o := m.Run(context.Background(), f, nil, vm.Observer{Events: s, Saver: s})
	if o.Status != vm.Failed || o.Err.Code != vm.ErrInternal || o.Err.Message != `node o saves the run with message "m1" open` {
		t.Fatalf("outcome %+v", o.Err)
	}
	if got := s.rec.String(); got != "TEXT_MESSAGE_START\nTEXT_MESSAGE_END" {
		t.Errorf("events\n%s\nwant the message closed at the run's end", got)
	}

	f, err = m.NewFrame("w", nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := m.Run(context.Background(), f, nil, vm.Observer{Events: &recorder{}}); o.Status != vm.Finished {
		t.Fatalf("without a saver: outcome %+v", o.Err)
	}
}
