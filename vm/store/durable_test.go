package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// recording is a store that notes its commits and syncs in a log that the
// nodes of durableProgram write to as well.
type recording struct {
	store.Store
	log *steps
}

type steps struct {
	mu    sync.Mutex
	steps []string
}

func (s *steps) add(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, step)
}

func (r *recording) Commit(ctx context.Context, l store.Lease, c store.Commit) (store.Thread, error) {
	th, err := r.Store.Commit(ctx, l, c)
	if c.Lazy {
		r.log.add("commit lazy")
	} else {
		r.log.add("commit")
	}
	return th, err
}

func (r *recording) Sync(ctx context.Context) error {
	r.log.add("sync")
	return r.Store.Sync(ctx)
}

const durableProgram = `wf 1
workflow pure {
  conversation = true
  flow {
    note "a"
    w: pause
  }
}
workflow effects {
  conversation = true
  flow {
    note "a"
    act "b"
    note "c"
    act "d"
    w: pause
  }
}
`

// TestEffectsWaitForADurableTurn: a turn's start is committed and synced
// before the turn's first node that is not pure runs, and OnDurable learns
// it once, at that moment; a turn of pure nodes only is one commit, of its
// start and end together, synced, and Run returning says it.
func TestEffectsWaitForADurableTurn(t *testing.T) {
	log := &steps{}
	prog, reg := durableProgramOf(t, log)
	base, err := badger.Open(badger.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	st := &recording{Store: base, log: log}
	m := &vm.Machine{Program: prog, Registry: reg}
	for _, tc := range []struct {
		workflow string
		want     []string
	}{
		{"pure", []string{"note a", "commit"}},
		{"effects", []string{"note a", "commit lazy", "sync", "durable", "act b", "commit lazy", "note c", "act d", "commit lazy", "commit"}},
	} {
		log.steps = nil
		_, _, err := store.Execute(context.Background(), st, store.Request{
			Key: store.Key{Workflow: tc.workflow, Thread: "t"}, Owner: "o", TTL: time.Hour, RunID: "r",
			Machine: m, Resume: &vm.Resume{}, OnDurable: func() { log.add("durable") },
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.workflow, err)
		}
		if !slices.Equal(log.steps, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.workflow, log.steps, tc.want)
		}
	}

	// Turn.Sync makes the turn durable before it runs (a server does so
	// when a turn takes long); the run then has nothing more to sync
	// before its effects.
	log.steps = nil
	turn, err := store.Begin(context.Background(), st, store.Request{
		Key: store.Key{Workflow: "effects", Thread: "t2"}, Owner: "o", TTL: time.Hour, RunID: "r",
		Machine: m, Resume: &vm.Resume{}, OnDurable: func() { log.add("durable") },
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := turn.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := turn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"commit lazy", "sync", "durable", "note a", "act b", "commit lazy", "note c", "act d", "commit lazy", "commit"}
	if !slices.Equal(log.steps, want) {
		t.Errorf("synced before it ran:\n got %q\nwant %q", log.steps, want)
	}
}

// TestSyncBesideTheRun: Turn.Sync called from another goroutine while the
// turn runs (as a server does when a turn takes long) writes the start
// once, beside the run's own commits, and OnDurable learns it at most once.
func TestSyncBesideTheRun(t *testing.T) {
	prog, reg := durableProgramOf(t, nil)
	st, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := &vm.Machine{Program: prog, Registry: reg}
	for i := range 50 {
		for _, wf := range []string{"pure", "effects"} {
			var durable atomic.Int32
			k := store.Key{Workflow: wf, Thread: fmt.Sprint("t", i)}
			turn, err := store.Begin(context.Background(), st, store.Request{
				Key: k, Owner: "o", TTL: time.Hour, RunID: "r",
				Machine: m, Resume: &vm.Resume{}, OnDurable: func() { durable.Add(1) },
			})
			if err != nil {
				t.Fatal(err)
			}
			synced := make(chan error, 1)
			go func() { synced <- turn.Sync() }()
			o, _, err := turn.Run(context.Background())
			if err != nil || o.Status != vm.Suspended {
				t.Fatalf("%s: %+v, %v", wf, o, err)
			}
			if err := <-synced; err != nil {
				t.Fatalf("%s: Sync: %v", wf, err)
			}
			if n := durable.Load(); n > 1 {
				t.Errorf("%s: OnDurable called %d times", wf, n)
			}
			r, err := st.Run(context.Background(), k, "r")
			if err != nil || r.Status != store.Suspended {
				t.Errorf("%s: the run after it: %+v, %v", wf, r, err)
			}
		}
	}
}

// durableProgramOf compiles durableProgram, whose notes and acts log to
// log when it is not nil.
func durableProgramOf(t *testing.T, log *steps) (*vm.Program, *vm.Registry) {
	t.Helper()
	reg := vm.NewRegistry()
	note := func(what string) func(context.Context, *vm.Call) (vm.Step, error) {
		return func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			if log != nil {
				v, _ := c.Arg()
				log.add(what + " " + vm.Text(v))
			}
			return vm.Step{}, nil
		}
	}
	reg.AddKind(&vm.KindSpec{Name: "note", Doc: "Notes.", Example: `note "x"`, Pure: true,
		Arg: &vm.ArgSpec{Name: "text", Type: vm.TypeString, Required: true}, Exec: note("note")})
	reg.AddKind(&vm.KindSpec{Name: "act", Doc: "Acts on the world.", Example: `act "x"`,
		Arg: &vm.ArgSpec{Name: "text", Type: vm.TypeString, Required: true}, Exec: note("act")})
	reg.AddKind(&vm.KindSpec{Name: "pause", Doc: "Waits.", Example: `pause`, Pure: true, Suspend: vm.SuspendAlways, Convo: true,
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			return vm.Step{Wait: &vm.Wait{Kind: vm.WaitUser}}, nil
		}})
	prog, diags := compiler.Compile(reg, compiler.Source{Name: "d.wf", Text: []byte(durableProgram)})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	return prog, reg
}
