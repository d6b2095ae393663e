package lsp

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aguic/aguic/stdlib"
)

// TestExamples asks for hover and completion at every offset of every
// example workflow, and of each of its prefixes (a file being typed): no
// answer may fail, and every name the examples use must resolve.
func TestExamples(t *testing.T) {
	files, _ := filepath.Glob("../workflows/*.wf")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	s := New(stdlib.Registry(), Options{})
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(file)
		d := &document{uri: pathURI(abs), path: abs}
		s.update(d, raw)
		s.docs[d.uri] = d
		ix := d.index()
		if ix.tree == nil {
			t.Fatalf("%s does not parse", file)
		}
		for i := range ix.occs {
			o := &ix.occs[i]
			if o.kind == occLabel || o.kind == occWorkflow || o.kind == occTool {
				if len(s.definitions(d, o)) == 0 {
					t.Errorf("%s:%d: %q has no definition", file, ix.text.position(o.start).Line+1, o.name)
				}
			}
			_ = s.describe(d, o)
		}
		for off := 0; off <= len(d.text.src); off++ {
			s.complete(d, s.cursorAt(d.text.src, off), ix.workflowAt(off))
			pathHover(d.text.src, off)
		}
		// The file as it is being typed: every prefix that ends a line.
		for off := 0; off < len(raw); off++ {
			if raw[off] != '\n' {
				continue
			}
			p := &document{uri: d.uri + "#prefix", path: ""}
			s.update(p, raw[:off])
			p.nav()
			s.complete(p, s.cursorAt(p.text.src, len(p.text.src)), "")
		}
		delete(s.docs, d.uri)
	}
}

// FuzzCursor reads any text at any offset without failing.
func FuzzCursor(f *testing.F) {
	f.Add([]byte("wf 1\nworkflow a { flow { say \"<<$agent.x>>\" } }"), 20)
	f.Add([]byte("\"\"\"<<'>>'\"\"\" /* x"), 5)
	f.Add([]byte("{[(\"<<{"), 7)
	s := New(stdlib.Registry(), Options{})
	f.Fuzz(func(t *testing.T, src []byte, off int) {
		if off < 0 || off > len(src) {
			return
		}
		c := s.cursorAt(src, off)
		d := &document{uri: "untitled:x"}
		s.update(d, src)
		s.complete(d, c, "")
		pathHover(src, off)
		scanVars(src, 0, len(src), func(name string, start, end int) {
			if string(src[start+1:end]) != name {
				t.Fatalf("var %q at %d-%d", name, start, end)
			}
		})
		tx := newText(src)
		if got := tx.offset(tx.position(min(off, len(tx.src)))); got != min(off, len(tx.src)) && isRuneStart(tx.src, min(off, len(tx.src))) {
			t.Fatalf("offset(position(%d)) = %d", off, got)
		}
	})
}

func isRuneStart(b []byte, i int) bool { return i >= len(b) || b[i]&0xC0 != 0x80 }
