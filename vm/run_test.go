package vm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/vm"
)

// testRegistry holds two node kinds for interpreter tests: `note "text"`
// emits a CUSTOM event with the text, and `wait` suspends until resumed.
func testRegistry() *vm.Registry {
	r := vm.NewRegistry()
	r.AddKind(&vm.KindSpec{
		Name: "note", Doc: "Emits a note.", Example: `note "x"`,
		Arg:    &vm.ArgSpec{Name: "text", Type: vm.TypeAny, Required: true},
		Result: "the text",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			v, err := c.Arg()
			if err != nil {
				return vm.Step{}, err
			}
			return vm.Step{Result: v}, c.Emit(vm.Event{Type: vm.Custom, Name: "note", Value: v})
		},
	})
	r.AddKind(&vm.KindSpec{
		Name: "wait", Doc: "Waits for the user.", Example: `w: wait`,
		Suspend: vm.SuspendAlways, Convo: true,
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			if c.Resume == nil {
				return vm.Step{Wait: &vm.Wait{Kind: vm.WaitUser}}, nil
			}
			if c.Resume.Merge["bad"] != nil {
				return vm.Step{}, vm.Errorf(vm.ErrResume, "bad resume")
			}
			return vm.Step{}, nil
		},
	})
	r.AddKind(&vm.KindSpec{
		Name: "output", Doc: "Sets the result.", Example: `output 1`,
		Arg: &vm.ArgSpec{Name: "value", Type: vm.TypeAny, Required: true},
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			v, err := c.Arg()
			c.SetOutput(v)
			return vm.Step{}, err
		},
	})
	r.AddKind(&vm.KindSpec{
		Name: "call", Doc: "Calls a workflow.", Example: `call w`,
		Arg:    &vm.ArgSpec{Name: "workflow", Type: vm.TypeWorkflow, Required: true},
		Keys:   []vm.KeySpec{{Name: "input", Type: vm.TypeAny}},
		Result: "the output",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			id, _ := c.Arg()
			in, _, err := c.Key("input")
			if err != nil {
				return vm.Step{}, err
			}
			out, err := c.CallWorkflow(ctx, id.(string), in)
			return vm.Step{Result: out}, err
		},
	})
	r.AddKind(&vm.KindSpec{
		Name: "boom", Doc: "Fails.", Example: `boom`,
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			return vm.Step{}, vm.Errorf(vm.ErrNode, "boom went off")
		},
	})
	r.AddKind(&vm.KindSpec{
		Name: "block", Doc: "Blocks until the run is cancelled.", Example: `block`,
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			<-ctx.Done()
			return vm.Step{}, ctx.Err()
		},
	})
	return r
}

func machine(t testing.TB, src string) *vm.Machine {
	t.Helper()
	reg := testRegistry()
	prog, diags := compiler.Compile(reg, compiler.Source{Name: "t.wf", Text: []byte(src)})
	if diags.HasErrors() {
		t.Fatalf("compile: %v", diags.Err())
	}
	n := 0
	return &vm.Machine{Program: prog, Registry: reg, NewID: func() string { n++; return fmt.Sprintf("f%d", n) }}
}

// recorder keeps events as compact lines.
type recorder struct{ lines []string }

func (r *recorder) Emit(e vm.Event) error {
	line := string(e.Type)
	switch e.Type {
	case vm.Custom:
		line += " " + vm.Text(e.Value)
	case vm.StepStarted, vm.StepFinished, vm.SubagentStarted, vm.SubagentFinished:
		line += " " + e.Name
	}
	r.lines = append(r.lines, line)
	return nil
}

func (r *recorder) String() string { return strings.Join(r.lines, "\n") }

