package stdlib

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aguic/aguic/vm"
)

// keySource is the source of a node's key as written, spaces trimmed; ""
// when the node leaves it out.
func keySource(n *vm.Node, key string) string {
	if v := n.Keys[key]; v != nil {
		return strings.TrimSpace(v.Source)
	}
	return ""
}

// boolKey evaluates a bool key.
func boolKey(c *vm.Call, name string) (bool, error) {
	v, _, err := c.Key(name)
	if err != nil {
		return false, err
	}
	switch b := v.(type) {
	case nil:
		return false, nil
	case bool:
		return b, nil
	}
	return false, vm.Errorf(vm.ErrNode, "%s must be true or false, found %s", name, describeValue(v))
}

// stringKey evaluates a string key; ok is false when it is absent or null.
func stringKey(c *vm.Call, name string) (s string, ok bool, err error) {
	v, _, err := c.Key(name)
	if err != nil || v == nil {
		return "", false, err
	}
	s, isString := v.(string)
	if !isString {
		return "", false, vm.Errorf(vm.ErrNode, "%s must be a string, found %s", name, describeValue(v))
	}
	return s, true, nil
}

// enumKey evaluates a string key that must be one of its declared values.
func enumKey(c *vm.Call, name string) (string, error) {
	s, _, err := stringKey(c, name)
	if err != nil {
		return "", err
	}
	var values []string
	if ks := c.Spec.Key(name); ks != nil {
		values = ks.Enum
	}
	if !slices.Contains(values, s) {
		return "", vm.Errorf(vm.ErrNode, "%s must be %s, found %q", name, quoteList(values), s)
	}
	return s, nil
}

// objectKey evaluates an object key; nil when it is absent or null.
func objectKey(c *vm.Call, name string) (map[string]any, error) {
	v, _, err := c.Key(name)
	if err != nil || v == nil {
		return nil, err
	}
	m, ok := vm.Normalize(v).(map[string]any)
	if !ok {
		return nil, vm.Errorf(vm.ErrNode, "%s must be an object, found %s", name, describeValue(v))
	}
	return m, nil
}

// describeValue names a value for an error message: a string as itself,
// quoted; anything else by its type with its article: "a list", "an
// object", "null".
func describeValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	name := typeName(vm.Normalize(v))
	switch name {
	case "nil":
		return "null"
	case "int", "object":
		return "an " + name
	}
	return "a " + name
}

// quoteList renders words as "a", "b" or "c".
func quoteList(words []string) string {
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
