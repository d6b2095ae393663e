package compiler_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/graph"
	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/mcplock"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

// The documentation tests keep docs/*.md true to the implementation:
//
//   - every ```wf block is a whole .wf file that compiles as example.wf
//     without a diagnostic, unless a ```text block follows it, which then
//     holds exactly the diagnostics it produces, one per line, each
//     followed by a `note:` line for each of its related spans; a ```dot
//     block after a clean ```wf block holds what `aguic graph --format dot`
//     draws of it (-update rewrites both kinds of blocks); a
//     ```json mcp.lock.json block right before a ```wf block is the lock
//     file of its MCP servers, compiled beside it;
//   - every ```wf-fragment block holds statements that compile without a
//     diagnostic once wrapped into the flow of a conversation workflow
//     (fragmentHead and fragmentTail);
//   - docs/diagnostics.md has a section, with an example, for every
//     diagnostic code the compiler and the parser declare;
//   - the node kind and builtin references in docs/language.md are what
//     renderKinds and renderBuiltins make of stdlib.Registry(), and every
//     kind's example compiles. `go test ./compiler -run TestDocs -update`
//     rewrites those two sections.

const (
	docsDir      = "../docs"
	languageDoc  = "../docs/language.md"
	diagsDoc     = "../docs/diagnostics.md"
	kindsBegin   = "<!-- kinds:begin -->"
	kindsEnd     = "<!-- kinds:end -->"
	builtinBegin = "<!-- builtins:begin -->"
	builtinEnd   = "<!-- builtins:end -->"
)

// fragmentHead and fragmentTail wrap a ```wf-fragment block into a file.
const (
	fragmentHead = "wf 1\nworkflow example {\n  conversation = true\n  flow {\n"
	fragmentTail = "  }\n}\n"
)

// fence is one fenced code block of a Markdown file.
type fence struct {
	info  string // the word after the opening ```: "wf", "text", ""…
	line  int    // line of the opening fence, from 1
	close int    // line of the closing fence
	body  string // the lines between the fences, each ending in a newline
}

// readFences returns the fenced blocks of a Markdown file, the text of its
// lines, and fails the test on a fence that is never closed.
func readFences(t *testing.T, path string) ([]fence, []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []fence
	var open *fence
	var body strings.Builder
	for i, l := range lines {
		switch {
		case open == nil && strings.HasPrefix(l, "```"):
			open = &fence{info: strings.TrimSpace(l[3:]), line: i + 1}
			body.Reset()
		case open != nil && strings.TrimRight(l, " \t") == "```":
			open.close = i + 1
			open.body = body.String()
			out = append(out, *open)
			open = nil
		case open != nil:
			body.WriteString(l)
			body.WriteByte('\n')
		}
	}
	if open != nil {
		t.Fatalf("%s:%d: code block is never closed", docName(path), open.line)
	}
	return out, lines
}

// docName is the path of a doc as a reader of the repository knows it.
func docName(path string) string {
	return filepath.ToSlash(strings.TrimPrefix(path, "../"))
}

// region returns the lines (from 1) of the begin and end markers of a
// generated section, or 0, 0 when the file has none.
func region(t *testing.T, path string, lines []string, begin, end string) (from, to int) {
	t.Helper()
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case begin:
			if from != 0 {
				t.Fatalf("%s:%d: second %s", docName(path), i+1, begin)
			}
			from = i + 1
		case end:
			if to != 0 {
				t.Fatalf("%s:%d: second %s", docName(path), i+1, end)
			}
			to = i + 1
		}
	}
	if (from == 0) != (to == 0) || to < from {
		t.Fatalf("%s: %s and %s must each appear once, in that order", docName(path), begin, end)
	}
	return from, to
}

// following returns the block that immediately follows fs[i] (nothing but
// blank lines between them), or nil: a ```text block after a ```wf block
// holds its diagnostics, a ```dot block its graphs.
func following(fs []fence, i int, lines []string) *fence {
	if i+1 >= len(fs) {
		return nil
	}
	for l := fs[i].close + 1; l < fs[i+1].line; l++ {
		if strings.TrimSpace(lines[l-1]) != "" {
			return nil
		}
	}
	return &fs[i+1]
}

