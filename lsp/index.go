package lsp

import (
	"slices"
	"strings"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/vm"
)

// What a name in a file is.
type nameKind int

const (
	occWorkflow nameKind = iota // a workflow id: declared, or named by a call
	occLabel                    // a label: declared (x:), or named by goto
	occTool                     // a tool of a workflow: declared, or named in a tools list
	occServer                   // an MCP server: declared, or named by an mcp node or a tools list
	occVar                      // a context root: written (def) or read
	occNode                     // the kind of a node statement, or its mode word
	occKey                      // a key of a node body; an attribute of a workflow, tool or server
	occHandler                  // the name of an `on` handler
)

// occ is one occurrence of a name in a file: its byte range in the
// cleaned text, whether it declares (or writes) the name, the workflow it
// is in, and for kinds, keys and handlers the kind ("say", "state sync")
// or, for attributes, "workflow", "tool" or "mcp".
type occ struct {
	kind       nameKind
	name       string
	start, end int
	def        bool
	wf         string
	spec       string
}

// index is what one parsed file declares and names, for navigation.
type index struct {
	file string
	text *text // the text the tree was parsed from
	tree *lang.File
	occs []occ // sorted by start
	// broken says the text has syntax errors: tree holds only what
	// parsed, so a rename could miss what did not.
	broken bool
}

// at returns the occurrence whose range holds off (its end included, so a
// cursor just after a name finds it), the innermost when several do.
func (ix *index) at(off int) *occ {
	var best *occ
	for i := range ix.occs {
		o := &ix.occs[i]
		if o.start > off {
			break
		}
		if off <= o.end && (best == nil || o.end-o.start <= best.end-best.start) {
			best = o
		}
	}
	return best
}

// workflowAt returns the name of the workflow whose block holds off.
func (ix *index) workflowAt(off int) string {
	if ix.tree == nil {
		return ""
	}
	for _, w := range ix.tree.Workflows {
		if w.Pos.Offset <= off && off <= w.EndPos.Offset {
			return w.Name.Name
		}
	}
	return ""
}

// names returns the distinct names of occurrences of kind in workflow wf
// (any workflow when wf is ""), declarations only when defsOnly.
func (ix *index) names(kind nameKind, wf string, defsOnly bool) []string {
	var out []string
	for _, o := range ix.occs {
		if o.kind == kind && (wf == "" || o.wf == wf) && (o.def || !defsOnly) && !slices.Contains(out, o.name) {
			out = append(out, o.name)
		}
	}
	return out
}

// Attribute sets, named by the spec of their occurrences.
const (
	attrWorkflow = "workflow"
	attrTool     = "tool"
	attrServer   = "mcp"
)

// toolAttrs are the attributes of a tool block; any other item of a tool
// is the statement that implements it.
var toolAttrs = []string{"description", "parameters", "result"}

// indexer builds an index from a tree.
type indexer struct {
	reg   *vm.Registry
	src   []byte
	ix    *index
	wf    string
	tools map[string]bool
}

// newIndex indexes tree, parsed from t; tree may be nil.
func newIndex(reg *vm.Registry, name string, t *text, tree *lang.File) *index {
	ix := &index{file: name, text: t, tree: tree}
	src := t.src
	if tree == nil {
		return ix
	}
	b := &indexer{reg: reg, src: src, ix: ix}
	for _, d := range tree.Decls() {
		switch d := d.(type) {
		case *lang.Workflow:
			b.workflow(d)
		case *lang.Server:
			b.wf = ""
			b.add(occServer, d.Name, true, "")
			for _, a := range d.Attrs {
				b.attr(a, attrServer)
			}
		}
	}
	slices.SortStableFunc(ix.occs, func(a, b occ) int { return a.start - b.start })
	return ix
}

func (b *indexer) add(kind nameKind, id *lang.Ident, def bool, spec string) {
	if id == nil {
		return
	}
	b.addAt(kind, id.Name, id.Pos.Offset, id.EndPos.Offset, def, spec)
}

func (b *indexer) addAt(kind nameKind, name string, start, end int, def bool, spec string) {
	b.ix.occs = append(b.ix.occs, occ{kind: kind, name: name, start: start, end: end, def: def, wf: b.wf, spec: spec})
}

