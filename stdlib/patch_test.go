package stdlib

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/vm"
)

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return vm.Normalize(v)
}

func encode(t testing.TB, v any) string {
	t.Helper()
	s, err := encodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkPlan checks that a client holding base ends with cur after plan.
func checkPlan(t testing.TB, base, cur any, plan syncPlan) {
	t.Helper()
	if !plan.Changed {
		if !vm.Same(base, cur) {
			t.Fatalf("no change planned from %s to %s", encode(t, base), encode(t, cur))
		}
		return
	}
	if !vm.Same(plan.Base, cur) {
		t.Fatalf("new baseline %s, want %s", encode(t, plan.Base), encode(t, cur))
	}
	if plan.Snapshot {
		return
	}
	got, err := applyOps(base, plan.Patch)
	if err != nil {
		t.Fatalf("apply %s to %s: %v", encode(t, plan.Patch), encode(t, base), err)
	}
	if !vm.Same(got, cur) {
		t.Fatalf("%s applied to %s gives %s, want %s", encode(t, plan.Patch), encode(t, base), encode(t, got), encode(t, cur))
	}
	if l, _ := jsonLen(cur); l <= len(encode(t, plan.Patch)) {
		t.Fatalf("patch %s is no shorter than the snapshot %s", encode(t, plan.Patch), encode(t, cur))
	}
}

func TestDiffSync(t *testing.T) {
	text := `"` + strings.Repeat("x", 60) + `"`
	tests := []struct {
		base, cur string
		only      bool
		want      string // "", "snapshot" or the patch
	}{
		{base: `{"a": 1}`, cur: `{"a": 1}`},
		{base: `{"a": 1}`, cur: `{"a": 1.0}`},
		{base: `null`, cur: `null`},
		{base: `{"a": 1}`, cur: `{"a": 1}`, only: true},
		{base: `{"a": 1}`, cur: `{"a": 2}`, only: true, want: "snapshot"},
		{base: `{"a": 1}`, cur: `[1]`, want: "snapshot"},
		{base: `null`, cur: `{}`, want: "snapshot"},
		{base: `{"a": 1}`, cur: `null`, want: "snapshot"},
		{base: `1`, cur: `2`, want: "snapshot"},
		{base: `{"a": 1}`, cur: `{"a": 2}`, want: "snapshot"},
		{base: `{"t": ` + text + `, "a": 1}`, cur: `{"t": ` + text + `, "a": 2}`, want: `[{"op":"replace","path":"/a","value":2}]`},
		{base: `{"t": ` + text + `, "a": {"b": [1, 2], "c": true}}`, cur: `{"t": ` + text + `, "a": {"b": [1, 3], "c": true, "d": null}}`,
			want: `[{"op":"replace","path":"/a/b/1","value":3},{"op":"add","path":"/a/d","value":null}]`},
		{base: `{"t": ` + text + `, "a/b": 1, "c~d": 1}`, cur: `{"t": ` + text + `, "a/b": 2}`,
			want: `[{"op":"replace","path":"/a~1b","value":2},{"op":"remove","path":"/c~0d"}]`},
		{base: `[` + text + `, 1, 2]`, cur: `[` + text + `, 1]`, want: `[{"op":"remove","path":"/2"}]`},
		{base: `{"t": ` + text + `, "l": [1]}`, cur: `{"t": ` + text + `, "l": {"0": 1}}`, want: `[{"op":"replace","path":"/l","value":{"0":1}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.base+"→"+tt.cur, func(t *testing.T) {
			base, cur := decode(t, tt.base), decode(t, tt.cur)
			baseText := encode(t, base)
			plan, err := diffSync(base, cur, true, tt.only)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			switch {
			case plan.Snapshot:
				got = "snapshot"
			case plan.Changed:
				got = encode(t, plan.Patch)
			}
			if got != tt.want {
				t.Errorf("plan %s, want %s", got, tt.want)
			}
			checkPlan(t, base, cur, plan)
			if encode(t, base) != baseText {
				t.Errorf("base changed to %s", encode(t, base))
			}
		})
	}
}

func TestDiffSyncWithoutBaseline(t *testing.T) {
	plan, err := diffSync(nil, nil, false, false)
	if err != nil || !plan.Changed || !plan.Snapshot {
		t.Fatalf("plan %+v, %v: want a snapshot", plan, err)
	}
}

// TestDiffSyncDoesNotShareCur changes cur after a plan: neither the
// baseline nor the patch may follow.
func TestDiffSyncDoesNotShareCur(t *testing.T) {
	text := strings.Repeat("x", 60)
	base := decode(t, `{"t": "`+text+`", "a": {"b": 1}, "same": {"c": 1}}`)
	cur := decode(t, `{"t": "`+text+`", "a": {"b": 2}, "same": {"c": 1}, "new": {"d": 1}}`)
	plan, err := diffSync(base, cur, true, false)
	if err != nil || plan.Snapshot {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	patch, baseline := encode(t, plan.Patch), encode(t, plan.Base)
	m := cur.(map[string]any)
	m["a"].(map[string]any)["b"] = 3
	m["same"].(map[string]any)["c"] = 3
	m["new"].(map[string]any)["d"] = 3
	if encode(t, plan.Patch) != patch || encode(t, plan.Base) != baseline {
		t.Errorf("the plan follows cur: %s %s", encode(t, plan.Patch), encode(t, plan.Base))
	}
}

func FuzzDiffSync(f *testing.F) {
	f.Add(`{"a": 1, "b": [1, 2, {"c": null}]}`, `{"a": 2, "b": [1, {"c": null}], "d": "x"}`)
	f.Add(`[1, 2, 3]`, `[3, 2, 1, 0]`)
	f.Add(`{"a/b": {"~": 1}}`, `{"a/b": {"~": 2, "": 3}}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		var base, cur any
		if json.Unmarshal([]byte(a), &base) != nil || json.Unmarshal([]byte(b), &cur) != nil {
			return
		}
		base, cur = vm.Normalize(base), vm.Normalize(cur)
		plan, err := diffSync(base, cur, true, false)
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, base, cur, plan)
	})
}

