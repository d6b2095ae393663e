package lang_test

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/aguic/aguic/lang"
	"github.com/rogpeppe/go-internal/txtar"
)

// addSeeds adds every .wf file of the test archives to the corpus.
func addSeeds(f *testing.F) {
	files, err := filepath.Glob("testdata/*/*.txtar")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		a, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, af := range a.Files {
			if filepath.Ext(af.Name) == ".wf" {
				f.Add(af.Data)
			}
		}
	}
}

// FuzzParse checks that Parse never panics nor loops, that it always
// returns a tree (partial on a syntax error), that every diagnostic points
// into the file, at most one a line, and that every node of the tree lies
// inside the file.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		file, diags := lang.Parse("fuzz.wf", src)
		if file == nil {
			t.Fatal("no tree")
		}
		lines := bytes.Count(src, []byte("\n")) + 1
		seen := map[int]bool{}
		for _, d := range diags {
			for _, p := range []int{d.Span.Start.Line, d.Span.End.Line} {
				if p < 1 || p > lines {
					t.Errorf("diagnostic %v: line %d outside 1..%d", d, p, lines)
				}
			}
			if d.Span.Start.Offset < 0 || d.Span.End.Offset > len(src) || d.Span.Start.Offset > d.Span.End.Offset {
				t.Errorf("diagnostic %v: spans %d..%d, outside 0..%d or reversed", d, d.Span.Start.Offset, d.Span.End.Offset, len(src))
			}
			if seen[d.Span.Start.Line] {
				t.Errorf("two diagnostics on line %d: %v", d.Span.Start.Line, diags)
			}
			seen[d.Span.Start.Line] = true
		}
		lang.Inspect(file, func(n any) bool {
			v := reflect.ValueOf(n).Elem()
			pos := v.FieldByName("Pos").Interface().(lang.Position)
			end := v.FieldByName("EndPos").Interface().(lang.Position)
			if pos.Offset < 0 || end.Offset > len(src) || pos.Offset > end.Offset {
				t.Errorf("%T spans %d..%d, outside 0..%d or reversed", n, pos.Offset, end.Offset, len(src))
			}
			return true
		})
	})
}

// FuzzFormat checks that the format of any input that parses parses to a
// tree of the same shape with the same comments, and is its own format.
func FuzzFormat(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		if _, diags := lang.Parse("fuzz.wf", src); diags.HasErrors() {
			return
		}
		checkFormat(t, "fuzz.wf", src)
	})
}
