package stdlib

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// stdJSON is what encodeJSON must equal: encoding/json without HTML
// escaping and without the final newline.
func stdJSON(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func TestEncodeJSONMatchesEncodingJSON(t *testing.T) {
	deep := any("bottom")
	for range maxFastDepth + 10 {
		deep = []any{deep}
	}
	tests := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"true", true},
		{"int", -42},
		{"int64", int64(math.MaxInt64)},
		{"int32 falls back", int32(7)},
		{"zero", 0.0},
		{"negative zero", math.Copysign(0, -1)},
		{"fraction", 0.1},
		{"big integer float", 123456789012345678.0},
		{"1e20", 1e20},
		{"1e21", 1e21},
		{"small", 1e-6},
		{"smaller", 1e-7},
		{"tiny", 5e-324},
		{"max float", math.MaxFloat64},
		{"float32 falls back", float32(0.1)},
		{"html", "<a href='x'>&amp;</a>"},
		{"escapes", "quote\" backslash\\ nl\n cr\r tab\t bs\b ff\f nul\x00 us\x1f del\x7f"},
		{"unicode", "héllo, 世界 🎉"},
		{"separators", "a\u2028b\u2029c"},
		{"invalid utf-8", "bad\xffbyte\xc3"},
		{"empty string", ""},
		{"nil list", []any(nil)},
		{"empty list", []any{}},
		{"nil object", map[string]any(nil)},
		{"empty object", map[string]any{}},
		{"sorted keys", map[string]any{"b": 1, "a": 2, "B": 3, "": 4, "é": 5, "a\nb": 6}},
		{"nested", map[string]any{"list": []any{1, "two", 3.5, nil, map[string]any{"z": false, "y": []any{}}}}},
		{"typed slice falls back", []string{"x", "<y>"}},
		{"typed map falls back", map[string]string{"b": "1", "a": "<2>"}},
		{"time falls back", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"struct falls back", struct {
			A int `json:"a"`
		}{1}},
		{"deeper than the fast path", deep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := encodeJSON(tt.v)
			if err != nil {
				t.Fatalf("encodeJSON: %v", err)
			}
			if want := stdJSON(t, tt.v); got != want {
				t.Errorf("encodeJSON = %s\nencoding/json = %s", got, want)
			}
		})
	}
}

func TestEncodeJSONErrors(t *testing.T) {
	cycle := map[string]any{}
	cycle["self"] = cycle
	long := strings.Repeat(".self", maxErrorSteps) + "…"
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"NaN", math.NaN(), "cannot encode NaN as JSON"},
		{"infinity in a list", []any{1, math.Inf(-1)}, "cannot encode -Inf as JSON at [1]"},
		{"nested key", map[string]any{"a": map[string]any{"b c": math.Inf(1)}}, `cannot encode +Inf as JSON at .a["b c"]`},
		{"function", map[string]any{"f": func() {}}, "cannot encode func() as JSON: unsupported type: func() at .f"},
		{"channel in a typed slice", []any{[]chan int{nil}}, "cannot encode []chan int as JSON: unsupported type: chan int at [0]"},
		{"cycle", cycle, "cannot encode map[string]interface {} as JSON: unsupported value: encountered a cycle via map[string]interface {} at " + long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := encodeJSON(tt.v)
			if err == nil || err.Error() != tt.want {
				t.Errorf("encodeJSON error = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// FuzzEncodeJSONString checks string escaping against encoding/json.
func FuzzEncodeJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "<&>", "\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe", "é🎉", `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := map[string]any{s: []any{s, 1.5}}
		got, err := encodeJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		if want := stdJSON(t, v); got != want {
			t.Errorf("encodeJSON = %s\nencoding/json = %s", got, want)
		}
	})
}

// FuzzEncodeJSONFloat checks number formatting against encoding/json.
func FuzzEncodeJSONFloat(f *testing.F) {
	for _, x := range []float64{0, 1, -1, 0.1, 1e-7, 1e21, 1e20, 123456.789, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		got, err := encodeJSON(x)
		if err != nil {
			t.Fatal(err)
		}
		if want := stdJSON(t, x); got != want {
			t.Errorf("encodeJSON(%v) = %s, encoding/json = %s", x, got, want)
		}
	})
}

func BenchmarkEncodingJSON(b *testing.B) {
	m := twentyKeys()
	for b.Loop() {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m); err != nil {
			b.Fatal(err)
		}
	}
}
