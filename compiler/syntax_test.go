package compiler_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/stdlib"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestSyntaxErrors compiles the .wf files of each testdata/syntax/*.txtar
// archive, files with syntax errors among them, and compares every
// diagnostic with its `want` file: the syntax errors of every file, told
// with the node kinds of the registry in hand, and the errors of the parts
// that parsed, none that only follows from text that did not.
func TestSyntaxErrors(t *testing.T) {
	files, err := filepath.Glob("testdata/syntax/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test archives: %v", err)
	}
	reg := stdlib.Registry()
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var srcs []compiler.Source
			for _, f := range ar.Files {
				if strings.HasSuffix(f.Name, ".wf") {
					srcs = append(srcs, compiler.Source{Name: f.Name, Text: f.Data})
				}
			}
			_, diags := compiler.Compile(reg, srcs...)
			sameCheck(t, reg, srcs, diags)
			if !diags.HasErrors() {
				t.Errorf("no error")
			}
			compare(t, path, ar, map[string]string{"want": renderDiags(diags)})
		})
	}
}
