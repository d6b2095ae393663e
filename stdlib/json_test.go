package stdlib

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
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
