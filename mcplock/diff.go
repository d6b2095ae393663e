package mcplock

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ChangeKind says how a tool differs between a lock and a server.
type ChangeKind string

// The kinds of change Diff reports.
const (
	ToolAdded           ChangeKind = "added"                 // the server lists a tool the lock does not have
	ToolRemoved         ChangeKind = "removed"               // the lock has a tool the server no longer lists
	TitleChanged        ChangeKind = "title changed"         // the tool's title differs
	DescriptionChanged  ChangeKind = "description changed"   // the tool's description differs
	InputSchemaChanged  ChangeKind = "input schema changed"  // the schema of its arguments differs
	OutputSchemaChanged ChangeKind = "output schema changed" // the schema of its structured result differs
	AnnotationsChanged  ChangeKind = "annotations changed"   // its hints (read-only, destructive…) differ
)

// Change is one difference between the tools a lock records and those a
// server lists.
type Change struct {
	Tool string
	Kind ChangeKind
	// Paths are, for a changed schema or annotations, the JSON Pointers
	// (RFC 6901) of the values that differ, such as
	// "/properties/a/type"; "" is the whole value.
	Paths []string
}

// String renders the change for people, such as
// `tool "get-sum": input schema changed at /required/1, /properties/b`.
func (c Change) String() string {
	s := fmt.Sprintf("tool %q: %s", c.Tool, c.Kind)
	if len(c.Paths) == 0 {
		return s
	}
	paths := make([]string, len(c.Paths))
	for i, p := range c.Paths {
		if p == "" {
			p = "(the whole value)"
		}
		paths[i] = p
	}
	return s + " at " + strings.Join(paths, ", ")
}

// Diff compares the tools a lock records of a server (locked) with those
// the server lists now (live): the tools added and removed, and for each
// tool both have, what changed in its title, description, schemas and
// annotations. The changes are sorted by tool name, then in that order of
// fields; nil means the lock is up to date. A nil server has no tools.
// Server info and protocol version are not compared: they say nothing
// about what workflows may call.
func Diff(locked, live *Server) []Change {
	var changes []Change
	names := map[string]bool{}
	for _, n := range locked.ToolNames() {
		names[n] = true
	}
	for _, n := range live.ToolNames() {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	for _, name := range sorted {
		was, is := locked.Tool(name), live.Tool(name)
		switch {
		case was == nil:
			changes = append(changes, Change{Tool: name, Kind: ToolAdded})
			continue
		case is == nil:
			changes = append(changes, Change{Tool: name, Kind: ToolRemoved})
			continue
		}
		if was.Title != is.Title {
			changes = append(changes, Change{Tool: name, Kind: TitleChanged})
		}
		if was.Description != is.Description {
			changes = append(changes, Change{Tool: name, Kind: DescriptionChanged})
		}
		for _, f := range []struct {
			kind    ChangeKind
			was, is map[string]any
		}{
			{InputSchemaChanged, was.InputSchema, is.InputSchema},
			{OutputSchemaChanged, was.OutputSchema, is.OutputSchema},
			{AnnotationsChanged, was.Annotations, is.Annotations},
		} {
			if paths := JSONDiff(mapOrNil(f.was), mapOrNil(f.is)); len(paths) > 0 {
				changes = append(changes, Change{Tool: name, Kind: f.kind, Paths: paths})
			}
		}
	}
	return changes
}

// mapOrNil turns an empty map into nil, so that an absent schema and an
// empty one compare equal: both mean "no constraint".
func mapOrNil(m map[string]any) any {
	if len(m) == 0 {
		return nil
	}
	return m
}

// JSONDiff returns the JSON Pointers of the places where two JSON values
// differ, sorted: a key only one object has, an array element only one
// array has, or two values of another type or value at the same place.
// Numbers compare by value, whether decoded as float64, as json.Number or
// as Go integers.
func JSONDiff(a, b any) []string {
	var paths []string
	jsonDiff("", a, b, &paths)
	slices.Sort(paths)
	return paths
}

func jsonDiff(at string, a, b any, paths *[]string) {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			av, aok := am[k]
			bv, bok := bm[k]
			p := at + "/" + pointerToken(k)
			if aok != bok {
				*paths = append(*paths, p)
				continue
			}
			jsonDiff(p, av, bv, paths)
		}
		return
	}
	al, aIsList := a.([]any)
	bl, bIsList := b.([]any)
	if aIsList && bIsList {
		for i := range max(len(al), len(bl)) {
			p := at + "/" + strconv.Itoa(i)
			if i >= len(al) || i >= len(bl) {
				*paths = append(*paths, p)
				continue
			}
			jsonDiff(p, al[i], bl[i], paths)
		}
		return
	}
	if !sameScalar(a, b) {
		*paths = append(*paths, at)
	}
}

// pointerToken escapes a key for a JSON Pointer.
func pointerToken(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// sameScalar reports whether two JSON scalars (or mismatched values) are
// equal.
func sameScalar(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	switch a.(type) {
	case nil, string, bool:
		return a == b
	}
	// Anything else (a map beside a list, say) differs; values that are
	// not JSON compare by their encoding.
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// number reads a JSON number however it was decoded.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}
