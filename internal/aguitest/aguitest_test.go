package aguitest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestDecodeGolden reads every golden event of package agui back into its
// type, found from "type", and marshals it to the same bytes again.
func TestDecodeGolden(t *testing.T) {
	files, err := filepath.Glob("../../server/agui/testdata/events/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden events: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.TrimSuffix(data, []byte("\n"))
		e, err := DecodeEvent(data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if prefix := `{"type":"` + e.EventType() + `"`; !bytes.HasPrefix(data, []byte(prefix)) {
			t.Errorf("%s: decoded as %s", f, e.EventType())
		}
		again, err := e.MarshalJSON()
		if err != nil || !bytes.Equal(again, data) {
			t.Errorf("%s: decoded and marshalled again:\n got %s, %v\nwant %s", f, again, err, data)
		}
	}
}

func TestDecodeEventErrors(t *testing.T) {
	for _, in := range []string{`[]`, `{}`, `{"type":"NOPE"}`, `{"type":"TEXT_MESSAGE_CONTENT","delta":5}`, `nope`} {
		if e, err := DecodeEvent([]byte(in)); err == nil {
			t.Errorf("DecodeEvent(%s) = %#v, want an error", in, e)
		}
	}
}
