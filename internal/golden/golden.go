// Package golden holds the -update flag of the tests that compare output
// with files under testdata: `go test ./... -update` rewrites those files
// with what the code produces now, and a test that imports this package
// declares the flag once, whatever other tests of its package do.
package golden

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected files under testdata with the output of this run")

// Update reports whether the tests run with -update: they write what they
// got to their expected files instead of comparing.
func Update() bool { return *update }

// Check compares got with the file at path, and fails t when they differ
// or the file cannot be read; with -update it writes got to the file
// instead.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if Update() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n got %s\nwant %s", path, got, want)
	}
}
