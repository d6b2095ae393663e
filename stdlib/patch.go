package stdlib

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/wI2L/jsondiff"

	"github.com/aguic/aguic/internal/jsonenc"
	"github.com/aguic/aguic/vm"
)

// syncPlan is what a client that holds base needs to hold cur.
type syncPlan struct {
	Changed  bool  // base and cur differ; nothing to send otherwise
	Snapshot bool  // send cur whole
	Patch    []any // else send these RFC 6902 operations
	// Base is the new baseline: a copy of cur that shares the members
	// that did not change with base. Set when Changed.
	Base any
}

// diffSync compares what the client holds (base; had is false when the
// client holds nothing known) with cur. It picks a snapshot when the client
// holds nothing known, when the root is replaced (the types differ, or one
// side is not an object or a list), when snapshotsOnly is set, or when the
// snapshot's JSON is no longer than the patch's; a patch otherwise. Both
// values are normalized context values. Neither is modified and cur is not
// shared with the plan; base, which the plan's Base replaces, may be.
func diffSync(base, cur any, had, snapshotsOnly bool) (syncPlan, error) {
	if !had || snapshotsOnly || rootReplaced(base, cur) {
		if had && vm.Same(base, cur) {
			return syncPlan{}, nil
		}
		return syncPlan{Changed: true, Snapshot: true, Base: vm.Copy(cur)}, nil
	}
	d := pruned(base, cur)
	if !d.changed {
		return syncPlan{}, nil
	}
	ops, err := jsonDiff(d.a, d.b)
	if err != nil {
		return syncPlan{}, err
	}
	if len(ops) == 0 {
		return syncPlan{}, nil
	}
	patch, err := jsonLen(ops)
	if err != nil {
		return syncPlan{}, err
	}
	if !jsonLongerThan(cur, patch) {
		return syncPlan{Changed: true, Snapshot: true, Base: d.merged}, nil
	}
	return syncPlan{Changed: true, Patch: ops, Base: d.merged}, nil
}

func jsonLen(v any) (int, error) {
	b, err := jsonenc.Append(nil, v)
	return len(b), err
}

// jsonLongerThan reports whether the JSON of the normalized value v is
// longer than n bytes. It counts a lower bound of the encoding and stops as
// soon as that passes n, so a large value with a short patch costs little.
func jsonLongerThan(v any, n int) bool {
	left := n
	var walk func(v any) bool // false once more than n bytes are counted
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			left -= 1 + len(x) // { and } , separators (at least one byte for {})
			for k, e := range x {
				left -= len(k) + 3 // "k":
				if left < 0 || !walk(e) {
					return false
				}
			}
		case []any:
			left -= 1 + len(x)
			for _, e := range x {
				if left < 0 || !walk(e) {
					return false
				}
			}
		case string:
			left -= len(x) + 2
		case nil, bool:
			left -= 4
		default:
			left-- // a number
		}
		return left >= 0
	}
	if !walk(v) {
		return true
	}
	// The bound did not pass n: count exactly.
	l, err := jsonLen(v)
	return err != nil || l > n
}

// rootReplaced reports whether a patch cannot express going from a to b
// below the root: their types differ, or one is not an object or a list.
func rootReplaced(a, b any) bool {
	switch a.(type) {
	case map[string]any:
		_, ok := b.(map[string]any)
		return !ok
	case []any:
		_, ok := b.([]any)
		return !ok
	}
	return true
}

// jsonDiff returns the RFC 6902 operations that turn a into b, values in
// the shape forDiff gives, as objects {op, path, value?, from?} whose value
// is present, even when null, for add, replace and test.
func jsonDiff(a, b any) ([]any, error) {
	patch, err := jsondiff.CompareWithoutMarshal(a, b)
	if err != nil {
		return nil, err
	}
	ops := make([]any, len(patch))
	for i, op := range patch {
		o := map[string]any{"op": op.Type, "path": op.Path}
		switch op.Type {
		case jsondiff.OperationAdd, jsondiff.OperationReplace, jsondiff.OperationTest:
			o["value"] = vm.Normalize(op.Value)
		case jsondiff.OperationMove, jsondiff.OperationCopy:
			o["from"] = op.From
		}
		ops[i] = o
	}
	return ops, nil
}

// prune is two values made ready for jsondiff, and the second value
// copied for keeping.
type prune struct {
	a, b    any  // a and b in the shape forDiff gives, without what they share
	merged  any  // b, copied, sharing with a the members that are the same
	changed bool // a and b differ
}

// pruned leaves out of a and b every object member that is the same in
// each: a diff of what is left has the same operations at the same paths,
// and costs only the size of the change. List items stay, since their
// indexes are their paths.
func pruned(a, b any) prune {
	ma, ok1 := a.(map[string]any)
	mb, ok2 := b.(map[string]any)
	if !ok1 || !ok2 {
		return prune{a: forDiff(a), b: forDiff(b), merged: vm.Copy(b), changed: !vm.Same(a, b)}
	}
	d := prune{merged: make(map[string]any, len(mb))}
	pa, pb, merged := map[string]any{}, map[string]any{}, d.merged.(map[string]any)
	for k, vb := range mb {
		va, ok := ma[k]
		switch {
		case !ok:
			pb[k], merged[k], d.changed = forDiff(vb), vm.Copy(vb), true
		case vm.Same(va, vb):
			merged[k] = va
		default:
			sub := pruned(va, vb)
			pa[k], pb[k], merged[k], d.changed = sub.a, sub.b, sub.merged, true
		}
	}
	for k, va := range ma {
		if _, ok := mb[k]; !ok {
			pa[k], d.changed = forDiff(va), true
		}
	}
	d.a, d.b = pa, pb
	return d
}

