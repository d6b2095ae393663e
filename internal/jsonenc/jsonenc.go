// Package jsonenc appends JSON without reflection for the values a run
// holds.
//
// What goes in: any Go value. What comes out: its JSON, appended to a byte
// slice. What stays true: the bytes are exactly those an encoding/json
// Encoder with SetEscapeHTML(false) writes, minus the final newline —
// compact, object keys sorted, <, > and & as they are. nil, string, bool,
// int, int64, float64, []any and map[string]any (what vm.Normalize and
// parse_json make) take a fast path; anything else, and anything nested
// deeper than the fast path goes, is handed to encoding/json. The package
// holds no state.
package jsonenc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxFastDepth is how deep Append nests before it hands a value to
// encoding/json, whose cycle detection then turns a cyclic value into an
// error instead of a stack overflow.
const maxFastDepth = 1000

// Append appends the JSON of v to dst. A value that has no JSON form (a
// channel, a function, NaN, a cycle) is an error that says what it is and
// where in v it is ("cannot encode +Inf as JSON at .a[2]"); dst is then
// returned unchanged.
func Append(dst []byte, v any) ([]byte, error) {
	b, err := appendValue(dst, v, 0)
	if err != nil {
		return dst, err
	}
	return b, nil
}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxFastDepth {
		return appendStd(dst, v)
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return AppendString(dst, v), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case float64:
		return appendFloat(dst, v)
	case []any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return nil, within(err, "["+strconv.Itoa(i)+"]")
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendValue(dst, v[k], depth+1); err != nil {
				return nil, within(err, keyPath(k))
			}
		}
		return append(dst, '}'), nil
	}
	return appendStd(dst, v)
}

// appendStd appends v encoded by encoding/json.
func appendStd(dst []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, &encodeError{msg: fmt.Sprintf("cannot encode %T as JSON: %s", v, strings.TrimPrefix(err.Error(), "json: "))}
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// encodeError is a value that has no JSON form, and where it is inside the
// encoded value.
type encodeError struct {
	msg   string
	steps []string // the path to the value, innermost step first: "[2]", ".a"
}

// maxErrorSteps is how many path steps an encodeError shows, outermost
// first; a cyclic value has a thousand.
const maxErrorSteps = 16

func (e *encodeError) Error() string {
	if len(e.steps) == 0 {
		return e.msg
	}
	var b strings.Builder
	b.WriteString(e.msg)
	b.WriteString(" at ")
	for i := len(e.steps) - 1; i >= 0 && len(e.steps)-i <= maxErrorSteps; i-- {
		b.WriteString(e.steps[i])
	}
	if len(e.steps) > maxErrorSteps {
		b.WriteString("…")
	}
	return b.String()
}

// within records that err happened inside step of the enclosing value.
func within(err error, step string) error {
	if e, ok := err.(*encodeError); ok {
		e.steps = append(e.steps, step)
	}
	return err
}

// keyPath renders an object key as a path step: .name, or ["odd key"].
func keyPath(k string) string {
	for i, r := range k {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return "[" + strconv.Quote(k) + "]"
		}
	}
	if k == "" {
		return `[""]`
	}
	return "." + k
}

// appendFloat writes f as encoding/json does: like an ES6 number-to-string.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &encodeError{msg: "cannot encode " + strconv.FormatFloat(f, 'g', -1, 64) + " as JSON"}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string the way encoding/json does
// without HTML escaping: control characters escaped, invalid UTF-8
// replaced by U+FFFD, U+2028 and U+2029 escaped.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
