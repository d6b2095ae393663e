package vm_test

import (
	"testing"

	"github.com/aguic/aguic/mcplock"
	"github.com/aguic/aguic/vm"
)

// TestServerOrigin checks that a declaration's origin is its source text
// with each line trimmed, so that only a change of what it says makes a
// lock stale, not a change of layout.
func TestServerOrigin(t *testing.T) {
	s := &vm.Server{
		Command: &vm.Value{Source: `"npx"`},
		Args:    &vm.Value{Source: "[\n      \"-y\",   \n  \"pkg\"\n    ]"},
	}
	want := mcplock.Origin{Command: `"npx"`, Args: "[\n\"-y\",\n\"pkg\"\n]"}
	if got := s.Origin(); got != want {
		t.Errorf("Origin() = %+v, want %+v", got, want)
	}
	remote := &vm.Server{URL: &vm.Value{Source: " \"https://mcp.example.com/<<env('P')>>\" "}}
	if got := remote.Origin(); got != (mcplock.Origin{URL: "\"https://mcp.example.com/<<env('P')>>\""}) {
		t.Errorf("Origin() = %+v", got)
	}
}
