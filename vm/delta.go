package vm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A frame delta is what changed in a frame between two points of a run,
// so that a store can save a run's progress at a cost proportional to what
// changed rather than to the size of the frame. A tracked frame (Track)
// records every write: the paths of the context it set or appended to, the
// node states and locals it changed, whether the output changed. A delta
// holds the frame's small fields whole (node, suspension, id counter,
// visits, open steps) and, for each recorded write, the value now at its
// path. Applied in order to the frame they were taken from, deltas give
// back the frame exactly.
//
// Writes are encoded with the value at their path when the delta is taken,
// not when they happened: a write that a later write of the same path or of
// a path above it covers is left out, and the value written is always the
// current one. An append to a list records only the new items, so a chat
// history that grows by one message costs one message.

// change is one recorded write of the context.
type change struct {
	root string
	keys []PathKey
	from int // an append: the list had this many items before; -1 for a set
}

// changes records what a tracked frame's run wrote.
type changes struct {
	ops  []change // every write since Track, in order
	mark int      // ops[:mark] are in a delta already

	state, locals, hidden          map[string]bool // written since Track
	stateNew, localsNew, hiddenNew map[string]bool // written since the last delta
	output, outputNew              bool
	start                          scalars // the frame's small fields when Track was called
}

// scalars are the small fields of a frame, saved whole in every delta.
type scalars struct {
	Node      string   `json:"n"`
	Suspended bool     `json:"s,omitempty"`
	Seq       int64    `json:"q,omitempty"`
	Visits    int      `json:"v,omitempty"`
	Ended     bool     `json:"e,omitempty"`
	Steps     []string `json:"p,omitempty"`
}

// delta is the encoded form of a frame delta.
type delta struct {
	scalars
	Ops    []deltaOp      `json:"c,omitempty"` // context writes, in order
	State  map[string]any `json:"t,omitempty"` // node states; null removes one
	Locals map[string]any `json:"l,omitempty"` // locals; null removes one
	Hidden map[string]any `json:"h,omitempty"` // hidden entries; null removes one
	Output *deltaValue    `json:"o,omitempty"` // the output, when it changed
}

// deltaOp is one context write: the value now at Path, or, when Append,
// the items to add to the list there; Delete removes a root.
type deltaOp struct {
	Path   []any `json:"p"` // the root, then keys (strings) and indexes (numbers)
	Value  any   `json:"v,omitempty"`
	Append bool  `json:"a,omitempty"`
	Delete bool  `json:"d,omitempty"`
}

type deltaValue struct {
	V any `json:"v"`
}

func (f *Frame) scalars() scalars {
	return scalars{Node: f.Node, Suspended: f.Suspended, Seq: f.Seq, Visits: f.Visits, Ended: f.Ended, Steps: slices.Clone(f.Steps)}
}

// Track starts recording what changes in f, for Delta and RunDelta. A
// frame is tracked by the store that saves it, from the start of a run.
func (f *Frame) Track() {
	f.changes = &changes{
		state: map[string]bool{}, locals: map[string]bool{}, hidden: map[string]bool{},
		stateNew: map[string]bool{}, localsNew: map[string]bool{}, hiddenNew: map[string]bool{},
		start: f.scalars(),
	}
}

// Tracked reports whether f records its changes.
func (f *Frame) Tracked() bool { return f.changes != nil }

// Delta returns what changed in f since the last Delta (or since Track),
// encoded; applied to the frame as it was then, it gives f.
func (f *Frame) Delta() ([]byte, error) {
	c := f.changes
	if c == nil {
		return nil, fmt.Errorf("delta of a frame that is not tracked")
	}
	data, err := f.encodeDelta(c.ops[c.mark:], c.stateNew, c.localsNew, c.hiddenNew, c.outputNew)
	if err != nil {
		return nil, err
	}
	c.mark, c.outputNew = len(c.ops), false
	clear(c.stateNew)
	clear(c.localsNew)
	clear(c.hiddenNew)
	return data, nil
}

