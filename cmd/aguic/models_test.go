package main

import (
	"strings"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
)

func TestModelOptions(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(name string) string { return vars[name] }
	}
	opts, err := modelOptions("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"} {
		_, err := opts.Models(name)
		if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
			t.Errorf("%s, no provider configured: %v", name, err)
		}
	}
	opts, err = modelOptions("", env(map[string]string{"OPENAI_API_KEY": "k", "AGUIC_MODEL": "openai/gpt-4o"}))
	if err != nil {
		t.Fatal(err)
	}
	if opts.DefaultModel != "openai/gpt-4o" {
		t.Errorf("default model %q, want AGUIC_MODEL's", opts.DefaultModel)
	}
	if _, err := modelOptions("/no/such/script", env(nil)); err == nil {
		t.Error("a missing script must be an error")
	}

	for _, c := range []struct {
		name string
		vars map[string]string
		ok   []string          // model names that resolve
		fail map[string]string // model names that do not, and their error
	}{{
		name: "openai",
		vars: map[string]string{"OPENAI_API_KEY": "k"},
		ok:   []string{"openai/gpt-4o-mini", "openai/meta/llama-3"},
		fail: map[string]string{
			"anthropic/claude-sonnet-4-5": `model provider "anthropic" is not configured: set ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL (configured: openai)`,
			"gemini/pro":                  `unknown model provider "gemini" (configured: openai; set ANTHROPIC_API_KEY for anthropic/<model>)`,
			"gpt-4o":                      `model "gpt-4o" must be written as "provider/model"`,
		},
	}, {
		name: "anthropic",
		vars: map[string]string{"ANTHROPIC_API_KEY": "k"},
		ok:   []string{"anthropic/claude-sonnet-4-5"},
		fail: map[string]string{
			"openai/gpt-4o": `model provider "openai" is not configured: set OPENAI_API_KEY or OPENAI_BASE_URL (configured: anthropic)`,
		},
	}, {
		name: "a local server without a key",
		vars: map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"},
		ok:   []string{"anthropic/claude-haiku-4-5", "openai/llama3"},
	}, {
		name: "both",
		vars: map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"},
		ok:   []string{"openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"},
		fail: map[string]string{
			"gemini/pro": `unknown model provider "gemini" (configured: anthropic, openai)`,
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			opts, err := modelOptions("", env(c.vars))
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range c.ok {
				if p, err := opts.Models(name); err != nil || p == nil {
					t.Errorf("%s: %v", name, err)
				}
			}
			for name, want := range c.fail {
				if _, err := opts.Models(name); err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: got %v, want %q", name, err, want)
				}
			}
		})
	}
	opts, _ = modelOptions("", env(map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}))
	o, _ := opts.Models("openai/gpt-4o-mini")
	a, _ := opts.Models("anthropic/claude-sonnet-4-5")
	if _, ok := o.(*llm.OpenAI); !ok {
		t.Errorf("openai/… goes to %T", o)
	}
	if _, ok := a.(*llm.Anthropic); !ok {
		t.Errorf("anthropic/… goes to %T", a)
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
    d: model { model = "anthropic/claude-sonnet-4-5"; prompt = "w" }
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
	want := "3 model nodes need a model (the first at m.wf:4:5) but no model provider is configured. Either\n" +
		"  - set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible server) or ANTHROPIC_API_KEY,\n" +
		"    and AGUIC_MODEL, such as openai/gpt-4o-mini, for the nodes that name no model; or\n" +
		"  - pass --model-script FILE to answer model calls from a script (workflows/scripts/demo.script answers the examples)"
	if err.Error() != want {
		t.Errorf("with nothing configured: got\n%v\nwant\n%s", err, want)
	}
	opts, _ = modelOptions("", func(name string) string { return map[string]string{"OPENAI_API_KEY": "k"}[name] })
	err = checkModels(prog, opts)
	for _, want := range []string{"m.wf:5:5: model node b names no model, and AGUIC_MODEL, the default model, is not set", `m.wf:7:5: model node d: model provider "anthropic" is not configured`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if err == nil || strings.Contains(err.Error(), " c:") || strings.Contains(err.Error(), " a:") {
		t.Errorf("only b and d fail; a model computed at run time cannot be checked before:\n%v", err)
	}
	opts, _ = modelOptions("", func(name string) string {
		return map[string]string{"OPENAI_API_KEY": "k", "AGUIC_MODEL": "openai/gpt-4o"}[name]
	})
	err = checkModels(prog, opts)
	want = `m.wf:7:5: model node d: model provider "anthropic" is not configured: set ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL (configured: openai)`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), " a:") || strings.Contains(err.Error(), " b ") {
		t.Errorf("with an OpenAI key and a default model: got\n%v\nwant only\n%s", err, want)
	}
	// A provider but no default model: the nodes that name none say so.
	nameless, diags := compiler.Compile(stdlib.Registry(), compiler.Source{Name: "n.wf", Text: []byte("wf 1\nworkflow w {\n  flow {\n    b: model { prompt = \"y\" }\n  }\n}\n")})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	opts, _ = modelOptions("", func(name string) string {
		return map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}[name]
	})
	want = "model nodes cannot reach their models:\n  n.wf:4:5: model node b names no model, and AGUIC_MODEL, the default model, is not set"
	if err := checkModels(nameless, opts); err == nil || err.Error() != want {
		t.Errorf("with a provider and no default model: got\n%v\nwant\n%s", err, want)
	}
	opts, _ = modelOptions("", func(name string) string {
		return map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "AGUIC_MODEL": "openai/gpt-4o"}[name]
	})
	if err := checkModels(prog, opts); err != nil {
		t.Errorf("with both keys and a default model: %v", err)
	}
}
