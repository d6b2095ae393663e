// Package golden holds the -update flag of the tests that compare output
// with files under testdata: `go test ./... -update` rewrites those files
// with what the code produces now, and a test that imports this package
// declares the flag once, whatever other tests of its package do.
package golden

import "flag"

var update = flag.Bool("update", false, "rewrite the expected files under testdata with the output of this run")

// Update reports whether the tests run with -update: they write what they
// got to their expected files instead of comparing.
func Update() bool { return *update }
