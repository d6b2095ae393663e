package main

import (
	"slices"
	"testing"

	"github.com/aguic/aguic/stdlib/llm"
)

// TestEnvProvidersKnown checks that every provider the environment can
// configure is one the compiler knows (llm.Providers), so that a
// misspelling of it is reported before the run.
func TestEnvProvidersKnown(t *testing.T) {
	for _, e := range envProviders() {
		if !slices.Contains(llm.Providers, e.name) {
			t.Errorf("provider %q is configured by %s but missing from llm.Providers", e.name, e.keyVar)
		}
	}
}
