package compiler_test

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/mcplock"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestCheck compiles the .wf files of each testdata/check/*.txtar archive
// together, with the mcp.lock.json files it holds, and compares the diagnostics with its `want` file and, when the
// program compiles, the lowered graph with its `graph` file.
func TestCheck(t *testing.T) {
	files, err := filepath.Glob("testdata/check/*.txtar")
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
				if strings.HasSuffix(f.Name, ".wf") || filepath.Base(f.Name) == mcplock.FileName {
					srcs = append(srcs, compiler.Source{Name: f.Name, Text: f.Data})
				}
			}
			prog, diags := compiler.Compile(reg, srcs...)
			sameCheck(t, reg, srcs, diags)
			got := map[string]string{"want": renderDiags(diags), "graph": ""}
			if prog != nil {
				got["graph"] = dumpProgram(prog)
			}
			if diags.HasErrors() != (prog == nil) {
				t.Errorf("program is nil: %v, but errors: %v", prog == nil, diags.HasErrors())
			}
			compare(t, path, ar, got)
		})
	}
}

// sameCheck fails t unless Check reports for srcs what Compile did,
// diags.
func sameCheck(t *testing.T, reg *vm.Registry, srcs []compiler.Source, diags diag.List) {
	t.Helper()
	if got, want := renderDiags(compiler.Check(reg, srcs...)), renderDiags(diags); got != want {
		t.Errorf("Check reports\n%s\nCompile reports\n%s", got, want)
	}
}

// renderDiags renders l one line a diagnostic, each followed by a line
// for each of its related spans.
func renderDiags(l diag.List) string {
	var b strings.Builder
	for _, d := range l {
		for _, line := range d.Lines() {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// compare checks the sections of ar named in got, or rewrites them with -update.
func compare(t *testing.T, path string, ar *txtar.Archive, got map[string]string) {
	t.Helper()
	names := make([]string, 0, len(got))
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	changed := false
	for _, name := range names {
		idx := -1
		for i, f := range ar.Files {
			if f.Name == name {
				idx = i
			}
		}
		want := ""
		if idx >= 0 {
			want = string(ar.Files[idx].Data)
		}
		if got[name] == want {
			continue
		}
		if !golden.Update() {
			t.Errorf("%s: %s differs\n--- got\n%s--- want\n%s", path, name, got[name], want)
			continue
		}
		changed = true
		switch {
		case idx >= 0 && got[name] == "":
			ar.Files = append(ar.Files[:idx], ar.Files[idx+1:]...)
		case idx >= 0:
			ar.Files[idx].Data = []byte(got[name])
		default:
			ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(got[name])})
		}
	}
	if changed {
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// dumpProgram renders a program's graphs as text: one line per node with
// its kind, the source of its main expression and its edges.
func dumpProgram(p *vm.Program) string {
	var b bytes.Buffer
	for _, s := range p.Servers {
		fmt.Fprintf(&b, "mcp %s", s.Name)
		for _, v := range []struct {
			name string
			v    *vm.Value
		}{{"command", s.Command}, {"args", s.Args}, {"env", s.Env}, {"url", s.URL}, {"headers", s.Headers}} {
			if v.v != nil {
				fmt.Fprintf(&b, " %s=%s", v.name, v.v.Source)
			}
		}
		if s.Tools != nil {
			fmt.Fprintf(&b, " tools=%q", s.Tools)
		}
		if s.Timeout != 0 || s.Retry != 0 || s.Backoff != "" {
			fmt.Fprintf(&b, " timeout=%s retry=%d backoff=%q", s.Timeout, s.Retry, s.Backoff)
		}
		fmt.Fprintf(&b, " file=%s locked=%v\n", s.File, s.Locked != nil)
	}
	for _, w := range p.Workflows {
		fmt.Fprintf(&b, "workflow %s conversation=%v entry=%q\n", w.ID, w.Conversation, w.Entry)
		for _, tool := range w.Tools {
			impl := "result"
			switch {
			case tool.Impl != nil && tool.Result != nil:
				impl = tool.Impl.Kind + ", result"
			case tool.Impl != nil:
				impl = tool.Impl.Kind
			}
			fmt.Fprintf(&b, "  tool %s (%s)\n", tool.Name, impl)
			if tool.Impl != nil && tool.Impl.Spec != nil && tool.Impl.Spec.Word != nil && tool.Impl.Spec.Word.Servers {
				params := "nil"
				if tool.Parameters != nil {
					params = tool.Parameters.Source
				}
				fmt.Fprintf(&b, "    description %q parameters %s\n", tool.Description, params)
			}
		}
		for _, n := range w.Nodes {
			fmt.Fprintf(&b, "  %s: %s", n.ID, n.Kind)
			if n.Word != "" {
				fmt.Fprintf(&b, " %s", n.Word)
			}
			if n.Arg != nil {
				fmt.Fprintf(&b, " %s", n.Arg.Source)
			}
			if n.Cond != nil {
				fmt.Fprintf(&b, " (%s)", n.Cond.Source)
			}
			if n.Suspends {
				b.WriteString(" suspends")
			}
			for _, key := range slices.Sorted(maps.Keys(n.Keys)) {
				if v := n.Keys[key]; v != nil && v.Servers != nil {
					fmt.Fprintf(&b, " %s: tools=%q servers=%q", key, v.Tools, v.Servers)
				}
			}
			for _, e := range n.Edges {
				to := e.To
				if to == "" {
					to = "END"
				}
				fmt.Fprintf(&b, " [%s→%s]", e.Label, to)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestStringValues checks how string literals decode: a heredoc's layout
// is stripped before its escapes are decoded, CRLF reads like LF, and a
// byte order mark is ignored.
func TestStringValues(t *testing.T) {
	tests := []struct{ src, want string }{
		{"\"\"\"\n      \\t a\n      \\t b\n      \"\"\"", "\t a\n\t b"},
		{"\"\"\"\n      first\\nsecond\n      third\n      \"\"\"", "first\nsecond\nthird"},
		{"\"\"\"\r\n      a\r\n      b\r\n      \"\"\"", "a\nb"},
		{"\"multi \\\r\ncontinued\"", "multi continued"},
		{`"a \<<b>> \"q\""`, `a <<b>> "q"`},
	}
	for _, tt := range tests {
		src := "\uFEFFwf 1\nworkflow w {\n  flow {\n    set $s = " + tt.src + "\n  }\n}\n"
		prog, diags := compiler.Compile(stdlib.Registry(), compiler.Source{Name: "s.wf", Text: []byte(src)})
		if diags.HasErrors() {
			t.Errorf("%q: %v", tt.src, diags.Err())
			continue
		}
		parts := prog.Workflow("w").Node("1").Assigns[0].Value.Template.Parts
		if len(parts) != 1 || parts[0].Text != tt.want {
			t.Errorf("%q decodes to %+v, want %q", tt.src, parts, tt.want)
		}
	}
}
