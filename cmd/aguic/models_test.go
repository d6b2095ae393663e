package main

import (
	"strings"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/stdlib"
)

func TestModelOptions(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(name string) string { return vars[name] }
	}
	opts, err := modelOptions("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := opts.Models("openai/gpt-4o-mini"); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("no provider configured: %v", err)
	}
	opts, err = modelOptions("", env(map[string]string{"OPENAI_API_KEY": "k", "AGUIC_MODEL": "openai/gpt-4o"}))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := opts.Models("openai/gpt-4o-mini"); err != nil || p == nil {
		t.Errorf("openai with a key: %v", err)
	}
	if _, err := opts.Models("anthropic/claude"); err == nil || !strings.Contains(err.Error(), `unknown model provider "anthropic"`) {
		t.Errorf("an unknown provider: %v", err)
	}
	if opts.DefaultModel != "openai/gpt-4o" {
		t.Errorf("default model %q, want AGUIC_MODEL's", opts.DefaultModel)
	}
	if _, err := modelOptions("/no/such/script", env(nil)); err == nil {
		t.Error("a missing script must be an error")
	}
}

// TestCheckModels: model nodes whose provider cannot be reached are found
// before the server starts, each with its place in the source.
func TestCheckModels(t *testing.T) {
	src := `wf 1
workflow w {
  flow {
    a: model { model = "openai/gpt-4o-mini"; prompt = "x" }
    b: model { prompt = "y" }
    c: model { model = "<<$agent.state.model>>"; prompt = "z" }
  }
}
`
	prog, diags := compiler.Compile(stdlib.Registry(), compiler.Source{Name: "m.wf", Text: []byte(src)})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	opts, _ := modelOptions("", func(string) string { return "" })
	err := checkModels(prog, opts)
	if err == nil {
		t.Fatal("no provider and no default model must be an error")
	}
	for _, want := range []string{"m.wf:4:5: a: ", "OPENAI_API_KEY", "m.wf:5:5: b names no model and AGUIC_MODEL is not set"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), " c:") {
		t.Errorf("a model computed at run time cannot be checked before:\n%v", err)
	}
	opts, _ = modelOptions("", func(name string) string {
		return map[string]string{"OPENAI_API_KEY": "k", "AGUIC_MODEL": "openai/gpt-4o"}[name]
	})
	if err := checkModels(prog, opts); err != nil {
		t.Errorf("with a key and a default model: %v", err)
	}
}