func run(t *testing.T, m *vm.Machine, id string, ctx map[string]any) (*vm.Frame, vm.Outcome, *recorder) {
	t.Helper()
	f, err := m.NewFrame(id, ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	o := m.Run(context.Background(), f, nil, vm.Observer{Events: rec})
	return f, o, rec
}

func TestControlFlow(t *testing.T) {
	tests := []struct {
		name string
		flow string
		want string // events, one per line
		out  string // the output, as Text
	}{
		{"if else chain", `
			set $n = 2
			if $n == 1 { note "one" } else if $n == 2 { note "two" } else { note "many" }
			note "after"`,
			"CUSTOM two\nCUSTOM after", ""},
		{"switch default", `
			switch {
				case $x == 1 { note "one" }
				default { note "default" }
			}`,
			"CUSTOM default", ""},
		{"for over list with local", `
			set $sum = 0
			for item in [1, 2, 3] {
				set $sum = $sum + item
				note "item <<item>>"
			}
			output $sum`,
			"CUSTOM item 1\nCUSTOM item 2\nCUSTOM item 3", "6"},
		{"for over nil and empty", `
			for item in $missing { note "never" }
			for item in [] { note "never" }
			note "done"`,
			"CUSTOM done", ""},
		{"while with max", `
			set $i = 0
			while $i < 3 max 10 { set $i = $i + 1 }
			output $i`,
			"", "3"},
		{"goto loop", `
			set $i = 0
			top: set $i = $i + 1
			if $i < 3 { goto top }
			output $i`,
			"", "3"},
		{"step events", `
			step "Work" { note "inside" }`,
			"STEP_STARTED Work\nCUSTOM inside\nSTEP_FINISHED Work", ""},
		{"try catches fail", `
			try {
				fail "bad <<1 + 1>>"
			} catch e {
				note "caught <<e.message>> <<e.code>>"
			}`,
			"CUSTOM caught bad 2 fail", ""},
		{"try catches node error and closes steps", `
			try {
				step "Outer" { step "Inner" { boom } }
			} catch e { note "<<e.message>>" }
			note "after"`,
			"STEP_STARTED Outer\nSTEP_STARTED Inner\nSTEP_FINISHED Inner\nSTEP_FINISHED Outer\nCUSTOM boom went off\nCUSTOM after", ""},
		{"while beyond max is a catchable error", `
			try { while true max 2 { note "x" } } catch e { note "<<e.message>>" }`,
			"CUSTOM x\nCUSTOM x\nCUSTOM while loop ran 2 times, its max", ""},
		{"missing paths read nil", `
			output {a: $nothing.deep.path, b: $agent?.x ?? "default", c: "x<<$nope.x>>", d: "<<$nope.x>>"}`,
			"", `{"a":null,"b":"default","c":"x","d":null}`},
		{"templates keep a lone value's type", `
			set $list = [1, 2]
			set $copy = "<<$list>>"
			set $text = "n=<<$list>>"
			output {copy: $copy, text: $text}`,
			"", `{"copy":[1,2],"text":"n=[1,2]"}`},
		{"set paths with indexes", `
			set $plan = {steps: [{status: "todo"}, {status: "todo"}]}
			set $plan.steps[1].status = "done"
			set $deep.a.b = 1
			output {plan: $plan, deep: $deep}`,
			"", `{"deep":{"a":{"b":1}},"plan":{"steps":[{"status":"todo"},{"status":"done"}]}}`},
		{"parallel merges disjoint writes", `
			set $shared = {keep: 1}
			parallel {
				branch a { set $shared.a = 1; note "a" }
				branch b { set $shared.b = 2 }
				branch c { set $c = 3 }
			}
			output {shared: $shared, c: $c}`,
			"CUSTOM a", `{"c":3,"shared":{"a":1,"b":2,"keep":1}}`},
		{"end stops the flow", `
			if true {
				note "one"
				end
			}
			note "two"`,
			"CUSTOM one", ""},
		{"note result stored", `
			note "x" -> $r
			output $r`,
			"CUSTOM x", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := machine(t, "wf 1\nworkflow w {\n flow {\n"+tt.flow+"\n }\n}\n")
			f, o, rec := run(t, m, "w", nil)
			if o.Status != vm.Finished {
				t.Fatalf("outcome %+v, error %v", o, o.Err)
			}
			if got := rec.String(); got != tt.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, tt.want)
			}
			if tt.out != "" && vm.Text(o.Result) != tt.out {
				t.Errorf("output %s, want %s", vm.Text(o.Result), tt.out)
			}
			if len(f.Steps) != 0 || !f.Ended {
				t.Errorf("frame left steps %v, ended %v", f.Steps, f.Ended)
			}
		})
	}
}

