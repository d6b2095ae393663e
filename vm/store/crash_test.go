package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
	"github.com/aguic/aguic/vm/store/badger"
)

var errCrashed = errors.New("the process crashed")

// crashing is a Store that crashes at its nth commit: that commit and
// everything after it fail, as if the process had died there. With
// applied, the crashing commit reaches the store first (the process died
// after the write, before it returned).
type crashing struct {
	store.Store
	mu      sync.Mutex
	commits int
	at      int
	applied bool
	crashed bool
}

func (c *crashing) dead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

func (c *crashing) Commit(ctx context.Context, l store.Lease, cm store.Commit) (store.Thread, error) {
	c.mu.Lock()
	if c.crashed {
		c.mu.Unlock()
		return store.Thread{}, errCrashed
	}
	c.commits++
	if c.commits != c.at {
		c.mu.Unlock()
		return c.Store.Commit(ctx, l, cm)
	}
	c.crashed = true
	c.mu.Unlock()
	if c.applied {
		c.Store.Commit(ctx, l, cm)
	}
	return store.Thread{}, errCrashed
}

func (c *crashing) Acquire(ctx context.Context, k store.Key, owner string, ttl time.Duration) (store.Lease, error) {
	if c.dead() {
		return store.Lease{}, errCrashed
	}
	return c.Store.Acquire(ctx, k, owner, ttl)
}

func (c *crashing) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if c.dead() {
		return store.Lease{}, errCrashed
	}
	return c.Store.Renew(ctx, l, ttl)
}

func (c *crashing) Release(ctx context.Context, l store.Lease) error {
	if c.dead() {
		return errCrashed
	}
	return c.Store.Release(ctx, l)
}

func (c *crashing) Sync(ctx context.Context) error {
	if c.dead() {
		return errCrashed
	}
	return c.Store.Sync(ctx)
}

func (c *crashing) PutSource(ctx context.Context, hash string, src []byte) error {
	if c.dead() {
		return errCrashed
	}
	return c.Store.PutSource(ctx, hash, src)
}

// crashProgram is a conversation whose turns mix pure nodes, effects (a
// node that counts how often it ran) and streamed text.
const crashProgram = `wf 1
workflow chat {
  conversation = true
  flow {
    top: set $turn = ($turn ?? 0) + 1
    set $said = concat($said ?? [], [$agent.said])
    stream "turn <<$turn>>: <<$agent.said>>"
    effect "<<$agent.said>>" -> $result
    set $results = concat($results ?? [], [$result])
    stream "done <<$result>>"
    w: wait
    goto top
  }
}
`

// crashWorld is one play of the conversation: a store, and the effects
// its runs had.
type crashWorld struct {
	dir     string
	base    *badger.Store
	m       *vm.Machine
	bundle  []byte
	mu      sync.Mutex
	effects map[string]int // how often each turn's effect ran
}

func newCrashWorld(t *testing.T) *crashWorld {
	t.Helper()
	dir := t.TempDir()
	st, err := badger.Open(badger.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	w := &crashWorld{dir: dir, base: st, effects: map[string]int{}}
	t.Cleanup(func() { w.base.Close() })
	reg := registry()
	reg.AddKind(&vm.KindSpec{Name: "effect", Doc: "Has an effect.", Example: `effect "x"`,
		Arg: &vm.ArgSpec{Name: "name", Type: vm.TypeString, Required: true}, Result: "a count",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			v, _ := c.Arg()
			w.mu.Lock()
			defer w.mu.Unlock()
			w.effects[vm.Text(v)]++
			return vm.Step{Result: "ok " + vm.Text(v)}, nil
		}})
	srcs := []compiler.Source{{Name: "p.wf", Text: []byte(crashProgram)}}
	prog, diags := compiler.Compile(reg, srcs...)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	w.bundle, _ = compiler.Bundle(srcs)
	w.m = &vm.Machine{Program: prog, Registry: reg, NewID: func() string { return "f1" }}
	return w
}

// restart is what a crash and a restart do to the store: the process that
// had it open is gone, and its leases with it; a new one opens the
// directory.
func (w *crashWorld) restart(t *testing.T) {
	t.Helper()
	if err := w.base.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := badger.Open(badger.Options{Dir: w.dir})
	if err != nil {
		t.Fatal(err)
	}
	w.base = st
}

