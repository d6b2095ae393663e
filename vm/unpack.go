package vm

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// UnpackKeys evaluates a node's keys into Go variables, in one call:
// pairs are a key's name, then a pointer to the variable that takes its
// value, typed as the key is read:
//
//   - *string: a string; for a key with an Enum, one of its values;
//   - *bool: true or false;
//   - *int: a whole number;
//   - *float64: a number;
//   - *time.Duration: a string such as "20s", a positive duration;
//   - *map[string]any: an object;
//   - *[]any: a list;
//   - *any: any value.
//
// A key the node leaves out takes the kind's default; a key with neither,
// or whose value is null, leaves its variable as it is. A value of another
// type is an ErrNode error that names the key and says what it found, such
// as `silent must be true or false, found "yes"`.
//
//	var role string
//	var silent bool
//	if err := c.UnpackKeys("role", &role, "silent", &silent); err != nil {
//		return Step{}, err
//	}
func (c *Call) UnpackKeys(pairs ...any) error {
	if len(pairs)%2 != 0 {
		panic("vm: UnpackKeys takes pairs of a key's name and a pointer")
	}
	for i := 0; i < len(pairs); i += 2 {
		name, ok := pairs[i].(string)
		if !ok {
			panic(fmt.Sprintf("vm: UnpackKeys: %v is not a key's name", pairs[i]))
		}
		v, _, err := c.Key(name)
		if err != nil {
			return err
		}
		if v == nil {
			continue
		}
		if err := c.unpack(name, v, pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// unpack stores v, the value of key name, in dst.
func (c *Call) unpack(name string, v any, dst any) error {
	bad := func(want string) error {
		return Errorf(ErrNode, "%s must be %s, found %s", name, want, Describe(v))
	}
	switch dst := dst.(type) {
	case *any:
		*dst = v
	case *string:
		s, ok := v.(string)
		if !ok {
			return bad("a string")
		}
		if ks := c.keySpec(name); ks != nil && len(ks.Enum) > 0 && !slices.Contains(ks.Enum, s) {
			return Errorf(ErrNode, "%s must be %s, found %q", name, QuoteList(ks.Enum), s)
		}
		*dst = s
	case *bool:
		b, ok := v.(bool)
		if !ok {
			return bad("true or false")
		}
		*dst = b
	case *int:
		n, ok := WholeNumber(v)
		if !ok {
			return bad("a whole number")
		}
		*dst = n
	case *float64:
		f, ok := number(v)
		if !ok {
			return bad("a number")
		}
		*dst = f
	case *time.Duration:
		s, ok := v.(string)
		d, err := time.ParseDuration(s)
		if !ok || err != nil || d <= 0 {
			return Errorf(ErrNode, "%s expects a positive duration such as \"20s\", found %s", name, Describe(v))
		}
		*dst = d
	case *map[string]any:
		m, ok := Normalize(v).(map[string]any)
		if !ok {
			return bad("an object")
		}
		*dst = m
	case *[]any:
		l, ok := Normalize(v).([]any)
		if !ok {
			return bad("a list")
		}
		*dst = l
	default:
		panic(fmt.Sprintf("vm: UnpackKeys cannot store key %s in a %T", name, dst))
	}
	return nil
}

func (c *Call) keySpec(name string) *KeySpec {
	if c.Spec == nil {
		return nil
	}
	return c.Spec.Key(name)
}

// WholeNumber returns v as an int: any integer, or a float without a
// fraction, as JSON numbers read from the context are.
func WholeNumber(v any) (int, bool) {
	switch n := Normalize(v).(type) {
	case int:
		return n, true
	case float64:
		if n == math.Trunc(n) && n >= math.MinInt64 && n < math.MaxInt64 {
			return int(n), true
		}
	}
	return 0, false
}

// number returns v as a float64.
func number(v any) (float64, bool) {
	switch n := Normalize(v).(type) {
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// Describe names a value for an error message: a string as itself, quoted;
// anything else by its type with its article: "a list", "an object",
// "null".
func Describe(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	name := TypeName(Normalize(v))
	switch name {
	case "nil":
		return "null"
	case "int", "object":
		return "an " + name
	}
	return "a " + name
}

// QuoteList renders words as "a", "b" or "c".
func QuoteList(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	switch len(q) {
	case 0:
		return "nothing"
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// TypeName is the name of a value's type as the language calls it: "nil",
// "string", "bool", "int", "number", "list" or "object".
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case string:
		return "string"
	case bool:
		return "bool"
	case map[string]any:
		return "object"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Map:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
