package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aguic/aguic/internal/mcptest"
	"github.com/aguic/aguic/mcplock"
)

// sumFlow declares the reference server, run by node from $EVERYTHING.
const sumFlow = `wf 1

mcp everything {
  command = "node"
  args    = ["<<env('EVERYTHING')>>", "stdio"]
}

workflow sum {
  flow {
    mcp everything "get-sum" {
      args = {a: 1, b: 2}
    } -> $sum
    say $sum.text
  }
}
`

// aguic runs the command line and returns its status and output.
func aguic(args ...string) (status int, stdout, stderr string) {
	var out, errs bytes.Buffer
	status = run(args, strings.NewReader(""), &out, &errs)
	return status, out.String(), errs.String()
}

// TestMCPLockCheck: --check prints every way a lock differs from the
// servers and exits 1; locking again makes it up to date, with the bytes
// of the first lock.
func TestMCPLockCheck(t *testing.T) {
	_, args := mcptest.Everything(t)
	t.Setenv("EVERYTHING", args[0])
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("flows", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("flows", "sum.wf"), []byte(sumFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join("flows", mcplock.FileName)
	if status, _, stderr := aguic("mcp", "lock", "flows"); status != exitOK {
		t.Fatalf("lock: status %d: %s", status, stderr)
	}
	first, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}

	// The lock as it would be had the server changed since: get-env is
	// new, retired is gone, echo's description and get-sum's schema
	// changed, the declaration's args too, and a server of the lock is
	// no longer declared.
	f, err := mcplock.Parse(first)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Servers["everything"]
	s.From.Args = `["server.js", "stdio"]`
	s.Tools = slices.DeleteFunc(s.Tools, func(tool mcplock.Tool) bool { return tool.Name == "get-env" })
	s.Tool("echo").Description = "Echoes"
	sum := s.Tool("get-sum").InputSchema
	sum["properties"].(map[string]any)["b"] = map[string]any{"type": "string"}
	sum["required"] = []any{"a"}
	s.Tools = append(s.Tools, mcplock.Tool{Name: "retired", InputSchema: map[string]any{"type": "object"}})
	f.Servers["gone"] = &mcplock.Server{From: mcplock.Origin{URL: `"https://gone.example.com/mcp"`}}
	stale, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lockPath, stale, 0o644); err != nil {
		t.Fatal(err)
	}

	status, stdout, stderr := aguic("mcp", "lock", "--check", "flows")
	want := `flows/mcp.lock.json: mcp server everything: its args changed
flows/mcp.lock.json: mcp server everything: tool "echo": description changed
flows/mcp.lock.json: mcp server everything: tool "get-env": added
flows/mcp.lock.json: mcp server everything: tool "get-sum": input schema changed at /properties/b/type, /required/1
flows/mcp.lock.json: mcp server everything: tool "retired": removed
flows/mcp.lock.json: mcp server gone: locked but no longer declared
flows/mcp.lock.json: out of date: run ` + "`aguic mcp lock`" + `
`
	if status != exitFound || stdout != want || stderr != "" {
		t.Errorf("--check: status %d, stdout:\n%s\nstderr:\n%s\nwant status 1, stdout:\n%s", status, stdout, stderr, want)
	}
	if data, _ := os.ReadFile(lockPath); !bytes.Equal(data, stale) {
		t.Errorf("--check wrote the lock")
	}

	if status, _, stderr := aguic("mcp", "lock", "flows"); status != exitOK {
		t.Fatalf("lock again: status %d: %s", status, stderr)
	}
	if data, _ := os.ReadFile(lockPath); !bytes.Equal(data, first) {
		t.Errorf("the lock written again differs from the first:\n%s", data)
	}
	if status, stdout, _ := aguic("mcp", "lock", "--check", "flows"); status != exitOK || stdout != "flows/mcp.lock.json: up to date\n" {
		t.Errorf("--check after the lock: status %d, %q", status, stdout)
	}

	// A lock that is missing or not a lock.
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	if status, stdout, _ := aguic("mcp", "lock", "--check", "flows"); status != exitFound || stdout != "flows/mcp.lock.json: missing: run `aguic mcp lock`\n" {
		t.Errorf("--check without a lock: status %d, %q", status, stdout)
	}
	if err := os.WriteFile(lockPath, []byte(`{"version": 9}`), 0o644); err != nil {
		t.Fatal(err)
	}
	status, stdout, _ = aguic("mcp", "lock", "--check", "flows")
	if status != exitFound || !strings.HasPrefix(stdout, "flows/mcp.lock.json: MCP lock file version 9, want 1") {
		t.Errorf("--check of a lock of another version: status %d, %q", status, stdout)
	}
}

// TestMCPExitStatus: a server that cannot be reached is status 2, errors
// in the sources 1.
func TestMCPExitStatus(t *testing.T) {
	t.Chdir(t.TempDir())
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("broken/b.wf", "wf 1\n\nmcp broken {\n  command = \"aguic-no-such-command\"\n}\n")
	write("bad/b.wf", "wf 1\n\nmcp bad {\n  url = \"https://example.com/mcp\"\n  args = [\"x\"]\n}\n")
	for _, tt := range []struct {
		args []string
		want int
	}{
		{[]string{"mcp", "lock", "broken"}, exitUsage},
		{[]string{"mcp", "lock", "--check", "broken"}, exitUsage},
		{[]string{"mcp", "tools", "broken"}, exitUsage},
		{[]string{"mcp", "lock", "bad"}, exitFound},
		{[]string{"mcp", "lock", "missing"}, exitUsage},
	} {
		if status, _, stderr := aguic(tt.args...); status != tt.want {
			t.Errorf("aguic %s: status %d, want %d; stderr:\n%s", strings.Join(tt.args, " "), status, tt.want, stderr)
		}
	}
}
