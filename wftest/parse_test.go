package wftest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/aguic/aguic/internal/golden"
)

// TestParse parses the test file of each archive of testdata/parse and
// compares what it finds, its problems or a summary of its tests, with the
// archive's "want" file (go test -update rewrites it).
func TestParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "parse", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no archives: %v", err)
	}
	for _, name := range files {
		t.Run(strings.TrimSuffix(filepath.Base(name), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(name)
			if err != nil {
				t.Fatal(err)
			}
			var src []byte
			for _, f := range ar.Files {
				if f.Name == "t.wftest" {
					src = f.Data
				}
			}
			got := summary(Parse("t.wftest", src))
			wantAt := -1
			for i, f := range ar.Files {
				if f.Name == "want" {
					wantAt = i
				}
			}
			if golden.Update() {
				if wantAt < 0 {
					ar.Files = append(ar.Files, txtar.File{Name: "want"})
					wantAt = len(ar.Files) - 1
				}
				ar.Files[wantAt].Data = []byte(got)
				if err := os.WriteFile(name, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if wantAt < 0 {
				t.Fatalf("%s has no want file (go test -update writes it)", name)
			}
			if want := string(ar.Files[wantAt].Data); got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// summary describes a parsed file: its problems, or each test with its
// setup and steps.
func summary(f *File, err error) string {
	var b bytes.Buffer
	if err != nil {
		fmt.Fprintln(&b, err)
		return b.String()
	}
	setup := func(prefix string, s Setup) {
		if s.Workflow != "" {
			fmt.Fprintf(&b, "%sworkflow %s\n", prefix, s.Workflow)
		}
		if s.Models != "" {
			fmt.Fprintf(&b, "%smodels %s\n", prefix, s.Models)
		}
		if len(s.Replies) > 0 {
			fmt.Fprintf(&b, "%sreply lines %v\n", prefix, s.Replies)
		}
		if s.HasState {
			fmt.Fprintf(&b, "%sstate %s\n", prefix, jsonText(s.State))
		}
		for _, h := range s.HTTP {
			fmt.Fprintf(&b, "%shttp %s %s => %d %q err=%q\n", prefix, h.Method, h.Pattern, h.Status, h.Body, h.Err)
		}
		for _, m := range s.MCP {
			fmt.Fprintf(&b, "%smcp %s %s => %s err=%v\n", prefix, m.Server, m.Tool, jsonText(m.Result), m.IsErr)
		}
		if len(s.Env) > 0 {
			fmt.Fprintf(&b, "%senv %s\n", prefix, jsonText(s.Env))
		}
	}
	setup("", f.Setup)
	for _, t := range f.Tests {
		fmt.Fprintf(&b, "test %q (line %d)\n", t.Name, t.Line)
		setup("  ", t.Setup)
		for _, s := range t.Steps {
			switch s.Kind {
			case StepUser:
				fmt.Fprintf(&b, "  %d: user %q\n", s.Line, s.Text)
			case StepToolResult:
				fmt.Fprintf(&b, "  %d: tool result %s %q\n", s.Line, s.Tool, s.Text)
			case StepAnswer:
				fmt.Fprintf(&b, "  %d: answer cancel=%v %s\n", s.Line, s.Cancel, jsonText(s.Payload))
			case StepExpect:
				e := s.Expect
				fmt.Fprintf(&b, "  %d: expect no=%v %s %s [%d:%d]", s.Line, e.No, e.Subject, e.Target, e.Match.Start, e.Match.End)
				switch e.Match.Kind {
				case MatchNone:
					b.WriteString(" none")
				case MatchEqual:
					fmt.Fprintf(&b, " equal %s exact=%v", jsonText(e.Match.Value), e.Match.Exact)
				case MatchSubset:
					fmt.Fprintf(&b, " subset %s", jsonText(e.Match.Value))
				case MatchContains:
					fmt.Fprintf(&b, " contains %q", e.Match.Text)
				case MatchRegexp:
					fmt.Fprintf(&b, " regexp %s", e.Match.Re)
				}
				if o := e.Outcome; o != nil {
					fmt.Fprintf(&b, " outcome %q names=%v code=%q", o.Status, o.Names, o.Code)
				}
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// FuzzParse checks that Parse never panics, and that what it accepts has
// expectations whose places are inside their lines.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "parse", "*.txtar"))
	for _, name := range seeds {
		ar, err := txtar.ParseFile(name)
		if err != nil {
			continue
		}
		for _, file := range ar.Files {
			if file.Name == "t.wftest" {
				f.Add(file.Data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("f.wftest", data)
		if err != nil {
			return
		}
		for _, test := range file.Tests {
			for _, s := range test.Steps {
				if s.Kind != StepExpect {
					continue
				}
				line := file.Lines[s.Line-1]
				if m := s.Expect.Match; m.Start < 0 || m.End > len(line) || m.Start > m.End {
					t.Fatalf("line %d %q: matcher at [%d:%d]", s.Line, line, m.Start, m.End)
				}
			}
		}
	})
}
