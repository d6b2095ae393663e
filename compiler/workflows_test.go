package compiler_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/mcplock"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
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
	paths = append(paths, filepath.Join("..", "workflows", mcplock.FileName))
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

// TestExampleHeaders checks that every example workflow file starts with a
// comment that says what it shows and how to try it: an `aguic run` command
// line that names the file, and the URL of one of its workflows under
// `aguic serve`. The scripts such commands name must exist and parse, and
// every workflow needs a title and a description for the listings.
func TestExampleHeaders(t *testing.T) {
	paths, err := filepath.Glob("../workflows/*.wf")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no example workflows (%v)", err)
	}
	var srcs []compiler.Source
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, compiler.Source{Name: p, Text: text})
	}
	lock, err := os.ReadFile(filepath.Join("..", "workflows", mcplock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	prog, diags := compiler.Compile(stdlib.Registry(), append(srcs, compiler.Source{Name: filepath.Join("..", "workflows", mcplock.FileName), Text: lock})...)
	if len(diags) > 0 {
		t.Fatalf("example workflows have diagnostics: %v", diags)
	}
	ids := map[string][]string{} // file → the ids of its workflows
	for _, w := range prog.Workflows {
		ids[w.Span.File] = append(ids[w.Span.File], w.ID)
		if w.Title == "" || w.Description == "" {
			t.Errorf("%s: workflow %s needs a title and a description", w.Span, w.ID)
		}
	}
	for _, src := range srcs {
		name := filepath.ToSlash(strings.TrimPrefix(src.Name, "../"))
		header := leadingComment(string(src.Text))
		if header == "" {
			t.Errorf("%s: start the file, after `wf 1`, with a comment that says what it shows and how to try it", name)
			continue
		}
		if !strings.Contains(header, "Try it") {
			t.Errorf("%s: the opening comment has no \"Try it\" part", name)
		}
		if !strings.Contains(header, "go run ./cmd/aguic run ") || !strings.Contains(header, " "+name) {
			t.Errorf("%s: the opening comment needs a `go run ./cmd/aguic run … %s` command line", name, name)
		}
		served := false
		for _, m := range servedRE.FindAllStringSubmatch(header, -1) {
			if !slices.Contains(ids[src.Name], m[1]) {
				t.Errorf("%s: the opening comment names /agui/workflows/%s, which is not a workflow of the file (%v)", name, m[1], ids[src.Name])
			}
			served = true
		}
		if !served {
			t.Errorf("%s: the opening comment needs the URL of the workflow under `aguic serve`, /agui/workflows/<id>", name)
		}
		for _, m := range scriptRE.FindAllStringSubmatch(header, -1) {
			if _, err := llm.LoadScript(filepath.Join("..", m[1])); err != nil {
				t.Errorf("%s: the opening comment names the script %s: %v", name, m[1], err)
			}
		}
	}
}

var (
	servedRE = regexp.MustCompile(`/agui/workflows/([A-Za-z_][A-Za-z0-9_]*)`)
	scriptRE = regexp.MustCompile(`--model-script (\S+)`)
)

// leadingComment returns the // lines that follow the `wf 1` line of a
// file, blank lines before them skipped, or "".
func leadingComment(text string) string {
	lines := strings.Split(text, "\n")
	var b strings.Builder
	for _, l := range lines[1:] {
		l = strings.TrimSpace(l)
		if l == "" && b.Len() == 0 {
			continue
		}
		if !strings.HasPrefix(l, "//") {
			break
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

type diagBuffer []byte

func (b *diagBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }
func (b diagBuffer) String() string               { return string(b) }
