package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// staleStranded is a store whose list of stranded threads is older than
// the end of their runs: a recovery scan that read the thread as running
// just before its run ended and released its lease.
type staleStranded struct {
	store.Store
	stale    []store.Key
	acquired []store.Key // the threads whose lease Claim took
}

func (s *staleStranded) Stranded(ctx context.Context, limit int) ([]store.Key, error) {
	return s.stale, nil
}

func (s *staleStranded) Claim(ctx context.Context, k store.Key, owner string, ttl time.Duration) (store.Lease, []store.Run, error) {
	l, runs, err := s.Store.Claim(ctx, k, owner, ttl)
	if l != (store.Lease{}) {
		s.acquired = append(s.acquired, k)
	}
	return l, runs, err
}

// TestClaimSkipsEndedRuns: a recovery that learns of a thread whose run
// has ended since does not take its lease, not even for a moment: the
// thread's next request would be turned away as busy meanwhile.
func TestClaimSkipsEndedRuns(t *testing.T) {
	reg := vm.NewRegistry()
	prog, diags := compiler.Compile(reg, compiler.Source{Name: "w.wf", Text: []byte("wf 1\nworkflow w {\n  flow {\n    set $x = 1\n  }\n}\n")})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	base, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	k := store.Key{Workflow: "w", Thread: "t"}
	turn, err := store.Begin(t.Context(), base, store.Request{Key: k, Owner: "a", RunID: "r1", Machine: &vm.Machine{Program: prog, Registry: reg}, Resume: &vm.Resume{}})
	if err != nil {
		t.Fatal(err)
	}
	if o, _, err := turn.Run(t.Context()); err != nil || o.Status != vm.Finished {
		t.Fatalf("the run: %+v %v", o, err)
	}

	st := &staleStranded{Store: base, stale: []store.Key{k}}
	rec, err := store.Claim(t.Context(), st, "recovery", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release(context.Background())
	if len(st.acquired) != 0 || len(rec.Runs()) != 0 {
		t.Errorf("the recovery took %v and claimed %d runs, want nothing: the thread's run has ended", st.acquired, len(rec.Runs()))
	}
	// The thread's next run starts at once.
	l, err := base.Acquire(t.Context(), k, "b", time.Minute)
	if err != nil {
		t.Fatalf("the thread's next run: %v", err)
	}
	base.Release(t.Context(), l)
}