// forDiff copies a normalized value into the shape json.Unmarshal gives,
// which jsondiff compares: numbers as float64.
func forDiff(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = forDiff(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = forDiff(e)
		}
		return out
	}
	return v
}

// patchOps checks that v is a list of RFC 6902 operations and returns them
// normalized, each holding only the members its op defines. what names
// the patch in errors ("state delta").
func patchOps(what string, v any) ([]any, error) {
	list, ok := vm.Normalize(v).([]any)
	if !ok {
		return nil, vm.Errorf(vm.ErrNode, "%s: expected a list of JSON Patch operations, found %s", what, vm.TypeName(v))
	}
	ops := make([]any, len(list))
	for i, item := range list {
		op, err := patchOp(item)
		if err != nil {
			return nil, vm.Errorf(vm.ErrNode, "%s: operation %d: %v", what, i+1, err)
		}
		ops[i] = op
	}
	return ops, nil
}

func patchOp(item any) (map[string]any, error) {
	m, ok := item.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected an object such as {op: \"replace\", path: \"/a\", value: 1}, found %s", vm.TypeName(item))
	}
	name, ok := m["op"].(string)
	if !ok {
		return nil, fmt.Errorf("op must be a string, found %s", vm.TypeName(m["op"]))
	}
	out := map[string]any{"op": name}
	path, err := jsonPointer(m, "path")
	if err != nil {
		return nil, err
	}
	out["path"] = path
	switch name {
	case "add", "replace", "test":
		v, ok := m["value"]
		if !ok {
			return nil, fmt.Errorf("%s at %q needs a value", name, path)
		}
		out["value"] = v
	case "move", "copy":
		from, err := jsonPointer(m, "from")
		if err != nil {
			return nil, err
		}
		out["from"] = from
	case "remove":
	default:
		return nil, fmt.Errorf("unknown op %q: expected add, remove, replace, move, copy or test", name)
	}
	return out, nil
}

// jsonPointer reads member key of an operation, which must be a JSON Pointer.
func jsonPointer(op map[string]any, key string) (string, error) {
	v, ok := op[key]
	if !ok {
		return "", fmt.Errorf("missing %s", key)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s must be a string, found %s", key, vm.TypeName(v))
	}
	if s != "" && !strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("%s %q must be empty or start with \"/\"", key, s)
	}
	return s, nil
}

// applyPatch returns doc with the checked operations ops applied; doc is
// not modified. An operation that does not apply fails with its number.
func applyPatch(what string, doc any, ops []any) (any, error) {
	out, err := applyOps(doc, ops)
	if err == nil {
		return out, nil
	}
	// Find the operation that failed, one at a time: only on the error path.
	cur := doc
	for i, op := range ops {
		next, err := applyOps(cur, ops[i:i+1])
		if err != nil {
			o := op.(map[string]any)
			return nil, vm.Errorf(vm.ErrNode, "%s: operation %d (%s %q) does not apply: %s", what, i+1, o["op"], o["path"], patchError(err))
		}
		cur = next
	}
	return nil, vm.Errorf(vm.ErrNode, "%s: the patch does not apply: %s", what, patchError(err))
}

func applyOps(doc any, ops []any) (any, error) {
	if len(ops) == 0 {
		return doc, nil
	}
	if len(ops) == 1 {
		// A root replacement is a whole new document; json-patch only
		// applies to objects and lists.
		if o := ops[0].(map[string]any); o["path"] == "" && (o["op"] == "add" || o["op"] == "replace") {
			return vm.Copy(o["value"]), nil
		}
	}
	if _, ok := doc.(map[string]any); !ok {
		if _, ok := doc.([]any); !ok {
			return nil, fmt.Errorf("the document is %s, not an object or a list", vm.TypeName(doc))
		}
	}
	data, err := jsonenc.Append(nil, doc)
	if err != nil {
		return nil, err
	}
	raw, err := jsonenc.Append(nil, ops)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, err
	}
	opts := jsonpatch.NewApplyOptions()
	opts.SupportNegativeIndices = false // RFC 6902 has none; clients reject them
	opts.EscapeHTML = false
	data, err = p.ApplyWithOptions(data, opts)
	if err != nil {
		return nil, err
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return vm.Normalize(v), nil
}

// patchError words an error of json-patch in lower case.
func patchError(err error) string {
	switch {
	case errors.Is(err, jsonpatch.ErrTestFailed):
		return "the test failed"
	case errors.Is(err, jsonpatch.ErrMissing):
		return "the path does not exist"
	case errors.Is(err, jsonpatch.ErrInvalidIndex):
		return "the index is out of range"
	}
	msg := err.Error()
	if msg != "" {
		msg = strings.ToLower(msg[:1]) + msg[1:]
	}
	return msg
}