// RunDelta returns what changed in f since Track, encoded: one delta that
// replaces every Delta taken since.
func (f *Frame) RunDelta() ([]byte, error) {
	c := f.changes
	if c == nil {
		return nil, fmt.Errorf("delta of a frame that is not tracked")
	}
	return f.encodeDelta(c.ops, c.state, c.locals, c.hidden, c.output)
}

// encodeDelta encodes the small fields of f, the values now at the paths
// ops wrote, and the node states, locals, hidden entries and output named.
func (f *Frame) encodeDelta(ops []change, state, locals, hidden map[string]bool, output bool) ([]byte, error) {
	d := delta{scalars: f.scalars(), Ops: f.encodeOps(ops), State: pick(f.State, state), Locals: pick(f.Locals, locals), Hidden: pick(f.Hidden, hidden)}
	if output {
		d.Output = &deltaValue{f.Output}
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode frame delta: %w", err)
	}
	return data, nil
}

// UndoDelta returns the delta that gives back the small fields of the
// frame as they were when Track was called, with an id counter of at least
// seq. Applied where the deltas taken since are dropped, it undoes a run
// that failed, except that the ids its events used are not made again.
func (f *Frame) UndoDelta(seq int64) ([]byte, error) {
	c := f.changes
	if c == nil {
		return nil, fmt.Errorf("delta of a frame that is not tracked")
	}
	d := delta{scalars: c.start}
	d.Seq = max(d.Seq, seq)
	return json.Marshal(d)
}

// pick returns the values of m at the keys of dirty, null for a key m no
// longer has; nil when dirty is empty.
func pick(m map[string]any, dirty map[string]bool) map[string]any {
	if len(dirty) == 0 {
		return nil
	}
	out := make(map[string]any, len(dirty))
	for k := range dirty {
		out[k] = m[k]
	}
	return out
}

// pathKey is a string naming a path, such that a path's key is a prefix
// of the keys of the paths below it.
func pathKey(root string, keys []PathKey) string {
	var b strings.Builder
	b.WriteString(root)
	for _, k := range keys {
		if k.Name != "" {
			b.WriteByte(0)
			b.WriteString(k.Name)
		} else {
			b.WriteByte(1)
			b.WriteString(strconv.Itoa(k.Index))
		}
	}
	return b.String()
}

// prefixes returns the keys of c's path and of every path above it,
// the root's first.
func (c change) prefixes() []string {
	out := make([]string, 0, len(c.keys)+1)
	for i := 0; i <= len(c.keys); i++ {
		out = append(out, pathKey(c.root, c.keys[:i]))
	}
	return out
}

// encodeOps encodes writes with the values now at their paths. A write that
// a later set of its path, or of a path above it, covers is left out, and
// so is an append after a set of its path or above (the set wrote the
// appended items already) or after another append to the same list.
func (f *Frame) encodeOps(ops []change) []deltaOp {
	if len(ops) == 0 {
		return nil
	}
	keep := make([]bool, len(ops))
	covered := map[string]bool{} // paths a later set writes
	for i := len(ops) - 1; i >= 0; i-- {
		c := ops[i]
		ps := c.prefixes()
		keep[i] = true
		for _, p := range ps {
			if covered[p] {
				keep[i] = false
				break
			}
		}
		if c.from < 0 {
			covered[ps[len(ps)-1]] = true
		}
	}
	var out []deltaOp
	written := map[string]bool{} // paths a kept earlier write wrote whole
	for i, c := range ops {
		if !keep[i] {
			continue
		}
		ps := c.prefixes()
		self := ps[len(ps)-1]
		if c.from >= 0 {
			skip := false
			for _, p := range ps {
				if written[p] {
					skip = true
					break
				}
			}
			if skip {
				continue
			}
			written[self] = true
			var items []any
			if list, ok := f.valueAt(c.root, c.keys).([]any); ok && c.from <= len(list) {
				items = list[c.from:]
			}
			out = append(out, deltaOp{Path: encodePath(c.root, c.keys), Value: items, Append: true})
			continue
		}
		written[self] = true
		if len(c.keys) == 0 {
			if v, ok := f.Context[c.root]; ok {
				out = append(out, deltaOp{Path: encodePath(c.root, nil), Value: v})
			} else {
				out = append(out, deltaOp{Path: encodePath(c.root, nil), Delete: true})
			}
			continue
		}
		out = append(out, deltaOp{Path: encodePath(c.root, c.keys), Value: f.valueAt(c.root, c.keys)})
	}
	return out
}

