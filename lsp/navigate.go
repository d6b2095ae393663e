package lsp

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/aguic/aguic/lang"
	"github.com/sourcegraph/jsonrpc2"
	"github.com/tliron/glsp"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

// Go to definition, find references and rename. Labels, tools and context
// roots are names of one workflow of one file; workflows and MCP servers
// are names of the whole project.

// wide reports whether names of kind are the project's, not a workflow's.
func wide(kind nameKind) bool { return kind == occWorkflow || kind == occServer }

// same reports whether two occurrences name the same thing.
func same(a, b *occ) bool {
	return a.kind == b.kind && a.name == b.name && (wide(a.kind) || a.wf == b.wf)
}

// scope returns the indexes where the name of o may occur, sorted by file.
func (s *Server) scope(d *document, o *occ, fresh bool) []*index {
	if !wide(o.kind) {
		if fresh {
			return []*index{d.index()}
		}
		return []*index{d.nav()}
	}
	all := s.projectIndexes(d, fresh)
	out := make([]*index, 0, len(all))
	for _, name := range slices.Sorted(maps.Keys(all)) {
		out = append(out, all[name])
	}
	return out
}

// occurrences returns every occurrence of the name of o, declarations
// included when decls.
func (s *Server) occurrences(d *document, o *occ, decls, fresh bool) []protocol.Location {
	var out []protocol.Location
	for _, ix := range s.scope(d, o, fresh) {
		for i := range ix.occs {
			x := &ix.occs[i]
			if same(x, o) && (decls || !x.def) {
				out = append(out, protocol.Location{URI: nameURI(ix.file), Range: ix.text.span(x.start, x.end)})
			}
		}
	}
	return out
}

// definitions returns the declarations of the name of o: where a
// workflow, server, tool or label is declared, where a root is written.
func (s *Server) definitions(d *document, o *occ) []protocol.Location {
	var out []protocol.Location
	for _, ix := range s.scope(d, o, false) {
		for i := range ix.occs {
			if x := &ix.occs[i]; x.def && same(x, o) {
				out = append(out, protocol.Location{URI: nameURI(ix.file), Range: ix.text.span(x.start, x.end)})
			}
		}
	}
	return out
}

// occAt returns the occurrence at the position of a request, and the
// document.
func (s *Server) occAt(uri string, pos protocol.Position) (*document, *occ, error) {
	d, err := s.doc(uri)
	if err != nil {
		return nil, nil, err
	}
	ix := d.nav()
	return d, ix.at(ix.text.offset(pos)), nil
}

func (s *Server) definition(_ *glsp.Context, p *protocol.DefinitionParams) (any, error) {
	d, o, err := s.occAt(p.TextDocument.URI, p.Position)
	if err != nil || o == nil {
		return nil, err
	}
	switch o.kind {
	case occWorkflow, occLabel, occTool, occServer, occVar:
		return s.definitions(d, o), nil
	}
	return nil, nil
}

func (s *Server) references(_ *glsp.Context, p *protocol.ReferenceParams) ([]protocol.Location, error) {
	d, o, err := s.occAt(p.TextDocument.URI, p.Position)
	if err != nil || o == nil {
		return nil, err
	}
	switch o.kind {
	case occWorkflow, occLabel, occTool, occServer, occVar:
		return s.occurrences(d, o, p.Context.IncludeDeclaration, false), nil
	}
	return nil, nil
}

// renameFailed is the error of a rename the server refuses.
func renameFailed(format string, args ...any) error {
	return &jsonrpc2.Error{Code: codeRequestFailed, Message: fmt.Sprintf(format, args...)}
}

// renamable returns the label or workflow at a position of an open
// document that parses.
func (s *Server) renamable(uri string, pos protocol.Position) (*document, *occ, error) {
	d, err := s.doc(uri)
	if err != nil {
		return nil, nil, err
	}
	if ix := d.index(); ix.tree == nil || ix.broken {
		return nil, nil, renameFailed("%s has syntax errors: fix them before renaming", filepath.Base(d.name()))
	}
	o := d.ix.at(d.ix.text.offset(pos))
	if o == nil || (o.kind != occLabel && o.kind != occWorkflow) {
		return nil, nil, renameFailed("only a label or a workflow can be renamed here")
	}
	return d, o, nil
}

func (s *Server) prepareRename(_ *glsp.Context, p *protocol.PrepareRenameParams) (any, error) {
	d, o, err := s.renamable(p.TextDocument.URI, p.Position)
	if err != nil {
		return nil, err
	}
	return struct {
		Range       protocol.Range `json:"range"`
		Placeholder string         `json:"placeholder"`
	}{d.ix.text.span(o.start, o.end), o.name}, nil
}

func (s *Server) rename(_ *glsp.Context, p *protocol.RenameParams) (*protocol.WorkspaceEdit, error) {
	d, o, err := s.renamable(p.TextDocument.URI, p.Position)
	if err != nil {
		return nil, err
	}
	name := p.NewName
	what := "label"
	if o.kind == occWorkflow {
		what = "workflow"
	}
	switch {
	case !isIdent(name):
		return nil, renameFailed("%q is not a name: letters, digits and _, not starting with a digit", name)
	case lang.IsKeyword(name):
		return nil, renameFailed("%q is a keyword and cannot name a %s", name, what)
	}
	edits := map[protocol.DocumentUri][]protocol.TextEdit{}
	if name == o.name {
		return &protocol.WorkspaceEdit{Changes: edits}, nil
	}
	for _, ix := range s.scope(d, o, true) {
		if ix.tree == nil || ix.broken {
			return nil, renameFailed("%s has syntax errors: fix them before renaming", filepath.Base(ix.file))
		}
		for _, x := range ix.occs {
			if x.kind == o.kind && x.def && x.name == name && (wide(o.kind) || x.wf == o.wf) {
				return nil, renameFailed("%s %q already exists (%s:%d)", what, name, filepath.Base(ix.file), ix.text.position(x.start).Line+1)
			}
		}
	}
	for _, l := range s.occurrences(d, o, true, true) {
		edits[l.URI] = append(edits[l.URI], protocol.TextEdit{Range: l.Range, NewText: name})
	}
	return &protocol.WorkspaceEdit{Changes: edits}, nil
}
