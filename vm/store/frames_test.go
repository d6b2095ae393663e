package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// TestFramesCache: turns that take their frame from the cache end exactly
// as turns that read it from the store, also when another writer changed
// the thread in between (the cached frame is of an older version and is
// not used).
func TestFramesCache(t *testing.T) {
	play := func(frames *store.Frames, other func(w *crashWorld, i int)) (string, map[string]any) {
		w := newCrashWorld(t)
		for i := 1; i <= 6; i++ {
			req := store.Request{
				Key: crashKey, Owner: "o", TTL: time.Minute, RunID: fmt.Sprintf("run-%d", i),
				Machine: w.m, Bundle: w.bundle, Load: w.load, Frames: frames,
				Resume: &vm.Resume{Agent: map[string]any{"said": fmt.Sprintf("m%d", i)}},
			}
			if _, _, err := store.Execute(context.Background(), w.base, req); err != nil {
				t.Fatal(err)
			}
			if other != nil {
				other(w, i)
			}
		}
		return w.history(t)
	}
	wantEvents, wantCtx := play(nil, nil)
	frames := store.NewFrames(1 << 20)
	gotEvents, gotCtx := play(frames, nil)
	if gotEvents != wantEvents || !vm.Equal(gotCtx, wantCtx) {
		t.Errorf("with the cache:\n%s\n%v\nwithout:\n%s\n%v", gotEvents, gotCtx, wantEvents, wantCtx)
	}

	// Another writer runs a turn, without the cache, after turn 2: the
	// cached frame of turn 2 is stale and must not be used.
	interleave := func(w *crashWorld, i int) {
		if i != 2 {
			return
		}
		_, _, err := store.Execute(context.Background(), w.base, store.Request{
			Key: crashKey, Owner: "other", RunID: "other", Machine: w.m, Load: w.load,
			Resume: &vm.Resume{Agent: map[string]any{"said": "from elsewhere"}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	wantEvents, wantCtx = play(nil, interleave)
	gotEvents, gotCtx = play(store.NewFrames(1<<20), interleave)
	if gotEvents != wantEvents || !vm.Equal(gotCtx, wantCtx) {
		t.Errorf("with the cache and another writer:\n%s\n%v\nwithout:\n%s\n%v", gotEvents, gotCtx, wantEvents, wantCtx)
	}
	if said, _ := gotCtx["said"].([]any); len(said) != 7 {
		t.Errorf("said %v: the other writer's turn is missing", gotCtx["said"])
	}
}
