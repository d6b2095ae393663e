package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aguic/aguic/vm"
)

// TestRunExitStatus checks the exit statuses of aguic run, which the
// scripts of testdata/script only tell apart as zero and non-zero.
func TestRunExitStatus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ok := write("ok.wf", "wf 1\nworkflow ok { flow { say \"hi\" } }\n")
	fails := write("fails.wf", "wf 1\nworkflow fails { flow { fail \"no\" } }\n")
	broken := write("broken.wf", "wf 1\nworkflow broken { flow { sya \"hi\" } }\n")
	two := write("two.wf", "wf 1\nworkflow a { flow { say \"a\" } }\nworkflow b { flow { say \"b\" } }\n")
	waits := write("waits.wf", "wf 1\nworkflow waits {\n  conversation = true\n  flow {\n    ask: frontend_tool \"pick\" {\n      on result { say \"got it\" }\n      on other { say \"other\" }\n    }\n  }\n}\n")
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  int
	}{
		{"clean session", []string{"run", ok}, "a\nb\n", exitOK},
		{"no input", []string{"run", ok}, "", exitOK},
		{"a failed run", []string{"run", fails}, "a\n", exitFound},
		{"errors in the sources", []string{"run", broken}, "a\n", exitFound},
		{"several workflows", []string{"run", two}, "a\n", exitUsage},
		{"unknown workflow", []string{"run", "--workflow", "c", two}, "a\n", exitUsage},
		{"bad state", []string{"run", "--state", "{", ok}, "a\n", exitUsage},
		{"missing script", []string{"run", "--model-script", filepath.Join(dir, "none.script"), ok}, "a\n", exitUsage},
		{"missing file", []string{"run", filepath.Join(dir, "none.wf")}, "a\n", exitUsage},
		{"input ends while a tool call waits", []string{"run", waits}, "a\n", exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got := run(tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if got != tt.want {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tt.want, stdout.String(), stderr.String())
			}
		})
	}
}

// TestPrinter checks how interleaved streams are printed: a message whose
// line another event interrupts starts a new line with its prefix again.
func TestPrinter(t *testing.T) {
	var out, errw bytes.Buffer
	s := &session{}
	s.hist.Live = true
	p := &printer{w: &out, errw: &errw, hist: &s.hist, roles: map[string]string{}}
	for _, e := range []vm.Event{
		{Type: vm.TextStart, MessageID: "a"},
		{Type: vm.TextContent, MessageID: "a", Delta: "one"},
		{Type: vm.TextStart, MessageID: "u", Role: "user"},
		{Type: vm.TextContent, MessageID: "u", Delta: "two"},
		{Type: vm.TextContent, MessageID: "a", Delta: " three"},
		{Type: vm.TextEnd, MessageID: "a"},
		{Type: vm.TextEnd, MessageID: "u"},
		{Type: vm.TextStart, MessageID: "s", Silent: true},
		{Type: vm.TextContent, MessageID: "s", Delta: "silent", Silent: true},
		{Type: vm.TextEnd, MessageID: "s", Silent: true},
		{Type: vm.ToolCallStart, ToolCallID: "c", ToolCallName: "f"},
		{Type: vm.ToolCallArgs, ToolCallID: "c", Delta: `{"x":`},
		{Type: vm.ToolCallArgs, ToolCallID: "c", Delta: `1}`},
		{Type: vm.ToolCallEnd, ToolCallID: "c"},
		{Type: vm.ToolCallResult, MessageID: "tool:c", ToolCallID: "c", Content: "ok"},
		{Type: vm.StateDelta, Patch: []any{map[string]any{"op": "replace", "path": "/missing/x", "value": 1}}},
		{Type: vm.SubagentStarted, Name: "child"},
		{Type: vm.SubagentError, Name: "child", Content: "it broke", Code: "fail"},
		{Type: vm.Custom, Name: "note", Value: "<b>"},
	} {
		if err := p.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	want := "assistant: one\n" +
		"user: two\n" +
		"assistant:  three\n" +
		"→ f({\"x\":1})\n" +
		"← ok\n" +
		"[call child]\n" +
		"[call child failed: it broke]\n" +
		"custom note: \"<b>\"\n"
	if out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	if !strings.HasPrefix(errw.String(), "warning: state delta: ") {
		t.Errorf("stderr %q, want a warning about the state delta", errw.String())
	}
}