// compileDoc compiles one example as example.wf, beside the lock file of
// its MCP servers when lock is not "", and returns its diagnostics, one
// per line (see diagLines).
func compileDoc(reg *vm.Registry, src, lock string) []string {
	_, diags := compiler.Compile(reg, docSources(src, lock)...)
	return diagLines(diags)
}

// docSources are the sources of an example: example.wf, and its lock
// file when lock is not "".
func docSources(src, lock string) []compiler.Source {
	srcs := []compiler.Source{{Name: "example.wf", Text: []byte(src)}}
	if lock != "" {
		srcs = append(srcs, compiler.Source{Name: mcplock.FileName, Text: []byte(lock)})
	}
	return srcs
}

// lockInfo is the info string of a block that holds the lock file of the
// ```wf block right after it.
const lockInfo = "json " + mcplock.FileName

// lockBefore returns the lock file the block before fs[i] holds for it,
// or "".
func lockBefore(fs []fence, i int, lines []string) string {
	if i == 0 || fs[i-1].info != lockInfo || following(fs, i-1, lines) == nil {
		return ""
	}
	return fs[i-1].body
}

// diagLines renders l one line a diagnostic, each followed by a line for
// each of its related spans.
func diagLines(l diag.List) []string {
	var out []string
	for _, d := range l {
		out = append(out, d.Lines()...)
	}
	return out
}

// wrapFragment makes a whole file of a fragment's statements.
func wrapFragment(body string) string {
	var b strings.Builder
	b.WriteString(fragmentHead)
	for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			b.WriteString("    ")
			b.WriteString(l)
		}
		b.WriteByte('\n')
	}
	b.WriteString(fragmentTail)
	return b.String()
}

// diagLineRE matches the line number of a diagnostic of example.wf.
var diagLineRE = regexp.MustCompile(`^example\.wf:(\d+):`)

// explain indents diagnostics for a test failure and maps each one's line
// back to the Markdown file; head is how many lines the compiled file has
// before the block's first line (0, or the wrapper's for a fragment).
func explain(f fence, diags []string, head int) string {
	var b strings.Builder
	for _, l := range diags {
		if m := diagLineRE.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			fmt.Fprintf(&b, "\t%s (line %d of the Markdown file)\n", l, f.line+n-head)
			continue
		}
		fmt.Fprintf(&b, "\t%s\n", l)
	}
	return b.String()
}

// TestDocsExamples compiles every example of docs/*.md and README.md.
func TestDocsExamples(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	paths = append(paths, "../README.md")
	reg := stdlib.Registry()
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			fs, lines := readFences(t, path)
			kFrom, kTo := region(t, path, lines, kindsBegin, kindsEnd)
			name := docName(path)
			checked := 0
			var edits []docEdit
			// check compares a block's actual output with the block after
			// it, or records the rewrite of that block with -update.
			check := func(f fence, next *fence, what string, got []string) {
				w := strings.TrimRight(next.body, "\n")
				if strings.Join(got, "\n") == w {
					return
				}
				if golden.Update() {
					edits = append(edits, docEdit{from: next.line + 1, to: next.close - 1, lines: got})
					return
				}
				t.Errorf("%s:%d: wf block: %s differ from the %s block at line %d (-update rewrites it)\n--- got\n%s--- want\n\t%s",
					name, f.line, what, next.info, next.line, explain(f, got, 0), strings.ReplaceAll(w, "\n", "\n\t"))
			}
			for i, f := range fs {
				if f.line > kFrom && f.line < kTo {
					continue // the generated kind reference: TestDocsKinds
				}
				next := following(fs, i, lines)
				switch f.info {
				case "wf":
					checked++
					prog, diags := compiler.Compile(reg, docSources(f.body, lockBefore(fs, i, lines))...)
					got := diagLines(diags)
					switch {
					case next != nil && next.info == "text":
						check(f, next, "diagnostics", got)
					case len(got) > 0:
						t.Errorf("%s:%d: wf block has diagnostics (follow it with a ```text block if they are meant):\n%s",
							name, f.line, explain(f, got, 0))
					case next != nil && next.info == "dot":
						check(f, next, "graphs", drawDOT(t, prog))
					}
				case "wf-fragment":
					checked++
					if next != nil && (next.info == "text" || next.info == "dot") {
						t.Errorf("%s:%d: a wf-fragment block cannot be followed by a %s block: make it a whole file in a wf block", name, f.line, next.info)
						continue
					}
					if got := compileDoc(reg, wrapFragment(f.body), ""); len(got) > 0 {
						t.Errorf("%s:%d: wf-fragment block has diagnostics once wrapped into a conversation workflow:\n%s",
							name, f.line, explain(f, got, strings.Count(fragmentHead, "\n")))
					}
				case lockInfo:
					if next == nil || next.info != "wf" {
						t.Errorf("%s:%d: a %s block must be followed by the wf block it locks the servers of", name, f.line, lockInfo)
					}
				default:
					if strings.HasPrefix(f.info, "wf") {
						t.Errorf("%s:%d: unknown code block kind %q: use wf or wf-fragment", name, f.line, f.info)
					}
				}
			}
			if len(edits) > 0 {
				rewrite(t, path, lines, edits)
			}
			t.Logf("%s: %d examples compiled", name, checked)
		})
	}
}

