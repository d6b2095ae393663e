package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/pgtest"
	"github.com/aguic/aguic/vm/store"
)

// TestNotifyKeys: a change reaches the other process's watch of exactly
// its key, whatever characters the key holds; a key too long for a
// notification wakes every watcher there instead; a cancel request of
// such a key is refused with an error that says why.
func TestNotifyKeys(t *testing.T) {
	schema := pgtest.Schema(t)
	a, b := open(t, schema), open(t, schema)
	defer a.Close()
	defer b.Close()
	ctx := t.Context()
	commit := func(k store.Key) {
		t.Helper()
		l, err := a.Acquire(ctx, k, "a", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Commit(ctx, l, store.Commit{Events: events(1)}); err != nil {
			t.Fatal(err)
		}
	}

	odd := store.Key{Scope: `a"],["c`, Workflow: "b\\\",\n", Thread: "日本\u2028"}
	near := store.Key{Scope: `a"],["c`, Workflow: "b\\\",\n", Thread: "日本"}
	ch, stop := b.Watch(odd)
	defer stop()
	nch, nstop := b.Watch(near)
	defer nstop()
	commit(odd)
	woken(t, "a watch in the other process of a key with quotes, brackets and newlines", ch)
	select {
	case <-nch:
		t.Errorf("a change of %q woke the watch of %q", odd.Thread, near.Thread)
	default:
	}

	huge := store.Key{Scope: "acme", Workflow: "chat", Thread: strings.Repeat("x", 9000)}
	hch, hstop := b.Watch(huge)
	defer hstop()
	drain(ch)
	commit(huge)
	woken(t, "the other process's watch of a key too long for a notification", hch)
	woken(t, "the other process's watch of another key, when a key too long for a notification changed", ch)

	err := a.Cancel(ctx, huge, "r1")
	if err == nil || errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "more than a notification carries") {
		t.Errorf("Cancel of a run of a key too long for a notification: got error %v, want one saying so", err)
	}
}
