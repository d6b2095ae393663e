package mcplock

import (
	"bytes"
	"os"
	"testing"
)

// FuzzParse: Parse never panics, and a lock it accepts marshals to bytes
// that parse to the same canonical form.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("../workflows/" + FileName); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"version": 1, "servers": {"s": {"from": {"url": "\"http://x\""}, "serverInfo": {"name": "s"}, "tools": [{"name": "b", "inputSchema": {"type": "object"}}, {"name": "a", "inputSchema": {}}]}}}`))
	f.Add([]byte(`{"version": 1, "servers": {"s": null}}`))
	f.Add([]byte(`{"version": 2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lock, err := Parse(data)
		if err != nil {
			return
		}
		out, err := lock.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a parsed lock: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse of a marshalled lock: %v\n%s", err, out)
		}
		out2, err := again.Marshal()
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("the canonical form changed:\n%s\n%s", out, out2)
		}
	})
}
