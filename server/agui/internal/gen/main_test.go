package main

import (
	"bytes"
	"os"
	"testing"
)

// TestUpToDate fails when a generated file is not what events.go makes
// now.
func TestUpToDate(t *testing.T) {
	files, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		got, err := os.ReadFile(f.path)
		if err != nil || !bytes.Equal(got, f.src) {
			t.Errorf("%s is stale: run go generate ./server/agui (%v)", f.path, err)
		}
	}
}

// TestWrite pins the code of every kind of field.
func TestWrite(t *testing.T) {
	tests := []struct {
		f    wireField
		want string // "" for an error
	}{
		{wireField{name: "Base", typ: "Base", embedded: true}, ""},
		{wireField{name: "_", typ: "struct{}", tag: `agui:"role=reasoning"`}, `o.str("role", "reasoning")`},
		{wireField{name: "_", typ: "struct{}"}, ""},
		{wireField{name: "ID", typ: "string", tag: `json:"id"`}, `o.str("id", x.ID)`},
		{wireField{name: "ID", typ: "string", tag: `json:"id,omitempty"`}, `o.optStr("id", x.ID)`},
		{wireField{name: "N", typ: "int64", tag: `json:"n,omitempty"`}, `o.optInteger("n", x.N)`},
		{wireField{name: "B", typ: "*bool", tag: `json:"b,omitempty"`}, "if x.B != nil {\no.field(\"b\", *x.B)\n}"},
		{wireField{name: "V", typ: "any", tag: `json:"v"`}, `o.field("v", x.V)`},
		{wireField{name: "V", typ: "any", tag: `json:"v,omitempty"`}, `o.optField("v", x.V)`},
		{wireField{name: "V", typ: "any", tag: `json:"v" agui:"object"`}, `o.field("v", emptyObject(x.V))`},
		{wireField{name: "V", typ: "any", tag: `json:"v,omitempty" agui:"object"`}, ""},
		{wireField{name: "M", typ: "map[string]any", tag: `json:"m,omitzero"`}, `o.optField("m", x.M)`},
		{wireField{name: "S", typ: "[]string", tag: `json:"s,omitempty"`}, "if len(x.S) > 0 {\no.field(\"s\", x.S)\n}"},
		{wireField{name: "L", typ: "[]PatchOp", tag: `json:"l"`}, `list(o, "l", x.L)`},
		{wireField{name: "L", typ: "[]TokenUsage", tag: `json:"l,omitempty"`}, "if len(x.L) > 0 {\nlist(o, \"l\", x.L)\n}"},
		{wireField{name: "P", typ: "*Outcome", tag: `json:"p,omitempty"`}, "if x.P != nil {\no.marshal(\"p\", x.P)\n}"},
		{wireField{name: "P", typ: "*Outcome", tag: `json:"p"`}, ""},
		{wireField{name: "C", typ: "Content", tag: `json:"c"`}, `o.marshal("c", x.C)`},
		{wireField{name: "C", typ: "Content", tag: `json:"c,omitempty"`}, ""},
		{wireField{name: "F", typ: "float64", tag: `json:"f"`}, ""},
		{wireField{name: "F", typ: "string"}, ""},
	}
	for _, tt := range tests {
		got, err := tt.f.write()
		if tt.want == "" {
			if err == nil {
				t.Errorf("%s %s %s: %q, want an error", tt.f.name, tt.f.typ, tt.f.tag, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s %s %s:\n got %q, %v\nwant %q", tt.f.name, tt.f.typ, tt.f.tag, got, err, tt.want)
		}
	}
	if got := constName("TextMessageStartEvent"); got != "TypeTextMessageStart" {
		t.Errorf("constName = %s", got)
	}
	for goName, want := range map[string]string{"TextMessageStartEvent": "TEXT_MESSAGE_START", "RunErrorEvent": "RUN_ERROR", "CustomEvent": "CUSTOM"} {
		if got := wireName(goName); got != want {
			t.Errorf("wireName(%s) = %s, want %s", goName, got, want)
		}
	}
}
