package lsp

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/aguic/aguic/vm"
	"github.com/tliron/glsp"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

// Completion reads the text before the cursor, which need not parse: the
// scanner says whether the cursor is in code, a string or an
// interpolation, which braces are open and where the statement began; the
// line of each open brace says what the braces hold (a workflow, a node
// body, a block of statements). Names (labels, workflows, tools, roots)
// come from the trees, the last good one while the text does not parse.

// frame is what the innermost open brace holds.
type frame int

const (
	frameTop      frame = iota // no brace: declarations
	frameWorkflow              // workflow { }: attributes, tools, flow
	frameServer                // mcp name { }: attributes
	frameTool                  // tool name { }: attributes and a statement
	frameBlock                 // a block of statements
	frameSwitch                // switch { }: cases
	frameParallel              // parallel { }: branches
	frameNode                  // a node's body: keys and handlers
	frameOther                 // a map literal, a set group
)

// statementKeywords begin control statements.
var statementKeywords = []string{"set", "if", "switch", "for", "while", "goto", "step", "parallel", "try", "end", "fail"}

var (
	labelPrefix = regexp.MustCompile(`^[A-Za-z_]\w*:\s*`)
	afterWord   = regexp.MustCompile(`^([A-Za-z_]\w*)\s+([A-Za-z_]\w*)?$`)
	afterAssign = regexp.MustCompile(`^([A-Za-z_]\w*)\s*=\s*("?)([^"]*)$`)
	toolsList   = regexp.MustCompile(`^tools\s*=\s*\[`)
	bodyKey     = regexp.MustCompile(`(?m)^[ \t]*([A-Za-z_]\w*)[ \t]*=`)
)

// cursor is what completion knows of the place of the cursor.
type cursor struct {
	src    []byte
	off    int
	sc     *scanner
	frame  frame
	kind   string // frameNode: the node's kind ("state sync")
	brace  *group // the innermost open brace
	prefix string // the statement before the cursor, its label left out
}

func (s *Server) cursorAt(src []byte, off int) *cursor {
	sc := newScanner(src)
	sc.run(0, off)
	c := &cursor{src: src, off: off, sc: sc, frame: frameTop}
	stmt := min(sc.stmt, off)
	var braces []group
	for _, g := range sc.groups {
		if g.ch == '{' && g.depth == 1 {
			braces = append(braces, g)
		}
	}
	if n := len(braces); n > 0 {
		g := braces[n-1]
		c.brace = &g
		header := strings.TrimSpace(labelPrefix.ReplaceAllString(strings.TrimSpace(string(src[g.stmt:g.at])), ""))
		words := strings.Fields(header)
		first := ""
		if len(words) > 0 {
			first = words[0]
		}
		switch {
		case first == "workflow":
			c.frame = frameWorkflow
		case first == "mcp" && n == 1:
			c.frame = frameServer
		case first == "tool" && n == 2:
			c.frame = frameTool
		case first == "switch":
			c.frame = frameSwitch
		case first == "parallel":
			c.frame = frameParallel
		case first == "set" || len(words) > 1 && strings.HasPrefix(words[1], "="):
			c.frame = frameOther
		case slices.Contains([]string{"flow", "if", "else", "for", "while", "step", "try", "catch", "case", "default", "branch", "on"}, first):
			c.frame = frameBlock
		case s.reg.Kind(first) != nil || len(s.reg.Modes(first)) > 0:
			c.frame = frameNode
			c.kind = first
			if len(s.reg.Modes(first)) > 0 && len(words) > 1 {
				c.kind = first + " " + words[1]
			}
		default:
			c.frame = frameOther
		}
	}
	c.prefix = labelPrefix.ReplaceAllString(strings.TrimLeft(string(src[stmt:off]), " \t\r\n"), "")
	return c
}

// wordStart returns where the identifier that ends at the cursor begins.
func (c *cursor) wordStart() int {
	i := c.off
	for i > 0 && isIdentChar(c.src[i-1]) {
		i--
	}
	return i
}

