package stdlib

import (
	"bytes"
	"encoding/json"
	"testing"
)

// BenchmarkEncodingJSON is encoding/json on the map BenchmarkJSON encodes,
// for comparison (internal/jsonenc checks that both write the same bytes).
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
