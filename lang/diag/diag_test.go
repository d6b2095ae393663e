package diag

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestFilePos(t *testing.T) {
	f := NewFile("a.wf", []byte("ab\nçé x\n\nlast"))
	tests := []struct {
		offset int
		want   Pos
	}{
		{0, Pos{Offset: 0, Line: 1, Col: 1}},
		{2, Pos{Offset: 2, Line: 1, Col: 3}},
		{3, Pos{Offset: 3, Line: 2, Col: 1}},
		{7, Pos{Offset: 7, Line: 2, Col: 3}}, // after two 2-byte runes
		{10, Pos{Offset: 10, Line: 3, Col: 1}},
		{15, Pos{Offset: 15, Line: 4, Col: 5}},
		{99, Pos{Offset: 15, Line: 4, Col: 5}}, // clamped to the end
	}
	for _, tt := range tests {
		if got := f.Pos(tt.offset); got != tt.want {
			t.Errorf("Pos(%d) = %+v, want %+v", tt.offset, got, tt.want)
		}
	}
	if got := f.Line(2); got != "çé x" {
		t.Errorf("Line(2) = %q", got)
	}
	if got := f.Line(9); got != "" {
		t.Errorf("Line(9) = %q, want empty", got)
	}
}

func TestSortDedupes(t *testing.T) {
	f := NewFile("b.wf", []byte("x\ny\n"))
	g := NewFile("a.wf", []byte("x\n"))
	l := List{
		Errorf(f.Span(2, 3), "WF2", "second"),
		Warningf(g.Span(0, 1), "WF9", "warn"),
		Errorf(f.Span(0, 1), "WF1", "first"),
		Errorf(f.Span(2, 3), "WF2", "second"),
	}
	l.Sort()
	want := []string{
		"a.wf:1:1: warning[WF9]: warn",
		"b.wf:1:1: error[WF1]: first",
		"b.wf:2:1: error[WF2]: second",
	}
	if len(l) != len(want) {
		t.Fatalf("got %d diagnostics, want %d: %v", len(l), len(want), l)
	}
	for i, d := range l {
		if d.String() != want[i] {
			t.Errorf("[%d] = %q, want %q", i, d.String(), want[i])
		}
	}
	if !l.HasErrors() || l.Count(Warning) != 1 || l.Err() == nil {
		t.Errorf("HasErrors/Count/Err disagree: %v %d %v", l.HasErrors(), l.Count(Warning), l.Err())
	}
	if got := l.Err().Error(); got != "b.wf:1:1: error[WF1]: first (and 1 more errors)" {
		t.Errorf("Err() = %q", got)
	}
}

func TestWriteText(t *testing.T) {
	src := []byte("wf 1\n\tsay  \"hi\"\nmulti\nline\n")
	fs := FileSet{}
	f := fs.Add("a.wf", src)
	l := List{
		Errorf(f.Span(6, 9), "WF101", "unknown node kind %q", "say"),
		Warningf(f.Span(16, 24), "WF160", "spans lines"),
	}
	var b bytes.Buffer
	if err := l.WriteText(&b, fs); err != nil {
		t.Fatal(err)
	}
	want := "a.wf:2:2: error[WF101]: unknown node kind \"say\"\n" +
		"     say  \"hi\"\n" +
		"     ^~~\n" +
		"a.wf:3:1: warning[WF160]: spans lines\n" +
		"    multi\n" +
		"    ^~~~~\n" +
		"1 error, 1 warning\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestSummary(t *testing.T) {
	w := Warningf(Span{File: "a"}, "WF160", "w")
	e := Errorf(Span{File: "a"}, "WF1", "e")
	for _, tt := range []struct {
		l    List
		want string
	}{
		{List{w}, "1 warning"},
		{List{w, w}, "2 warnings"},
		{List{e, e, w}, "2 errors, 1 warning"},
		{List{e}, "1 error"},
	} {
		if got := tt.l.Summary(); got != tt.want {
			t.Errorf("Summary() = %q, want %q", got, tt.want)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	f := NewFile("a.wf", []byte("abc\n"))
	var b bytes.Buffer
	if err := (List{Errorf(f.Span(1, 2), "WF150", "bad")}).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"file": "a.wf", "line": 1.0, "column": 2.0, "endLine": 1.0, "endColumn": 3.0, "severity": "error", "code": "WF150", "message": "bad"}
	if len(got) != 1 || len(got[0]) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[0][k] != v {
			t.Errorf("%s = %v, want %v", k, got[0][k], v)
		}
	}
	b.Reset()
	if err := (List{}).WriteJSON(&b); err != nil || b.String() != "[]\n" {
		t.Errorf("empty list renders %q, %v", b.String(), err)
	}
}

func TestWriteGitHubEscapes(t *testing.T) {
	f := NewFile("dir,x/a:b.wf", []byte("abc\n"))
	l := List{
		Errorf(f.Span(0, 1), "WF1", "100%% wrong\nsecond line"),
		Warningf(f.Span(1, 2), "WF160", "w"),
	}
	var b bytes.Buffer
	if err := l.WriteGitHub(&b); err != nil {
		t.Fatal(err)
	}
	want := "::error file=dir%2Cx/a%3Ab.wf,line=1,col=1,endLine=1,endColumn=2,title=WF1::100%25 wrong%0Asecond line\n" +
		"::warning file=dir%2Cx/a%3Ab.wf,line=1,col=2,endLine=1,endColumn=3,title=WF160::w\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
