package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkTestExamples is `aguic test workflows`: every test of every
// example, compiled, run in parallel and reported, as CI runs them.
func BenchmarkTestExamples(b *testing.B) {
	dir := filepath.Join("..", "..", "workflows")
	for b.Loop() {
		var out strings.Builder
		if code := run([]string{"test", dir}, strings.NewReader(""), &out, io.Discard); code != exitOK {
			b.Fatalf("aguic test exited %d:\n%s", code, out.String())
		}
	}
}

// BenchmarkCheckExamples is `aguic check workflows`, the baseline of
// BenchmarkTestExamples: the compilation alone.
func BenchmarkCheckExamples(b *testing.B) {
	dir := filepath.Join("..", "..", "workflows")
	for b.Loop() {
		if code := run([]string{"check", dir}, strings.NewReader(""), io.Discard, io.Discard); code != exitOK {
			b.Fatalf("aguic check exited %d", code)
		}
	}
}
