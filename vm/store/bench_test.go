package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// cpuTime is the CPU time the process used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// counting is a Store that counts the bytes its commits carry: events,
// frames, deltas, waits and run records.
type counting struct {
	store.Store
	bytes  atomic.Int64
	frames atomic.Int64 // of which whole frames
}

func (c *counting) Commit(ctx context.Context, l store.Lease, cm store.Commit) (store.Thread, error) {
	n := len(cm.Delta)
	for _, e := range cm.Events {
		n += len(e.Data) + len(e.RunID) + 16
	}
	if cp := cm.Checkpoint; cp != nil {
		n += len(cp.Frame) + len(cp.Wait) + len(cp.Hash) + len(cp.RunID)
		c.frames.Add(int64(len(cp.Frame)))
	}
	if r := cm.Run; r != nil {
		n += len(r.ID) + len(r.Input) + len(r.Outcome) + len(r.Error) + 32
	}
	c.bytes.Add(int64(n))
	return c.Store.Commit(ctx, l, cm)
}

// benchWorld is a program on a store, for the benchmarks of this file.
type benchWorld struct {
	st     *counting
	m      *vm.Machine
	run    int
	frames *store.Frames // nil: every run reads its thread from the store
}

func newBenchWorld(tb testing.TB, opts badger.Options, src string) *benchWorld {
	tb.Helper()
	st, err := badger.Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	reg := registry()
	reg.AddKind(&vm.KindSpec{Name: "effect", Doc: "Has an effect.", Example: `effect "x"`,
		Arg: &vm.ArgSpec{Name: "name", Type: vm.TypeString, Required: true}, Result: "the name",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			v, err := c.Arg()
			return vm.Step{Result: v}, err
		}})
	reg.AddKind(&vm.KindSpec{Name: "note", Doc: "Says something.", Example: `note "x"`, Pure: true,
		Arg: &vm.ArgSpec{Name: "text", Type: vm.TypeString, Required: true},
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			v, err := c.Arg()
			if err != nil {
				return vm.Step{}, err
			}
			id := c.NextID("msg")
			c.Emit(vm.Event{Type: vm.TextStart, MessageID: id, Role: "assistant"})
			c.Emit(vm.Event{Type: vm.TextContent, MessageID: id, Delta: vm.Text(v)})
			return vm.Step{}, c.Emit(vm.Event{Type: vm.TextEnd, MessageID: id})
		}})
	prog, diags := compiler.Compile(reg, compiler.Source{Name: "b.wf", Text: []byte(src)})
	if diags.HasErrors() {
		tb.Fatal(diags.Err())
	}
	return &benchWorld{st: &counting{Store: st}, m: &vm.Machine{Program: prog, Registry: reg, MaxVisits: 100_000}}
}

func (w *benchWorld) exec(tb testing.TB, k store.Key, resume *vm.Resume) vm.Outcome {
	w.run++
	o, _, err := store.Execute(context.Background(), w.st, store.Request{
		Key: k, Owner: "bench", RunID: fmt.Sprint("run-", w.run), Machine: w.m, Resume: resume, Frames: w.frames,
		Load: func(context.Context, string) (*vm.Machine, error) { return w.m, nil },
	})
	if err != nil {
		tb.Fatal(err)
	}
	if o.Status == vm.Failed {
		tb.Fatalf("run failed: %v", o.Err)
	}
	return o
}

// chain is a workflow of n nodes of a kind, one after the other.
func chain(kind string, n int) string {
	var b strings.Builder
	b.WriteString("wf 1\nworkflow w {\n  flow {\n    set $n = 0\n")
	for i := range n {
		switch kind {
		case "set":
			fmt.Fprintf(&b, "    set $n = $n + %d\n", i)
		case "note":
			fmt.Fprintf(&b, "    note \"step %d\"\n", i)
		case "effect":
			fmt.Fprintf(&b, "    effect \"step %d\" -> $r\n", i)
		}
	}
	b.WriteString("  }\n}\n")
	return b.String()
}

// BenchmarkChain runs linear chains of 20 and 200 nodes as stateless runs
// on an on-disk store (each run begins, runs and ends, synced) and reports
// the CPU time per run and per node. Chains of set and note nodes are pure
// (saved at the run's end only); a chain of effect nodes saves a delta
// after every node. The marginal cost of a node is the difference between
// the two lengths divided by 180.
func BenchmarkChain(b *testing.B) {
	for _, kind := range []string{"set", "note", "effect"} {
		for _, n := range []int{20, 200} {
			b.Run(fmt.Sprintf("%s/nodes=%d", kind, n), func(b *testing.B) {
				w := newBenchWorld(b, badger.Options{Dir: b.TempDir()}, chain(kind, n))
				cpu := cpuTime()
				i := 0
				for b.Loop() {
					i++
					w.exec(b, store.Key{Scope: "s", Workflow: "w", Thread: fmt.Sprint("t", i)}, nil)
				}
				per := float64(cpuTime()-cpu) / float64(b.N) / 1e3
				b.ReportMetric(per, "cpu-µs/run")
				b.ReportMetric(per/float64(n+1), "cpu-µs/node")
			})
		}
	}
}

const cycleProgram = `wf 1
workflow chat {
  conversation = true
  flow {
    top: set $turns = ($turns ?? 0) + 1
    note "you said <<$agent.said>>"
    w: wait
    goto top
  }
}
`