// drawDOT returns the lines `aguic graph --format dot` prints for prog:
// one digraph of every workflow.
func drawDOT(t *testing.T, prog *vm.Program) []string {
	t.Helper()
	var b strings.Builder
	if err := graph.WriteDOT(&b, prog.Workflows...); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}

// codeRE matches a diagnostic code.
var codeRE = regexp.MustCompile(`^WF[0-9]{3}$`)

// declaredCodes returns the values of every `Code… = "WFnnn"` constant of
// the given Go files, sorted.
func declaredCodes(t *testing.T, files ...string) []string {
	t.Helper()
	var codes []string
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil || !codeRE.MatchString(v) {
						t.Errorf("%s: %s = %s is not a code WFnnn", path, name.Name, lit.Value)
						continue
					}
					if slices.Contains(codes, v) {
						t.Errorf("%s: code %s is declared twice", path, v)
					}
					codes = append(codes, v)
				}
			}
		}
	}
	slices.Sort(codes)
	return codes
}

// headingRE matches the heading of one code's section in diagnostics.md.
var headingRE = regexp.MustCompile(`^## (WF[0-9]{3}): (\S.*)$`)

// TestDocsDiagnostics checks that docs/diagnostics.md documents every
// diagnostic code, in order, each with an example that produces it.
func TestDocsDiagnostics(t *testing.T) {
	var files []string
	for _, pattern := range []string{"*.go", "../lang/*.go"} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			if !strings.HasSuffix(m, "_test.go") {
				files = append(files, m)
			}
		}
	}
	codes := declaredCodes(t, files...)
	if len(codes) < 30 {
		t.Fatalf("found only %d codes in compiler/ and lang/: %q", len(codes), codes)
	}
	fs, lines := readFences(t, diagsDoc)
	name := docName(diagsDoc)

	type section struct {
		code       string
		line, last int // heading line and the section's last line
	}
	var sections []section
	for i, l := range lines {
		if strings.HasPrefix(l, "## ") || strings.HasPrefix(l, "# ") {
			if n := len(sections); n > 0 && sections[n-1].last == 0 {
				sections[n-1].last = i
			}
		}
		if !strings.HasPrefix(l, "## WF") {
			continue
		}
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("%s:%d: a code's heading must read `## WFnnn: short title`", name, i+1)
			continue
		}
		sections = append(sections, section{code: m[1], line: i + 1})
	}
	if n := len(sections); n > 0 && sections[n-1].last == 0 {
		sections[n-1].last = len(lines)
	}

	var documented []string
	for i, s := range sections {
		if !slices.Contains(codes, s.code) {
			t.Errorf("%s:%d: %s is not a diagnostic code of the compiler or the parser", name, s.line, s.code)
		}
		if slices.Contains(documented, s.code) {
			t.Errorf("%s:%d: second section for %s", name, s.line, s.code)
		}
		if i > 0 && s.code < sections[i-1].code {
			t.Errorf("%s:%d: %s comes after %s: keep the sections in the order of their codes", name, s.line, s.code, sections[i-1].code)
		}
		documented = append(documented, s.code)

		shown := false
		for j, f := range fs {
			if f.line < s.line || f.line > s.last || f.info != "wf" {
				continue
			}
			if next := following(fs, j, lines); next != nil && next.info == "text" && strings.Contains(next.body, "["+s.code+"]") {
				shown = true
			}
		}
		if !shown {
			t.Errorf("%s:%d: the section for %s needs a wf block followed by a text block showing %s", name, s.line, s.code, s.code)
		}
	}
	for _, c := range codes {
		if !slices.Contains(documented, c) {
			t.Errorf("%s: no section for %s: add `## %s: short title` with an example", name, c, c)
		}
	}
}

