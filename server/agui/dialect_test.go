package agui

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aguic/aguic/internal/golden"
)

func TestDialectOf(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    Dialect
	}{
		{"", V0},
		{"  ", V0},
		{"0", V0},
		{"0.0.57", V0},
		{"0.9", V0},
		{"1.0", V1},
		{" 1.0 ", V1},
		{"1", V1},
		{"1.1", V1},
		{"2.0", V1},
		{"latest", V1},
		{"v0.1", V1},
		{"-1.0", V1},
	} {
		if got := DialectOf(tc.version); got != tc.want {
			t.Errorf("DialectOf(%q) = %d, want %d", tc.version, got, tc.want)
		}
	}
}

// v0Dir holds, for every case of testdata/events, the event as V0 sends
// it; an empty file for an event V0 does not send. The e2e suite checks
// each against the schemas of @ag-ui/core 0.0.57 and 0.0.59.
const v0Dir = "testdata/v0"

// TestV0Golden translates every golden event to V0 and compares it with
// its file in testdata/v0 (go test -update rewrites them).
func TestV0Golden(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			seen[c.name] = true
			var got []byte
			if out, ok := V0.Translate(c.e); ok {
				b, err := out.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				checkWire(t, out, b)
				got = append(b, '\n')
			}
			golden.Check(t, filepath.Join(v0Dir, c.name+".json"), got)
		})
	}
	files, err := filepath.Glob(filepath.Join(v0Dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".json"); !seen[name] {
			if golden.Update() {
				if err := os.Remove(f); err != nil {
					t.Error(err)
				}
				continue
			}
			t.Errorf("%s has no case (go test -update removes it)", f)
		}
	}
}

// TestEncode checks that Encode gives, in each dialect, what the event
// translated and marshalled is, and that V1 sends every event as it is.
func TestEncode(t *testing.T) {
	for _, c := range goldenCases(t) {
		enc, err := Encode(c.e)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, d := range []Dialect{V1, V0} {
			out, send := d.Translate(c.e)
			got, ok := enc.In(d)
			if ok != send {
				t.Errorf("%s, dialect %d: In says %v, Translate %v", c.name, d, ok, send)
				continue
			}
			if !send {
				continue
			}
			want, err := out.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s, dialect %d: In gives\n%s\nwant\n%s", c.name, d, got, want)
			}
		}
		if out, send := V1.Translate(c.e); !send || out == nil {
			t.Errorf("%s: V1 does not send it", c.name)
		}
	}
}

// TestV0LeavesEventsAlone: translating does not change the event it is
// given (a run's frames share their events).
func TestV0LeavesEventsAlone(t *testing.T) {
	for _, c := range goldenCases(t) {
		before, err := c.e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		V0.Translate(c.e)
		after, _ := c.e.MarshalJSON()
		if !bytes.Equal(before, after) {
			t.Errorf("%s: translating changed the event:\n%s\n%s", c.name, before, after)
		}
	}
}