func (w *crashWorld) load(ctx context.Context, hash string) (*vm.Machine, error) {
	if hash != w.m.Program.Hash {
		return nil, fmt.Errorf("unknown version %s", hash)
	}
	return w.m, nil
}

var crashKey = store.Key{Scope: "s", Workflow: "chat", Thread: "t1"}

// turn sends turn i as a client would: Begin, then Run. acked is true when
// the client saw RUN_STARTED, which a server sends once the turn is
// durable: at OnDurable, or when Run returns.
func (w *crashWorld) turn(st store.Store, i int) (acked bool, err error) {
	ctx := context.Background()
	var durable atomic.Bool
	req := store.Request{
		Key: crashKey, Owner: fmt.Sprintf("server/%d", i), TTL: time.Hour, RunID: fmt.Sprintf("run-%d", i),
		Machine: w.m, Bundle: w.bundle, Load: w.load,
		Resume:    &vm.Resume{Agent: map[string]any{"said": fmt.Sprintf("m%d", i)}},
		OnDurable: func() { durable.Store(true) },
	}
	t, err := store.Begin(ctx, st, req)
	if err != nil {
		return false, err
	}
	if _, _, err = t.Run(ctx); err == nil {
		return true, nil
	}
	return durable.Load(), err
}

// history is what the store holds of the conversation: its events' data
// and the frame's context.
func (w *crashWorld) history(t *testing.T) (string, map[string]any) {
	t.Helper()
	ctx := context.Background()
	evs, err := w.base.Events(ctx, crashKey, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range evs {
		lines = append(lines, string(e.Data))
	}
	th, err := w.base.Thread(ctx, crashKey)
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != store.Suspended {
		t.Errorf("the thread is %s at the end, want suspended", th.Status)
	}
	f, err := store.LoadFrame(th)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n"), f.Context
}

const crashTurns = 3

// TestCrashAtEveryCommit crashes the conversation at each of its commits in
// turn, before and after the commit reaches the store, restarts (recovery),
// and finishes the conversation as the client would: a turn the client saw
// start is not sent again, one it did not see start is sent again with the
// same run id. The stored history must be exactly that of a conversation
// without a crash, and an effect whose result was saved must not run again.
func TestCrashAtEveryCommit(t *testing.T) {
	ref := newCrashWorld(t)
	counter := &crashing{Store: ref.base}
	for i := 1; i <= crashTurns; i++ {
		if _, err := ref.turn(counter, i); err != nil {
			t.Fatal(err)
		}
	}
	wantEvents, wantCtx := ref.history(t)
	total := counter.commits

	for at := 1; at <= total; at++ {
		for _, applied := range []bool{false, true} {
			t.Run(fmt.Sprintf("commit %d applied %v", at, applied), func(t *testing.T) {
				w := newCrashWorld(t)
				cs := &crashing{Store: w.base, at: at, applied: applied}
				next := 1
				for ; next <= crashTurns; next++ {
					acked, err := w.turn(cs, next)
					if err == nil {
						continue
					}
					if !errors.Is(err, errCrashed) {
						t.Fatalf("turn %d: %v", next, err)
					}
					if acked {
						next++ // the client saw it start: recovery finishes it
					}
					break
				}
				// Restart: the dead process's leases go, recovery claims and
				// resumes what was running.
				w.restart(t)
				rec, err := store.Claim(context.Background(), w.base, "recovery", time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rec.Runs() {
					// A request arriving while recovery runs is refused.
					if _, err := store.Begin(context.Background(), w.base, store.Request{Key: r.Key, Owner: "early", RunID: "early", Machine: w.m, Load: w.load}); !errors.Is(err, store.ErrBusy) {
						t.Errorf("a run on a thread being recovered: %v, want ErrBusy", err)
					}
				}
				for _, r := range rec.Resume(context.Background(), w.load, 2, nil) {
					if r.Err != nil || r.Outcome.Status != vm.Suspended {
						t.Fatalf("recovery of %s: %+v %v", r.Run.ID, r.Outcome, r.Err)
					}
				}
				for ; next <= crashTurns; next++ {
					_, err := w.turn(w.base, next)
					if errors.Is(err, store.ErrRunExists) {
						continue // it began before the crash after all: recovery ran it
					}
					if err != nil {
						t.Fatalf("turn %d after the restart: %v", next, err)
					}
				}
				gotEvents, gotCtx := w.history(t)
				if gotEvents != wantEvents {
					t.Errorf("stored events differ from a conversation without a crash:\n%s\nwant\n%s", gotEvents, wantEvents)
				}
				if !vm.Equal(gotCtx, wantCtx) {
					t.Errorf("context %v, want %v", gotCtx, wantCtx)
				}
				repeated := 0
				for name, n := range w.effects {
					if n > 2 {
						t.Errorf("effect %s ran %d times", name, n)
					}
					repeated += n - 1
				}
				if repeated > 1 || len(w.effects) != crashTurns {
					t.Errorf("effects %v: one crash may repeat one effect, whose result was not saved", w.effects)
				}
			})
		}
	}
}

// TestCrashBeforeTheFirstCheckpoint: a run cut before it saved anything
// but its start runs again with the turn's own input, on a new thread and
// on one that waits. A run cut before its start was written leaves
// nothing: the client, told nothing of it, sends it again.
func TestCrashBeforeTheFirstCheckpoint(t *testing.T) {
	w := newCrashWorld(t)
	ctx := context.Background()
	begin := func(i int, told bool) *store.Turn {
		t.Helper()
		turn, err := store.Begin(ctx, w.base, store.Request{
			Key: crashKey, Owner: "dead", TTL: time.Hour, RunID: fmt.Sprintf("run-%d", i),
			Machine: w.m, Bundle: w.bundle, Load: w.load,
			Resume: &vm.Resume{Agent: map[string]any{"said": fmt.Sprintf("m%d", i)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if told { // the server sends RUN_STARTED once the start is durable
			if err := turn.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		return turn
	}
	recover := func(want int) {
		t.Helper()
		w.restart(t)
		got, err := store.Recover(ctx, w.base, "recovery", time.Hour, w.load)
		if err != nil || len(got) != want || want > 0 && got[0].Err != nil {
			t.Fatalf("Recover: %+v, %v; want %d runs recovered", got, err, want)
		}
	}
	begin(1, false).Abandon()
	recover(0)
	if _, err := w.base.Run(ctx, crashKey, "run-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the run cut before its start was written: %v, want ErrNotFound", err)
	}
	begin(1, true).Abandon()
	recover(1)
	if _, err := w.turn(w.base, 2); err != nil {
		t.Fatal(err)
	}
	begin(3, true).Abandon()
	// Until it is recovered, no other run starts on the thread.
	if _, err := store.Begin(ctx, w.base, store.Request{Key: crashKey, Owner: "other", RunID: "run-x", Machine: w.m, Load: w.load}); !errors.Is(err, store.ErrBusy) {
		t.Errorf("a run beside a crashed one whose lease is held: %v, want ErrBusy", err)
	}
	w.restart(t)
	if _, err := store.Begin(ctx, w.base, store.Request{Key: crashKey, Owner: "other", RunID: "run-x", Machine: w.m, Load: w.load}); !errors.Is(err, store.ErrInterrupted) {
		t.Errorf("a run beside a crashed one not recovered yet: %v, want ErrInterrupted", err)
	}
	recover(1)
	_, c := w.history(t)
	if said := c["said"]; !vm.Equal(said, []any{"m1", "m2", "m3"}) {
		t.Errorf("the turns the conversation took: %v, want m1 m2 m3", said)
	}
	if !slices.Equal([]int{w.effects["m1"], w.effects["m2"], w.effects["m3"]}, []int{1, 1, 1}) {
		t.Errorf("effects %v, want each once", w.effects)
	}
}

// TestRunIDsAreNotReplayed: a run id the thread has used cannot start
// another run there; another thread may use it.
func TestRunIDsAreNotReplayed(t *testing.T) {
	w := newCrashWorld(t)
	if _, err := w.turn(w.base, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := w.turn(w.base, 1); !errors.Is(err, store.ErrRunExists) {
		t.Errorf("the same run id again: %v, want ErrRunExists", err)
	}
	other := crashKey
	other.Thread = "t2"
	_, _, err := store.Execute(context.Background(), w.base, store.Request{Key: other, Owner: "o", RunID: "run-1", Machine: w.m, Load: w.load, Resume: &vm.Resume{Agent: map[string]any{"said": "x"}}})
	if err != nil {
		t.Errorf("run-1 on another thread: %v", err)
	}
	if w.effects["m1"] != 1 {
		t.Errorf("the refused duplicate ran: effects %v", w.effects)
	}
}

// TestQueuedRunsRecoverInOrder: turns queued behind a run that a crash cut
// short run after it, in the order they were queued, when recovery starts.
func TestQueuedRunsRecoverInOrder(t *testing.T) {
	w := newCrashWorld(t)
	ctx := context.Background()
	req := func(i int) store.Request {
		return store.Request{
			Key: crashKey, Owner: "dead", TTL: time.Hour, RunID: fmt.Sprintf("run-%d", i),
			Machine: w.m, Bundle: w.bundle, Load: w.load,
			Resume: &vm.Resume{Agent: map[string]any{"said": fmt.Sprintf("m%d", i)}},
		}
	}
	if _, err := w.turn(w.base, 1); err != nil {
		t.Fatal(err)
	}
	turn, err := store.Begin(ctx, w.base, req(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := turn.Sync(); err != nil { // the client was told it started
		t.Fatal(err)
	}
	turn.Abandon()
	for _, i := range []int{3, 4} {
		if err := store.Queue(ctx, w.base, req(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Queue(ctx, w.base, req(3)); !errors.Is(err, store.ErrRunExists) {
		t.Errorf("queueing run-3 again: %v, want ErrRunExists", err)
	}
	w.restart(t)
	got, err := store.Recover(ctx, w.base, "recovery", time.Hour, func(ctx context.Context, hash string) (*vm.Machine, error) {
		if hash == "" {
			return w.m, nil
		}
		return w.load(ctx, hash)
	})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range got {
		if r.Err != nil || r.Outcome.Status != vm.Suspended {
			t.Errorf("run %s: %+v %v", r.Run.ID, r.Outcome, r.Err)
		}
		order = append(order, r.Run.ID)
	}
	if !slices.Equal(order, []string{"run-2", "run-3", "run-4"}) {
		t.Errorf("recovered %v, want run-2, run-3, run-4", order)
	}
	_, c := w.history(t)
	if said := c["said"]; !vm.Equal(said, []any{"m1", "m2", "m3", "m4"}) {
		t.Errorf("the turns the conversation took: %v", said)
	}
}

// TestCrashDuringRecovery: the recovery of a crashed run crashes too, at
// each of its commits in turn; the next recovery still ends the
// conversation exactly as without any crash.
func TestCrashDuringRecovery(t *testing.T) {
	ref := newCrashWorld(t)
	for i := 1; i <= 2; i++ {
		if _, err := ref.turn(ref.base, i); err != nil {
			t.Fatal(err)
		}
	}
	wantEvents, wantCtx := ref.history(t)
	load := func(w *crashWorld) store.Loader { return w.load }
	for at := 1; at <= 4; at++ {
		for _, applied := range []bool{false, true} {
			t.Run(fmt.Sprintf("recovery commit %d applied %v", at, applied), func(t *testing.T) {
				w := newCrashWorld(t)
				if _, err := w.turn(w.base, 1); err != nil {
					t.Fatal(err)
				}
				// Turn 2 crashes after its start and first checkpoint.
				if _, err := w.turn(&crashing{Store: w.base, at: 3}, 2); !errors.Is(err, errCrashed) {
					t.Fatalf("turn 2: %v, want the crash", err)
				}
				ctx := context.Background()
				// restart restarts and recovers on the store wrap makes
				// of the new one.
				restart := func(wrap func(store.Store) store.Store) []store.Recovered {
					t.Helper()
					w.restart(t)
					rec, err := store.Claim(ctx, wrap(w.base), "recovery", time.Hour)
					if err != nil {
						t.Fatal(err)
					}
					return rec.Resume(ctx, load(w), 1, nil)
				}
				restart(func(st store.Store) store.Store { return &crashing{Store: st, at: at, applied: applied} })
				got := restart(func(st store.Store) store.Store { return st })
				for _, r := range got {
					if r.Err != nil {
						t.Errorf("the second recovery of %s: %v", r.Run.ID, r.Err)
					}
				}
				gotEvents, gotCtx := w.history(t)
				if gotEvents != wantEvents || !vm.Equal(gotCtx, wantCtx) {
					t.Errorf("after a crash during recovery:\n%s\n%v\nwant\n%s\n%v", gotEvents, gotCtx, wantEvents, wantCtx)
				}
			})
		}
	}
}
