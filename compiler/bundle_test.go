package compiler_test

import (
	"slices"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/stdlib"
)

func TestBundle(t *testing.T) {
	a := compiler.Source{Name: "a.wf", Text: []byte("wf 1\nworkflow a { flow { call b } }\n")}
	b := compiler.Source{Name: "b.wf", Text: []byte("wf 1\nworkflow b { flow { output 1 } }\n")}
	data, hash := compiler.Bundle([]compiler.Source{b, a})
	if _, again := compiler.Bundle([]compiler.Source{a, b}); again != hash {
		t.Errorf("the hash depends on the order of the sources")
	}
	srcs, err := compiler.Unbundle(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 2 || srcs[0].Name != "a.wf" || !slices.Equal(srcs[1].Text, b.Text) {
		t.Errorf("unbundled %+v", srcs)
	}
	prog, diags := compiler.Compile(stdlib.Registry(), srcs...)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	if prog.Hash != hash || prog.Workflow("a").Hash != hash {
		t.Errorf("program hash %q, workflow hash %q, want the bundle's %q", prog.Hash, prog.Workflow("a").Hash, hash)
	}
	if _, err := compiler.Unbundle([]byte("not a bundle")); err == nil {
		t.Error("Unbundle accepted something that is no bundle")
	}
	b.Text = append(b.Text, '\n')
	if _, changed := compiler.Bundle([]compiler.Source{a, b}); changed == hash {
		t.Error("a change in any file must change the version")
	}
}