func TestFailure(t *testing.T) {
	m := machine(t, `wf 1
workflow w {
  flow {
    step "S" {
      boom
    }
  }
}
`)
	_, o, rec := run(t, m, "w", nil)
	if o.Status != vm.Failed || o.Err == nil {
		t.Fatalf("outcome %+v", o)
	}
	e := o.Err
	if e.Code != vm.ErrNode || e.NodeID != "1.1" || e.Span.String() != "t.wf:5:7" || e.Message != "boom went off" {
		t.Errorf("error %+v (span %s)", e, e.Span)
	}
	if got, want := rec.String(), "STEP_STARTED S\nSTEP_FINISHED S"; got != want {
		t.Errorf("events %q, want %q (open steps closed)", got, want)
	}
}

func TestExpressionErrorPointsIntoSource(t *testing.T) {
	m := machine(t, "wf 1\nworkflow w {\n  flow {\n    set $x = 1 % $agent.zero\n  }\n}\n")
	_, o, _ := run(t, m, "w", map[string]any{"agent": map[string]any{"zero": "a"}})
	if o.Status != vm.Failed || o.Err.Code != vm.ErrExpr || o.Err.Span.String() != "t.wf:4:14" {
		t.Fatalf("outcome %+v %+v", o, o.Err)
	}
}

func TestVisitGuard(t *testing.T) {
	m := machine(t, "wf 1\nworkflow w {\n  flow {\n    top: note \"x\"\n    goto top\n  }\n}\n")
	m.MaxVisits = 10
	_, o, rec := run(t, m, "w", nil)
	if o.Status != vm.Failed || o.Err.Code != vm.ErrVisits {
		t.Fatalf("outcome %+v", o)
	}
	if len(rec.lines) != 10 {
		t.Errorf("ran %d nodes, want 10", len(rec.lines))
	}
}

func TestCancellationAndDeadline(t *testing.T) {
	m := machine(t, "wf 1\nworkflow w {\n  flow {\n    block\n    note \"after\"\n  }\n}\n")
	f, err := m.NewFrame("w", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan vm.Outcome)
	go func() { done <- m.Run(ctx, f, nil, vm.Observer{Events: &recorder{}}) }()
	cancel()
	if o := <-done; o.Status != vm.Cancelled {
		t.Errorf("cancelled run: %+v", o)
	}

	m.Deadline = time.Nanosecond
	f, _ = m.NewFrame("w", nil)
	if o := m.Run(context.Background(), f, nil, vm.Observer{Events: &recorder{}}); o.Status != vm.Failed || (o.Err.Code != vm.ErrDeadline && o.Err.Code != vm.ErrTimeout) {
		t.Errorf("deadline: %+v %+v", o, o.Err)
	}
}

