package lsp

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/mcplock"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

// A project is the files one document is checked with: the *.wf files of
// its directory and of the directories below (hidden ones and
// node_modules left out), as `aguic check <dir>` finds them, with the
// mcp.lock.json of every directory that holds one of them. The text of an
// open document stands for its file. A document that is not a file is a
// project of its own.

// projectOf returns the key of d's project: its directory, or its URI.
func projectOf(d *document) string {
	if d.path == "" {
		return d.uri
	}
	return filepath.Dir(d.path)
}

// scheduleLocked asks for the projects d is part of to be checked again:
// its own, and those of open documents in the directories above. Edits
// that arrive while a check runs are coalesced into the next one.
func (s *Server) scheduleLocked(d *document) {
	own := projectOf(d)
	s.pending[own] = true
	if d.path != "" {
		for _, o := range s.docs {
			if p := projectOf(o); o.path != "" && isUnder(own, p) {
				s.pending[p] = true
			}
		}
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// checkLoop runs the checks scheduled until ctx ends.
func (s *Server) checkLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		s.mu.Lock()
		dirs := slices.Sorted(maps.Keys(s.pending))
		clear(s.pending)
		s.mu.Unlock()
		for _, dir := range dirs {
			if ctx.Err() != nil {
				return
			}
			s.checkProject(ctx, dir)
		}
	}
}

// checkProject compiles the project of key dir and publishes the
// diagnostics of its open documents.
func (s *Server) checkProject(ctx context.Context, dir string) {
	start := time.Now()
	s.mu.Lock()
	conn := s.conn
	var mine []*document // the open documents whose project this is
	open := map[string]*document{}
	for _, d := range s.docs {
		if projectOf(d) == dir {
			mine = append(mine, d)
		}
		if d.path != "" {
			open[d.path] = d
		}
	}
	s.mu.Unlock()
	if len(mine) == 0 || conn == nil {
		return
	}
	srcs, texts := s.sources(dir, mine, open)
	_, diags := compiler.Compile(s.reg, srcs...)
	byFile := map[string][]protocol.Diagnostic{}
	for _, dg := range diags {
		t := texts[dg.Span.File]
		if t == nil {
			continue
		}
		byFile[dg.Span.File] = append(byFile[dg.Span.File], s.diagnostic(dg, t, texts))
	}
	slices.SortFunc(mine, func(a, b *document) int { return strings.Compare(a.uri, b.uri) })
	for _, d := range mine {
		list := byFile[d.name()]
		if list == nil {
			list = []protocol.Diagnostic{}
		}
		v := protocol.UInteger(d.version)
		s.pub.Lock()
		s.mu.Lock()
		open := s.docs[d.uri] != nil
		if open {
			s.published[d.uri] = len(list) > 0
		}
		s.mu.Unlock()
		if open {
			if err := conn.Notify(ctx, string(protocol.ServerTextDocumentPublishDiagnostics), protocol.PublishDiagnosticsParams{URI: d.uri, Version: &v, Diagnostics: list}); err != nil {
				s.log.Printf("publishing diagnostics of %s: %v", d.uri, err)
			}
		}
		s.pub.Unlock()
	}
	// The indexes of the current versions are built beside the next check,
	// ready for the requests that follow the edit.
	s.mu.Lock()
	for _, d := range mine {
		if s.docs[d.uri] == d {
			go d.index()
		}
	}
	s.mu.Unlock()
	s.log.Printf("checked %s (%d files) in %v", dir, len(srcs), time.Since(start).Round(time.Microsecond))
}

// sources returns the sources of project dir, open documents standing for
// their files, and the text of each by name.
func (s *Server) sources(dir string, mine []*document, open map[string]*document) ([]compiler.Source, map[string]*text) {
	texts := map[string]*text{}
	var srcs []compiler.Source
	add := func(name string, t *text) {
		texts[name] = t
		srcs = append(srcs, compiler.Source{Name: name, Text: t.src})
	}
	if len(mine) == 1 && mine[0].path == "" {
		add(mine[0].name(), mine[0].text)
		return srcs, texts
	}
	files := projectFiles(dir)
	for path := range open {
		if isUnder(path, dir) && !slices.Contains(files, path) && strings.HasSuffix(path, ".wf") {
			files = append(files, path) // a new file not saved yet
		}
	}
	slices.Sort(files)
	dirs := map[string]bool{}
	for _, path := range files {
		dirs[filepath.Dir(path)] = true
		if d := open[path]; d != nil {
			add(path, d.text)
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			s.log.Printf("%v", err)
			continue
		}
		add(path, newText(raw))
	}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		lock := filepath.Join(dir, mcplock.FileName)
		raw, err := os.ReadFile(lock)
		if err != nil {
			continue
		}
		add(lock, newText(raw))
	}
	return srcs, texts
}

