package lang_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/lang"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestFormat formats in.wf of every testdata/format/*.txtar archive and
// compares the result with out.wf; out.wf must also be its own format.
func TestFormat(t *testing.T) {
	files, err := filepath.Glob("testdata/format/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/format/*.txtar files")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			in := archiveFile(t, a, "in.wf")
			got, diags := lang.FormatSource("in.wf", in)
			if diags.HasErrors() {
				t.Fatalf("in.wf does not parse:\n%v", diags.Err())
			}
			if golden.Update() {
				setArchiveFile(a, "out.wf", got)
				if err := os.WriteFile(file, txtar.Format(a), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			want := archiveFile(t, a, "out.wf")
			if !bytes.Equal(got, want) {
				t.Errorf("Format(in.wf) differs from out.wf:\n--- got\n%s--- want\n%s", got, want)
			}
			checkFormat(t, "out.wf", want)
			again, _ := lang.FormatSource("out.wf", want)
			if !bytes.Equal(again, want) {
				t.Errorf("Format(out.wf) is not out.wf:\n%s", again)
			}
		})
	}
}

// TestFormatRepo checks that formatting is idempotent and keeps the tree
// and the comments of every .wf file in the module that parses cleanly.
func TestFormatRepo(t *testing.T) {
	root := moduleRoot(t)
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".wf") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if _, diags := lang.Parse(path, src); diags.HasErrors() {
			return nil // an intentionally broken file
		}
		n++
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) { checkFormat(t, path, src) })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checked %d .wf files", n)
}

// moduleRoot returns the directory holding go.mod above the test's
// working directory.
func moduleRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// checkFormat checks, for src that parses, that its format parses to the
// same tree with the same comments and is its own format.
func checkFormat(t testing.TB, name string, src []byte) {
	t.Helper()
	f, diags := lang.Parse(name, src)
	if diags.HasErrors() {
		t.Fatalf("does not parse: %v", diags.Err())
	}
	out := lang.Format(f, src)
	if !bytes.HasSuffix(out, []byte("\n")) || bytes.HasSuffix(out, []byte("\n\n")) {
		t.Errorf("output does not end with exactly one newline:\n%q", out)
	}
	g, diags := lang.Parse(name, out)
	if diags.HasErrors() {
		t.Fatalf("formatted text does not parse: %v\n%s", diags.Err(), out)
	}
	if a, b := treeDump(t, f), treeDump(t, g); a != b {
		t.Errorf("formatting changed the tree:\n--- before\n%s\n--- after\n%s\n--- formatted\n%s", a, b, out)
	}
	if a, b := commentTexts(f), commentTexts(g); !slices.Equal(a, b) {
		t.Errorf("formatting changed the comments:\n--- before\n%q\n--- after\n%q\n--- formatted\n%s", a, b, out)
	}
	if again := lang.Format(g, out); !bytes.Equal(again, out) {
		t.Errorf("formatting is not idempotent:\n--- once\n%s--- twice\n%s", out, again)
	}
}

// treeDump renders the tree as JSON without positions and comments, so two
// trees of the same shape render the same.
func treeDump(t testing.TB, f *lang.File) string {
	t.Helper()
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "Comments")
		delete(m, "Name")
	}
	v = dropPositions(v)
	data, err = json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func dropPositions(v any) any {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "Pos")
		delete(v, "EndPos")
		for k, x := range v {
			v[k] = dropPositions(x)
		}
	case []any:
		for i, x := range v {
			v[i] = dropPositions(x)
		}
	}
	return v
}

// commentTexts returns the comments of f in order, a // comment without
// its trailing blanks (the formatter drops them).
func commentTexts(f *lang.File) []string {
	var out []string
	for _, c := range f.Comments {
		text := c.Text
		if strings.HasPrefix(text, "//") {
			text = strings.TrimRight(text, " \t\r")
		}
		out = append(out, text)
	}
	return out
}

func archiveFile(t testing.TB, a *txtar.Archive, name string) []byte {
	t.Helper()
	for _, f := range a.Files {
		if f.Name == name {
			return f.Data
		}
	}
	t.Fatalf("archive has no %s", name)
	return nil
}

func setArchiveFile(a *txtar.Archive, name string, data []byte) {
	for i, f := range a.Files {
		if f.Name == name {
			a.Files[i].Data = data
			return
		}
	}
	a.Files = append(a.Files, txtar.File{Name: name, Data: data})
}

// TestFormatCommentsEverywhere inserts a comment at both ends of every run
// of blanks of the format test inputs (cycling through several kinds of
// comment) and checks each variant that still parses: no comment may be
// lost, duplicated or reordered, and the output must be stable.
func TestFormatCommentsEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	files, err := filepath.Glob("testdata/format/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	inserts := []string{"/* c */", " // c\n", "/* a\n b */", "\n// c\n", " /* c */ "}
	for _, file := range files {
		a, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		src := archiveFile(t, a, "in.wf")
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			n := 0
			for i := 0; i <= len(src); i++ {
				blankBefore := i == 0 || src[i-1] == ' ' || src[i-1] == '\n'
				blankAfter := i == len(src) || src[i] == ' ' || src[i] == '\n'
				if blankBefore == blankAfter && i > 0 && i < len(src) {
					continue // not at either end of a run of blanks
				}
				n++
				ins := inserts[n%len(inserts)]
				variant := slices.Concat(src[:i], []byte(ins), src[i:])
				if _, diags := lang.Parse("v.wf", variant); diags.HasErrors() {
					continue
				}
				checkFormat(t, "v.wf", variant)
				if t.Failed() {
					t.Fatalf("after inserting %q at offset %d:\n%s", ins, i, variant)
				}
			}
		})
	}
}
