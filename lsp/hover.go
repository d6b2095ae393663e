package lsp

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/vm"
	"github.com/tliron/glsp"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

func (s *Server) hover(_ *glsp.Context, p *protocol.HoverParams) (*protocol.Hover, error) {
	d, err := s.doc(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	if md, start, end, ok := pathHover(d.text.src, d.text.offset(p.Position)); ok {
		r := d.text.span(start, end)
		return markdown(md, &r), nil
	}
	ix := d.nav()
	off := ix.text.offset(p.Position)
	if o := ix.at(off); o != nil {
		if md := s.describe(d, o); md != "" {
			r := ix.text.span(o.start, o.end)
			return markdown(md, &r), nil
		}
	}
	if w, start, end := wordAt(d.text.src, d.text.offset(p.Position)); lang.IsKeyword(w) || w == "mcp" {
		if doc, ok := keywordDocs[w]; ok && !inString(d.text.src, start) {
			r := d.text.span(start, end)
			return markdown(doc, &r), nil
		}
	}
	return nil, nil
}

func markdown(md string, r *protocol.Range) *protocol.Hover {
	return &protocol.Hover{Contents: protocol.MarkupContent{Kind: protocol.MarkupKindMarkdown, Value: md}, Range: r}
}

// wordAt returns the identifier around off in src and its range.
func wordAt(src []byte, off int) (string, int, int) {
	start, end := off, off
	for start > 0 && isIdentChar(src[start-1]) {
		start--
	}
	for end < len(src) && isIdentChar(src[end]) {
		end++
	}
	return string(src[start:end]), start, end
}

// inString reports whether off is inside the text of a string literal.
func inString(src []byte, off int) bool {
	sc := newScanner(src)
	sc.run(0, off)
	m := sc.mode()
	return sc.inComm || m == modeString || m == modeHeredoc
}

// pathHover describes the context path around off, `$agent.state` or
// `$user.id`, up to the step under the cursor, when the documentation
// knows it.
func pathHover(src []byte, off int) (string, int, int, bool) {
	start := off
	for start > 0 && (isIdentChar(src[start-1]) || src[start-1] == '.' || src[start-1] == '?' || src[start-1] == '$') {
		start--
	}
	for start < off && src[start] != '$' {
		start++
	}
	if start >= len(src) || src[start] != '$' {
		return "", 0, 0, false
	}
	end := max(off, start+1)
	for end < len(src) && isIdentChar(src[end]) {
		end++
	}
	path := strings.ReplaceAll(string(src[start+1:end]), "?", "")
	if path == "" || strings.HasSuffix(path, ".") {
		return "", 0, 0, false
	}
	doc, ok := pathDoc(path)
	if !ok {
		return "", 0, 0, false
	}
	return fmt.Sprintf("`$%s`\n\n%s", path, doc), start, end, true
}

// describe says what an occurrence is, in markdown.
func (s *Server) describe(d *document, o *occ) string {
	switch o.kind {
	case occNode:
		if k := s.reg.Kind(o.spec); k != nil {
			return kindDoc(s.reg, k)
		}
		if modes := s.reg.Modes(o.spec); len(modes) > 0 {
			return fmt.Sprintf("**%s**: a node kind written with a mode: %s", o.spec, strings.Join(quoted(modes), ", "))
		}
	case occKey:
		if docs, ok := attrDocs[o.spec]; ok {
			if doc := docs[o.name]; doc != "" {
				return fmt.Sprintf("**%s** (attribute of a %s)\n\n%s", o.name, specNoun(o.spec), doc)
			}
			return ""
		}
		if k := s.reg.Kind(o.spec); k != nil {
			if ks := k.Key(o.name); ks != nil {
				return keyDoc(k, ks)
			}
		}
	case occHandler:
		if k := s.reg.Kind(o.spec); k != nil {
			if h := k.Handler(o.name); h != nil {
				req := ""
				if h.Required {
					req = " (required)"
				}
				return fmt.Sprintf("**on %s**%s: a handler of `%s`\n\n%s", h.Name, req, k.Name, h.Doc)
			}
		}
	case occVar:
		if doc, ok := rootDocs[o.name]; ok {
			return fmt.Sprintf("`$%s`\n\n%s", o.name, doc)
		}
		return s.declared(d, o, fmt.Sprintf("`$%s`: a context root of workflow `%s`", o.name, o.wf), "written")
	case occLabel:
		return s.declared(d, o, fmt.Sprintf("label `%s` of workflow `%s`", o.name, o.wf), "declared")
	case occWorkflow:
		return s.declared(d, o, fmt.Sprintf("workflow `%s`", o.name), "declared")
	case occTool:
		return s.declared(d, o, fmt.Sprintf("tool `%s` of workflow `%s`", o.name, o.wf), "declared")
	case occServer:
		return s.declared(d, o, fmt.Sprintf("MCP server `%s`", o.name), "declared")
	}
	return ""
}

func specNoun(spec string) string {
	if spec == attrServer {
		return "MCP server"
	}
	return spec
}

// declared describes a name by the places that declare it.
func (s *Server) declared(d *document, o *occ, head, verb string) string {
	locs := s.definitions(d, o)
	if len(locs) == 0 {
		return head + "\n\nnot " + verb + " anywhere"
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteString("\n\n")
	b.WriteString(verb)
	b.WriteString(" at ")
	for i, l := range locs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s:%d", filepath.Base(uriPath(l.URI)), l.Range.Start.Line+1)
	}
	return b.String()
}

// kindDoc is the reference of a node kind: what it does, its word,
// argument, keys, handlers and result, and an example.
func kindDoc(reg *vm.Registry, k *vm.KindSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** (node kind)\n\n%s\n", k.Name, k.Doc)
	if k.Word != nil {
		if k.Word.Servers {
			fmt.Fprintf(&b, "\n- %s: the name of an MCP server", k.Word.Name)
		} else {
			fmt.Fprintf(&b, "\n- %s: %s", k.Word.Name, strings.Join(k.Word.Values, ", "))
		}
	}
	if k.Arg != nil {
		req := "optional"
		if k.Arg.Required {
			req = "required"
		}
		fmt.Fprintf(&b, "\n- argument `%s` (%s, %s): %s", k.Arg.Name, k.Arg.Type, req, k.Arg.Doc)
	}
	if len(k.Keys) > 0 {
		names := make([]string, len(k.Keys))
		for i, ks := range k.Keys {
			names[i] = "`" + ks.Name + "`"
		}
		fmt.Fprintf(&b, "\n- keys: %s", strings.Join(names, ", "))
	}
	if len(k.Handlers) > 0 {
		names := make([]string, len(k.Handlers))
		for i, h := range k.Handlers {
			names[i] = "`on " + h.Name + "`"
		}
		fmt.Fprintf(&b, "\n- handlers: %s", strings.Join(names, ", "))
	}
	if k.Result != "" {
		fmt.Fprintf(&b, "\n- `-> $path` receives %s", k.Result)
	}
	if k.Suspend != vm.SuspendNever {
		b.WriteString("\n- may pause the run: give it a label")
	}
	if k.Convo {
		b.WriteString("\n- conversation workflows only")
	}
	if k.Example != "" {
		fmt.Fprintf(&b, "\n\n```wf\n%s\n```", k.Example)
	}
	return b.String()
}

// keyDoc is the reference of one key of a node kind.
func keyDoc(k *vm.KindSpec, ks *vm.KeySpec) string {
	var facts []string
	facts = append(facts, ks.Type.String())
	if ks.Required {
		facts = append(facts, "required")
	}
	if ks.Default != nil {
		facts = append(facts, fmt.Sprintf("default %s", formatValue(ks.Default)))
	}
	if ks.Path != "" {
		facts = append(facts, "default "+ks.Path)
	}
	s := fmt.Sprintf("**%s** (key of `%s`: %s)\n\n%s", ks.Name, k.Name, strings.Join(facts, ", "), ks.Doc)
	if len(ks.Enum) > 0 {
		s += "\n\nOne of: " + strings.Join(quoted(ks.Enum), ", ")
	}
	return s
}

func formatValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}
