package wftest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// shortText is the longest value a failure shows on its own line.
const shortText = 60

// mismatch words a failed comparison: expected and found on one line when
// both are short, else a compact diff of their lines.
func mismatch(target string, m Matcher, v any, text bool) string {
	want, got := describe(m), shown(v, text)
	if m.Kind == MatchSubset {
		// What the subset checks, not the rest.
		got = spaced(project(canonical(v), m.Value))
	}
	if m.Kind == MatchEqual && text {
		want = quote(asText(m.Value))
	}
	short := len(want) <= shortText && len(got) <= shortText && !strings.Contains(asText(v)+asText(m.Value), "\n")
	switch {
	case m.Kind == MatchContains || m.Kind == MatchRegexp:
		if short {
			return fmt.Sprintf("%s: expected %s, found %s", target, want, got)
		}
		return fmt.Sprintf("%s: expected %s, found:\n%s", target, want, indent(asText(v)))
	case short:
		return fmt.Sprintf("%s: expected %s, found %s", target, want, got)
	}
	s, isText := v.(string)
	ws, wantText := m.Value.(string)
	if isText && wantText && (text || !strings.Contains(s+ws, "\n")) {
		if strings.Contains(s, "\n") || strings.Contains(ws, "\n") {
			return fmt.Sprintf("%s: not as expected (- expected, + found):\n%s", target, lineDiff(strings.Split(ws, "\n"), strings.Split(s, "\n")))
		}
		return fmt.Sprintf("%s: not as expected (from character %d):\n    expected: %s\n    found:    %s", target, firstDiff(ws, s)+1, quote(ws), quote(s))
	}
	wantV, gotV := m.Value, canonical(v)
	if m.Kind == MatchSubset {
		gotV = project(gotV, wantV)
	}
	return fmt.Sprintf("%s: not as expected (- expected, + found):\n%s", target, lineDiff(pretty(wantV), pretty(gotV)))
}

// firstDiff is the index, in characters, where a and b first differ.
func firstDiff(a, b string) int {
	n := 0
	for a != "" && b != "" {
		ra, sa := utf8.DecodeRuneInString(a)
		rb, sb := utf8.DecodeRuneInString(b)
		if ra != rb {
			break
		}
		a, b, n = a[sa:], b[sb:], n+1
	}
	return n
}

// project keeps of got what want names: the keys of want's objects, so
// that a subset's diff shows what it checks.
func project(got, want any) any {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return got
		}
		out := map[string]any{}
		for k, gv := range g {
			if wv, ok := w[k]; ok {
				out[k] = project(gv, wv)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return got
		}
		out := make([]any, len(g))
		for i := range g {
			out[i] = project(g[i], w[i])
		}
		return out
	}
	return got
}

// pretty is v as indented JSON, keys sorted, in lines.
func pretty(v any) []string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return []string{fmt.Sprint(v)}
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// indent puts each line of s after four spaces.
func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// diffContext is how many equal lines a diff shows around a change.
const diffContext = 2

// lineDiff is a compact diff of a and b: changed lines marked - and +,
// a few equal lines around them, "…" for the others.
func lineDiff(a, b []string) string {
	// lcs[i][j] is the length of the longest common subsequence of
	// a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		mark byte
		line string
	}
	var ops []op
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, op{' ', a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', a[i]})
			i++
		default:
			ops = append(ops, op{'+', b[j]})
			j++
		}
	}
	near := make([]bool, len(ops))
	for k, o := range ops {
		if o.mark == ' ' {
			continue
		}
		for d := max(0, k-diffContext); d <= min(len(ops)-1, k+diffContext); d++ {
			near[d] = true
		}
	}
	var out []string
	skipped := false
	for k, o := range ops {
		if !near[k] {
			if !skipped {
				out = append(out, "    …")
				skipped = true
			}
			continue
		}
		skipped = false
		out = append(out, "  "+string(o.mark)+" "+o.line)
	}
	return strings.Join(out, "\n")
}

// spaced is v as JSON on one line, as people write it: a space after each
// colon and comma, keys sorted.
func spaced(v any) string {
	var b strings.Builder
	writeSpaced(&b, v)
	return b.String()
}

func writeSpaced(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quote(k) + ": ")
			writeSpaced(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeSpaced(b, e)
		}
		b.WriteByte(']')
	default:
		b.WriteString(jsonText(x))
	}
}
