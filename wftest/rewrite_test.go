package wftest

import "testing"

// TestRewrite checks that updates replace their bytes and leave the rest
// of the file as it was: other lines, line ends, trailing spaces.
func TestRewrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		updates []Update
		want    string
	}{
		{"one value", "a\nexpect reply \"x\"\nb\n", []Update{{Line: 2, Start: 13, End: 16, Text: `"y"`}}, "a\nexpect reply \"y\"\nb\n"},
		{"crlf kept", "a\r\nexpect reply \"x\"\r\n", []Update{{Line: 2, Start: 13, End: 16, Text: `"yy"`}}, "a\r\nexpect reply \"yy\"\r\n"},
		{"no final newline", "expect reply", []Update{{Line: 1, Start: 12, End: 12, Text: ` "z"`}}, "expect reply \"z\""},
		{"trailing spaces kept", "expect result 1  \n", []Update{{Line: 1, Start: 14, End: 15, Text: "2"}}, "expect result 2  \n"},
		{"two on one line, right first", "ab cd\n", []Update{{Line: 1, Start: 0, End: 2, Text: "x"}, {Line: 1, Start: 3, End: 5, Text: "yyy"}}, "x yyy\n"},
		{"out of range ignored", "a\n", []Update{{Line: 5, Start: 0, End: 1, Text: "b"}, {Line: 1, Start: 0, End: 9, Text: "b"}}, "a\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(Rewrite([]byte(tc.in), tc.updates)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLineDiff checks the compact diff: changes marked, a little context,
// the rest elided.
func TestLineDiff(t *testing.T) {
	for _, tc := range []struct {
		a, b []string
		want string
	}{
		{[]string{"x"}, []string{"y"}, "  - x\n  + y"},
		{[]string{"1", "2", "3", "4", "5", "6", "7"}, []string{"1", "2", "3", "4", "5", "6", "8"}, "    …\n    5\n    6\n  - 7\n  + 8"},
		{[]string{"a", "b"}, []string{"a", "c", "b"}, "    a\n  + c\n    b"},
	} {
		if got := lineDiff(tc.a, tc.b); got != tc.want {
			t.Errorf("lineDiff(%q, %q):\n%s\nwant:\n%s", tc.a, tc.b, got, tc.want)
		}
	}
}