func TestSuspendResumeAcrossSerialization(t *testing.T) {
	src := `wf 1
workflow chat {
  conversation = true
  flow {
    set $count = ($count ?? 0) + 1
    note "turn <<$count>> from <<$agent.who>>"
    w: wait
    note "resumed <<$agent.who>> <<$merged>>"
  }
}
`
	play := func(reload bool) (string, map[string]any) {
		m := machine(t, src)
		rec := &recorder{}
		f, _ := m.NewFrame("chat", map[string]any{"agent": map[string]any{"who": "ada", "old": true}})
		for turn := range 4 {
			var resume *vm.Resume
			if turn > 0 {
				resume = &vm.Resume{Agent: map[string]any{"who": fmt.Sprintf("user%d", turn)}, Merge: map[string]any{"merged": turn}}
			}
			o := m.Run(context.Background(), f, resume, vm.Observer{Events: rec})
			if o.Status != vm.Suspended && o.Status != vm.Finished {
				t.Fatalf("turn %d: %+v %v", turn, o, o.Err)
			}
			if reload {
				data, err := f.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if f, err = vm.UnmarshalFrame(data); err != nil {
					t.Fatal(err)
				}
			}
		}
		return rec.String(), f.Context
	}
	memEvents, memCtx := play(false)
	diskEvents, diskCtx := play(true)
	if memEvents != diskEvents {
		t.Errorf("events differ:\n%s\n---\n%s", memEvents, diskEvents)
	}
	if !vm.Equal(memCtx, diskCtx) {
		t.Errorf("context differs: %v vs %v", memCtx, diskCtx)
	}
	want := "CUSTOM turn 1 from ada\nCUSTOM resumed user1 1\nCUSTOM turn 2 from user2\nCUSTOM resumed user3 3"
	if !strings.HasPrefix(memEvents, want) {
		t.Errorf("events:\n%s\nwant prefix:\n%s", memEvents, want)
	}
	if _, old := memCtx["agent"].(map[string]any)["old"]; old {
		t.Errorf("resume did not replace $agent whole: %v", memCtx["agent"])
	}
}

func TestFrameRoundTrip(t *testing.T) {
	f := &vm.Frame{Version: vm.FrameVersion, Workflow: "w", ID: "x", Node: "3", Context: map[string]any{
		"n": 1, "f": 1.5, "s": "x", "l": []any{1, "a", nil, map[string]any{"k": true}},
	}, Locals: map[string]any{"i": 2}, State: map[string]any{"3": map[string]any{"i": 1}}, Seq: 7}
	data, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := vm.UnmarshalFrame(data)
	if err != nil {
		t.Fatal(err)
	}
	if !vm.Equal(f.Context, g.Context) || !vm.Equal(f.Locals, g.Locals) || !vm.Equal(f.State, g.State) || g.Seq != 7 || g.Node != "3" {
		t.Errorf("round trip lost data:\n%+v\n%+v", f, g)
	}
	if _, ok := g.Context["n"].(int); !ok {
		t.Errorf("whole numbers must stay ints, got %T", g.Context["n"])
	}
	if _, err := vm.UnmarshalFrame([]byte(`{"v": 99}`)); err == nil {
		t.Error("a frame of another version must be rejected")
	}
}

func TestCallSubWorkflow(t *testing.T) {
	m := machine(t, `wf 1
workflow parent {
  flow {
    set $r = 0
    try {
      call child { input = {n: 2} } -> $r
    } catch e {
      note "caught <<e.message>>"
    }
    output $r
  }
}
workflow child {
  flow {
    note "child sees <<$input.n>>"
    output $input.n * 10
  }
}
`)
	_, o, rec := run(t, m, "parent", nil)
	if o.Status != vm.Finished || vm.Text(o.Result) != "20" {
		t.Fatalf("outcome %+v %v", o, o.Err)
	}
	if got, want := rec.String(), "SUBAGENT_STARTED child\nCUSTOM child sees 2\nSUBAGENT_FINISHED child"; got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
}

// TestRejectedResumeKeepsWaiting: a resume the node rejects fails the run
// but leaves the frame suspended at the node, so a proper answer continues.
func TestRejectedResumeKeepsWaiting(t *testing.T) {
	m := machine(t, "wf 1\nworkflow w {\n  conversation = true\n  flow {\n    w: wait\n    note \"after\"\n  }\n}\n")
	f, o, _ := run(t, m, "w", nil)
	if o.Status != vm.Suspended {
		t.Fatalf("first run: %+v", o)
	}
	rec := &recorder{}
	if o := m.Run(context.Background(), f, &vm.Resume{Merge: map[string]any{"bad": true}}, vm.Observer{Events: rec}); o.Status != vm.Failed || o.Err.Code != vm.ErrResume {
		t.Fatalf("bad resume: %+v", o)
	}
	if !f.Suspended || f.Node != "w" {
		t.Fatalf("frame after a rejected resume: suspended %v at %q", f.Suspended, f.Node)
	}
	if o := m.Run(context.Background(), f, &vm.Resume{Merge: map[string]any{"bad": nil}}, vm.Observer{Events: rec}); o.Status != vm.Finished {
		t.Fatalf("good resume: %+v %v", o, o.Err)
	}
	if rec.String() != "CUSTOM after" {
		t.Errorf("events %q", rec.String())
	}
}

