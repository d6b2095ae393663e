package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// modelOptions returns how model nodes find their provider: with a script,
// every "provider/model" name answers from it; otherwise the providers the
// environment configures (envProviders):
//
//   - "openai/…" when OPENAI_API_KEY or OPENAI_BASE_URL is set: any
//     OpenAI-compatible server (OpenAI, Azure OpenAI, Ollama, vLLM, LM
//     Studio, llama.cpp, OpenRouter);
//   - "anthropic/…" when ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL is set:
//     Anthropic's Messages API, or a server that speaks it.
//
// AGUIC_MODEL is the model of nodes that name none.
func modelOptions(script string, getenv func(string) string) (stdlib.Options, error) {
	if script != "" {
		scripted, err := llm.LoadScript(script)
		if err != nil {
			return stdlib.Options{}, err
		}
		return stdlib.Options{Models: anyModel(scripted), DefaultModel: scriptedDefault}, nil
	}
	envs := envProviders()
	providers := map[string]llm.Provider{}
	for _, e := range envs {
		if key, url := getenv(e.keyVar), getenv(e.urlVar); key != "" || url != "" {
			providers[e.name] = e.open(key, url)
		}
	}
	opts := stdlib.Options{DefaultModel: getenv("AGUIC_MODEL"), Models: noModels}
	if len(providers) > 0 {
		opts.Models = configuredModels(providers, envs)
	}
	return opts, nil
}

// envProvider is a model provider that environment variables configure.
type envProvider struct {
	name           string // the provider part of its model names: "openai"
	keyVar, urlVar string // the variables of its API key and of its server
	open           func(key, url string) llm.Provider
}

// envProviders lists the providers the environment can configure.
func envProviders() []envProvider {
	return []envProvider{
		{name: "openai", keyVar: "OPENAI_API_KEY", urlVar: "OPENAI_BASE_URL", open: func(key, url string) llm.Provider {
			return llm.NewOpenAI(llm.OpenAIOptions{APIKey: key, BaseURL: url})
		}},
		{name: "anthropic", keyVar: "ANTHROPIC_API_KEY", urlVar: "ANTHROPIC_BASE_URL", open: func(key, url string) llm.Provider {
			return llm.NewAnthropic(llm.AnthropicOptions{APIKey: key, BaseURL: url})
		}},
	}
}

// configuredModels resolves model names among the configured providers. A
// name whose provider is missing is an error that lists the configured
// ones and says which variable configures the one it names, or the others.
func configuredModels(providers map[string]llm.Provider, envs []envProvider) func(name string) (llm.Provider, error) {
	resolve := llm.Resolver(providers)
	configured := strings.Join(slices.Sorted(maps.Keys(providers)), ", ")
	return func(name string) (llm.Provider, error) {
		p, err := resolve(name)
		if err == nil {
			return p, nil
		}
		prefix, _, ok := llm.SplitModel(name)
		if !ok {
			return nil, err // a malformed name: the error says how to write one
		}
		var others []string
		for _, e := range envs {
			if e.name == prefix {
				return nil, fmt.Errorf("model provider %q is not configured: set %s or %s (configured: %s)", prefix, e.keyVar, e.urlVar, configured)
			}
			if providers[e.name] == nil {
				others = append(others, fmt.Sprintf("%s for %s/<model>", e.keyVar, e.name))
			}
		}
		hint := ""
		if len(others) > 0 {
			hint = "; set " + strings.Join(others, ", ")
		}
		return nil, fmt.Errorf("unknown model provider %q (configured: %s%s)", prefix, configured, hint)
	}
}

// errNoProvider is the error of every model name when no provider is
// configured.
var errNoProvider = errors.New("no model provider is configured: set OPENAI_API_KEY for openai/<model> (and OPENAI_BASE_URL for another OpenAI-compatible server) or ANTHROPIC_API_KEY for anthropic/<model>, or pass --model-script file to answer model calls from a script")

// noModels is the model resolver when nothing is configured.
func noModels(name string) (llm.Provider, error) { return nil, errNoProvider }

// checkModels resolves, before anything runs, the provider of every model
// node that names its model as a literal, and the default model when a
// node names none: a typo or a missing key is an error at start-up, not
// at the first turn. When no provider is configured at all, the error is
// one short paragraph that says how to configure one, not a line per node.
func checkModels(prog *vm.Program, opts stdlib.Options) error {
	var problems []string
	var first string // the place of the first model node that needs a provider
	needy := 0       // model nodes that need a provider
	_, err := opts.Models("any/model")
	noProvider := errors.Is(err, errNoProvider) // nothing is configured at all
	for _, w := range prog.Workflows {
		for _, n := range w.Nodes {
			if n.Spec == nil || n.Spec.Model == nil {
				continue
			}
			name, computed, ok := n.Spec.Model(n)
			if !ok || computed {
				continue
			}
			if name == "" {
				name = opts.DefaultModel
			}
			needy++
			if first == "" {
				first = n.Span.String()
			}
			if name == "" {
				problems = append(problems, fmt.Sprintf("%s: %s node %s names no model, and AGUIC_MODEL, the default model, is not set", n.Span, n.Kind, n.ID))
				continue
			}
			if _, err := opts.Models(name); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s node %s: %v", n.Span, n.Kind, n.ID, err))
			}
		}
	}
	switch {
	case len(problems) == 0:
		return nil
	case noProvider:
		return fmt.Errorf("%d model %s (the first at %s) but no model provider is configured. Either\n"+
			"  - set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible server) or ANTHROPIC_API_KEY,\n"+
			"    and AGUIC_MODEL, such as openai/gpt-4o-mini, for the nodes that name no model; or\n"+
			"  - pass --model-script FILE to answer model calls from a script (workflows/scripts/demo.script answers the examples)",
			needy, needs(needy), first)
	}
	return errors.New("model nodes cannot reach their models:\n  " + strings.Join(problems, "\n  "))
}

// needs is "node needs a model" or its plural.
func needs(n int) string {
	if n == 1 {
		return "node needs a model"
	}
	return "nodes need a model"
}

// environ reads the process environment.
func environ(name string) string { return os.Getenv(name) }
