package lang_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/lang"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestParseErrors parses in.wf of every testdata/parse/*.txtar archive and
// compares its diagnostics, one per line followed by a line for each
// related span, with the archive's want file. Every syntax error of the
// file is reported, none that follows from another.
func TestParseErrors(t *testing.T) {
	files, err := filepath.Glob("testdata/parse/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/parse/*.txtar files")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			f, diags := lang.Parse("in.wf", archiveFile(t, a, "in.wf"))
			if f == nil || !diags.HasErrors() {
				t.Errorf("in.wf parsed without errors, or without a tree")
			}
			var got bytes.Buffer
			for _, d := range diags {
				for _, line := range d.Lines() {
					fmt.Fprintln(&got, line)
				}
			}
			if golden.Update() {
				setArchiveFile(a, "want", got.Bytes())
				if err := os.WriteFile(file, txtar.Format(a), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			if want := archiveFile(t, a, "want"); got.String() != string(want) {
				t.Errorf("diagnostics differ:\n--- got\n%s--- want\n%s", got.Bytes(), want)
			}
		})
	}
}

// TestParseDepth checks that nesting deeper than MaxDepth is a diagnostic,
// not a stack overflow, and that nesting up to MaxDepth parses.
func TestParseDepth(t *testing.T) {
	nested := func(depth int) []byte {
		// The workflow and flow braces are two levels, the rest are brackets.
		n := depth - 2
		return fmt.Appendf(nil, "wf 1\nworkflow deep {\n  flow {\n    set $a = %s1%s\n  }\n}\n",
			strings.Repeat("[", n), strings.Repeat("]", n))
	}
	if _, diags := lang.Parse("ok.wf", nested(lang.MaxDepth)); diags.HasErrors() {
		t.Errorf("nesting %d levels: %v", lang.MaxDepth, diags.Err())
	}
	f, diags := lang.Parse("deep.wf", nested(lang.MaxDepth+1))
	if f == nil || len(diags) != 1 {
		t.Fatalf("nesting %d levels: got tree %v and %d diagnostics, want a tree and one error", lang.MaxDepth+1, f != nil, len(diags))
	}
	// The first bracket is in column 14; the one past MaxDepth is reported.
	col := 14 + lang.MaxDepth - 2
	want := fmt.Sprintf("deep.wf:4:%d: error[%s]: nesting deeper than %d levels", col, lang.CodeDepth, lang.MaxDepth)
	if got := diags[0].String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// Far deeper input, as an attacker would send, fails the same way.
	hostile := append([]byte("wf 1\n"), bytes.Repeat([]byte("{"), 100_000)...)
	if _, diags := lang.Parse("hostile.wf", hostile); len(diags) != 1 || diags[0].Code != lang.CodeDepth {
		t.Errorf("hostile nesting: %v", diags)
	}
}

// BenchmarkParse parses a generated file of about 1,000 lines.
func BenchmarkParse(b *testing.B) {
	src := generated(1000)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, diags := lang.Parse("bench.wf", src); diags.HasErrors() {
			b.Fatal(diags.Err())
		}
	}
}

// BenchmarkFormat formats the same generated file.
func BenchmarkFormat(b *testing.B) {
	src := generated(1000)
	f, diags := lang.Parse("bench.wf", src)
	if diags.HasErrors() {
		b.Fatal(diags.Err())
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		lang.Format(f, src)
	}
}

// generated returns a valid file of about lines lines that uses most of the
// language.
func generated(lines int) []byte {
	var b bytes.Buffer
	b.WriteString("wf 1\n\n// Generated for benchmarks.\nworkflow bench {\n  title        = \"Bench\"\n  conversation = true\n\n")
	b.WriteString("  tool lookup {\n    description = \"Look up\"\n    parameters  = {type: \"object\", properties: {id: {type: \"string\"}}}\n    http GET \"<<env('URL')>>/<<$args.id>>\"\n  }\n\n  flow {\n")
	for i := 0; bytes.Count(b.Bytes(), []byte("\n")) < lines-3; i++ {
		fmt.Fprintf(&b, `    // Step %[1]d.
    step%[1]d: model {
      model  = "openai/gpt-4o-mini"
      prompt = """
        Answer question %[1]d about <<$agent.latestUserMessage.content>>.
      """
      tools  = [lookup]
    } -> $answers.a%[1]d
    if len($answers.a%[1]d.text) > %[1]d && $x != nil {
      say "long: <<$answers.a%[1]d.text>>"
    } else {
      set {
        $count = ($count ?? 0) + 1
        $seen  = [1, 2, {k: "v"}]
      }
    }
    for item in $list {
      emit "item" { value = item }
    }
`, i)
	}
	b.WriteString("    goto step0\n  }\n}\n")
	return b.Bytes()
}