// TestParallelStepsAndOutput: steps inside branches open and close in each
// branch without touching the others, and an output set in a branch is the
// run's output.
func TestParallelStepsAndOutput(t *testing.T) {
	m := machine(t, `wf 1
workflow w {
  flow {
    step "Outer" {
      parallel {
        branch a { step "A" { note "a" } }
        branch b { step "B" { output "from b" } }
      }
    }
  }
}
`)
	f, o, rec := run(t, m, "w", nil)
	if o.Status != vm.Finished || vm.Text(o.Result) != "from b" {
		t.Fatalf("outcome %+v %v", o, o.Err)
	}
	started, finished := strings.Count(rec.String(), "STEP_STARTED"), strings.Count(rec.String(), "STEP_FINISHED")
	if started != 3 || finished != 3 || len(f.Steps) != 0 {
		t.Errorf("steps %d started, %d finished, %v left open:\n%s", started, finished, f.Steps, rec)
	}
}

// TestParallelBranchFails: the branch that fails is why the others are
// cancelled, and its error is the run's, whatever their order.
func TestParallelBranchFails(t *testing.T) {
	m := machine(t, `wf 1
workflow w {
  flow {
    parallel {
      branch waits { block }
      branch fails { boom }
    }
  }
}
`)
	_, o, _ := run(t, m, "w", nil)
	if o.Status != vm.Failed || o.Err == nil || o.Err.Code != vm.ErrNode || !strings.Contains(o.Err.Message, "boom went off") {
		t.Fatalf("outcome %+v %v, want the failing branch's error", o, o.Err)
	}
}

// TestResumeUser: a turn's $user replaces the thread's whole, nil
// included (an anonymous turn); a resume without $agent (a timer's) keeps
// it; a called workflow sees its caller's.
func TestResumeUser(t *testing.T) {
	src := `wf 1
workflow chat {
  conversation = true
  flow {
    top: call whoami { input = {} } -> $who
    note "<<$user?.id ?? 'nobody'>> <<$user?.claims?.role ?? '-'>> <<$who>>"
    w: wait
    goto top
  }
}
workflow whoami {
  flow { output $user?.id ?? "nobody" }
}
`
	m := machine(t, src)
	rec := &recorder{}
	f, _ := m.NewFrame("chat", nil)
	for i, resume := range []*vm.Resume{
		{Agent: map[string]any{}, User: map[string]any{"id": "ada", "claims": map[string]any{"role": "admin", "old": true}}},
		{Agent: map[string]any{}, User: map[string]any{"id": "ada", "claims": map[string]any{"role": "reader"}}},
		{},
		{Agent: map[string]any{}},
	} {
		if o := m.Run(context.Background(), f, resume, vm.Observer{Events: rec}); o.Status != vm.Suspended {
			t.Fatalf("turn %d: %+v %v", i, o, o.Err)
		}
		if i == 1 {
			if got, _ := json.Marshal(f.Context["user"]); string(got) != `{"claims":{"role":"reader"},"id":"ada"}` {
				t.Errorf("$user %s, want the turn's whole", got)
			}
		}
	}
	want := "CUSTOM ada admin ada\nCUSTOM ada reader ada\nCUSTOM ada reader ada\nCUSTOM nobody - nobody"
	var notes []string
	for _, line := range strings.Split(rec.String(), "\n") {
		if strings.HasPrefix(line, "CUSTOM") {
			notes = append(notes, line)
		}
	}
	if got := strings.Join(notes, "\n"); got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
	if _, ok := f.Context["user"]; ok {
		t.Errorf("an anonymous turn left $user %v", f.Context["user"])
	}
}
