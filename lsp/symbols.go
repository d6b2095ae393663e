package lsp

import (
	"bytes"

	"github.com/aguic/aguic/lang"
	"github.com/tliron/glsp"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

// documentSymbol lists a document's outline: its workflows, with their
// tools, labels and steps, and its MCP servers.
func (s *Server) documentSymbol(_ *glsp.Context, p *protocol.DocumentSymbolParams) (any, error) {
	d, err := s.doc(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	ix := d.nav()
	out := []protocol.DocumentSymbol{}
	if ix.tree == nil {
		return out, nil
	}
	t := ix.text
	sym := func(name string, kind protocol.SymbolKind, start, end, selStart, selEnd int, detail string) protocol.DocumentSymbol {
		ds := protocol.DocumentSymbol{Name: name, Kind: kind, Range: t.span(start, end), SelectionRange: t.span(selStart, selEnd)}
		if detail != "" {
			ds.Detail = &detail
		}
		return ds
	}
	var block func(b *lang.Block) []protocol.DocumentSymbol
	block = func(b *lang.Block) []protocol.DocumentSymbol {
		var out []protocol.DocumentSymbol
		if b == nil {
			return out
		}
		for _, st := range b.Stmts {
			var children []protocol.DocumentSymbol
			lang.Inspect(st, func(n any) bool {
				if n == st {
					return true
				}
				if inner, ok := n.(*lang.Block); ok {
					children = append(children, block(inner)...)
					return false
				}
				return true
			})
			if st.Label != nil {
				name := st.Label.Name()
				ls := sym(name, protocol.SymbolKindKey, st.Pos.Offset, st.EndPos.Offset, st.Label.Pos.Offset, st.Label.Pos.Offset+len(name), "label")
				if st.Step != nil {
					ls.Children = []protocol.DocumentSymbol{stepSym(sym, st.Step, children)}
				} else {
					ls.Children = children
				}
				out = append(out, ls)
				continue
			}
			if st.Step != nil {
				out = append(out, stepSym(sym, st.Step, children))
				continue
			}
			out = append(out, children...)
		}
		return out
	}
	for _, decl := range ix.tree.Decls() {
		switch decl := decl.(type) {
		case *lang.Workflow:
			if decl.Name == nil {
				continue
			}
			ws := sym(decl.Name.Name, protocol.SymbolKindClass, decl.Pos.Offset, decl.EndPos.Offset, decl.Name.Pos.Offset, decl.Name.EndPos.Offset, "workflow")
			for _, m := range decl.Members {
				switch {
				case m.Tool != nil && m.Tool.Name != nil:
					ws.Children = append(ws.Children, sym(m.Tool.Name.Name, protocol.SymbolKindFunction, m.Tool.Pos.Offset, m.Tool.EndPos.Offset, m.Tool.Name.Pos.Offset, m.Tool.Name.EndPos.Offset, "tool"))
				case m.Flow != nil:
					ws.Children = append(ws.Children, block(m.Flow)...)
				}
			}
			out = append(out, ws)
		case *lang.Server:
			if decl.Name == nil {
				continue
			}
			out = append(out, sym(decl.Name.Name, protocol.SymbolKindInterface, decl.Pos.Offset, decl.EndPos.Offset, decl.Name.Pos.Offset, decl.Name.EndPos.Offset, "mcp server"))
		}
	}
	return out, nil
}

func stepSym(sym func(string, protocol.SymbolKind, int, int, int, int, string) protocol.DocumentSymbol, st *lang.Step, children []protocol.DocumentSymbol) protocol.DocumentSymbol {
	name := "step"
	if st.Name != nil {
		if lit, ok := st.Name.Literal(); ok {
			name = lit
		}
	}
	ss := sym(name, protocol.SymbolKindEvent, st.Pos.Offset, st.EndPos.Offset, st.Pos.Offset, st.Pos.Offset+len("step"), "step")
	ss.Children = children
	return ss
}

// formatting formats a document in the canonical layout with one edit of
// the whole text; none when it is formatted already or has syntax errors.
func (s *Server) formatting(_ *glsp.Context, p *protocol.DocumentFormattingParams) ([]protocol.TextEdit, error) {
	d, err := s.doc(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	out, diags := lang.FormatSource(d.name(), d.text.src)
	if diags.HasErrors() || bytes.Equal(out, d.raw) {
		return []protocol.TextEdit{}, nil
	}
	end := d.text.position(len(d.text.src))
	return []protocol.TextEdit{{Range: protocol.Range{End: end}, NewText: string(out)}}, nil
}
