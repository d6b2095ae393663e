package graph_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/graph"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

// largest compiles the examples of workflows/ and returns the workflow
// with the most nodes.
func largest(b *testing.B) *vm.Workflow {
	b.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "workflows", "*.wf"))
	if err != nil {
		b.Fatal(err)
	}
	var srcs []compiler.Source
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		srcs = append(srcs, compiler.Source{Name: filepath.Base(path), Text: data})
	}
	prog, diags := compiler.Compile(stdlib.Registry(), srcs...)
	if prog == nil {
		b.Fatal(diags)
	}
	var w *vm.Workflow
	for _, c := range prog.Workflows {
		if w == nil || len(c.Nodes) > len(w.Nodes) {
			w = c
		}
	}
	b.Logf("workflow %s: %d nodes", w.ID, len(w.Nodes))
	return w
}

// BenchmarkLayout lays out the largest example workflow, as the server
// does for each description of a workflow.
func BenchmarkLayout(b *testing.B) {
	w := largest(b)
	b.ReportAllocs()
	for b.Loop() {
		graph.LayOut(w)
	}
}

// BenchmarkMermaid draws the same workflow as Mermaid, as the server does
// for each workflow it lists: the baseline for BenchmarkLayout.
func BenchmarkMermaid(b *testing.B) {
	w := largest(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := graph.WriteMermaid(io.Discard, w); err != nil {
			b.Fatal(err)
		}
	}
}
