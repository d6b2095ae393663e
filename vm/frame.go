package vm

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
)

// FrameVersion is the version of the serialized Frame. A frame of another
// version is rejected when loaded.
const FrameVersion = 1

// Frame is the whole state of one workflow run between two nodes: what a
// checkpoint stores. It serializes to JSON and back without loss.
type Frame struct {
	Version  int    `json:"v"`
	Workflow string `json:"workflow"`
	Hash     string `json:"hash"` // the compiled source the frame belongs to
	ID       string `json:"id"`   // unique per frame; seeds the ids the run makes

	Node      string         `json:"node"`                // the node to run next; "" when the flow ended
	Suspended bool           `json:"suspended,omitempty"` // Node paused the run and waits to be resumed
	Context   map[string]any `json:"context"`             // the JSON tree $roots read and write
	Locals    map[string]any `json:"locals,omitempty"`    // loop variables and caught errors
	State     map[string]any `json:"state,omitempty"`     // node-local state by node id
	Hidden    map[string]any `json:"hidden,omitempty"`    // what the run keeps for the stdlib, shared by its nodes (Call.Hidden)
	Output    any            `json:"output,omitempty"`    // the run's result, set by output
	Steps     []string       `json:"steps,omitempty"`     // open step names, innermost last
	Seq       int64          `json:"seq"`                 // counter for the ids the run makes
	Visits    int            `json:"visits"`              // nodes run in the current run
	Ended     bool           `json:"ended,omitempty"`     // the flow finished (end, or past the last node)

	changes *changes // what changed since Track; nil when not tracked
}

// NewFrame returns the frame of a workflow that has not started.
func NewFrame(w *Workflow, id string, context map[string]any) *Frame {
	if context == nil {
		context = map[string]any{}
	}
	return &Frame{
		Version:  FrameVersion,
		Workflow: w.ID,
		Hash:     w.Hash,
		ID:       id,
		Node:     w.Entry,
		Context:  Normalize(context).(map[string]any),
	}
}

// Marshal serializes f.
func (f *Frame) Marshal() ([]byte, error) { return json.Marshal(f) }

// UnmarshalFrame loads a frame serialized by Marshal.
func UnmarshalFrame(data []byte) (*Frame, error) {
	var f Frame
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("load frame: %w", err)
	}
	if f.Version != FrameVersion {
		return nil, fmt.Errorf("load frame: version %d, want %d", f.Version, FrameVersion)
	}
	f.Context, _ = Normalize(f.Context).(map[string]any)
	if f.Context == nil {
		f.Context = map[string]any{}
	}
	if f.Locals != nil {
		f.Locals = Normalize(f.Locals).(map[string]any)
	}
	if f.State != nil {
		f.State = Normalize(f.State).(map[string]any)
	}
	if f.Hidden != nil {
		f.Hidden = Normalize(f.Hidden).(map[string]any)
	}
	f.moveHidden(f.State)
	f.Output = Normalize(f.Output)
	return &f, nil
}

// SetHidden sets the hidden entry key of the frame to v, a value as
// Normalize returns it; nil deletes it. A tracked frame (Track) keeps the
// change for its next delta, as the run's own changes. The entries are the
// stdlib's (Call.SetHidden) and its host's: each names its keys so that
// they do not meet.
func (f *Frame) SetHidden(key string, v any) {
	f.noteHidden(key)
	if v == nil {
		delete(f.Hidden, key)
		return
	}
	if f.Hidden == nil {
		f.Hidden = map[string]any{}
	}
	f.Hidden[key] = v
}

// NextID returns a new id unique within the frame's conversation, such as
// "msg-<frame id>-7".
func (f *Frame) NextID(prefix string) string {
	f.Seq++
	return fmt.Sprintf("%s-%s-%d", prefix, f.ID, f.Seq)
}

// Get reads a path of the context; a missing path reads as nil.
func (f *Frame) Get(p *Path) any {
	return getPath(f.Context[p.Root], p.Keys)
}

// Set writes a path of the context, creating the objects on the way.
func (f *Frame) Set(p *Path, v any) error {
	var old any
	if f.changes != nil {
		old = f.Get(p)
	}
	v = Normalize(v)
	root, err := setPath(f.Context[p.Root], p.Keys, v)
	if err != nil {
		return fmt.Errorf("set %s: %w", p, err)
	}
	f.Context[p.Root] = root
	f.noteSet(p.Root, p.Keys, old, v)
	return nil
}