func TestJSONLongerThan(t *testing.T) {
	values := []string{`null`, `true`, `0`, `-1.5e300`, `""`, `"a\"\\<>é\u0001"`, `[]`, `{}`, `[1, [2, {}], "x"]`,
		`{"a": {"b": [null, false, 12345]}, "c": "` + strings.Repeat("y", 40) + `"}`}
	for _, s := range values {
		v := decode(t, s)
		l, err := jsonLen(v)
		if err != nil {
			t.Fatal(err)
		}
		for n := range l + 2 {
			if got, want := jsonLongerThan(v, n), l > n; got != want {
				t.Errorf("jsonLongerThan(%s, %d) = %v, want %v (length %d)", s, n, got, want, l)
			}
		}
	}
}

func TestSameJSON(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{1, 1.0, true},
		{1, 1.5, false},
		{1.5, 1.5, true},
		{"1", 1, false},
		{nil, false, false},
		{nil, nil, true},
		{[]any{1}, []any{1, 2}, false},
		{map[string]any{"a": nil}, map[string]any{"b": nil}, false},
		{map[string]any{"a": []any{true}}, map[string]any{"a": []any{true}}, true},
	}
	for _, tt := range tests {
		if got := vm.Same(tt.a, tt.b); got != tt.want {
			t.Errorf("Same(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	b := retryPolicy{retries: 10, first: time.Second, longest: 5 * time.Second}
	var got []string
	for n := 1; n <= 5; n++ {
		got = append(got, b.delay(n).String())
	}
	if s := strings.Join(got, " "); s != "1s 2s 4s 5s 5s" {
		t.Errorf("delays %s", s)
	}
	huge := retryPolicy{first: time.Hour, longest: 1 << 62}
	if d := huge.delay(1000); d != 1<<62 {
		t.Errorf("delay after many retries %d, want the longest", d)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		h    string
		want time.Duration
	}{
		{"", 0},
		{"soon", 0},
		{"0", time.Nanosecond},
		{"-3", time.Nanosecond},
		{"7", 7 * time.Second},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), time.Nanosecond},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.h, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tt.h, got, tt.want)
		}
	}
}

func TestBodyExcerpt(t *testing.T) {
	tests := []struct {
		body, want string
	}{
		{"", ""},
		{"  \n ", ""},
		{"not\n  found", `: "not found"`},
		{strings.Repeat("a", 200), `: "` + strings.Repeat("a", 200) + `"`},
		{strings.Repeat("a", 201), `: "` + strings.Repeat("a", 200) + `…"`},
		{strings.Repeat("é", 150), `: "` + strings.Repeat("é", 100) + `…"`},
		{"bad \xff byte", `: "bad byte"`},
		{strings.Repeat(" ", 900) + "x", ""}, // nothing to show in the part read
	}
	for _, tt := range tests {
		if got := bodyExcerpt([]byte(tt.body)); got != tt.want {
			t.Errorf("bodyExcerpt(%.20q) = %s, want %s", tt.body, got, tt.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://example.com/a/b", "https://example.com/a/b"},
		{"https://user:pw@example.com/a?key=secret#top", "https://example.com/a?…"},
		{"http://example.com:8080/?", "http://example.com:8080/"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := redactURL(u); got != tt.want {
			t.Errorf("redactURL(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got := redactRawURL("http://a b/?x=1"); got != "http://a b/…" {
		t.Errorf("redactRawURL = %s", got)
	}
}

func TestResponseBody(t *testing.T) {
	tests := []struct {
		contentType, body, want string
	}{
		{"application/json", `{"a": [1, 2.5]}`, `{"a":[1,2.5]}`},
		{"application/json; charset=utf-8", `"x"`, `"x"`},
		{"application/vnd.api+json", `[1]`, `[1]`},
		{"application/json", `{"a": 1}{"b": 2}`, `"{\"a\": 1}{\"b\": 2}"`},
		{"application/json", ``, `""`},
		{"text/plain", `{"a": 1}`, `"{\"a\": 1}"`},
		{"", `hi`, `"hi"`},
	}
	for _, tt := range tests {
		if got := encode(t, responseBody(tt.contentType, []byte(tt.body))); got != tt.want {
			t.Errorf("responseBody(%s, %s) = %s, want %s", tt.contentType, tt.body, got, tt.want)
		}
	}
}

// BenchmarkDiffSync plans the sync of a 100-key state with one key
// changed, without the interpreter around it.
func BenchmarkDiffSync(b *testing.B) {
	base, cur := map[string]any{}, map[string]any{}
	for i := range 100 {
		k := fmt.Sprintf("key%03d", i)
		base[k] = map[string]any{"title": "item " + k, "done": false, "n": i}
		cur[k] = map[string]any{"title": "item " + k, "done": false, "n": i}
	}
	cur["key042"].(map[string]any)["done"] = true
	b.ReportAllocs()
	for b.Loop() {
		plan, err := diffSync(base, cur, true, false)
		if err != nil || plan.Snapshot || len(plan.Patch) != 1 {
			b.Fatalf("%+v %v", plan, err)
		}
	}
}
