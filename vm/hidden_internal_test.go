package vm

import (
	"testing"
)

// TestHiddenEntries: the hidden entries of a frame are apart from its node
// states, go into its deltas, and come back from them; frames and deltas
// of earlier versions, which kept them among the node states under "@",
// load with them moved apart.
func TestHiddenEntries(t *testing.T) {
	f, err := UnmarshalFrame([]byte(`{"v":1,"workflow":"w","hash":"h","id":"f","node":"a","context":{},
		"state":{"a":1,"@activity:x":{"type":"PLAN"}},"seq":0,"visits":0}`))
	if err != nil {
		t.Fatal(err)
	}
	if !Equal(f.State, map[string]any{"a": 1}) || !Equal(f.Hidden, map[string]any{"activity:x": map[string]any{"type": "PLAN"}}) {
		t.Fatalf("a frame of an earlier version: state %v, hidden %v", f.State, f.Hidden)
	}
	base, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}

	f.Track()
	r := &runner{frame: f}
	r.setHidden("k", 2)
	r.setHidden("activity:x", nil)
	d1, err := f.Delta()
	if err != nil {
		t.Fatal(err)
	}
	r.setHidden("k", 3)
	d2, err := f.Delta()
	if err != nil {
		t.Fatal(err)
	}
	// An earlier version's delta, naming a hidden entry among node states.
	d3 := []byte(`{"n":"a","t":{"@old":true}}`)
	g, err := UnmarshalFrame(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.ApplyDeltas([][]byte{d1, d2, d3}); err != nil {
		t.Fatal(err)
	}
	if !Equal(g.Hidden, map[string]any{"k": 3, "old": true}) || !Equal(g.State, map[string]any{"a": 1}) {
		t.Errorf("after the deltas: hidden %v, state %v", g.Hidden, g.State)
	}
	if got := string(d2); got != `{"n":"a","h":{"k":3}}` {
		t.Errorf("a delta of a hidden entry: %s", got)
	}
}