func (f *Frame) valueAt(root string, keys []PathKey) any {
	return getPath(f.Context[root], keys)
}

func encodePath(root string, keys []PathKey) []any {
	out := make([]any, 0, len(keys)+1)
	out = append(out, root)
	for _, k := range keys {
		if k.Name != "" {
			out = append(out, k.Name)
		} else {
			out = append(out, k.Index)
		}
	}
	return out
}

func decodePath(p []any) (string, []PathKey, error) {
	if len(p) == 0 {
		return "", nil, fmt.Errorf("an empty path")
	}
	root, ok := p[0].(string)
	if !ok {
		return "", nil, fmt.Errorf("a path whose root is not a name")
	}
	keys := make([]PathKey, 0, len(p)-1)
	for _, k := range p[1:] {
		switch k := k.(type) {
		case string:
			keys = append(keys, PathKey{Name: k})
		case float64:
			keys = append(keys, PathKey{Index: int(k)})
		default:
			return "", nil, fmt.Errorf("a path key of type %T", k)
		}
	}
	return root, keys, nil
}

// ApplyDelta applies a delta that Delta, RunDelta or UndoDelta encoded.
func (f *Frame) ApplyDelta(data []byte) error { return f.ApplyDeltas([][]byte{data}) }

// ApplyDeltas applies deltas, in order, as ApplyDelta would one after the
// other, but decodes only the values that count: a value that a later
// delta writes again (the same path, or a path above it) is skipped, and
// so is every node state, local and output but the last of each.
func (f *Frame) ApplyDeltas(deltas [][]byte) error {
	if len(deltas) == 0 {
		return nil
	}
	type rawOp struct {
		Path   []any           `json:"p"`
		Value  json.RawMessage `json:"v,omitempty"`
		Append bool            `json:"a,omitempty"`
		Delete bool            `json:"d,omitempty"`
	}
	type rawDelta struct {
		scalars
		Ops    []rawOp                    `json:"c,omitempty"`
		State  map[string]json.RawMessage `json:"t,omitempty"`
		Locals map[string]json.RawMessage `json:"l,omitempty"`
		Hidden map[string]json.RawMessage `json:"h,omitempty"`
		Output *struct {
			V json.RawMessage `json:"v"`
		} `json:"o,omitempty"`
	}
	type op struct {
		root   string
		keys   []PathKey
		raw    *rawOp
		covers []string // its path's key and those above it
	}
	var ops []op
	state, locals, hidden := map[string]json.RawMessage{}, map[string]json.RawMessage{}, map[string]json.RawMessage{}
	var output *json.RawMessage
	var last scalars
	for i, data := range deltas {
		var d rawDelta
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("load frame delta %d: %w", i, err)
		}
		last = d.scalars
		for j := range d.Ops {
			root, keys, err := decodePath(d.Ops[j].Path)
			if err != nil {
				return fmt.Errorf("load frame delta %d: %v", i, err)
			}
			ops = append(ops, op{root: root, keys: keys, raw: &d.Ops[j], covers: change{root: root, keys: keys}.prefixes()})
		}
		for k, v := range d.State {
			if name, ok := strings.CutPrefix(k, hiddenPrefix); ok {
				hidden[name] = v // a delta of an earlier version
				continue
			}
			state[k] = v
		}
		for k, v := range d.Hidden {
			hidden[k] = v
		}
		for k, v := range d.Locals {
			locals[k] = v
		}
		if d.Output != nil {
			output = &d.Output.V
		}
	}
	keep := make([]bool, len(ops))
	covered := map[string]bool{}
	for i := len(ops) - 1; i >= 0; i-- {
		o := ops[i]
		keep[i] = true
		for _, p := range o.covers {
			if covered[p] {
				keep[i] = false
				break
			}
		}
		if !o.raw.Append {
			covered[o.covers[len(o.covers)-1]] = true
		}
	}
	f.Node, f.Suspended, f.Seq, f.Visits, f.Ended, f.Steps = last.Node, last.Suspended, last.Seq, last.Visits, last.Ended, last.Steps
	for i, o := range ops {
		if !keep[i] {
			continue
		}
		if err := f.applyOp(o.root, o.keys, o.raw.Value, o.raw.Append, o.raw.Delete); err != nil {
			return err
		}
	}
	var err error
	if f.State, err = applyRaw(f.State, state); err != nil {
		return err
	}
	if f.Locals, err = applyRaw(f.Locals, locals); err != nil {
		return err
	}
	if f.Hidden, err = applyRaw(f.Hidden, hidden); err != nil {
		return err
	}
	if output != nil {
		v, err := decodeValue(*output)
		if err != nil {
			return err
		}
		f.Output = v
	}
	return nil
}

