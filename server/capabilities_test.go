package server_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// capabilitiesSchema is the strict JSON Schema of AG-UI's AgentCapabilities
// (testdata/capabilities/schema.mjs writes it from @ag-ui/core 1.0.0).
func capabilitiesSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "capabilities", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("capabilities.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("capabilities.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// TestCapabilitiesSchema validates the capabilities of every test
// workflow against AG-UI's schema, and checks what the nodes give.
func TestCapabilitiesSchema(t *testing.T) {
	sch := capabilitiesSchema(t)
	// The schema has teeth: a misspelt capability fails.
	var wrong any = map[string]any{"transport": map[string]any{"streming": true}}
	if err := sch.Validate(wrong); err == nil {
		t.Fatal("the schema accepts an unknown key")
	}
	caps := map[string]map[string]any{}
	for _, glob := range []string{filepath.Join("testdata", "*.wf"), filepath.Join("testdata", "hooks", "*.wf")} {
		e := newEnvOf(t, glob, nil)
		var list []map[string]any
		decode(t, e.get("/agui/workflows"), &list)
		for _, w := range list {
			id := str(w["id"])
			resp := e.get("/agui/workflows/" + id)
			var one struct {
				Capabilities json.RawMessage `json:"capabilities"`
			}
			decode(t, resp, &one)
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(one.Capabilities))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(v); err != nil {
				t.Errorf("%s: the capabilities %s do not validate: %v", id, one.Capabilities, err)
			}
			var m map[string]any
			json.Unmarshal(one.Capabilities, &m)
			caps[id] = m
		}
	}
	get := func(id, path string) any {
		var v any = caps[id]
		for _, k := range strings.Split(path, ".") {
			v = v.(map[string]any)[k]
		}
		return v
	}
	for _, tc := range []struct {
		id, path string
		want     any
	}{
		{"vision", "output.structuredOutput", true},
		{"vision", "multimodal.input.image", true},
		{"vision", "multimodal.input.audio", false},
		{"echo", "output.structuredOutput", false},
		{"echo", "multimodal.input.image", false},
		{"echo", "transport.resumable", true},
		{"echo", "transport.websocket", false},
		{"echo", "execution.maxIterations", 1000.0},
		{"echo", "execution.maxExecutionTime", 3600000.0},
		{"echo", "execution.codeExecution", false},
	} {
		if got := get(tc.id, tc.path); got != tc.want {
			t.Errorf("%s: %s = %v, want %v", tc.id, tc.path, got, tc.want)
		}
	}
}
