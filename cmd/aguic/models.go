package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// modelOptions returns how model nodes find their provider: with a script,
// every "provider/model" name answers from it; otherwise the providers the
// environment configures: "openai/…" when OPENAI_API_KEY or
// OPENAI_BASE_URL is set (any OpenAI-compatible server: OpenAI, Azure
// OpenAI, Ollama, vLLM, LM Studio, llama.cpp, OpenRouter). AGUIC_MODEL is
// the model of nodes that name none.
func modelOptions(script string, getenv func(string) string) (stdlib.Options, error) {
	if script != "" {
		scripted, err := llm.LoadScript(script)
		if err != nil {
			return stdlib.Options{}, err
		}
		return stdlib.Options{Models: anyModel(scripted), DefaultModel: scriptedDefault}, nil
	}
	providers := map[string]llm.Provider{}
	if key, url := getenv("OPENAI_API_KEY"), getenv("OPENAI_BASE_URL"); key != "" || url != "" {
		providers["openai"] = llm.NewOpenAI(llm.OpenAIOptions{APIKey: key, BaseURL: url})
	}
	opts := stdlib.Options{DefaultModel: getenv("AGUIC_MODEL"), Models: noModels}
	if len(providers) > 0 {
		opts.Models = llm.Resolver(providers)
	}
	return opts, nil
}

// noModels is the model resolver when nothing is configured.
func noModels(name string) (llm.Provider, error) {
	return nil, errors.New("no model provider is configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible server), or pass --model-script file to answer model calls from a script")
}

// checkModels resolves, before anything runs, the provider of every model
// node that names its model as a literal, and the default model when a
// node names none: a typo or a missing key is an error at start-up, not
// at the first turn.
func checkModels(prog *vm.Program, opts stdlib.Options) error {
	var problems []string
	for _, w := range prog.Workflows {
		for _, n := range w.Nodes {
			if n.Kind != "model" {
				continue
			}
			name := opts.DefaultModel
			if v := n.Keys["model"]; v != nil {
				t := v.Template
				if t == nil || len(t.Parts) != 1 || t.Parts[0].Expr != nil {
					continue // computed at run time
				}
				name = t.Parts[0].Text
			} else if name == "" {
				problems = append(problems, fmt.Sprintf("%s: %s names no model and AGUIC_MODEL is not set", n.Span, n.ID))
				continue
			}
			if _, err := opts.Models(name); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s: %v", n.Span, n.ID, err))
			}
		}
	}
	if len(problems) > 0 {
		return errors.New("model nodes cannot reach their models:\n  " + strings.Join(problems, "\n  "))
	}
	return nil
}

// environ reads the process environment.
func environ(name string) string { return os.Getenv(name) }
