package lsp

import (
	"regexp"
	"slices"
)

// A file that has never parsed has no tree: its names are read from the
// text instead, line by line, well enough to complete them.

var (
	workflowDecl = regexp.MustCompile(`(?m)^[ \t]*workflow[ \t]+([A-Za-z_]\w*)`)
	serverDecl   = regexp.MustCompile(`(?m)^mcp[ \t]+([A-Za-z_]\w*)[ \t]*\{`)
	toolDecl     = regexp.MustCompile(`(?m)^[ \t]*tool[ \t]+([A-Za-z_]\w*)`)
	labelDecl    = regexp.MustCompile(`(?m)^[ \t]*([A-Za-z_]\w*):[ \t\n]`)
	rootWrite    = regexp.MustCompile(`(?:->|\bset)[ \t]*\$([A-Za-z_]\w*)`)
)

// textIndex returns an index of the declarations the text of t shows.
func textIndex(name string, t *text) *index {
	ix := &index{file: name, text: t}
	var wfs []occ
	for _, m := range workflowDecl.FindAllSubmatchIndex(t.src, -1) {
		wfs = append(wfs, occ{kind: occWorkflow, name: string(t.src[m[2]:m[3]]), start: m[2], end: m[3], def: true})
	}
	wfAt := func(off int) string {
		name := ""
		for _, w := range wfs {
			if w.start < off {
				name = w.name
			}
		}
		return name
	}
	ix.occs = append(ix.occs, wfs...)
	add := func(re *regexp.Regexp, kind nameKind, top bool) {
		for _, m := range re.FindAllSubmatchIndex(t.src, -1) {
			name := string(t.src[m[2]:m[3]])
			if kind == occLabel && isKeywordOrKind(name) {
				continue
			}
			o := occ{kind: kind, name: name, start: m[2], end: m[3], def: true}
			if !top {
				o.wf = wfAt(m[2])
			}
			ix.occs = append(ix.occs, o)
		}
	}
	add(serverDecl, occServer, true)
	add(toolDecl, occTool, false)
	add(labelDecl, occLabel, false)
	add(rootWrite, occVar, false)
	slices.SortStableFunc(ix.occs, func(a, b occ) int { return a.start - b.start })
	return ix
}

// workflowBefore returns the workflow whose declaration comes last before
// off.
func (ix *index) workflowBefore(off int) string {
	name := ""
	for _, o := range ix.occs {
		if o.kind == occWorkflow && o.def && o.start < off {
			name = o.name
		}
	}
	return name
}

// isKeywordOrKind reports whether a word before a colon is not a label:
// a map key of a multi-line literal is, at worst, offered once too often.
func isKeywordOrKind(name string) bool {
	return name == "http" || name == "https"
}
