package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// fields is a JSON object being decoded: take removes each known key, and
// what is left are the unknown keys a type keeps to write back.
type fields map[string]json.RawMessage

// readFields decodes data as a JSON object; what names the value in errors.
func readFields(data []byte, what string) (fields, error) {
	var f fields
	if err := json.Unmarshal(data, &f); err != nil || f == nil {
		return nil, fmt.Errorf("%s must be a JSON object, found %s", what, DescribeJSON(data))
	}
	return f, nil
}

// take decodes the value of key into dst and removes the key. A missing key
// or a null leaves dst as it is: optional fields are absent, never null.
func (f fields) take(key string, dst any) error {
	raw := f.takeRaw(key)
	if raw == nil {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%q: %s", key, decodeError(err, raw))
	}
	return nil
}

// takeString is take for a string field, with a plain message for a value
// of another type.
func (f fields) takeString(key string, dst *string) error {
	raw := f.takeRaw(key)
	if raw == nil {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%q must be a string, found %s", key, DescribeJSON(raw))
	}
	return nil
}

// takeAny decodes the value of key as any JSON value, numbers kept exact as
// json.Number so that they marshal back unchanged.
func (f fields) takeAny(key string) (any, error) {
	raw := f.takeRaw(key)
	if raw == nil {
		return nil, nil
	}
	v, err := decodeAny(raw)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", key, err)
	}
	return v, nil
}

// takeRaw removes key and returns its value as written; nil for a missing
// key or a null.
func (f fields) takeRaw(key string) json.RawMessage {
	raw, ok := f[key]
	if !ok {
		return nil
	}
	delete(f, key)
	if isNull(raw) {
		return nil
	}
	return raw
}

// rest returns the keys no take removed, or nil when there are none.
func (f fields) rest() map[string]json.RawMessage {
	if len(f) == 0 {
		return nil
	}
	return f
}

// decodeAny decodes one JSON value with numbers as json.Number.
func decodeAny(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// DescribeJSON names the kind of a JSON value for messages: "a number",
// "null", "a list"…
func DescribeJSON(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a bool"
	case 'n':
		return "null"
	}
	return "a number"
}

// decodeError words a decoding error of raw: the type mismatch in plain
// terms when that is what it is.
func decodeError(err error, raw []byte) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%s: expected %s, found %s", te.Field, goKind(te.Type.Kind().String()), "a "+te.Value)
		}
		return fmt.Sprintf("expected %s, found %s", goKind(te.Type.Kind().String()), DescribeJSON(raw))
	}
	return err.Error()
}

func goKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "slice", "array":
		return "a list"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a bool"
	}
	return "a " + k
}
