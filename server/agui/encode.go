package agui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"github.com/aguic/aguic/internal/jsonenc"
)

// object writes a JSON object field by field, in the order the fields are
// added, then the unknown keys a value kept, sorted. The first error stops
// it; bytes returns that error, which names the key (and the event's type).
// The opt methods write nothing for an empty value: "", 0, or a value
// written as null.
type object struct {
	b   []byte
	err error
	typ string // the type of the event being written, if it is one
}

// key opens the object or writes a comma, then key and its colon.
func (o *object) key(key string) {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = jsonenc.AppendString(o.b, key)
	o.b = append(o.b, ':')
}

// str writes key with the string s.
func (o *object) str(key, s string) {
	if o.err == nil {
		o.key(key)
		o.b = jsonenc.AppendString(o.b, s)
	}
}

func (o *object) optStr(key, s string) {
	if s != "" {
		o.str(key, s)
	}
}

// integer writes key with the number n.
func (o *object) integer(key string, n int64) {
	if o.err == nil {
		o.key(key)
		o.b = strconv.AppendInt(o.b, n, 10)
	}
}

func (o *object) optInteger(key string, n int64) {
	if n != 0 {
		o.integer(key, n)
	}
}

// field writes key with v encoded as JSON (HTML characters unescaped).
func (o *object) field(key string, v any) {
	if o.err != nil {
		return
	}
	o.key(key)
	b, err := jsonenc.Append(o.b, v)
	if err != nil {
		o.err = fmt.Errorf("%q: %w", key, err)
		return
	}
	o.b = b
}

func (o *object) optField(key string, v any) {
	if v = nonNull(v); v != nil {
		o.field(key, v)
	}
}

// marshal writes key with the JSON m writes of itself, which must be
// compact, as this package's types write it.
func (o *object) marshal(key string, m json.Marshaler) {
	if o.err != nil {
		return
	}
	b, err := m.MarshalJSON()
	if err != nil {
		o.err = fmt.Errorf("%q: %w", key, err)
		return
	}
	o.key(key)
	o.b = append(o.b, b...)
}

// list writes key with the JSON list of xs, [] when nil, each element as
// marshal writes it.
func list[T json.Marshaler](o *object, key string, xs []T) {
	if o.err != nil {
		return
	}
	o.key(key)
	o.b = append(o.b, '[')
	for i, x := range xs {
		b, err := x.MarshalJSON()
		if err != nil {
			o.err = fmt.Errorf("%q[%d]: %w", key, i, err)
			return
		}
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = append(o.b, b...)
	}
	o.b = append(o.b, ']')
}

// raw writes key with a value already encoded, compacted.
func (o *object) raw(key string, v json.RawMessage) {
	if o.err != nil {
		return
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		o.err = fmt.Errorf("%q: %w", key, err)
		return
	}
	o.key(key)
	o.b = append(o.b, b.Bytes()...)
}

// extra writes the kept unknown keys, sorted.
func (o *object) extra(m map[string]json.RawMessage) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		o.raw(k, m[k])
	}
}

// newEvent starts the JSON object of an event of type typ: "type" first.
func newEvent(typ string) *object {
	o := &object{b: make([]byte, 0, 128), typ: typ}
	o.str("type", typ)
	return o
}

// end writes the fields of an event's Base and returns the finished event.
func (o *object) end(b Base) ([]byte, error) {
	b.appendFields(o)
	return o.bytes()
}

// bytes returns the finished object.
func (o *object) bytes() ([]byte, error) {
	if o.err != nil && o.typ != "" {
		return nil, fmt.Errorf("%s: %w", o.typ, o.err)
	}
	if o.err != nil {
		return nil, o.err
	}
	if len(o.b) == 0 {
		return []byte("{}"), nil
	}
	return append(o.b, '}'), nil
}

// nonNull returns nil for every value JSON writes as null, v otherwise.
func nonNull(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case map[string]any:
		if x == nil {
			return nil
		}
		return v
	case json.RawMessage:
		if x == nil || isNull(x) {
			return nil
		}
		return v
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
	}
	return v
}

// emptyObject returns v, or an empty JSON object for a v written as null.
func emptyObject(v any) any {
	if v = nonNull(v); v == nil {
		return map[string]any{}
	}
	return v
}
