package vm

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Text renders a value the way templates interpolate it: strings as they
// are, nil as the empty string, everything else as compact JSON.
func Text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