// projectFiles lists the .wf files of project dir, sorted.
func projectFiles(dir string) []string {
	var files []string
	_ = compiler.Walk(dir, ".wf", func(path string, err error) error {
		if err == nil {
			files = append(files, path)
		}
		return nil // unreadable parts are left out, as they come and go
	})
	slices.Sort(files)
	return files
}

// diagnostic converts a diagnostic of check into the protocol's.
func (s *Server) diagnostic(d diag.Diagnostic, t *text, texts map[string]*text) protocol.Diagnostic {
	sev := protocol.DiagnosticSeverityError
	switch d.Severity {
	case diag.Warning:
		sev = protocol.DiagnosticSeverityWarning
	case diag.Note:
		sev = protocol.DiagnosticSeverityInformation
	}
	source := "aguic"
	out := protocol.Diagnostic{
		Range:    spanRange(d.Span, t),
		Severity: &sev,
		Source:   &source,
		Message:  d.Message,
	}
	if d.Code != "" {
		out.Code = &protocol.IntegerOrString{Value: d.Code}
	}
	for _, r := range d.Related {
		rt := texts[r.Span.File]
		if rt == nil {
			continue
		}
		out.RelatedInformation = append(out.RelatedInformation, protocol.DiagnosticRelatedInformation{
			Location: protocol.Location{URI: nameURI(r.Span.File), Range: spanRange(r.Span, rt)},
			Message:  r.Message,
		})
	}
	return out
}

// spanRange converts a span of the compiler into a range of t. A span
// without an end is the width of one character.
func spanRange(sp diag.Span, t *text) protocol.Range {
	start, end := sp.Start.Offset, sp.End.Offset
	if !sp.Start.IsValid() {
		start, end = 0, 0
	}
	if end <= start {
		end = start
		if end < len(t.src) && t.src[end] != '\n' {
			end++
		}
	}
	return t.span(start, end)
}

// nameURI returns the URI of a source name: a path, or a URI already.
func nameURI(name string) string {
	if filepath.IsAbs(name) {
		return pathURI(name)
	}
	return name
}

// diskFile is a file of a project as last read from disk, indexed.
type diskFile struct {
	mod  time.Time
	size int64
	text *text
	ix   *index
}

// projectIndexes returns the indexes of every .wf file of d's project:
// open documents' and files on disk, parsed once for each version. An open
// document that does not parse gives its last good index, or, when fresh,
// its current one (without a tree), for the changes that need the text as
// it is.
func (s *Server) projectIndexes(d *document, fresh bool) map[string]*index {
	pick := func(o *document) *index {
		if fresh {
			return o.index()
		}
		return o.nav()
	}
	out := map[string]*index{d.name(): pick(d)}
	if d.path == "" {
		return out
	}
	dir := projectOf(d)
	s.mu.Lock()
	open := map[string]*document{}
	for _, o := range s.docs {
		if o.path != "" && isUnder(o.path, dir) {
			open[o.path] = o
			out[o.path] = pick(o)
		}
	}
	s.mu.Unlock()
	for _, path := range projectFiles(dir) {
		if open[path] != nil {
			continue
		}
		if f := s.diskFile(path); f != nil {
			out[path] = f.ix
		}
	}
	return out
}

// diskFile returns the file at path as indexed from disk, or nil.
func (s *Server) diskFile(path string) *diskFile {
	info, err := os.Stat(path)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	f := s.disk[path]
	s.mu.Unlock()
	if f != nil && f.mod.Equal(info.ModTime()) && f.size == info.Size() {
		return f
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	t := newText(raw)
	tree, diags := lang.Parse(path, t.src)
	ix := newIndex(s.reg, path, t, tree)
	ix.broken = diags.HasErrors()
	if tree == nil {
		ix = textIndex(path, t)
	}
	f = &diskFile{mod: info.ModTime(), size: info.Size(), text: t, ix: ix}
	s.mu.Lock()
	s.disk[path] = f
	s.mu.Unlock()
	return f
}

// textOf returns the text of a file of d's project by name: an open
// document's, or the one on disk.
func (s *Server) textOf(name string) *text {
	s.mu.Lock()
	for _, o := range s.docs {
		if o.name() == name {
			s.mu.Unlock()
			return o.text
		}
	}
	s.mu.Unlock()
	if f := s.diskFile(name); f != nil {
		return f.text
	}
	return nil
}
