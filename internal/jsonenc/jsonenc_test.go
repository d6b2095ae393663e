package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// std is what Append must write: encoding/json without HTML escaping and
// without the final newline.
func std(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// check compares Append, after a prefix it must keep, with encoding/json.
func check(t testing.TB, v any) {
	t.Helper()
	got, err := Append([]byte("x"), v)
	if err != nil {
		t.Fatalf("Append(%#v): %v", v, err)
	}
	if want := "x" + std(t, v); string(got) != want {
		t.Errorf("Append(%#v) = %s\nencoding/json  %s", v, got, want)
	}
}

func TestAppendIsEncodingJSON(t *testing.T) {
	deep := any("bottom")
	for range maxFastDepth + 10 {
		deep = []any{deep}
	}
	for _, v := range []any{
		nil, true, false, -42, int64(math.MaxInt64), int32(7), uint8(3),
		0.0, math.Copysign(0, -1), 0.1, 123456789012345678.0, 1e20, 1e21, 1e-6, 1e-7, 5e-324, math.MaxFloat64, float32(0.1),
		"", "<a href='x'>&amp;</a>", "quote\" backslash\\ nl\n cr\r tab\t bs\b ff\f nul\x00 us\x1f del\x7f",
		"héllo, 世界 🎉", "a\u2028b\u2029c", "bad\xffbyte\xc3",
		[]any(nil), []any{}, map[string]any(nil), map[string]any{},
		map[string]any{"b": 1, "a": 2, "B": 3, "": 4, "é": 5, "a\nb": 6},
		map[string]any{"list": []any{1, "two", 3.5, nil, map[string]any{"z": false, "y": []any{}}}},
		json.Number("12.50"), json.RawMessage(` { "a" : [1, 2] } `),
		[]string{"x", "<y>"}, map[string]string{"b": "1", "a": "<2>"},
		time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		struct {
			A int `json:"a"`
		}{1},
		deep,
	} {
		check(t, v)
	}
}

func TestAppendErrors(t *testing.T) {
	cycle := map[string]any{}
	cycle["self"] = cycle
	tests := []struct {
		v    any
		want string
	}{
		{math.NaN(), "cannot encode NaN as JSON"},
		{[]any{1, math.Inf(-1)}, "cannot encode -Inf as JSON at [1]"},
		{map[string]any{"a": map[string]any{"b c": math.Inf(1)}}, `cannot encode +Inf as JSON at .a["b c"]`},
		{map[string]any{"f": func() {}}, "cannot encode func() as JSON: unsupported type: func() at .f"},
		{[]any{[]chan int{nil}}, "cannot encode []chan int as JSON: unsupported type: chan int at [0]"},
		{cycle, "cannot encode map[string]interface {} as JSON: unsupported value: encountered a cycle via map[string]interface {} at " +
			strings.Repeat(".self", maxErrorSteps) + "…"},
	}
	for _, tt := range tests {
		got, err := Append([]byte("kept"), tt.v)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Append error = %v\nwant %s", err, tt.want)
		}
		if string(got) != "kept" {
			t.Errorf("after an error Append returned %q, want its dst", got)
		}
	}
}

// FuzzAppend checks string escaping and number formatting against
// encoding/json.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain", "<&>", "\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe", "é🎉", `"\`} {
		f.Add(s, 1.5)
	}
	for _, x := range []float64{0, -1, 0.1, 1e-7, 1e21, 1e20, 123456.789, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		f.Add("k", x)
	}
	f.Fuzz(func(t *testing.T, s string, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			x = 0
		}
		check(t, map[string]any{s: []any{s, x}})
	})
}

func BenchmarkAppendString(b *testing.B) {
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = AppendString(buf[:0], "Hello, this is a token or two.")
	}
}