// TestDocsKinds checks the generated sections of docs/language.md against
// the registry, rewriting them with -update, and compiles the example of
// every node kind.
func TestDocsKinds(t *testing.T) {
	reg := stdlib.Registry()
	data, err := os.ReadFile(languageDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	text = generated(t, text, kindsBegin, kindsEnd, renderKinds(reg))
	text = generated(t, text, builtinBegin, builtinEnd, renderBuiltins(reg))
	if golden.Update() && text != string(data) {
		if err := os.WriteFile(languageDoc, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for _, k := range reg.Kinds() {
		if k.Example == "" {
			t.Errorf("kind %q has no example to document", k.Name)
			continue
		}
		src, lock := kindExampleFile(k)
		if got := compileDoc(reg, src, lock); len(got) > 0 {
			t.Errorf("%s: the example of %q (in the section of %q) has diagnostics:\n\t%s\n--- compiled as\n%s",
				docName(languageDoc), k.Name, k.Name, strings.Join(got, "\n\t"), src)
		}
	}
}

// generated replaces the text between the begin and end markers of doc
// with want; without -update a difference fails the test.
func generated(t *testing.T, doc, begin, end, want string) string {
	t.Helper()
	name := docName(languageDoc)
	i := strings.Index(doc, begin+"\n")
	j := strings.Index(doc, end)
	if i < 0 || j < 0 || j < i || strings.Count(doc, begin) != 1 || strings.Count(doc, end) != 1 {
		t.Errorf("%s: needs %s and %s once each, on lines of their own, in that order", name, begin, end)
		return doc
	}
	i += len(begin) + 1
	got := doc[i:j]
	if got == want {
		return doc
	}
	if !golden.Update() {
		line := strings.Count(doc[:i], "\n") + 1
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		k := 0
		for k < len(gl) && k < len(wl) && gl[k] == wl[k] {
			k++
		}
		at := func(l []string) string {
			if k < len(l) {
				return l[k]
			}
			return "(end of section)"
		}
		t.Errorf("%s:%d: the section between %s and %s is out of date; run `go test ./compiler -run TestDocs -update`\n--- first difference, line %d\n got: %s\nwant: %s",
			name, line, begin, end, line+k, at(gl), at(wl))
	}
	return doc[:i] + want + doc[j:]
}

// docEdit replaces lines from…to (from 1, inclusive) of a doc.
type docEdit struct {
	from, to int
	lines    []string
}

// rewrite applies edits, which are in ascending order, to a doc's lines
// and writes it back.
func rewrite(t *testing.T, path string, lines []string, edits []docEdit) {
	t.Helper()
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		lines = slices.Replace(lines, e.from-1, e.to, e.lines...)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

var (
	rootRE = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
	callRE = regexp.MustCompile(`(?m)(?:^|[\s:])call\s+([A-Za-z_][A-Za-z0-9_]*)`)
)

// kindExampleFile makes a whole file of a kind's example: a conversation
// workflow that first writes every context root the example names (other
// than the built-in ones), beside a workflow for each one it calls; and
// for a kind whose word names an MCP server, beside the server's
// declaration, with a lock file that lists the tool it calls.
func kindExampleFile(k *vm.KindSpec) (src, lock string) {
	example := k.Example
	var b strings.Builder
	b.WriteString(fragmentHead)
	var roots []string
	for _, m := range rootRE.FindAllStringSubmatch(example, -1) {
		if r := m[1]; r != "agent" && r != "input" && !slices.Contains(roots, r) {
			roots = append(roots, r)
			fmt.Fprintf(&b, "    set $%s = {}\n", r)
		}
	}
	for _, l := range strings.Split(example, "\n") {
		b.WriteString("    " + l + "\n")
	}
	b.WriteString(fragmentTail)
	var called []string
	for _, m := range callRE.FindAllStringSubmatch(example, -1) {
		if !slices.Contains(called, m[1]) {
			called = append(called, m[1])
			fmt.Fprintf(&b, "workflow %s {\n  flow { output $input }\n}\n", m[1])
		}
	}
	if k.Word == nil || !k.Word.Servers {
		return b.String(), ""
	}
	m := serverCallRE.FindStringSubmatch(example)
	if m == nil {
		return b.String(), ""
	}
	command := `"mcp-server-` + m[1] + `"`
	fmt.Fprintf(&b, "mcp %s {\n  command = %s\n}\n", m[1], command)
	f := &mcplock.File{Servers: map[string]*mcplock.Server{m[1]: {
		From:  mcplock.Origin{Command: command},
		Tools: []mcplock.Tool{{Name: m[2], InputSchema: map[string]any{"type": "object"}}},
	}}}
	data, err := f.Marshal()
	if err != nil {
		panic(err)
	}
	return b.String(), string(data)
}

// serverCallRE matches the server and the tool of a call of a server's
// tool: `mcp everything "get-sum"`.
var serverCallRE = regexp.MustCompile(`^[a-z_]+\s+([A-Za-z_][A-Za-z0-9_]*)\s+"([^"]+)"`)

// renderKinds writes the node kind reference: a summary table, then one
// section per kind.
func renderKinds(reg *vm.Registry) string {
	var b strings.Builder
	b.WriteString("<!-- Generated from stdlib.Registry() by `go test ./compiler -run TestDocs -update`: edit the registry, not this section. -->\n\n")
	b.WriteString("| kind | shape | `-> $path` | suspends | conversation only |\n|---|---|---|---|---|\n")
	for _, k := range reg.Kinds() {
		fmt.Fprintf(&b, "| [`%s`](#%s) | `%s` | %s | %s | %s |\n",
			k.Name, anchor(k.Name), shape(k), yesNo(k.Result != ""), suspendShort(k.Suspend), yesNo(k.Convo))
	}
	for _, k := range reg.Kinds() {
		fmt.Fprintf(&b, "\n### `%s`\n\n", k.Name)
		b.WriteString(cell(k.Doc, false) + "\n\n")
		fmt.Fprintf(&b, "Shape: `%s`\n\n", shape(k))
		switch {
		case k.Word != nil && k.Word.Servers:
			fmt.Fprintf(&b, "- **%s**: a bare word right after `%s`: the name of an [MCP server](#mcp-servers) the files declare.\n", capitalize(k.Word.Name), k.Name)
		case k.Word != nil:
			fmt.Fprintf(&b, "- **%s**: a bare word right after `%s`: %s.\n", capitalize(k.Word.Name), k.Name, orWords(k.Word.Values, "`"))
		}
		if a := k.Arg; a != nil {
			req := "optional"
			if a.Required {
				req = "required"
			}
			fmt.Fprintf(&b, "- **Argument** *%s* (%s, %s): %s\n", a.Name, typeText(a.Type, nil, false), req, cell(a.Doc, false))
		} else {
			b.WriteString("- **Argument**: none.\n")
		}
		if k.Result != "" {
			fmt.Fprintf(&b, "- **Result** (`-> $path`): %s.\n", resultText(k.Result))
		} else {
			fmt.Fprintf(&b, "- **Result**: none; `-> $path` is an error (%s).\n", compiler.CodeNoResult)
		}
		if k.Tool != nil {
			fmt.Fprintf(&b, "- **In a [tool](#tools)**: it may implement one. %s\n", cell(k.Tool.Doc, false))
		}
		fmt.Fprintf(&b, "- **Suspends**: %s.\n", suspendLong(k.Suspend))
		if k.Convo {
			fmt.Fprintf(&b, "- **Conversation only**: yes; in a stateless workflow it is an error (%s).\n", compiler.CodeConversation)
		} else {
			b.WriteString("- **Conversation only**: no.\n")
		}
		if len(k.Keys) > 0 {
			b.WriteString("\n| key | type | required | default | meaning |\n|---|---|---|---|---|\n")
			for _, key := range k.Keys {
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n",
					key.Name, typeText(key.Type, key.Enum, key.Writes), yesNo(key.Required), defaultText(key.Default), cell(key.Doc, true))
			}
		} else {
			b.WriteString("\nKeys: none.\n")
		}
		if len(k.Handlers) > 0 {
			b.WriteString("\n| handler | required | runs |\n|---|---|---|\n")
			for _, h := range k.Handlers {
				fmt.Fprintf(&b, "| `on %s { … }` | %s | %s |\n", h.Name, yesNo(h.Required), cell(h.Doc, true))
			}
		} else {
			b.WriteString("\nHandlers: none.\n")
		}
		fmt.Fprintf(&b, "\n```wf-fragment\n%s\n```\n", strings.TrimRight(k.Example, "\n"))
	}
	b.WriteByte('\n')
	return b.String()
}

// renderBuiltins writes the table of the registry's builtin functions.
func renderBuiltins(reg *vm.Registry) string {
	var b strings.Builder
	b.WriteString("<!-- Generated from stdlib.Registry() by `go test ./compiler -run TestDocs -update`: edit the registry, not this section. -->\n\n")
	b.WriteString("| function | meaning |\n|---|---|\n")
	for _, f := range reg.Builtins() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", f.Signature, cell(f.Doc, true))
	}
	b.WriteByte('\n')
	return b.String()
}

// shape is the synopsis of a node statement of kind k.
func shape(k *vm.KindSpec) string {
	s := k.Name
	if k.Word != nil {
		s += " " + strings.ToUpper(k.Word.Name)
	}
	if a := k.Arg; a != nil {
		arg := strings.ReplaceAll(a.Name, " ", "_")
		if a.Type == vm.TypeString || a.Type == vm.TypeServerTool || a.Type == vm.TypeURL || a.Type == vm.TypeModel {
			arg = `"` + arg + `"`
		}
		if !a.Required {
			arg = "[" + arg + "]"
		}
		s += " " + arg
	}
	if len(k.Keys) > 0 || len(k.Handlers) > 0 {
		body := "{ … }"
		needed := slices.ContainsFunc(k.Keys, func(key vm.KeySpec) bool { return key.Required }) ||
			slices.ContainsFunc(k.Handlers, func(h vm.Handler) bool { return h.Required })
		if !needed {
			body = "[" + body + "]"
		}
		s += " " + body
	}
	if k.Result != "" {
		s += " [-> $path]"
	}
	return s
}

// anchor is the id a Markdown renderer gives the heading "### `name`".
func anchor(name string) string { return strings.ReplaceAll(name, " ", "-") }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func suspendShort(s vm.Suspend) string {
	switch s {
	case vm.SuspendAlways:
		return "always"
	case vm.SuspendFrontendTools:
		return "with frontend tools"
	}
	return "no"
}

func suspendLong(s vm.Suspend) string {
	switch s {
	case vm.SuspendAlways:
		return "always: the node needs a label, and may not stand inside a `step`, a `parallel` branch or a `for` loop"
	case vm.SuspendFrontendTools:
		return "in a conversation workflow, when `tools` names the client's frontend tools (any `$path` in the list, such as `$agent.tools`): " +
			"the node then needs a label and may not stand inside a `step`, a `parallel` branch or a `for` loop. " +
			"In a stateless workflow a frontend tool call ends the run instead"
	}
	return "no"
}

// typeText names a key's or argument's type for the reference.
func typeText(t vm.Type, enum []string, writes bool) string {
	s := t.String()
	switch {
	case len(enum) > 0:
		quoted := make([]string, len(enum))
		for i, e := range enum {
			quoted[i] = strconv.Quote(e)
		}
		s += ": " + orWords(quoted, "`")
	case t == vm.TypePath && writes:
		s += " (written)"
	case t == vm.TypePath:
		s += " (read)"
	case t == vm.TypeObject && writes:
		s += " (its keys are roots it writes)"
	}
	return s
}

// orWords renders words as `a`, `b` or `c`, each between quote.
func orWords(words []string, quote string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = quote + w + quote
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func defaultText(v any) string {
	switch v := v.(type) {
	case nil:
		return "—"
	case string:
		return "`" + strconv.Quote(v) + "`"
	}
	return fmt.Sprintf("`%v`", v)
}

// cell makes doc text safe for one line of Markdown, and for a table cell
// when inTable: outside `code spans`, < would open an HTML tag.
func cell(s string, inTable bool) string {
	s = strings.Join(strings.Fields(s), " ")
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		// A <<template>> becomes code; any other < is escaped.
		var b strings.Builder
		rest := parts[i]
		for _, m := range interpRE.FindAllStringIndex(rest, -1) {
			b.WriteString(strings.ReplaceAll(rest[:m[0]], "<", "&lt;"))
			b.WriteString("`" + rest[m[0]:m[1]] + "`")
			rest = rest[m[1]:]
		}
		b.WriteString(strings.ReplaceAll(rest, "<", "&lt;"))
		parts[i] = b.String()
	}
	s = strings.Join(parts, "`")
	if inTable {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	return s
}

// resultText renders what `-> $path` receives, its {shape} as code.
func resultText(s string) string {
	return resultShape.ReplaceAllString(cell(s, false), "`$0`")
}

var (
	resultShape = regexp.MustCompile(`\{[^{}]*\}`)
	interpRE    = regexp.MustCompile(`<<[^<>]*>>`)
)

// linkRE matches a Markdown link to a doc of docs/ or to a heading of the
// same doc: [text](other.md#anchor), [text](#anchor).
var linkRE = regexp.MustCompile(`\]\(([a-z_]+\.md)?(#[^)\s]*)?\)`)

// TestDocsLinks checks that every link between the docs names an existing
// doc and heading.
func TestDocsLinks(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	anchors := map[string][]string{} // doc file name → heading anchors
	lines := map[string][]string{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(path)
		lines[base] = strings.Split(string(data), "\n")
		inFence := false
		for _, l := range lines[base] {
			if strings.HasPrefix(l, "```") {
				inFence = !inFence
			}
			if !inFence && strings.HasPrefix(l, "#") {
				anchors[base] = append(anchors[base], headingAnchor(strings.TrimLeft(l, "#")))
			}
		}
	}
	for _, path := range paths {
		base := filepath.Base(path)
		for i, l := range lines[base] {
			for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
				doc, anchor := m[1], strings.TrimPrefix(m[2], "#")
				if doc == "" && anchor == "" {
					continue
				}
				if doc == "" {
					doc = base
				}
				heads, ok := anchors[doc]
				switch {
				case !ok:
					t.Errorf("%s:%d: link to %s, which is not a doc of docs/", docName(path), i+1, doc)
				case anchor != "" && !slices.Contains(heads, anchor):
					t.Errorf("%s:%d: link to %s#%s, which has no such heading", docName(path), i+1, doc, anchor)
				}
			}
		}
	}
}

// headingAnchor is the id a Markdown renderer gives a heading: lower case,
// punctuation dropped, spaces turned into hyphens.
func headingAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocsBenchmarks checks that docs/performance.md names every benchmark
// of the repository, so that none is left without its number.
func TestDocsBenchmarks(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Benchmark") {
				continue
			}
			if !regexp.MustCompile(`\b` + fn.Name.Name + `\b`).Match(doc) {
				t.Errorf("%s: %s is not in docs/performance.md: add its number and how to run it", fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