// Wrote records that the value at p was changed in place, for a tracked
// frame's next delta. Every change of the context that does not go
// through Set must be reported so, or a saved run would miss it.
func (f *Frame) Wrote(p *Path) { f.noteSet(p.Root, p.Keys, nil, nil) }

// MergeContext merges src into the context as Merge does, recording each
// value it writes.
func (f *Frame) MergeContext(src map[string]any) {
	f.mergeAt(f.Context, src, "", nil)
}

func (f *Frame) mergeAt(dst, src map[string]any, root string, keys []PathKey) {
	for _, k := range slices.Sorted(maps.Keys(src)) {
		s := src[k]
		r, ks := root, keys
		if root == "" {
			r = k
		} else {
			ks = append(slices.Clip(keys), PathKey{Name: k})
		}
		if sm, ok := s.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				f.mergeAt(dm, sm, r, ks)
				continue
			}
		}
		dst[k] = Copy(s)
		f.noteSet(r, ks, nil, nil)
	}
}

func getPath(v any, keys []PathKey) any {
	for _, k := range keys {
		switch c := v.(type) {
		case map[string]any:
			if k.Name == "" {
				return nil
			}
			v = c[k.Name]
		case []any:
			if k.Name != "" || k.Index >= len(c) {
				return nil
			}
			v = c[k.Index]
		default:
			return nil
		}
	}
	return v
}

// setPath returns v with the value at keys replaced by x.
func setPath(v any, keys []PathKey, x any) (any, error) {
	if len(keys) == 0 {
		return x, nil
	}
	k := keys[0]
	if k.Name != "" {
		m, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				return nil, fmt.Errorf("cannot set key %q of a %s", k.Name, kindOf(v))
			}
			m = map[string]any{}
		}
		child, err := setPath(m[k.Name], keys[1:], x)
		if err != nil {
			return nil, err
		}
		m[k.Name] = child
		return m, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("cannot set index %d of a %s", k.Index, kindOf(v))
	}
	if k.Index >= len(list) {
		return nil, fmt.Errorf("index %d out of range of a list of %d", k.Index, len(list))
	}
	child, err := setPath(list[k.Index], keys[1:], x)
	if err != nil {
		return nil, err
	}
	list[k.Index] = child
	return list, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "bool"
	case int, float64:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// Normalize converts a value into the JSON tree the context holds: objects
// as map[string]any, lists as []any, whole numbers as int, other numbers as
// float64 (NaN and infinities, which JSON cannot hold, as nil), and
// strings, bools and nil as they are. Anything else goes through its JSON
// encoding. Maps and lists are copied.
func Normalize(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int:
		return x
	case float64:
		return normalFloat(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Normalize(e)
		}
		return out
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i)
		}
		f, _ := x.Float64()
		return normalFloat(f)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int(rv.Uint())
	case reflect.Float32:
		return normalFloat(rv.Float())
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = Normalize(rv.Index(i).Interface())
		}
		return out
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			out := make(map[string]any, rv.Len())
			for _, k := range rv.MapKeys() {
				out[k.String()] = Normalize(rv.MapIndex(k).Interface())
			}
			return out
		}
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return fmt.Sprint(v)
	}
	return Normalize(out)
}

// normalFloat keeps whole numbers as int so that they stay ints after a
// JSON round trip.
func normalFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil // JSON has no NaN or infinity
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int(f)
	}
	return f
}

// Copy returns a deep copy of a normalized value.
func Copy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Copy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Copy(e)
		}
		return out
	}
	return v
}

// Merge merges src into dst recursively: objects merge key by key, any
// other value replaces what dst holds.
func Merge(dst, src map[string]any) {
	for _, k := range slices.Sorted(maps.Keys(src)) {
		s := src[k]
		if sm, ok := s.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				Merge(dm, sm)
				continue
			}
		}
		dst[k] = Copy(s)
	}
}

// hiddenPrefix marks the hidden entries that frames and deltas written
// before Frame.Hidden kept among the node states.
const hiddenPrefix = "@"

// moveHidden moves the entries of state named with hiddenPrefix, as frames
// and deltas of earlier versions keep them, into f.Hidden; a null value
// removes the entry.
func (f *Frame) moveHidden(state map[string]any) {
	for k, v := range state {
		name, ok := strings.CutPrefix(k, hiddenPrefix)
		if !ok {
			continue
		}
		delete(state, k)
		if v == nil {
			delete(f.Hidden, name)
			continue
		}
		if f.Hidden == nil {
			f.Hidden = map[string]any{}
		}
		f.Hidden[name] = v
	}
}