// reads records the context roots read in src[start:end].
func (b *indexer) reads(start, end int) {
	if start >= end || end > len(b.src) {
		return
	}
	scanVars(b.src, start, end, func(name string, s, e int) {
		b.addAt(occVar, name, s, e, false, "")
	})
}

// write records the root of a path as written.
func (b *indexer) write(p *lang.Path) {
	if p == nil {
		return
	}
	root := strings.TrimPrefix(p.Root, "$")
	b.addAt(occVar, root, p.Pos.Offset, p.Pos.Offset+len(p.Root), true, "")
	for _, k := range p.Keys {
		b.reads(k.Pos.Offset, k.EndPos.Offset)
	}
}

func (b *indexer) workflow(w *lang.Workflow) {
	if w.Name == nil {
		return
	}
	b.wf = w.Name.Name
	b.add(occWorkflow, w.Name, true, "")
	b.tools = map[string]bool{}
	for _, m := range w.Members {
		if m.Tool != nil && m.Tool.Name != nil {
			b.tools[m.Tool.Name.Name] = true
		}
	}
	for _, m := range w.Members {
		switch {
		case m.Attr != nil:
			b.attr(m.Attr, attrWorkflow)
		case m.Tool != nil:
			b.tool(m.Tool)
		case m.Flow != nil:
			b.block(m.Flow)
		}
	}
}

func (b *indexer) attr(a *lang.Attr, spec string) {
	b.add(occKey, a.Name, false, spec)
	if a.Value != nil {
		b.reads(a.Value.Pos.Offset, a.Value.EndPos.Offset)
	}
}

func (b *indexer) tool(t *lang.Tool) {
	b.add(occTool, t.Name, true, "")
	for _, it := range t.Items {
		if it.Name == nil {
			continue
		}
		if slices.Contains(toolAttrs, it.Name.Name) {
			b.add(occKey, it.Name, false, attrTool)
			if it.Value != nil {
				b.reads(it.Value.Pos.Offset, it.Value.EndPos.Offset)
			}
			continue
		}
		b.node(it.Name, it.Arg, it.Body, it.Out)
	}
}

func (b *indexer) block(bl *lang.Block) {
	if bl == nil {
		return
	}
	for _, st := range bl.Stmts {
		b.stmt(st)
	}
}

func (b *indexer) stmt(st *lang.Stmt) {
	if st == nil {
		return
	}
	if st.Label != nil {
		name := st.Label.Name()
		b.addAt(occLabel, name, st.Label.Pos.Offset, st.Label.Pos.Offset+len(name), true, "")
	}
	switch {
	case st.Node != nil:
		b.node(st.Node.Kind, st.Node.Arg, st.Node.Body, st.Node.Out)
	case st.Set != nil:
		for _, a := range st.Set.Assigns {
			b.write(a.Path)
			if a.Value != nil {
				b.reads(a.Value.Pos.Offset, a.Value.EndPos.Offset)
			}
		}
	case st.If != nil:
		for n := st.If; n != nil; n = n.ElseIf {
			b.cond(n.Cond)
			b.block(n.Then)
			b.block(n.Else)
		}
	case st.Switch != nil:
		for _, c := range st.Switch.Cases {
			b.cond(c.Cond)
			b.block(c.Body)
		}
	case st.For != nil:
		if v := st.For.Var; v != nil {
			b.addAt(occVar, v.Name, v.Pos.Offset, v.EndPos.Offset, true, "")
		}
		b.cond(st.For.Iter)
		b.block(st.For.Body)
	case st.While != nil:
		b.cond(st.While.Cond)
		b.block(st.While.Body)
	case st.Goto != nil:
		if t := st.Goto.Target; t != nil {
			b.addAt(occLabel, t.Name, t.Pos.Offset, t.EndPos.Offset, false, "")
		}
	case st.Step != nil:
		if st.Step.Name != nil {
			b.reads(st.Step.Name.Pos.Offset, st.Step.Name.EndPos.Offset)
		}
		b.block(st.Step.Body)
	case st.Parallel != nil:
		for _, br := range st.Parallel.Branches {
			b.block(br.Body)
		}
	case st.Try != nil:
		b.block(st.Try.Body)
		if v := st.Try.Var; v != nil {
			b.addAt(occVar, v.Name, v.Pos.Offset, v.EndPos.Offset, true, "")
		}
		b.block(st.Try.Catch)
	case st.Fail != nil:
		if m := st.Fail.Message; m != nil {
			b.reads(m.Pos.Offset, m.EndPos.Offset)
		}
	}
}