func (s *Server) completion(_ *glsp.Context, p *protocol.CompletionParams) (any, error) {
	d, err := s.doc(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	off := d.text.offset(p.Position)
	c := s.cursorAt(d.text.src, off)
	nav := d.nav()
	wf := nav.workflowAt(nav.text.offset(p.Position))
	if nav.tree == nil {
		wf = textIndex(d.name(), d.text).workflowBefore(off)
	}
	items := s.complete(d, c, wf)
	r := d.text.span(c.wordStart(), off)
	for i := range items {
		items[i].TextEdit = protocol.TextEdit{Range: r, NewText: items[i].Label}
		if items[i].InsertText != nil {
			items[i].TextEdit = protocol.TextEdit{Range: r, NewText: *items[i].InsertText}
			items[i].InsertText = nil
		}
	}
	return protocol.CompletionList{IsIncomplete: false, Items: items}, nil
}

// complete returns the items that fit the cursor, in the order to show
// them.
func (s *Server) complete(d *document, c *cursor, wf string) []protocol.CompletionItem {
	if c.sc.inComm {
		return nil
	}
	mode := c.sc.mode()
	if mode == modeString {
		return s.completeValue(c, true)
	}
	if mode == modeHeredoc {
		return nil
	}
	if items, ok := s.completePath(d, c, wf); ok {
		return items
	}
	if mode == modeInterp {
		return nil
	}
	if n := len(c.sc.groups); n > 0 && c.sc.groups[n-1].ch != '{' {
		if toolsList.MatchString(c.prefix) {
			return s.completeTools(d, wf)
		}
		return nil
	}
	if m := afterWord.FindStringSubmatch(c.prefix); m != nil {
		return s.completeAfter(d, c, wf, m[1])
	}
	if afterAssign.MatchString(c.prefix) {
		return s.completeValue(c, false)
	}
	if c.prefix != "" && !isIdent(c.prefix) {
		return nil
	}
	return s.completeStart(c)
}

func item(label string, kind protocol.CompletionItemKind, detail, doc string) protocol.CompletionItem {
	it := protocol.CompletionItem{Label: label, Kind: &kind}
	if detail != "" {
		it.Detail = &detail
	}
	if doc != "" {
		it.Documentation = protocol.MarkupContent{Kind: protocol.MarkupKindMarkdown, Value: doc}
	}
	return it
}

func sorted(it protocol.CompletionItem, key string) protocol.CompletionItem {
	it.SortText = &key
	return it
}

// completeStart completes the first word of a statement, a member or a key.
func (s *Server) completeStart(c *cursor) []protocol.CompletionItem {
	var out []protocol.CompletionItem
	kw := func(names ...string) {
		for _, n := range names {
			out = append(out, item(n, protocol.CompletionItemKindKeyword, "keyword", keywordDocs[n]))
		}
	}
	attrs := func(spec string) {
		for _, n := range slices.Sorted(maps.Keys(attrDocs[spec])) {
			out = append(out, item(n, protocol.CompletionItemKindProperty, specNoun(spec)+" attribute", attrDocs[spec][n]))
		}
	}
	kinds := func(toolOnly bool) {
		for _, k := range s.reg.KindNames() {
			spec := s.reg.Kind(k)
			if toolOnly && (spec == nil || spec.Tool == nil) {
				continue
			}
			doc := ""
			if spec != nil {
				doc = kindDoc(s.reg, spec)
			} else {
				doc = fmt.Sprintf("**%s**: modes %s", k, strings.Join(s.reg.Modes(k), ", "))
			}
			out = append(out, item(k, protocol.CompletionItemKindClass, "node kind", doc))
		}
	}
	switch c.frame {
	case frameTop:
		kw("wf", "workflow", "mcp")
	case frameWorkflow:
		attrs(attrWorkflow)
		kw("tool", "flow")
	case frameServer:
		attrs(attrServer)
	case frameTool:
		attrs(attrTool)
		kinds(true)
	case frameSwitch:
		kw("case", "default")
	case frameParallel:
		kw("branch")
	case frameBlock:
		kw(statementKeywords...)
		kinds(false)
	case frameNode:
		return s.completeKeys(c)
	}
	return out
}

// completeKeys completes the keys of a node body, those not written yet
// first, and its handlers.
func (s *Server) completeKeys(c *cursor) []protocol.CompletionItem {
	spec := s.reg.Kind(c.kind)
	if spec == nil {
		return nil
	}
	written := map[string]bool{}
	body := c.src[c.brace.at+1 : bodyEnd(c.src, c.brace.at)]
	for _, m := range bodyKey.FindAllSubmatch(body, -1) {
		written[string(m[1])] = true
	}
	word := string(c.src[c.wordStart():c.off])
	var out []protocol.CompletionItem
	for i, ks := range spec.Keys {
		rank := "0"
		if written[ks.Name] && ks.Name != word {
			rank = "1"
		}
		out = append(out, sorted(item(ks.Name, protocol.CompletionItemKindField, "key of "+spec.Name+": "+ks.Type.String(), keyDoc(spec, &ks)), fmt.Sprintf("%s%03d", rank, i)))
	}
	if len(spec.Handlers) > 0 {
		out = append(out, sorted(item("on", protocol.CompletionItemKindKeyword, "keyword", keywordDocs["on"]), "2"))
	}
	return out
}

// bodyEnd returns the offset of the brace that closes the one at open, or
// the end of src; strings and comments are not told apart, which is near
// enough to list the keys a body holds.
func bodyEnd(src []byte, open int) int {
	depth := 0
	for i := open; i < len(src); i++ {
		switch src[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return len(src)
}

// completeAfter completes the word after a first word: a label after
// goto, a workflow after call, a handler after on, a mode, method or
// server after a kind.
func (s *Server) completeAfter(d *document, c *cursor, wf, first string) []protocol.CompletionItem {
	var out []protocol.CompletionItem
	names := func(kind nameKind, scopeWF string, itemKind protocol.CompletionItemKind, detail string) {
		seen := map[string]bool{}
		for _, ix := range s.navIndexes(d, kind) {
			for _, n := range ix.names(kind, scopeWF, true) {
				if !seen[n] {
					seen[n] = true
					out = append(out, item(n, itemKind, detail, ""))
				}
			}
		}
	}
	switch {
	case first == "goto":
		names(occLabel, wf, protocol.CompletionItemKindReference, "label")
	case first == "on" && c.frame == frameNode:
		if spec := s.reg.Kind(c.kind); spec != nil {
			for _, h := range spec.Handlers {
				out = append(out, item(h.Name, protocol.CompletionItemKindEvent, "handler of "+spec.Name, h.Doc))
			}
		}
	case c.frame == frameBlock || c.frame == frameTool:
		if modes := s.reg.Modes(first); len(modes) > 0 {
			for _, m := range modes {
				out = append(out, item(m, protocol.CompletionItemKindEnumMember, first+" mode", kindDoc(s.reg, s.reg.Kind(first+" "+m))))
			}
			return out
		}
		spec := s.reg.Kind(first)
		switch {
		case spec == nil:
		case spec.Word != nil && spec.Word.Servers:
			names(occServer, "", protocol.CompletionItemKindModule, "mcp server")
		case spec.Word != nil:
			for _, v := range spec.Word.Values {
				out = append(out, item(v, protocol.CompletionItemKindEnumMember, spec.Name+" "+spec.Word.Name, ""))
			}
		case spec.Arg != nil && spec.Arg.Type == vm.TypeWorkflow:
			names(occWorkflow, "", protocol.CompletionItemKindModule, "workflow")
		}
	}
	return out
}

// navIndexes returns the indexes names of kind are taken from: the
// project's for workflows and servers, the document's for the others.
func (s *Server) navIndexes(d *document, kind nameKind) []*index {
	if !wide(kind) {
		return []*index{d.nav()}
	}
	return s.scope(d, &occ{kind: kind}, false)
}

// completeTools completes a tools list: the workflow's tools and the MCP
// servers.
func (s *Server) completeTools(d *document, wf string) []protocol.CompletionItem {
	var out []protocol.CompletionItem
	for _, n := range d.nav().names(occTool, wf, true) {
		out = append(out, sorted(item(n, protocol.CompletionItemKindFunction, "tool", ""), "0"+n))
	}
	seen := map[string]bool{}
	for _, ix := range s.navIndexes(d, occServer) {
		for _, n := range ix.names(occServer, "", true) {
			if !seen[n] {
				seen[n] = true
				out = append(out, sorted(item(n, protocol.CompletionItemKindModule, "mcp server", ""), "1"+n))
			}
		}
	}
	return out
}

// completeValue completes the value of `key = "…` (in a string) or
// `key = ` from the key's list of values.
func (s *Server) completeValue(c *cursor, inString bool) []protocol.CompletionItem {
	m := afterAssign.FindStringSubmatch(c.prefix)
	if m == nil || (m[2] == `"`) != inString {
		return nil
	}
	var values []string
	switch c.frame {
	case frameNode:
		if spec := s.reg.Kind(c.kind); spec != nil {
			if ks := spec.Key(m[1]); ks != nil {
				values = ks.Enum
				if ks.Type == vm.TypeBool && !inString {
					values = []string{"true", "false"}
				}
			}
		}
	case frameWorkflow:
		values = attrValues[attrWorkflow][m[1]]
		if m[1] == "conversation" && !inString {
			values = []string{"true", "false"}
		}
	}
	var out []protocol.CompletionItem
	for _, v := range values {
		it := item(v, protocol.CompletionItemKindEnumMember, m[1], "")
		if !inString && v != "true" && v != "false" {
			q := `"` + v + `"`
			it.InsertText = &q
		}
		out = append(out, it)
	}
	return out
}

// completePath completes a context path: a root after $, a documented
// step after $agent. or $user.; ok is false when the cursor is not in one.
func (s *Server) completePath(d *document, c *cursor, wf string) ([]protocol.CompletionItem, bool) {
	i := c.off
	for i > 0 && (isIdentChar(c.src[i-1]) || c.src[i-1] == '.' || c.src[i-1] == '?') {
		i--
	}
	if i == 0 || c.src[i-1] != '$' {
		return nil, false
	}
	path := strings.ReplaceAll(string(c.src[i:c.off]), "?", "")
	dot := strings.LastIndexByte(path, '.')
	var out []protocol.CompletionItem
	if dot < 0 {
		roots := []string{"agent", "input", "user"}
		for _, n := range d.nav().names(occVar, wf, true) {
			if !slices.Contains(roots, n) {
				roots = append(roots, n)
			}
		}
		for i, r := range roots {
			out = append(out, sorted(item(r, protocol.CompletionItemKindVariable, "context root", rootDocs[r]), fmt.Sprintf("%03d", i)))
		}
		return out, true
	}
	parent := path[:dot]
	for i, p := range contextPaths {
		rest, ok := strings.CutPrefix(p.path, parent+".")
		if ok && !strings.Contains(rest, ".") {
			out = append(out, sorted(item(rest, protocol.CompletionItemKindField, "$"+p.path, p.doc), fmt.Sprintf("%03d", i)))
		}
	}
	return out, true
}
