package vm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

// drawings are the two formats, by golden file extension.
var drawings = []struct {
	ext  string
	draw func(*vm.Workflow, *bytes.Buffer) error
}{
	{".mmd", func(w *vm.Workflow, b *bytes.Buffer) error { return w.WriteMermaid(b) }},
	{".dot", func(w *vm.Workflow, b *bytes.Buffer) error { return w.WriteDOT(b) }},
}

// TestGraphBuilt draws workflows built by hand, so the drawing of every
// shape (missing targets, escapes, empty flows) is pinned down without the
// compiler.
func TestGraphBuilt(t *testing.T) {
	str := func(src string) *vm.Value { return &vm.Value{Source: src} }
	tests := []struct {
		name string
		wf   *vm.Workflow
	}{
		{"empty", &vm.Workflow{ID: "empty"}},
		{"escape", &vm.Workflow{
			ID:    `odd "id"`,
			Title: `Quotes "and" \backslashes\`,
			Entry: "greet",
			Nodes: []*vm.Node{
				{ID: "greet", Kind: "say", Label: "greet", Arg: str(`"Hi <<$name>> & #1 ` + "`x`" + `"`),
					Edges: []vm.Edge{{Label: vm.EdgeNext, To: "2"}}},
				{ID: "2", Kind: "say", Arg: str("\"\"\"\n  a very long\n  multi-line text that goes on and on\n  \"\"\""),
					Edges: []vm.Edge{{Label: vm.EdgeNext, To: "2.x"}, {Label: vm.EdgeError, To: "gone"}}},
				{ID: "2.x", Kind: vm.KindIf, Cond: &vm.Value{Source: `$a > 1 && $b < "x\\y"`},
					Edges: []vm.Edge{{Label: vm.EdgeTrue, To: ""}, {Label: vm.EdgeFalse, To: "greet"}}},
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, d := range drawings {
				var b bytes.Buffer
				if err := d.draw(tt.wf, &b); err != nil {
					t.Fatal(err)
				}
				compareGolden(t, filepath.Join("testdata", "graph", tt.name+d.ext), b.Bytes())
			}
		})
	}
}

// TestGraphCompiled compiles each testdata/graph/*.wf file and draws all
// its workflows, a blank line between them.
func TestGraphCompiled(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "graph", "*.wf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .wf files: %v", err)
	}
	reg := stdlib.Registry()
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".wf")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			prog, diags := compiler.Compile(reg, compiler.Source{Name: filepath.Base(path), Text: src})
			if len(diags) > 0 || prog == nil {
				t.Fatalf("%s does not compile cleanly: %v", path, diags)
			}
			for _, d := range drawings {
				var b bytes.Buffer
				for i, w := range prog.Workflows {
					if i > 0 {
						b.WriteByte('\n')
					}
					if err := d.draw(w, &b); err != nil {
						t.Fatal(err)
					}
				}
				compareGolden(t, strings.TrimSuffix(path, ".wf")+d.ext, b.Bytes())
			}
		})
	}
}

// compareGolden compares got with the file at path, or rewrites it with -update.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if golden.Update() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestNodeConcurrently: the runs of a program share its workflows, and
// look their nodes up at once (go test -race).
func TestNodeConcurrently(t *testing.T) {
	w := &vm.Workflow{Nodes: []*vm.Node{{ID: "a"}, {ID: "b"}}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if w.Node("b") == nil || w.Node("c") != nil {
				t.Error("Node: wrong lookup")
			}
		})
	}
	wg.Wait()
}
