package compiler_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/mcplock"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

// TestCompileServerToolDefaults checks that a tool implemented by a locked
// server's tool gets the tool's description and input schema, and that
// the schema, compiled into a value, gives back the locked JSON exactly.
func TestCompileServerToolDefaults(t *testing.T) {
	schema := map[string]any{
		"type":     "object",
		"$schema":  "http://json-schema.org/draft-07/schema#",
		"required": []any{"query"},
		"properties": map[string]any{
			"query":  map[string]any{"type": "string", "description": "Words \"quoted\", a tab\t, a newline\n and 日本語 <<not a template>>"},
			"limit":  map[string]any{"type": "integer", "minimum": -1, "maximum": 1e6, "default": 2.5},
			"filter": map[string]any{"type": []any{"object", "null"}, "default": nil, "additionalProperties": false},
			"tags":   map[string]any{"type": "array", "items": map[string]any{"enum": []any{"a", true, 0.125}}},
		},
	}
	lock := &mcplock.File{Servers: map[string]*mcplock.Server{"search": {
		From:  mcplock.Origin{URL: `"https://search.example.com/mcp"`},
		Tools: []mcplock.Tool{{Name: "find.docs/v2", Description: "Find documents", InputSchema: schema}},
	}}}
	data, err := lock.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	src := `wf 1

mcp search {
  url = "https://search.example.com/mcp"
}

workflow w {
  tool find {
    mcp search "find.docs/v2"
  }
  tool described {
    description = "Mine"
    mcp search "find.docs/v2"
    result = $result.text
  }
  flow {
    model {
      tools = [find, described, search]
    }
  }
}
`
	prog, diags := compiler.Compile(stdlib.Registry(),
		compiler.Source{Name: "dir/w.wf", Text: []byte(src)},
		compiler.Source{Name: "dir/" + mcplock.FileName, Text: data})
	if len(diags) > 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	s := prog.Server("search")
	if s == nil || s.Locked == nil || s.File != "dir/w.wf" || s.Span.Start.Line != 3 || s.Command != nil || s.URL == nil {
		t.Fatalf("server = %+v", s)
	}
	w := prog.Workflow("w")
	find, described := w.Tool("find"), w.Tool("described")
	if find.Description != "Find documents" || described.Description != "Mine" {
		t.Errorf("descriptions %q, %q", find.Description, described.Description)
	}
	got, err := vm.EvalConst(find.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := jsonOf(t, got), jsonOf(t, schema); a != b {
		t.Errorf("parameters give\n%s\nwant\n%s", a, b)
	}
	if model := w.Nodes[0]; !reflect.DeepEqual(model.Keys["tools"].Servers, []string{"search"}) || !reflect.DeepEqual(model.Keys["tools"].Tools, []string{"find", "described"}) || model.Keys["tools"].Frontend {
		t.Errorf("tools = %+v", model.Keys["tools"])
	}
}

// jsonOf renders v as canonical JSON, numbers as JSON reads them.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	data, _ = json.Marshal(back)
	return string(data)
}

// TestCompileLockBelongsToItsDirectory checks that a lock locks the
// servers of the files of its own directory only.
func TestCompileLockBelongsToItsDirectory(t *testing.T) {
	lock := []byte(`{"version": 1, "servers": {"a": {"from": {"command": "\"a\""}, "tools": []}, "b": {"from": {"command": "\"b\""}, "tools": []}}}`)
	prog, diags := compiler.Compile(stdlib.Registry(),
		compiler.Source{Name: "one/a.wf", Text: []byte("wf 1\nmcp a {\n  command = \"a\"\n}\n")},
		compiler.Source{Name: "two/b.wf", Text: []byte("wf 1\nmcp b {\n  command = \"b\"\n}\n")},
		compiler.Source{Name: "one/" + mcplock.FileName, Text: lock})
	if prog == nil {
		t.Fatalf("diagnostics: %v", diags)
	}
	if prog.Server("a").Locked == nil || prog.Server("b").Locked != nil {
		t.Errorf("a locked: %v, b locked: %v; want only a", prog.Server("a").Locked != nil, prog.Server("b").Locked != nil)
	}
	if len(diags) != 1 || diags[0].Code != compiler.CodeNotLocked || diags[0].Span.File != "two/b.wf" {
		t.Errorf("diagnostics: %v, want b's not locked", diags)
	}
}

// TestCompileLockInVersion checks that the lock is part of the program's
// version: another lock, another hash.
func TestCompileLockInVersion(t *testing.T) {
	wf := compiler.Source{Name: "a.wf", Text: []byte("wf 1\nmcp a {\n  command = \"a\"\n}\n")}
	lock := func(tools string) compiler.Source {
		return compiler.Source{Name: mcplock.FileName, Text: []byte(`{"version": 1, "servers": {"a": {"from": {"command": "\"a\""}, "tools": [` + tools + `]}}}`)}
	}
	p1, _ := compiler.Compile(stdlib.Registry(), wf, lock(""))
	p2, _ := compiler.Compile(stdlib.Registry(), wf, lock(`{"name": "t", "inputSchema": {}}`))
	if p1 == nil || p2 == nil || p1.Hash == p2.Hash {
		t.Errorf("hashes %v and %v: want two versions", p1, p2)
	}
}
