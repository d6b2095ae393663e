package llm

import (
	"context"
	"testing"
)

type nopProvider struct{}

func (nopProvider) Stream(context.Context, *Request, func(Chunk) error) (*Response, error) {
	return &Response{}, nil
}

func TestResolver(t *testing.T) {
	p := nopProvider{}
	resolve := Resolver(map[string]Provider{"script": p, "openai": p})
	for _, c := range []struct{ name, err string }{
		{"script/x", ""},
		{"openai/gpt-4o-mini", ""},
		{"anthropic/claude", `unknown model provider "anthropic" (known: openai, script)`},
		{"gpt-4o", `model "gpt-4o" must be written as "provider/model", such as "openai/gpt-4o-mini"`},
		{"openai/", `model "openai/" must be written as "provider/model", such as "openai/gpt-4o-mini"`},
	} {
		got, err := resolve(c.name)
		switch {
		case c.err == "" && (err != nil || got == nil):
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%s: got %v, want %s", c.name, err, c.err)
		}
	}
	if _, err := Resolver(nil)("a/b"); err == nil || err.Error() != `unknown model provider "a" (known: none)` {
		t.Errorf("empty: %v", err)
	}
}

func TestSplitModel(t *testing.T) {
	p, m, ok := SplitModel("openrouter/meta/llama-3")
	if p != "openrouter" || m != "meta/llama-3" || !ok {
		t.Errorf("got %q %q %v", p, m, ok)
	}
}
