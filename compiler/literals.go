package compiler

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/vm"
	"github.com/expr-lang/expr/ast"
)

// Literal values that cannot work, found before the run.
const (
	CodeModelName = "WF113" // a literal model name without its provider, or with a misspelt one
	CodeURL       = "WF114" // a literal URL that is not an absolute http or https URL
)

// schemes are the URL schemes of the http node.
var schemes = []string{"http", "https"}

// literalText returns the text of a value up to its first <<…>>, and
// whether that is the whole value (it has none): a template's, or a string
// literal expression's ('openai/gpt-4o'). ok is false for other values.
func literalText(v *vm.Value) (prefix string, whole, ok bool) {
	switch {
	case v == nil:
		return "", false, false
	case v.Template != nil:
		prefix, whole = templateText(v.Template)
		return prefix, whole, true
	case v.Expr != nil:
		if s, isStr := v.Expr.Program.Node().(*ast.StringNode); isStr {
			return s.Value, true, true
		}
	}
	return "", false, false
}

// templateText returns the text of a template up to its first <<…>>, and
// whether that is the whole template (it has none).
func templateText(t *vm.Template) (prefix string, whole bool) {
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Expr != nil {
			return b.String(), false
		}
		b.WriteString(p.Text)
	}
	return b.String(), true
}

// textSpan is the span of text at byte offset i of a string literal's
// value, when the literal writes its value's first i+len(text) bytes as
// they are (one quote, then no escape and no quote there); else the
// literal's span.
func (c *fileCompiler) textSpan(v *vm.Value, i int, text string) diag.Span {
	open := v.Span.Start.Offset
	start := open + 1 // after the opening quote
	end := start + i + len(text)
	if v.Span.End.Offset <= end || !strings.ContainsRune("\"'`", rune(c.src[open])) || strings.HasPrefix(string(c.src[open:]), `"""`) {
		return v.Span
	}
	if strings.ContainsAny(string(c.src[start:end]), "\\"+string(c.src[open])) {
		return v.Span
	}
	return c.file.Span(start+i, end)
}

// checkModel checks a model key written as a string literal, or as a
// template whose literal start holds the provider: the name needs the
// form "provider/model", and a provider that misspells one of providers
// is an error. A provider far from all of them is left to the run: the
// program may resolve it, and a script answers any.
func (c *fileCompiler) checkModel(v *vm.Value, providers []string) {
	text, whole, ok := literalText(v)
	if !ok {
		return
	}
	provider, model, slash := strings.Cut(text, "/")
	if whole && (!slash || provider == "" || model == "") {
		c.diags.Errorf(v.Span, CodeModelName, "model %q must be written as \"provider/model\", such as \"openai/gpt-4o-mini\"", text)
		return
	}
	if !slash || slices.Contains(providers, provider) {
		return
	}
	if provider == "" {
		c.diags.Errorf(v.Span, CodeModelName, "model %q has no provider before its \"/\", such as \"openai/gpt-4o-mini\"", text)
		return
	}
	meant := misspelling(provider, providers)
	if meant == "" {
		return
	}
	c.diags.Errorf(c.textSpan(v, 0, provider), CodeModelName, "unknown model provider %q (did you mean %q?)", provider, meant)
}

// checkURL checks a URL written as a string literal, or the literal start
// of a template when it decides: the scheme must be http or https, and
// the URL absolute, with a host.
func (c *fileCompiler) checkURL(v *vm.Value) {
	text, whole, ok := literalText(v)
	if !ok || text == "" {
		return
	}
	scheme, rest, found := strings.Cut(text, "://")
	if !found {
		colon := strings.IndexByte(text, ':')
		slash := strings.IndexByte(text, '/')
		switch {
		case colon > 0 && (slash < 0 || colon < slash) && isScheme(text[:colon]):
			// "https:example.com", "mailto:…": a scheme without "//".
			scheme = text[:colon]
			if !slices.Contains(schemes, strings.ToLower(scheme)) {
				c.badScheme(v, scheme)
				return
			}
			if whole {
				c.diags.Errorf(v.Span, CodeURL, "URL %q has no host: write %q", text, scheme+"://"+strings.TrimLeft(text[colon+1:], "/"))
			}
		case slash == 0:
			c.diags.Errorf(v.Span, CodeURL, "URL %q is relative: write an absolute URL such as %q", abbreviate(text, whole), "https://example.com"+abbreviate(text, whole))
		case whole || slash > 0:
			c.diags.Errorf(v.Span, CodeURL, "URL %q has no scheme: write %q", abbreviate(text, whole), "https://"+abbreviate(text, whole))
		}
		return
	}
	if !isScheme(scheme) {
		c.diags.Errorf(c.textSpan(v, 0, scheme), CodeURL, "%q is not a URL scheme: expected http or https", scheme)
		return
	}
	if !slices.Contains(schemes, strings.ToLower(scheme)) {
		c.badScheme(v, scheme)
		return
	}
	host, _, ended := strings.Cut(rest, "/")
	if i := strings.IndexAny(host, "?#"); i >= 0 {
		host, ended = host[:i], true
	}
	if host == "" && (whole || ended) {
		c.diags.Errorf(v.Span, CodeURL, "URL %q has no host", abbreviate(text, whole))
		return
	}
	if !whole {
		return
	}
	if _, err := url.Parse(text); err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		c.diags.Errorf(v.Span, CodeURL, "invalid URL %q: %v", text, err)
	}
}

// badScheme reports a scheme other than http and https.
func (c *fileCompiler) badScheme(v *vm.Value, scheme string) {
	hint := " (expected http or https)"
	if meant := misspelling(strings.ToLower(scheme), schemes); meant != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", meant)
	}
	c.diags.Errorf(c.textSpan(v, 0, scheme), CodeURL, "unknown URL scheme %q%s", scheme, hint)
}

// isScheme reports whether s is a URL scheme: a letter, then letters,
// digits, +, - and . (RFC 3986).
func isScheme(s string) bool {
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')
		if !ok {
			return false
		}
	}
	return s != ""
}

// abbreviate is the literal text of a URL for a message: the whole URL,
// or its literal start followed by "…".
func abbreviate(text string, whole bool) string {
	return text + ellipsis(whole)
}

func ellipsis(whole bool) string {
	if whole {
		return ""
	}
	return "…"
}

// modelOrURL is the type a value of type t is compiled and checked as,
// before the checks of its literal: a string.
func modelOrURL(t vm.Type) vm.Type {
	if t == vm.TypeModel || t == vm.TypeURL {
		return vm.TypeString
	}
	return t
}

// checkLiteral runs the check of a model or URL value.
func (c *fileCompiler) checkLiteral(v *vm.Value, t vm.Type, providers []string) {
	switch t {
	case vm.TypeModel:
		c.checkModel(v, providers)
	case vm.TypeURL:
		c.checkURL(v)
	}
}
