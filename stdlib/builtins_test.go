package stdlib

import (
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/aguic/aguic/vm"
	"github.com/expr-lang/expr"
)

// testRegistry returns a registry whose env reads a fixed map instead of
// the process environment.
func testRegistry() *vm.Registry {
	vars := map[string]string{"ORDERS_URL": "https://orders.example"}
	r := vm.NewRegistry()
	RegisterWith(r, Options{Getenv: func(name string) string { return vars[name] }})
	return r
}

// runtimeEnv holds context roots of types the checker cannot see (they are
// compiled without an environment), so their errors happen at run time.
func runtimeEnv() map[string]any {
	return map[string]any{
		"$one":   1,
		"$two":   2.0,
		"$half":  1.5,
		"$nan":   math.NaN(),
		"$fn":    func() {},
		"$list":  []any{"a", "b", "c"},
		"$words": []string{"x", "y", "z"},
		"$str":   "abc",
	}
}

func TestBuiltins(t *testing.T) {
	r := testRegistry()
	opts := r.ExprOptions()
	tests := []struct {
		src        string
		want       any
		compileErr string // substring of the compile error
		runErr     string // substring of the run-time error
	}{
		// env
		{src: `env("ORDERS_URL")`, want: "https://orders.example"},
		{src: `env("UNSET_VARIABLE")`, want: ""},
		{src: `env("")`, runErr: "env: empty variable name"},
		{src: `env($one)`, runErr: "env: expected a string name, found int"},
		{src: `env()`, compileErr: "not enough arguments to call env"},
		{src: `env("A", "B")`, compileErr: "too many arguments to call env"},
		{src: `env(1)`, compileErr: "cannot use int as argument"},

		// json
		{src: `json({a: 1})`, want: `{"a":1}`},
		{src: `json({b: 1, a: [true, nil, "x<y>&"], c: {z: 1.5, y: "q\"uote"}})`, want: `{"a":[true,null,"x<y>&"],"b":1,"c":{"y":"q\"uote","z":1.5}}`},
		{src: `json("line\nbreak")`, want: `"line\nbreak"`},
		{src: `json(nil)`, want: `null`},
		{src: `json(1e21)`, want: `1e+21`},
		{src: `json([])`, want: `[]`},
		{src: `json({})`, want: `{}`},
		{src: `json($nan)`, runErr: "json: cannot encode NaN as JSON"},
		{src: `json({a: [1, $nan]})`, runErr: "json: cannot encode NaN as JSON at .a[1]"},
		{src: `json({"odd key": $fn})`, runErr: `json: cannot encode func() as JSON: unsupported type: func() at ["odd key"]`},
		{src: `json()`, compileErr: "not enough arguments to call json"},
		{src: `json(1, 2)`, compileErr: "too many arguments to call json"},

		// parse_json
		{src: `parse_json('{"a": [1, 2.5, "x", true, null], "b": {}}')`, want: map[string]any{"a": []any{1.0, 2.5, "x", true, nil}, "b": map[string]any{}}},
		{src: `parse_json(' "text" ')`, want: "text"},
		{src: `parse_json('null')`, want: nil},
		{src: `parse_json('[')`, runErr: "parse_json: invalid JSON at offset 1: unexpected end of JSON input"},
		{src: `parse_json('')`, runErr: "parse_json: invalid JSON at offset 0: unexpected end of JSON input"},
		{src: `parse_json('{"a": 1} x')`, runErr: "parse_json: invalid JSON at offset 10: invalid character 'x' after top-level value"},
		{src: `parse_json($one)`, runErr: "parse_json: expected a string s, found int"},
		{src: `parse_json(1)`, compileErr: "cannot use int as argument"},
		{src: `parse_json()`, compileErr: "not enough arguments to call parse_json"},

		// uuid
		{src: `uuid(1)`, compileErr: "too many arguments to call uuid"},
		{src: `uuid() != uuid()`, want: true},

		// tail
		{src: `tail([1, 2, 3], 2)`, want: []any{2, 3}},
		{src: `tail([1, 2, 3], 5)`, want: []any{1, 2, 3}},
		{src: `tail([1, 2, 3], 0)`, want: []any{}},
		{src: `tail([], 2)`, want: []any{}},
		{src: `tail(nil, 2)`, want: []any{}},
		{src: `tail($list, $two)`, want: []any{"b", "c"}},
		{src: `tail($words, 1)`, want: []any{"z"}},
		{src: `tail(split("a,b,c", ","), 2)`, want: []any{"b", "c"}},
		{src: `len(tail([1, 2, 3], 2))`, want: 2},
		{src: `tail([1, 2, 3], -1)`, runErr: "tail: n must be 0 or more, found -1"},
		{src: `tail($list, $half)`, runErr: "tail: expected a whole number n, found number 1.5"},
		{src: `tail($list, $str)`, runErr: "tail: expected a whole number n, found string"},
		{src: `tail($str, 1)`, runErr: "tail: expected a list, found string"},
		{src: `tail([1])`, compileErr: "not enough arguments to call tail"},
		{src: `tail([1], 1, 1)`, compileErr: "too many arguments to call tail"},
		{src: `tail([1], "x")`, compileErr: "cannot use string as argument"},

		// text
		{src: `text("as is")`, want: "as is"},
		{src: `text(nil)`, want: ""},
		{src: `text(1)`, want: "1"},
		{src: `text(1.5)`, want: "1.5"},
		{src: `text(true)`, want: "true"},
		{src: `text({b: 1, a: ["x"]})`, want: `{"a":["x"],"b":1}`},
		{src: `text([1, "<b>"])`, want: `[1,"<b>"]`},
		{src: `text($nan)`, runErr: "text: cannot encode NaN as JSON"},
		{src: `text()`, compileErr: "not enough arguments to call text"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			program, err := expr.Compile(tt.src, opts...)
			if tt.compileErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.compileErr) {
					t.Fatalf("compile error = %v, want one containing %q", err, tt.compileErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			got, err := expr.Run(program, runtimeEnv())
			if tt.runErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.runErr) {
					t.Fatalf("run error = %v, want one containing %q", err, tt.runErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestBuiltinsTypedEnv checks calls against an environment whose types the
// checker knows, as the compiler's is when a context value's type is known.
func TestBuiltinsTypedEnv(t *testing.T) {
	env := map[string]any{"$name": "ORDERS_URL", "$count": 3, "$words": []string{"a", "b"}}
	opts := append(testRegistry().ExprOptions(), expr.Env(env))
	tests := []struct {
		src        string
		compileErr string
	}{
		{src: `env($name)`},
		{src: `tail($words, $count)`},
		{src: `text($words) + json($count)`},
		{src: `env($count)`, compileErr: "cannot use int as argument"},
		{src: `parse_json($words)`, compileErr: "cannot use []string as argument"},
		{src: `tail($words, $name)`, compileErr: "cannot use string as argument"},
		{src: `lower(json($count))`},
		{src: `uuid() + 1`, compileErr: "invalid operation"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := expr.Compile(tt.src, opts...)
			switch {
			case tt.compileErr == "" && err != nil:
				t.Fatalf("compile: %v", err)
			case tt.compileErr != "" && (err == nil || !strings.Contains(err.Error(), tt.compileErr)):
				t.Fatalf("compile error = %v, want one containing %q", err, tt.compileErr)
			}
		})
	}
}

func TestUUID(t *testing.T) {
	fn := Registry().Builtin("uuid").Fn
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[any]bool{}
	for range 100 {
		id, err := fn()
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := id.(string); !v4.MatchString(s) {
			t.Fatalf("uuid() = %#v, want a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("uuid() returned %v twice", id)
		}
		seen[id] = true
	}
}

// TestTailCopies checks that tail's result does not share memory with its
// argument, which may be context data.
func TestTailCopies(t *testing.T) {
	list := make([]any, 3, 10)
	list[0], list[1], list[2] = "a", "b", "c"
	got, err := tail(list, 2)
	if err != nil {
		t.Fatal(err)
	}
	out := got.([]any)
	out[0] = "changed"
	_ = append(out, "appended")
	if list[1] != "b" || list[:4][3] != nil {
		t.Errorf("tail shares memory with its argument: %v", list[:4])
	}
}

func TestEnvDefaultsToProcess(t *testing.T) {
	t.Setenv("AGUIC_STDLIB_TEST", "from process")
	got, err := Registry().Builtin("env").Fn("AGUIC_STDLIB_TEST")
	if err != nil || got != "from process" {
		t.Errorf(`env("AGUIC_STDLIB_TEST") = %#v, %v; want "from process"`, got, err)
	}
}

func TestBuiltinDocs(t *testing.T) {
	r := Registry()
	var names []string
	for _, b := range r.Builtins() {
		names = append(names, b.Name)
		if b.Doc == "" || b.Fn == nil || len(b.Types) == 0 {
			t.Errorf("builtin %q: needs a Doc, a Fn and Types", b.Name)
		}
		if !strings.HasPrefix(b.Signature, b.Name+"(") {
			t.Errorf("builtin %q: signature %q does not start with its name", b.Name, b.Signature)
		}
	}
	want := []string{"env", "json", "parse_json", "tail", "text", "uuid"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("builtins = %q, want %q", names, want)
	}
}

// twentyKeys is a context-like object of 20 keys for the benchmarks.
func twentyKeys() map[string]any {
	m := map[string]any{}
	for i, k := range strings.Fields("id name email role status created updated count score active tags address phone notes total currency items priority source owner") {
		switch i % 5 {
		case 0:
			m[k] = "value of " + k
		case 1:
			m[k] = float64(i) * 1.25
		case 2:
			m[k] = i%2 == 0
		case 3:
			m[k] = []any{"a", "b", float64(i)}
		case 4:
			m[k] = map[string]any{"nested": k, "n": float64(i)}
		}
	}
	return m
}

func BenchmarkJSON(b *testing.B) {
	fn := Registry().Builtin("json").Fn
	m := twentyKeys()
	for b.Loop() {
		if _, err := fn(m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkText(b *testing.B) {
	fn := Registry().Builtin("text").Fn
	m := twentyKeys()
	for b.Loop() {
		if _, err := fn(m); err != nil {
			b.Fatal(err)
		}
	}
}