// BenchmarkSuspendResume measures one turn of a conversation that waits
// for the user: the suspended thread is loaded, resumed with the turn's
// input, runs two nodes and suspends again, all kept in the store. The
// cached variants keep the frame a run leaves for the next (store.Frames,
// as the server does); the others read it from the store every turn.
func BenchmarkSuspendResume(b *testing.B) {
	for _, where := range []string{"disk", "disk-cached", "memory", "memory-cached"} {
		b.Run(where, func(b *testing.B) {
			opts := badger.Options{InMemory: true}
			if strings.HasPrefix(where, "disk") {
				opts = badger.Options{Dir: b.TempDir()}
			}
			w := newBenchWorld(b, opts, cycleProgram)
			if strings.HasSuffix(where, "cached") {
				w.frames = store.NewFrames(1 << 20)
			}
			k := store.Key{Scope: "s", Workflow: "chat", Thread: "t"}
			w.exec(b, k, nil)
			resume := &vm.Resume{Agent: map[string]any{"said": "hello there"}}
			cpu := cpuTime()
			for b.Loop() {
				if o := w.exec(b, k, resume); o.Status != vm.Suspended {
					b.Fatalf("%+v", o)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/1e3, "cpu-µs/turn")
		})
	}
}

const historyProgram = `wf 1
workflow chat {
  conversation = true
  flow {
    top: set $chat = concat($chat ?? [], [{role: "user", content: $agent.said}])
    effect "<<$agent.said>>" -> $answer
    set $chat = concat($chat, [{role: "assistant", content: "you said " + $answer}])
    note "you said <<$answer>>"
    w: wait
    goto top
  }
}
`

// turnBytes plays a conversation up to history messages, then measures
// the bytes the next turns commit, on average, with the frames written
// whole (compactions) and without them.
func turnBytes(tb testing.TB, history, turns int, said string) (all, changes float64) {
	w := newBenchWorld(tb, badger.Options{InMemory: true}, historyProgram)
	k := store.Key{Scope: "s", Workflow: "chat", Thread: "t"}
	w.exec(tb, k, &vm.Resume{Agent: map[string]any{"said": said}})
	for i := 2; i < history; i += 2 {
		w.exec(tb, k, &vm.Resume{Agent: map[string]any{"said": fmt.Sprintf("%s %d", said, i)}})
	}
	before, frames := w.st.bytes.Load(), w.st.frames.Load()
	for i := range turns {
		w.exec(tb, k, &vm.Resume{Agent: map[string]any{"said": fmt.Sprintf("%s, turn %d", said, i)}})
	}
	all = float64(w.st.bytes.Load()-before) / float64(turns)
	return all, all - float64(w.st.frames.Load()-frames)/float64(turns)
}

// BenchmarkTurnBytes reports the bytes one turn commits after 10 and after
// 1,000 messages of history.
func BenchmarkTurnBytes(b *testing.B) {
	for _, history := range []int{10, 1000} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			var all, changes float64
			for b.Loop() {
				all, changes = turnBytes(b, history, 300, "a question of about sixty characters, as users type them")
			}
			b.ReportMetric(changes, "bytes/turn")
			b.ReportMetric(all, "bytes/turn-with-compaction")
		})
	}
}

// TestWriteAmplification: what a turn writes grows with what the turn
// changed, not with the conversation's length: a turn after 1,000
// messages writes within 10% of a turn after 10, and the frames written
// whole now and then (compactions) add at most as much again; and with
// what the request carries, not with how often the run checkpoints.
func TestWriteAmplification(t *testing.T) {
	said := "a question of about sixty characters, as users type them"
	shortAll, short := turnBytes(t, 10, 300, said)
	longAll, long := turnBytes(t, 1000, 300, said)
	t.Logf("bytes per turn: %.0f after 10 messages, %.0f after 1,000; with compactions %.0f and %.0f", short, long, shortAll, longAll)
	if long > short*1.1 || short > long*1.1 {
		t.Errorf("a turn writes %.0f bytes after 1,000 messages and %.0f after 10: not within 10%%", long, short)
	}
	for _, c := range [][2]float64{{shortAll, short}, {longAll, long}} {
		if c[0] > 2.2*c[1] {
			t.Errorf("with compactions a turn writes %.0f bytes, more than twice the %.0f it changed", c[0], c[1])
		}
	}

	// One request with a 1 MB message, on a loop of 100 checkpointed
	// nodes: a fixed multiple of the request, not of the nodes.
	src := `wf 1
workflow w {
  conversation = true
  flow {
    top: set $i = 0
    while $i < 100 max 200 {
      effect "x" -> $r
      set $i = $i + 1
    }
    w: wait
    goto top
  }
}
`
	w := newBenchWorld(t, badger.Options{Dir: t.TempDir()}, src)
	k := store.Key{Scope: "s", Workflow: "w", Thread: "t"}
	big := strings.Repeat("x", 1<<20)
	w.exec(t, k, &vm.Resume{Agent: map[string]any{"said": "hi"}})
	before := w.st.bytes.Load()
	w.exec(t, k, &vm.Resume{Agent: map[string]any{"said": big}})
	if n := w.st.bytes.Load() - before; n > 4*int64(len(big)) {
		t.Errorf("a turn carrying %d bytes through 100 checkpoints wrote %d bytes, more than 4 times its size", len(big), n)
	} else {
		t.Logf("a turn carrying %d bytes through 100 checkpoints wrote %d bytes", len(big), n)
	}
}