func (b *indexer) cond(c *lang.Cond) {
	if c != nil {
		b.reads(c.Pos.Offset, c.EndPos.Offset)
	}
}

// node indexes a node statement (or the statement of a tool): its kind,
// the workflow or server its argument names, its keys, handlers and the
// path its result goes to.
func (b *indexer) node(kind *lang.Ident, arg *lang.Arg, body *lang.NodeBody, out *lang.Path) {
	if kind == nil {
		return
	}
	name := kind.Name
	var parts []*lang.ArgPart
	if arg != nil {
		parts = arg.Parts
	}
	if modes := b.reg.Modes(name); len(modes) > 0 && len(parts) > 0 && slices.Contains(modes, parts[0].Token) {
		name += " " + parts[0].Token
		b.addAt(occNode, name, parts[0].Pos.Offset, parts[0].EndPos.Offset, false, name)
		parts = parts[1:]
	}
	b.addAt(occNode, kind.Name, kind.Pos.Offset, kind.EndPos.Offset, false, name)
	spec := b.reg.Kind(name)
	if spec != nil && spec.Word != nil && len(parts) > 0 && parts[0].Token != "" {
		if spec.Word.Servers {
			b.addAt(occServer, parts[0].Token, parts[0].Pos.Offset, parts[0].EndPos.Offset, false, "")
		}
		parts = parts[1:]
	}
	if spec != nil && spec.Arg != nil && spec.Arg.Type == vm.TypeWorkflow && len(parts) > 0 && isIdent(parts[0].Token) {
		b.addAt(occWorkflow, parts[0].Token, parts[0].Pos.Offset, parts[0].EndPos.Offset, false, "")
		parts = parts[1:]
	}
	if len(parts) > 0 {
		b.reads(parts[0].Pos.Offset, parts[len(parts)-1].EndPos.Offset)
	}
	if body != nil {
		for _, e := range body.Entries {
			switch {
			case e.Key != nil:
				b.key(e.Key, name, spec)
			case e.Handler != nil:
				b.add(occHandler, e.Handler.Name, false, name)
				b.block(e.Handler.Body)
			}
		}
	}
	b.write(out)
}

// key indexes `key = value` of a node of kind name.
func (b *indexer) key(a *lang.Attr, name string, spec *vm.KindSpec) {
	b.add(occKey, a.Name, false, name)
	if a.Value == nil || a.Name == nil {
		return
	}
	var ks *vm.KeySpec
	if spec != nil {
		ks = spec.Key(a.Name.Name)
	}
	switch {
	case ks != nil && ks.Type == vm.TypePath && ks.Writes && len(a.Value.Parts) == 1:
		b.writeText(a.Value.Pos.Offset, a.Value.EndPos.Offset)
	case ks != nil && ks.Type == vm.TypeTools:
		b.toolRefs(a.Value.Parts)
		b.reads(a.Value.Pos.Offset, a.Value.EndPos.Offset)
	default:
		b.reads(a.Value.Pos.Offset, a.Value.EndPos.Offset)
	}
}

// writeText records the root of the path written as src[start:end].
func (b *indexer) writeText(start, end int) {
	first := true
	scanVars(b.src, start, end, func(name string, s, e int) {
		b.addAt(occVar, name, s, e, first, "")
		first = false
	})
}

// toolRefs records the names of a tools list: tools of the workflow, or
// MCP servers.
func (b *indexer) toolRefs(parts []*lang.Part) {
	var visit func(tok string, start, end int)
	visit = func(tok string, start, end int) {
		if !isIdent(tok) || lang.IsKeyword(tok) {
			return
		}
		kind := occServer
		if b.tools[tok] {
			kind = occTool
		}
		b.addAt(kind, tok, start, end, false, "")
	}
	for _, p := range parts {
		if p.Group == nil {
			visit(p.Token, p.Pos.Offset, p.EndPos.Offset)
			continue
		}
		for _, in := range p.Group.Inner {
			visit(in.Token, in.Pos.Offset, in.EndPos.Offset)
		}
	}
}

func isIdent(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}
