package stdlib

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/aguic/aguic/vm"
	"github.com/google/uuid"
)

// builtins returns a fresh declaration of every builtin function; env reads
// the environment through opts.Getenv, which must not be nil.
func builtins(opts Options) []*vm.Builtin {
	getenv := opts.Getenv
	return []*vm.Builtin{
		{
			Name:      "env",
			Signature: "env(name string) string",
			Doc:       `Returns the server process's environment variable name at run time, or "" when it is unset; the value is never stored in the context.`,
			Fn: func(args ...any) (any, error) {
				name, err := stringArg("env", "name", args, 1)
				if err != nil {
					return nil, err
				}
				if name == "" {
					return nil, errors.New("env: empty variable name")
				}
				return getenv(name), nil
			},
			Types: []any{new(func(string) string)},
		},
		{
			Name:      "json",
			Signature: "json(v any) string",
			Doc:       "Returns v as compact JSON with object keys sorted and without HTML escaping.",
			Fn: func(args ...any) (any, error) {
				if err := argCount("json", args, 1); err != nil {
					return nil, err
				}
				s, err := encodeJSON(args[0])
				if err != nil {
					return nil, fmt.Errorf("json: %w", err)
				}
				return s, nil
			},
			Types: []any{new(func(any) string)},
		},
		{
			Name:      "parse_json",
			Signature: "parse_json(s string) any",
			Doc:       "Decodes the JSON text s into plain values: objects, lists, numbers (float64), strings, booleans and nil.",
			Fn: func(args ...any) (any, error) {
				s, err := stringArg("parse_json", "s", args, 1)
				if err != nil {
					return nil, err
				}
				return parseJSON(s)
			},
			Types: []any{new(func(string) any)},
		},
		{
			Name:      "uuid",
			Signature: "uuid() string",
			Doc:       `Returns a new random (version 4) UUID such as "2f1c6d4e-8a5b-4c1e-9f3a-7b6d5e4c3b2a".`,
			Fn: func(args ...any) (any, error) {
				if err := argCount("uuid", args, 0); err != nil {
					return nil, err
				}
				id, err := uuid.NewRandom()
				if err != nil {
					return nil, fmt.Errorf("uuid: %w", err)
				}
				return id.String(), nil
			},
			Types: []any{new(func() string)},
		},
		{
			Name:      "tail",
			Signature: "tail(list []any, n int) []any",
			Doc:       "Returns the last n items of list, or all of them when it has fewer; a nil list gives an empty list and a negative n is an error.",
			Fn: func(args ...any) (any, error) {
				if err := argCount("tail", args, 2); err != nil {
					return nil, err
				}
				return tail(args[0], args[1])
			},
			// The list is any so that lists of every element type pass the
			// check (split returns []string); tail checks it at run time.
			Types: []any{new(func(any, int) []any)},
		},
		{
			Name:      "text",
			Signature: "text(v any) string",
			Doc:       `Returns v as a template shows it: a string as it is, nil as "", anything else as json(v) does.`,
			Fn: func(args ...any) (any, error) {
				if err := argCount("text", args, 1); err != nil {
					return nil, err
				}
				switch v := args[0].(type) {
				case string:
					return v, nil
				case nil:
					return "", nil
				}
				s, err := encodeJSON(args[0])
				if err != nil {
					return nil, fmt.Errorf("text: %w", err)
				}
				return s, nil
			},
			Types: []any{new(func(any) string)},
		},
	}
}

// argCount checks that fn was called with want arguments. The compiler
// checks calls already; this guards calls it could not see.
func argCount(fn string, args []any, want int) error {
	if len(args) != want {
		return fmt.Errorf("%s: expected %d arguments, found %d", fn, want, len(args))
	}
	return nil
}

// stringArg returns the only argument of fn, which must be a string.
func stringArg(fn, param string, args []any, want int) (string, error) {
	if err := argCount(fn, args, want); err != nil {
		return "", err
	}
	s, ok := args[0].(string)
	if !ok {
		return "", fmt.Errorf("%s: expected a string %s, found %s", fn, param, vm.TypeName(args[0]))
	}
	return s, nil
}

// parseJSON decodes s into map[string]any, []any, float64, string, bool or nil.
func parseJSON(s string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, fmt.Errorf("parse_json: invalid JSON at offset %d: %s", syntax.Offset, syntax.Error())
		}
		return nil, fmt.Errorf("parse_json: invalid JSON: %w", err)
	}
	return v, nil
}

// tail returns the last n items of list as a new []any.
func tail(list, count any) (any, error) {
	n, err := intArg("tail", "n", count)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("tail: n must be 0 or more, found %d", n)
	}
	if list == nil {
		return []any{}, nil
	}
	if l, ok := list.([]any); ok {
		return append([]any{}, l[max(len(l)-n, 0):]...), nil
	}
	rv := reflect.ValueOf(list)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return nil, fmt.Errorf("tail: expected a list, found %s", vm.TypeName(list))
	}
	first := max(rv.Len()-n, 0)
	out := make([]any, 0, rv.Len()-first)
	for i := first; i < rv.Len(); i++ {
		out = append(out, rv.Index(i).Interface())
	}
	return out, nil
}

// intArg returns v as an int: any integer, or a float64 without a fraction,
// as JSON numbers read from the context are.
func intArg(fn, param string, v any) (int, error) {
	if n, ok := vm.WholeNumber(v); ok {
		return n, nil
	}
	return 0, fmt.Errorf("%s: expected a whole number %s, found %s", fn, param, describe(v))
}

// describe names a value for an error message: its type, and for numbers
// the number itself.
func describe(v any) string {
	switch reflect.ValueOf(v).Kind() {
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprintf("%s %v", vm.TypeName(v), v)
	}
	return vm.TypeName(v)
}
