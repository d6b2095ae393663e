package compiler_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
)

// literalCodes compiles one flow statement and returns the codes of its
// diagnostics.
func literalCodes(t testing.TB, stmt string) []string {
	t.Helper()
	src := "wf 1\nworkflow w {\n  flow {\n    " + stmt + "\n  }\n}\n"
	_, diags := compiler.Compile(stdlib.Registry(), compiler.Source{Name: "a.wf", Text: []byte(src)})
	var codes []string
	for _, d := range diags {
		codes = append(codes, d.Code)
	}
	return codes
}

// runtimeAcceptsURL is the http node's own test of its URL.
func runtimeAcceptsURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// plainLiteral reports whether s can be written between quotes as it is,
// with no escape and no <<…>>.
func plainLiteral(s string) bool {
	return !strings.ContainsAny(s, "\"\\\n\r") && !strings.Contains(s, "<<") && !strings.Contains(s, ">>") &&
		!strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}

func TestURLLiterals(t *testing.T) {
	tests := []struct {
		url string
		bad bool
	}{
		{"https://api.example.com/orders", false},
		{"http://localhost:8080/a?b=c#d", false},
		{"HTTPS://example.com", false},
		{"https://[::1]:8080/", false},
		{"htps://example.com", true},
		{"ftp://example.com", true},
		{"example.com/a", true},
		{"example.com", true},
		{"/orders", true},
		{"https:///a", true},
		{"https://", true},
		{"https:example.com", true},
		{"https://exa mple.com", true},
		{"1http://example.com", true},
	}
	for _, tt := range tests {
		codes := literalCodes(t, `http GET "`+tt.url+`"`)
		if got := slices.Contains(codes, compiler.CodeURL); got != tt.bad {
			t.Errorf("%q: reported %v, want %v (codes %q)", tt.url, got, tt.bad, codes)
		}
		if tt.bad && runtimeAcceptsURL(tt.url) {
			t.Errorf("%q: the test wants an error, but the http node accepts it", tt.url)
		}
	}
}

// FuzzURLLiteral checks that the compiler never rejects a literal URL the
// http node accepts, and rejects each that url.Parse reads with a scheme
// other than http and https.
func FuzzURLLiteral(f *testing.F) {
	for _, s := range []string{"https://example.com/a", "htps://x", "example.com", "/a", "https:///a", "https://a b", "mailto:a@b", "http://[::1", "https://@/x", "HTTP://A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !plainLiteral(raw) || len(raw) > 200 {
			t.Skip()
		}
		reported := slices.Contains(literalCodes(t, `http GET "`+raw+`"`), compiler.CodeURL)
		if reported && runtimeAcceptsURL(raw) {
			t.Errorf("%q is reported, yet the http node accepts it", raw)
		}
		if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" && !reported {
			t.Errorf("%q has the scheme %q, yet is not reported", raw, u.Scheme)
		}
	})
}

func TestModelLiterals(t *testing.T) {
	tests := []struct {
		model string
		bad   bool
	}{
		{"openai/gpt-4o-mini", false},
		{"anthropic/claude-sonnet-4-5", false},
		{"openrouter/meta/llama-3", false},
		{"ollama/llama3", false},
		{"script/small", false},
		{"opneai/gpt-4o-mini", true},
		{"openai_/x", true},
		{"antropic/claude", true},
		{"OpenAI/gpt-4o", true},
		{"gpt-4o-mini", true},
		{"openai/", true},
		{"/gpt-4o", true},
	}
	for _, tt := range tests {
		codes := literalCodes(t, `model { model = "`+tt.model+`" }`)
		if got := slices.Contains(codes, compiler.CodeModelName); got != tt.bad {
			t.Errorf("%q: reported %v, want %v (codes %q)", tt.model, got, tt.bad, codes)
		}
	}
}

// FuzzModelLiteral checks that the compiler never rejects a model name
// that the library's providers resolve.
func FuzzModelLiteral(f *testing.F) {
	for _, s := range []string{"openai/gpt-4o", "opneai/x", "x", "/x", "a/", "anthropic/claude", "OPENAI/x"} {
		f.Add(s)
	}
	scripted, err := llm.ParseScript([]byte("reply\ntext: hi\n"))
	if err != nil {
		f.Fatal(err)
	}
	providers := map[string]llm.Provider{}
	for _, p := range llm.Providers {
		providers[p] = scripted
	}
	resolve := llm.Resolver(providers)
	f.Fuzz(func(t *testing.T, name string) {
		if !plainLiteral(name) || len(name) > 200 {
			t.Skip()
		}
		reported := slices.Contains(literalCodes(t, `model { model = "`+name+`" }`), compiler.CodeModelName)
		if _, err := resolve(name); err == nil && reported {
			t.Errorf("%q is reported, yet the providers resolve it", name)
		}
		if _, _, ok := llm.SplitModel(name); !ok && !reported {
			t.Errorf("%q is not a provider/model name, yet is not reported", name)
		}
	})
}
