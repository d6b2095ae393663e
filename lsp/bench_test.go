package lsp

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/stdlib"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

// benchFile returns a workflow of about lines lines that checks cleanly:
// steps with assignments, branches, templates, HTTP calls and model calls.
func benchFile(lines int) string {
	var b strings.Builder
	b.WriteString("wf 1\n\n// A long conversation.\nworkflow big {\n  conversation = true\n\n  flow {\n    start: set $input.chat = $input.chat ?? []\n")
	for i := 0; strings.Count(b.String(), "\n") < lines-4; i++ {
		fmt.Fprintf(&b, `    step "part %[1]d" {
      set $v%[1]d = len($agent.messages) + %[1]d
      if $v%[1]d > 3 {
        say "big <<$v%[1]d>> é😀"
      } else {
        http GET "https://example.com/items/<<$v%[1]d>>" {
          timeout = "5s"
        } -> $r%[1]d
      }
      model {
        prompt   = "<<$agent.latestUserMessage?.content ?? ''>> %[1]d"
        chat_in  = $input.chat
        chat_out = $input.chat
      } -> $reply%[1]d
    }
`, i)
	}
	b.WriteString("    goto start\n  }\n}\n")
	return b.String()
}

// TestBenchFileChecks keeps the benchmark honest: its file checks
// cleanly, so every edit is a full check.
func TestBenchFileChecks(t *testing.T) {
	src := benchFile(1000)
	if n := strings.Count(src, "\n"); n < 1000 {
		t.Fatalf("%d lines", n)
	}
	if _, diags := compiler.Compile(stdlib.Registry(), compiler.Source{Name: "big.wf", Text: []byte(src)}); len(diags) > 0 {
		t.Fatal(diags.Err())
	}
}

// BenchmarkDiagnosticsAfterEdit is the latency of diagnostics as you type
// in a 1,000-line file: from an incremental change sent by a client over a
// pipe to its publishDiagnostics received, through the parse of the
// document and the check of its project.
func BenchmarkDiagnosticsAfterEdit(b *testing.B) {
	src := benchFile(1000)
	uri := pathURI(filepath.Join(b.TempDir(), "big.wf"))
	c := newClient(b)
	c.open(uri, src, 1)
	c.diagnostics(uri, 1)
	// The edit: the "1" of `+ 1` on the line of $v1, typed again.
	t := newText([]byte(src))
	at := strings.Index(src, "+ 1\n") + 2
	p := t.position(at)
	rng := &protocol.Range{Start: p, End: protocol.Position{Line: p.Line, Character: p.Character + 1}}
	version := 1
	for b.Loop() {
		version++
		c.change(uri, version, protocol.TextDocumentContentChangeEvent{Range: rng, Text: "1"})
		if d := c.diagnostics(uri, version); len(d) > 0 {
			b.Fatalf("%v", d)
		}
	}
}

// BenchmarkCheckFile is the baseline: one Compile of the same file, as
// `aguic check` of it does after reading it.
func BenchmarkCheckFile(b *testing.B) {
	src := []byte(benchFile(1000))
	reg := stdlib.Registry()
	for b.Loop() {
		if _, diags := compiler.Compile(reg, compiler.Source{Name: "big.wf", Text: src}); len(diags) > 0 {
			b.Fatal(diags.Err())
		}
	}
}
