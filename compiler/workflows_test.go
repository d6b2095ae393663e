package compiler_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

// TestExampleWorkflows checks the example workflows together, as
// `aguic check workflows` does, and that between them they use every node
// kind of the standard library.
func TestExampleWorkflows(t *testing.T) {
	paths, err := filepath.Glob("../workflows/*.wf")
	if err != nil || len(paths) < 3 {
		t.Fatalf("want at least three example workflows, found %d (%v)", len(paths), err)
	}
	var srcs []compiler.Source
	fs := diag.FileSet{}
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, compiler.Source{Name: p, Text: text})
		fs.Add(p, text)
	}
	reg := stdlib.Registry()
	prog, diags := compiler.Compile(reg, srcs...)
	if len(diags) > 0 {
		var b diagBuffer
		diags.WriteText(&b, fs)
		t.Fatalf("example workflows have diagnostics:\n%s", b)
	}
	used := map[string]bool{}
	for _, w := range prog.Workflows {
		for _, n := range w.Nodes {
			used[n.Kind] = true
		}
		for _, tool := range w.Tools {
			if tool.Impl != nil {
				used[tool.Impl.Kind] = true
			}
		}
	}
	for _, k := range reg.Kinds() {
		if !used[k.Name] {
			t.Errorf("no example workflow uses node kind %q", k.Name)
		}
	}
	for _, k := range []string{vm.KindSet, vm.KindIf, vm.KindSwitch, vm.KindFor, vm.KindWhile, vm.KindStep, vm.KindParallel, vm.KindTry, vm.KindEnd, vm.KindFail} {
		if !used[k] {
			t.Errorf("no example workflow uses statement %q", k)
		}
	}
}

type diagBuffer []byte

func (b *diagBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }
func (b diagBuffer) String() string               { return string(b) }
