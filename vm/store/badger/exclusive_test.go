package badger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

// TestReleaseAll: leases a crashed process left are released, another
// owner takes the thread at once, and the old lease stays fenced out.
func TestReleaseAll(t *testing.T) {
	ctx := context.Background()
	st, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k := store.Key{Scope: "s", Workflow: "w", Thread: "t"}
	old, err := st.Acquire(ctx, k, "crashed", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Acquire(ctx, k, "next", time.Hour); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("second owner: %v, want ErrBusy", err)
	}
	n, err := st.ReleaseAll(ctx)
	if err != nil || n != 1 {
		t.Fatalf("ReleaseAll = %d, %v; want 1 lease released", n, err)
	}
	l, err := st.Acquire(ctx, k, "next", time.Hour)
	if err != nil {
		t.Fatalf("after ReleaseAll: %v", err)
	}
	if l.Token <= old.Token {
		t.Errorf("token %d after %d: tokens must grow", l.Token, old.Token)
	}
	if _, err := st.Commit(ctx, old, store.Commit{}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("commit with the crashed lease: %v, want ErrLeaseLost", err)
	}
	if n, err := st.ReleaseAll(ctx); err != nil || n != 1 {
		t.Errorf("second ReleaseAll = %d, %v", n, err)
	}
}
