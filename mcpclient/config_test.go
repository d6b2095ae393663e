package mcpclient_test

import (
	"context"
	"testing"

	"github.com/aguic/aguic/internal/mcptest"
	"github.com/aguic/aguic/vm"
)

// TestDeclarationErrors: values of a declaration that cannot be used are
// errors that name the server and the key, before anything starts.
func TestDeclarationErrors(t *testing.T) {
	stdio := func(f func(s *vm.Server)) *vm.Server {
		s := mcptest.Stdio("tools", "aguic-never-started")
		f(s)
		return s
	}
	tests := []struct {
		s    *vm.Server
		want string
	}{
		{stdio(func(s *vm.Server) { s.Command = mcptest.Value([]any{"npx"}) }),
			"mcp server tools: command must be a string, found a list"},
		{stdio(func(s *vm.Server) { s.Command = mcptest.Value("") }),
			"mcp server tools: command is empty"},
		{stdio(func(s *vm.Server) { s.Args = mcptest.Value("-y") }),
			`mcp server tools: args must be a list of strings, found "-y"`},
		{stdio(func(s *vm.Server) { s.Args = mcptest.Value([]any{"-y", 3}) }),
			"mcp server tools: args[1] must be a string, found an int"},
		{stdio(func(s *vm.Server) { s.Env = mcptest.Value([]any{"A=1"}) }),
			"mcp server tools: env must be an object of strings, found a list"},
		{stdio(func(s *vm.Server) { s.Env = mcptest.Value(map[string]any{"A": "1", "B": []any{}}) }),
			"mcp server tools: env.B must be a string, found a list"},
		{stdio(func(s *vm.Server) { s.Backoff = "8s..1s" }),
			"mcp server tools: backoff: longest wait 1s is shorter than the first 8s"},
		{stdio(func(s *vm.Server) { s.URL = mcptest.Value("http://x") }),
			"mcp server tools: declares neither command nor url, or both"},
		{mcptest.HTTP("remote", "ftp://example.com", nil),
			`mcp server remote: url must start with http:// or https://, found "ftp://example.com"`},
	}
	p, _ := newPool(t)
	for _, tt := range tests {
		_, err := p.Call(context.Background(), tt.s, "echo", nil)
		if err == nil || err.Error() != tt.want {
			t.Errorf("err %v\nwant %s", err, tt.want)
		}
	}
}
