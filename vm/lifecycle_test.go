package vm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aguic/aguic/vm"
)

// observer records node starts and ends among the events:
// "> id kind" when a node starts, "< id -> next" when it completed and
// "< id ! code -> next" when it failed.
type observer struct {
	recorder
	fail string // NodeStarted fails at this node
}

func (o *observer) NodeStarted(n *vm.Node) error {
	if n.ID == o.fail {
		return errors.New("the audience left")
	}
	o.lines = append(o.lines, "> "+n.ID+" "+n.Kind)
	return nil
}

func (o *observer) NodeFinished(n *vm.Node, end vm.NodeEnd) error {
	line := "< " + n.ID
	if end.Err != nil {
		line += " ! " + end.Err.Code
	}
	if end.Next != "" {
		line += " -> " + end.Next
	}
	o.lines = append(o.lines, line)
	return nil
}

func TestNodeObserver(t *testing.T) {
	tests := []struct {
		name   string
		flow   string
		status vm.Status
		want   string // events and node lines, one per line
	}{
		{"nodes in order around their events", `
			a: note "one"
			b: set $x = 1
			c: note "two"`,
			vm.Finished, `
> a note
CUSTOM one
< a -> b
> b set
< b -> c
> c note
CUSTOM two
< c`},
		{"a decision names the edge taken", `
			a: if true { b: note "yes" } else { c: note "no" }`,
			vm.Finished, `
> a if
< a -> b
> b note
CUSTOM yes
< b`},
		{"steps are nodes too", `
			s: step "Work" { a: note "inside" }`,
			vm.Finished, `
> s step
STEP_STARTED Work
< s -> a
> a note
CUSTOM inside
< a -> s.end
> s.end step_end
STEP_FINISHED Work
< s.end`},
		{"a caught error goes on to the catch", `
			t: try { a: boom } catch e { c: note "caught" }`,
			vm.Finished, `
> t try
< t -> a
> a boom
< a ! node -> t.catch
> t.catch catch
< t.catch -> c
> c note
CUSTOM caught
< c`},
		{"an uncaught error ends the flow", `
			a: boom
			b: note "never"`,
			vm.Failed, `
> a boom
< a ! node`},
		{"branches of a parallel node are not reported", `
			p: parallel {
				branch x { a: note "branch x" }
				branch y { b: note "branch y" }
			}
			c: note "after"`,
			vm.Finished, `
> p parallel
CUSTOM *
CUSTOM *
< p -> p.join
> p.join join
< p.join -> c
> c note
CUSTOM after
< c`},
		{"a called workflow's nodes are not reported", `
			a: call child
			b: note "back"`,
			vm.Finished, `
> a call
SUBAGENT_STARTED child
CUSTOM child
SUBAGENT_FINISHED child
< a -> b
> b note
CUSTOM back
< b`},
		{"end", `
			a: note "one"
			if true { e: end }
			b: note "never"`,
			vm.Finished, `
> a note
CUSTOM one
< a -> 2
> 2 if
< 2 -> e
> e end
< e`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := machine(t, "wf 1\nworkflow w {\n flow {\n"+tt.flow+"\n }\n}\nworkflow child {\n flow { inner: note \"child\" }\n}\n")
			f, err := m.NewFrame("w", nil)
			if err != nil {
				t.Fatal(err)
			}
			obs := &observer{}
			o := m.Run(context.Background(), f, nil, vm.Observer{Events: obs, Nodes: obs})
			if o.Status != tt.status {
				t.Fatalf("outcome %+v %v, want %s", o, o.Err, tt.status)
			}
			got := obs.String()
			// The branches' events come in any order.
			got = strings.NewReplacer("CUSTOM branch x", "CUSTOM *", "CUSTOM branch y", "CUSTOM *").Replace(got)
			if want := strings.TrimPrefix(tt.want, "\n"); got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestNodeObserverSuspend: a node that suspends the run has started and
// not finished; it starts again when the run resumes.
func TestNodeObserverSuspend(t *testing.T) {
	m := machine(t, "wf 1\nworkflow w {\n  conversation = true\n  flow {\n    a: note \"before\"\n    w: wait\n    b: note \"after\"\n  }\n}\n")
	f, err := m.NewFrame("w", nil)
	if err != nil {
		t.Fatal(err)
	}
	obs := &observer{}
	if o := m.Run(context.Background(), f, nil, vm.Observer{Events: obs, Nodes: obs}); o.Status != vm.Suspended {
		t.Fatalf("first run: %+v", o)
	}
	if got, want := obs.String(), "> a note\nCUSTOM before\n< a -> w\n> w wait"; got != want {
		t.Errorf("first run:\n%s\nwant:\n%s", got, want)
	}
	obs = &observer{}
	if o := m.Run(context.Background(), f, &vm.Resume{Merge: map[string]any{"bad": true}}, vm.Observer{Events: obs, Nodes: obs}); o.Status != vm.Failed {
		t.Fatalf("rejected resume: %+v", o)
	}
	if got, want := obs.String(), "> w wait\n< w ! invalid_resume"; got != want {
		t.Errorf("rejected resume:\n%s\nwant:\n%s", got, want)
	}
	obs = &observer{}
	if o := m.Run(context.Background(), f, &vm.Resume{Merge: map[string]any{"bad": nil}}, vm.Observer{Events: obs, Nodes: obs}); o.Status != vm.Finished {
		t.Fatalf("resume: %+v %v", o, o.Err)
	}
	if got, want := obs.String(), "> w wait\n< w -> b\n> b note\nCUSTOM after\n< b"; got != want {
		t.Errorf("resume:\n%s\nwant:\n%s", got, want)
	}
}

// TestNodeObserverCancel: a node the cancellation stopped ends with the
// error; the run is cancelled.
func TestNodeObserverCancel(t *testing.T) {
	m := machine(t, "wf 1\nworkflow w {\n  flow {\n    a: block\n    b: note \"never\"\n  }\n}\n")
	f, err := m.NewFrame("w", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	obs := &startSignal{observer: &observer{}, started: make(chan struct{})}
	done := make(chan vm.Outcome)
	go func() { done <- m.Run(ctx, f, nil, vm.Observer{Events: obs, Nodes: obs}) }()
	<-obs.started
	cancel()
	if o := <-done; o.Status != vm.Cancelled {
		t.Fatalf("outcome %+v", o)
	}
	if got, want := obs.String(), "> a block\n< a ! cancelled"; got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// startSignal closes started when the first node started.
type startSignal struct {
	*observer
	started chan struct{}
}

func (s *startSignal) NodeStarted(n *vm.Node) error {
	defer close(s.started)
	return s.observer.NodeStarted(n)
}

// TestNodeObserverError: an observer that fails fails the run at the node.
func TestNodeObserverError(t *testing.T) {
	m := machine(t, "wf 1\nworkflow w {\n  flow {\n    a: note \"one\"\n    b: note \"two\"\n  }\n}\n")
	f, err := m.NewFrame("w", nil)
	if err != nil {
		t.Fatal(err)
	}
	obs := &observer{fail: "b"}
	o := m.Run(context.Background(), f, nil, vm.Observer{Events: obs, Nodes: obs})
	if o.Status != vm.Failed || o.Err.Code != vm.ErrInternal || o.Err.NodeID != "b" || !strings.Contains(o.Err.Message, "the audience left") {
		t.Fatalf("outcome %+v %+v", o, o.Err)
	}
	if got, want := obs.String(), "> a note\nCUSTOM one\n< a -> b"; got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestNodeText: a node's text is what the drawings show.
func TestNodeText(t *testing.T) {
	m := machine(t, "wf 1\nworkflow w {\n  flow {\n    a: note \"hello\"\n    b: set $x = 1\n  }\n}\n")
	w := m.Program.Workflow("w")
	for id, want := range map[string]string{"a": `note "hello"`, "b": "set $x = 1"} {
		if got := w.Node(id).Text(); got != want {
			t.Errorf("node %s: %q, want %q", id, got, want)
		}
	}
}
