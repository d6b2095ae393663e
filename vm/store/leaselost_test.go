package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// stealing is a store whose thread leases another process takes once
// stolen is set: renewals and commits are refused with ErrLeaseLost, as a
// process sees them when the store comes back after its lease expired
// and another process took the thread over.
type stealing struct {
	store.Store
	stolen atomic.Bool
}

func (s *stealing) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if s.stolen.Load() {
		return store.Lease{}, store.ErrLeaseLost
	}
	return s.Store.Renew(ctx, l, ttl)
}

func (s *stealing) Commit(ctx context.Context, l store.Lease, c store.Commit) (store.Thread, error) {
	if s.stolen.Load() {
		return store.Thread{}, store.ErrLeaseLost
	}
	return s.Store.Commit(ctx, l, c)
}

// TestRunStopsWhenItsLeaseIsLost: a run whose lease another process took
// stops at once (its node is cancelled) and fails with ErrLeaseLost,
// rather than going on with work whose end the store would refuse.
func TestRunStopsWhenItsLeaseIsLost(t *testing.T) {
	reg := vm.NewRegistry()
	entered := make(chan struct{})
	reg.AddKind(&vm.KindSpec{Name: "act", Doc: "Acts on the world.", Example: `act`,
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) { return vm.Step{}, nil }})
	reg.AddKind(&vm.KindSpec{Name: "hold", Doc: "Waits for its context to end.", Example: `hold`,
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			close(entered)
			select {
			case <-ctx.Done():
				return vm.Step{}, ctx.Err()
			case <-time.After(time.Minute):
				return vm.Step{}, nil
			}
		}})
	reg.AddKind(&vm.KindSpec{Name: "pause", Doc: "Waits.", Example: `pause`, Pure: true, Suspend: vm.SuspendAlways, Convo: true,
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			return vm.Step{Wait: &vm.Wait{Kind: vm.WaitUser}}, nil
		}})
	prog, diags := compiler.Compile(reg, compiler.Source{Name: "l.wf", Text: []byte(`wf 1
workflow w {
  conversation = true
  flow {
    act
    hold
    p: pause
  }
}
`)})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	base, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	st := &stealing{Store: base}
	turn, err := store.Begin(context.Background(), st, store.Request{
		Key: store.Key{Workflow: "w", Thread: "t"}, Owner: "o", TTL: 30 * time.Millisecond, RunID: "r",
		Machine: &vm.Machine{Program: prog, Registry: reg}, Resume: &vm.Resume{},
	})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		_, _, err := turn.Run(context.Background())
		ended <- err
	}()
	<-entered
	st.stolen.Store(true)
	select {
	case err := <-ended:
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("the run ended with %v, want ErrLeaseLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run went on after its lease was taken")
	}
}
