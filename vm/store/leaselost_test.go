package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// slowRenewals is a store whose renewals wait until released: a database
// too slow to renew a lease in time.
type slowRenewals struct {
	store.Store
	released chan struct{}
}

func (s *slowRenewals) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	<-s.released
	return s.Store.Renew(ctx, l, ttl)
}

// TestLeaseLostStopsTheRun: a run whose lease expired and was taken over
// by another process (it could not renew it in time) stops where it is,
// once it learns so, rather than go on beside the process that took it
// over; its commits would be refused anyway.
func TestLeaseLostStopsTheRun(t *testing.T) {
	reg := vm.NewRegistry()
	entered := make(chan struct{})
	reg.AddKind(&vm.KindSpec{Name: "wait_long", Doc: "Waits until cancelled.", Example: `wait_long`,
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			close(entered)
			<-ctx.Done()
			return vm.Step{}, ctx.Err()
		}})
	prog, diags := compiler.Compile(reg, compiler.Source{Name: "w.wf", Text: []byte("wf 1\nworkflow w {\n  flow {\n    wait_long\n  }\n}\n")})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	base, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	st := &slowRenewals{Store: base, released: make(chan struct{})}
	k := store.Key{Workflow: "w", Thread: "t"}
	turn, err := store.Begin(t.Context(), st, store.Request{
		Key: k, Owner: "slow", TTL: 30 * time.Millisecond, RunID: "r1",
		Machine: &vm.Machine{Program: prog, Registry: reg}, Resume: &vm.Resume{},
	})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		o   vm.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, _, err := turn.Run(t.Context())
		done <- result{o, err}
	}()
	<-entered
	// Another process takes the thread over once the lease expired.
	var thief store.Lease
	for {
		if thief, err = base.Acquire(t.Context(), k, "thief", time.Hour); err == nil {
			break
		}
		if !errors.Is(err, store.ErrBusy) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(st.released) // the slow renewal learns the lease is lost
	res := <-done
	if !errors.Is(res.err, store.ErrLeaseLost) {
		t.Fatalf("the run whose lease was taken over returned %+v, %v; want ErrLeaseLost", res.o, res.err)
	}
	if _, err := base.Renew(t.Context(), thief, time.Hour); err != nil {
		t.Errorf("the process that took the thread over lost it: %v", err)
	}
}
