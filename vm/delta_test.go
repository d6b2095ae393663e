package vm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aguic/aguic/vm"
)

// shadow is a sink that checks a tracked frame's deltas as a store would
// use them: at every checkpoint it applies the frame's delta to a copy of
// the frame as it was before, and the copy must equal the frame.
type shadow struct {
	t      *testing.T
	copy   *vm.Frame
	deltas int
	bytes  int
}

func (s *shadow) Emit(vm.Event) error { return nil }

func (s *shadow) Effect() error { return nil }

func (s *shadow) Checkpoint(f *vm.Frame) error {
	s.t.Helper()
	d, err := f.Delta()
	if err != nil {
		return err
	}
	s.deltas++
	s.bytes += len(d)
	if err := s.copy.ApplyDelta(d); err != nil {
		s.t.Fatalf("apply delta %s: %v", d, err)
	}
	sameFrame(s.t, fmt.Sprintf("after delta %d %s", s.deltas, d), s.copy, f)
	return nil
}

func sameFrame(t *testing.T, what string, got, want *vm.Frame) {
	t.Helper()
	g, err := got.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	w, err := want.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Fatalf("%s: the frame rebuilt from deltas differs\n got %s\nwant %s", what, g, w)
	}
}

func cloneFrame(t *testing.T, f *vm.Frame) *vm.Frame {
	t.Helper()
	data, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c, err := vm.UnmarshalFrame(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// playTracked runs turns of a workflow on a tracked frame and checks, at
// every checkpoint, that the delta rebuilds the frame, and, at the end of
// every turn, that the turn's RunDelta and its UndoDelta do too.
func playTracked(t *testing.T, src, wf string, ctx map[string]any, turns []*vm.Resume) (*vm.Frame, int) {
	t.Helper()
	m := machine(t, src)
	f, err := m.NewFrame(wf, ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	initial := cloneFrame(t, f)
	var runDeltas [][]byte
	for i, resume := range turns {
		before := cloneFrame(t, f)
		f.Track()
		sh := &shadow{t: t, copy: cloneFrame(t, f)}
		o := m.Run(context.Background(), f, resume, vm.Observer{Events: sh, Saver: sh})
		if o.Status == vm.Failed {
			t.Fatalf("turn %d failed: %v", i, o.Err)
		}
		last, err := f.Delta()
		if err != nil {
			t.Fatal(err)
		}
		if err := sh.copy.ApplyDelta(last); err != nil {
			t.Fatal(err)
		}
		sameFrame(t, fmt.Sprintf("turn %d: after the last delta", i), sh.copy, f)

		whole, err := f.RunDelta()
		if err != nil {
			t.Fatal(err)
		}
		total += len(whole)
		runDeltas = append(runDeltas, whole)
		replay := cloneFrame(t, before)
		if err := replay.ApplyDelta(whole); err != nil {
			t.Fatal(err)
		}
		sameFrame(t, fmt.Sprintf("turn %d: the run's delta", i), replay, f)

		undo, err := f.UndoDelta(f.Seq)
		if err != nil {
			t.Fatal(err)
		}
		// Undo applies on top of the frame before the turn (the store drops
		// the run's deltas): it restores the small fields, keeps the ids.
		back := cloneFrame(t, before)
		if err := back.ApplyDelta(undo); err != nil {
			t.Fatal(err)
		}
		if back.Seq != f.Seq || back.Node != before.Node || back.Suspended != before.Suspended {
			t.Fatalf("turn %d: undo gives node %q suspended %v seq %d; want %q %v %d", i, back.Node, back.Suspended, back.Seq, before.Node, before.Suspended, f.Seq)
		}
	}
	// The turns' deltas applied together, as a store loads a thread.
	together := cloneFrame(t, initial)
	if err := together.ApplyDeltas(runDeltas); err != nil {
		t.Fatal(err)
	}
	sameFrame(t, "all the turns' deltas applied together", together, f)
	return f, total
}

func TestDeltasRebuildTheFrame(t *testing.T) {
	tests := []struct {
		name, flow string
		ctx        map[string]any
		turns      int
	}{
		{"sets nested and whole", `
			set $a.b.c = 1
			note "x"
			set $a = {d: 2}
			note "y"
			set $a.e = [1, 2]
			set $a.e[1] = 5
			note "z"`, nil, 1},
		{"appends and sets of one list", `
			set $l = concat($l ?? [], [1])
			note "1"
			set $l = concat($l, [2, 3])
			set $l = concat($l, [4])
			note "2"
			set $l = [9]
			set $l = concat($l, [10])
			note "3"
			set $l = concat($l, [11])
			set $l[0] = 0`, nil, 2},
		{"for loop state and locals", `
			for x in [1, 2, 3] {
				set $sum = ($sum ?? 0) + x
				note "<<x>>"
			}
			output $sum`, nil, 1},
		{"try catch steps", `
			step "outer" {
				try {
					step "inner" {
						note "a"
						boom
					}
				} catch e {
					set $err = e.message
					note "caught"
				}
			}`, nil, 1},
		{"parallel branches", `
			set $base = {keep: 1}
			parallel {
				branch a { set $x = 1
					note "a" }
				branch b { set $y.z = [1]
					note "b" }
			}
			note "joined"`, nil, 1},
		{"a root removed by a tool restore is not there", `
			set $args = 1
			note "a"`, nil, 1},
		{"a conversation across turns", `
			turn: set $chat = concat($chat ?? [], [$agent.said])
			note "<<len($chat)>>"
			w: wait
			goto turn`, map[string]any{"agent": map[string]any{"said": "hi"}}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			convo := ""
			if tt.turns > 1 {
				convo = "conversation = true\n"
			}
			src := fmt.Sprintf("wf 1\nworkflow w {\n%sflow {\n%s\n}\n}\n", convo, tt.flow)
			turns := []*vm.Resume{nil}
			for i := 1; i < tt.turns; i++ {
				turns = append(turns, &vm.Resume{
					Agent: map[string]any{"said": fmt.Sprintf("turn %d", i)},
					Merge: map[string]any{"hook": map[string]any{"n": i}},
				})
			}
			playTracked(t, src, "w", tt.ctx, turns)
		})
	}
}

// TestDeltaOfAnAppendHoldsTheNewItems: a history that grows by one item a
// turn costs one item a turn, however long it is.
func TestDeltaOfAnAppendHoldsTheNewItems(t *testing.T) {
	src := `wf 1
workflow w {
  conversation = true
  flow {
    turn: set $chat = concat($chat ?? [], [$agent.said])
    w: wait
    goto turn
  }
}
`
	long := make([]any, 1000)
	for i := range long {
		long[i] = map[string]any{"role": "user", "content": fmt.Sprintf("message number %d of a long conversation", i)}
	}
	sizes := map[int]int{}
	for _, n := range []int{10, 1000} {
		turns := []*vm.Resume{nil}
		for i := range 3 {
			turns = append(turns, &vm.Resume{Agent: map[string]any{"said": fmt.Sprintf("turn %d", i)}})
		}
		_, total := playTracked(t, src, "w", map[string]any{"chat": long[:n], "agent": map[string]any{"said": "x"}}, turns)
		sizes[n] = total
	}
	if sizes[1000] != sizes[10] {
		t.Errorf("the deltas of 4 turns take %d bytes after 1000 messages, %d after 10", sizes[1000], sizes[10])
	}
}

func TestApplyDeltaRejectsGarbage(t *testing.T) {
	f := &vm.Frame{Version: vm.FrameVersion, Context: map[string]any{"a": 1}}
	for _, d := range []string{`{`, `{"n":"x","c":[{"p":[]}]}`, `{"n":"x","c":[{"p":[1]}]}`, `{"n":"x","c":[{"p":["a","k"],"v":1}]}`} {
		if err := f.ApplyDelta([]byte(d)); err == nil {
			t.Errorf("ApplyDelta(%s) succeeded", d)
		}
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(`{}`), &m)
}
