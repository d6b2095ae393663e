package llm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Providers are the provider parts of "provider/model" names of the model
// APIs this package has clients for: OpenAI's (and the servers compatible
// with it) and Anthropic's. A program may resolve other names (a script
// answers any), but a name that misspells one of these is a mistake the
// compiler reports.
var Providers = []string{"anthropic", "openai"}

// SplitModel splits a model name written "provider/model" at its first
// slash: "openai/gpt-4o-mini" gives "openai" and "gpt-4o-mini",
// "openrouter/meta/llama-3" gives "openrouter" and "meta/llama-3". ok is
// false when either part is empty.
func SplitModel(name string) (provider, model string, ok bool) {
	provider, model, found := strings.Cut(name, "/")
	return provider, model, found && provider != "" && model != ""
}

// Resolver returns a function that finds the provider of a model named
// "provider/model": the entry of providers under the part before the first
// slash. The map is copied.
func Resolver(providers map[string]Provider) func(name string) (Provider, error) {
	providers = maps.Clone(providers)
	known := slices.Sorted(maps.Keys(providers))
	return func(name string) (Provider, error) {
		prefix, _, ok := SplitModel(name)
		if !ok {
			return nil, fmt.Errorf("model %q must be written as \"provider/model\", such as \"openai/gpt-4o-mini\"", name)
		}
		p := providers[prefix]
		if p == nil {
			list := "none"
			if len(known) > 0 {
				list = strings.Join(known, ", ")
			}
			return nil, fmt.Errorf("unknown model provider %q (known: %s)", prefix, list)
		}
		return p, nil
	}
}
