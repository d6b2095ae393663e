package stdlib

import "github.com/aguic/aguic/internal/jsonenc"

// encodeJSON returns v as compact JSON with object keys sorted and without
// HTML escaping: byte for byte what an encoding/json Encoder with
// SetEscapeHTML(false) writes, minus the final newline.
func encodeJSON(v any) (string, error) {
	b, err := jsonenc.Append(make([]byte, 0, 64), v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
