package vm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/vm"
)

// unpacked is what the kind "probe" of TestUnpackKeys read.
type unpacked struct {
	S     string
	E     string
	B     bool
	N     int
	F     float64
	D     time.Duration
	M     map[string]any
	L     []any
	A     any
	Unset string
}

// TestUnpackKeys: every key is read into its variable in one call, with
// the kind's defaults; a value of the wrong type is an error that names
// the key and what it found.
func TestUnpackKeys(t *testing.T) {
	var got unpacked
	r := vm.NewRegistry()
	r.AddKind(&vm.KindSpec{
		Name: "probe", Doc: "Reads its keys.", Example: `probe {}`,
		Keys: []vm.KeySpec{
			{Name: "s", Type: vm.TypeAny}, {Name: "e", Type: vm.TypeAny, Enum: []string{"a", "b"}, Default: "a"},
			{Name: "b", Type: vm.TypeAny, Default: true}, {Name: "n", Type: vm.TypeAny}, {Name: "f", Type: vm.TypeAny},
			{Name: "d", Type: vm.TypeAny}, {Name: "m", Type: vm.TypeAny}, {Name: "l", Type: vm.TypeAny},
			{Name: "a", Type: vm.TypeAny}, {Name: "unset", Type: vm.TypeAny},
		},
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			got = unpacked{Unset: "kept"}
			return vm.Step{}, c.UnpackKeys("s", &got.S, "e", &got.E, "b", &got.B, "n", &got.N, "f", &got.F,
				"d", &got.D, "m", &got.M, "l", &got.L, "a", &got.A, "unset", &got.Unset)
		},
	})
	run := func(body string) error {
		t.Helper()
		src := fmt.Sprintf("wf 1\nworkflow w {\n  flow {\n    probe {\n%s\n    }\n  }\n}\n", body)
		prog, diags := compiler.Compile(r, compiler.Source{Name: "w.wf", Text: []byte(src)})
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		m := &vm.Machine{Program: prog, Registry: r}
		f, err := m.NewFrame("w", nil)
		if err != nil {
			t.Fatal(err)
		}
		o := m.Run(context.Background(), f, nil, vm.Observer{})
		if o.Err != nil {
			return o.Err
		}
		return nil
	}

	if err := run(`s = "x"
      n = 3.0
      f = 2
      d = "1m"
      m = {k: 1}
      l = [1, "two"]
      a = nil`); err != nil {
		t.Fatal(err)
	}
	want := unpacked{S: "x", E: "a", B: true, N: 3, F: 2, D: time.Minute, M: map[string]any{"k": 1}, L: []any{1, "two"}, Unset: "kept"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read %+v, want %+v", got, want)
	}

	for _, tc := range []struct{ body, err string }{
		{`s = 1`, `s must be a string, found an int`},
		{`e = "<<'c'>>"`, `e must be "a" or "b", found "c"`},
		{`b = "yes"`, `b must be true or false, found "yes"`},
		{`n = 1.5`, `n must be a whole number, found a number`},
		{`f = "2"`, `f must be a number, found "2"`},
		{`d = "soon"`, `d expects a positive duration such as "20s", found "soon"`},
		{`d = "-1s"`, `d expects a positive duration such as "20s", found "-1s"`},
		{`m = [1]`, `m must be an object, found a list`},
		{`l = {}`, `l must be a list, found an object`},
	} {
		err := run(tc.body)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.err)
		}
		if e, ok := err.(*vm.Error); !ok || e.Code != vm.ErrNode {
			t.Errorf("%s: %v is not an %s error", tc.body, err, vm.ErrNode)
		}
	}
}
