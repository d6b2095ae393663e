package lsp

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

var update = flag.Bool("update", false, "rewrite the want section of testdata/*.txtar")

// marker is a cursor in a test file: @{name}, removed before the file is
// written.
var marker = regexp.MustCompile(`@\{(\w+)\}`)

// TestCases runs testdata/*.txtar. Each archive holds .wf files, with
// @{name} markers where queries put the cursor, a "queries" section (one a
// line: method, a marker or a file name, and for rename the new name) and a
// "want" section with what each answers, which -update rewrites.
func TestCases(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txtar")
	if len(files) == 0 {
		t.Fatal("no test cases")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			c := newClient(t)
			marks := map[string]struct {
				uri string
				pos protocol.Position
			}{}
			var queries, want string
			versions := map[string]int{}
			var opens [][2]string
			for _, f := range a.Files {
				switch f.Name {
				case "queries":
					queries = string(f.Data)
					continue
				case "want":
					want = string(f.Data)
					continue
				}
				path := filepath.Join(dir, f.Name)
				uri := pathURI(path)
				var clean bytes.Buffer
				data := f.Data
				for {
					loc := marker.FindSubmatchIndex(data)
					if loc == nil {
						clean.Write(data)
						break
					}
					clean.Write(data[:loc[0]])
					t := newText(clean.Bytes())
					marks[string(data[loc[2]:loc[3]])] = struct {
						uri string
						pos protocol.Position
					}{uri, t.position(len(t.src))}
					data = data[loc[1]:]
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, clean.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				if strings.HasSuffix(f.Name, ".wf") {
					opens = append(opens, [2]string{uri, clean.String()})
					versions[uri] = 1
				}
			}
			for _, o := range opens { // once every file is on disk
				c.open(o[0], o[1], 1)
			}
			for uri := range versions {
				c.diagnostics(uri, 1) // every check has run once
			}
			var out strings.Builder
			for _, q := range strings.Split(strings.TrimSpace(queries), "\n") {
				fields := strings.Fields(q)
				if len(fields) < 2 {
					continue
				}
				fmt.Fprintf(&out, "%s\n", q)
				target := fields[1]
				m, isMark := marks[strings.Trim(target, "@{}")]
				if !isMark {
					m.uri = pathURI(filepath.Join(dir, target))
				}
				var lines []string
				switch fields[0] {
				case "diagnostics":
					for _, d := range c.diagnostics(m.uri, 1) {
						lines = append(lines, describeDiagnostic(d, dir))
					}
				case "hover":
					var h struct {
						Contents protocol.MarkupContent `json:"contents"`
						Range    *protocol.Range        `json:"range"`
					}
					c.call("textDocument/hover", at(m.uri, m.pos), &h)
					if h.Range != nil {
						lines = append(lines, fmtRange(*h.Range))
					}
					lines = append(lines, strings.Split(h.Contents.Value, "\n")...)
				case "completion":
					var l protocol.CompletionList
					c.call("textDocument/completion", at(m.uri, m.pos), &l)
					slices.SortStableFunc(l.Items, func(a, b protocol.CompletionItem) int {
						return strings.Compare(deref(a.SortText, a.Label), deref(b.SortText, b.Label))
					})
					var labels []string
					for _, it := range l.Items {
						e, _ := json.Marshal(it.TextEdit)
						var te protocol.TextEdit
						_ = json.Unmarshal(e, &te)
						labels = append(labels, te.NewText+" "+fmtRange(te.Range))
					}
					lines = append(lines, labels...)
				case "definition", "references":
					var locs []protocol.Location
					params := at(m.uri, m.pos)
					params["context"] = map[string]any{"includeDeclaration": true}
					c.call("textDocument/"+fields[0], params, &locs)
					for _, l := range locs {
						lines = append(lines, relURI(l.URI, dir)+":"+fmtRange(l.Range))
					}
				case "prepareRename", "rename":
					params := at(m.uri, m.pos)
					var res json.RawMessage
					if fields[0] == "rename" {
						params["newName"] = fields[2]
					}
					if err := c.callErr("textDocument/"+fields[0], params, &res); err != nil {
						lines = append(lines, "error: "+strings.TrimPrefix(err.Error(), "jsonrpc2: code -32803 message: "))
						break
					}
					if fields[0] == "prepareRename" {
						lines = append(lines, string(res))
						break
					}
					var we protocol.WorkspaceEdit
					_ = json.Unmarshal(res, &we)
					uris := make([]string, 0, len(we.Changes))
					for u := range we.Changes {
						uris = append(uris, u)
					}
					slices.Sort(uris)
					for _, u := range uris {
						for _, e := range we.Changes[u] {
							lines = append(lines, fmt.Sprintf("%s:%s %s", relURI(u, dir), fmtRange(e.Range), e.NewText))
						}
					}
				case "symbols":
					var syms []protocol.DocumentSymbol
					c.call("textDocument/documentSymbol", map[string]any{"textDocument": map[string]any{"uri": m.uri}}, &syms)
					var walk func(ss []protocol.DocumentSymbol, indent string)
					walk = func(ss []protocol.DocumentSymbol, indent string) {
						for _, s := range ss {
							lines = append(lines, fmt.Sprintf("%s%s (%s) %s", indent, s.Name, deref(s.Detail, ""), fmtRange(s.SelectionRange)))
							walk(s.Children, indent+"  ")
						}
					}
					walk(syms, "")
				case "format":
					var edits []protocol.TextEdit
					c.call("textDocument/formatting", map[string]any{"textDocument": map[string]any{"uri": m.uri}, "options": map[string]any{"tabSize": 2, "insertSpaces": true}}, &edits)
					for _, e := range edits {
						lines = append(lines, fmtRange(e.Range))
						lines = append(lines, strings.Split(strings.TrimRight(e.NewText, "\n"), "\n")...)
					}
					if len(edits) == 0 {
						lines = append(lines, "no edits")
					}
				default:
					t.Fatalf("unknown query %q", q)
				}
				for _, l := range lines {
					fmt.Fprintf(&out, "  %s\n", l)
				}
			}
			got := out.String()
			if *update {
				for i, f := range a.Files {
					if f.Name == "want" {
						a.Files[i].Data = []byte(got)
					}
				}
				if err := os.WriteFile(file, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func deref(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}

func relURI(uri, dir string) string {
	if p := uriPath(uri); p != "" {
		if r, err := filepath.Rel(dir, p); err == nil {
			return r
		}
	}
	return uri
}

func describeDiagnostic(d diagnostic, dir string) string {
	sev := map[int]string{1: "error", 2: "warning", 3: "note"}[d.Severity]
	s := fmt.Sprintf("%s %s[%v]: %s", fmtRange(d.Range), sev, d.Code, d.Message)
	for _, r := range d.RelatedInformation {
		s += fmt.Sprintf("\n    %s:%s: note: %s", relURI(r.Location.URI, dir), fmtRange(r.Location.Range), r.Message)
	}
	return s
}
