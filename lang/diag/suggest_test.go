package diag

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"say", "say", 0},
		{"sya", "say", 1},   // a swap
		{"esle", "else", 1}, // a swap
		{"fro", "for", 1},
		{"workflw", "workflow", 1},
		{"opneai", "openai", 1},
		{"café", "cafe", 1}, // runes, not bytes
		{"flwo", "flow", 1},
		{"abc", "", 3},
		{"kitten", "sitting", 3},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.b, c.a, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	kinds := []string{"say", "model", "http", "set", "sleep"}
	for _, c := range []struct {
		name, want string
		ok         bool
	}{
		{"sya", "say", true},
		{"modle", "model", true},
		{"htp", "http", true},
		{"say", "", false},        // known: no suggestion
		{"frobnicate", "", false}, // too far from every one
		{"se", "set", true},       // one edit from "set", two from "say"
	} {
		got, _, ok := Closest(c.name, kinds, TypoLimit(c.name))
		if got != c.want || ok != c.ok {
			t.Errorf("Closest(%q) = %q, %v, want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