// applyOp applies one context write of a delta, its value still encoded.
func (f *Frame) applyOp(root string, keys []PathKey, raw json.RawMessage, isAppend, isDelete bool) error {
	if isDelete {
		delete(f.Context, root)
		return nil
	}
	v, err := decodeValue(raw)
	if err != nil {
		return err
	}
	if isAppend {
		items, _ := v.([]any)
		list, _ := getPath(f.Context[root], keys).([]any)
		v = append(slices.Clip(list), items...)
	}
	nv, err := setPath(f.Context[root], keys, v)
	if err != nil {
		return fmt.Errorf("load frame delta: write %s: %v", &Path{Root: root, Keys: keys}, err)
	}
	f.Context[root] = nv
	return nil
}

func decodeValue(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("load frame delta: %w", err)
	}
	return Normalize(v), nil
}

// applyRaw sets the keys of changes in m, removing those set to null.
func applyRaw(m map[string]any, changes map[string]json.RawMessage) (map[string]any, error) {
	for k, raw := range changes {
		v, err := decodeValue(raw)
		if err != nil {
			return nil, err
		}
		if v == nil {
			delete(m, k)
			continue
		}
		if m == nil {
			m = map[string]any{}
		}
		m[k] = v
	}
	return m, nil
}

// The recording side, called by every write of a frame.

func (f *Frame) noteSet(root string, keys []PathKey, old, v any) {
	c := f.changes
	if c == nil {
		return
	}
	from := -1
	if ol, ok := old.([]any); ok {
		if nl, ok := v.([]any); ok && len(nl) > len(ol) && equal(ol, nl[:len(ol)]) {
			from = len(ol)
		}
	}
	c.ops = append(c.ops, change{root: root, keys: keys, from: from})
}

func (f *Frame) noteState(id string) {
	if c := f.changes; c != nil {
		c.state[id], c.stateNew[id] = true, true
	}
}

func (f *Frame) noteHidden(key string) {
	if c := f.changes; c != nil {
		c.hidden[key], c.hiddenNew[key] = true, true
	}
}

func (f *Frame) noteLocal(name string) {
	if c := f.changes; c != nil {
		c.locals[name], c.localsNew[name] = true, true
	}
}

func (f *Frame) noteOutput() {
	if c := f.changes; c != nil {
		c.output, c.outputNew = true, true
	}
}

// SetRoot replaces a root of the context whole (nil removes it), recording
// the write.
func (f *Frame) SetRoot(root string, v any) {
	if v == nil {
		delete(f.Context, root)
	} else {
		f.Context[root] = v
	}
	f.noteSet(root, nil, nil, nil)
}

// setUser sets $user to user, or removes it for nil (nobody).
func (f *Frame) setUser(user map[string]any) {
	if user == nil {
		if _, ok := f.Context["user"]; ok {
			f.SetRoot("user", nil)
		}
		return
	}
	f.SetRoot("user", Normalize(user))
}
