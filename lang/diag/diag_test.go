package diag

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
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
	tests := []struct {
		name string
		list func(fs FileSet) List
		want string
	}{
		{
			name: "carets",
			list: func(fs FileSet) List {
				f := fs.Add("a.wf", []byte("wf 1\n\tsay  \"hi\"\nmulti\nline\n"))
				return List{
					Errorf(f.Span(6, 9), "WF101", "unknown node kind %q", "say"),
					Warningf(f.Span(16, 24), "WF160", "spans lines"),
				}
			},
			want: "a.wf:2:2: error[WF101]: unknown node kind \"say\"\n" +
				"     say  \"hi\"\n" +
				"     ^~~\n" +
				"a.wf:3:1: warning[WF160]: spans lines\n" +
				"    multi\n" +
				"    ^~~~~\n" +
				"1 error, 1 warning\n",
		},
		{
			name: "related",
			list: related,
			want: "b.wf:2:10: error[WF121]: workflow \"w\" is already defined\n" +
				"    workflow w {\n" +
				"             ^\n" +
				"a.wf:1:10: note: first defined here\n" +
				"    workflow w {\n" +
				"             ^\n" +
				"1 error\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := FileSet{}
			l := tt.list(fs)
			var b bytes.Buffer
			if err := l.WriteText(&b, fs); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

func TestLines(t *testing.T) {
	got := related(FileSet{})[0].Lines()
	want := []string{
		`b.wf:2:10: error[WF121]: workflow "w" is already defined`,
		"a.wf:1:10: note: first defined here",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Lines() = %q, want %q", got, want)
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

// related is a duplicate declaration in b.wf whose first declaration is in
// a.wf, both files of fs.
func related(fs FileSet) List {
	a := fs.Add("a.wf", []byte("workflow w {\n"))
	b := fs.Add("b.wf", []byte("wf 1\nworkflow w {\n"))
	return List{Errorf(b.Span(14, 15), "WF121", "workflow %q is already defined", "w").WithRelated(a.Span(9, 10), "first defined here")}
}

func TestWriteJSONRelated(t *testing.T) {
	var b bytes.Buffer
	if err := related(FileSet{}).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Code    string           `json:"code"`
		Related []map[string]any `json:"related"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"file": "a.wf", "line": 1.0, "column": 10.0, "endLine": 1.0, "endColumn": 11.0, "message": "first defined here"}
	if len(got) != 1 || len(got[0].Related) != 1 || !maps.Equal(got[0].Related[0], want) {
		t.Errorf("got %+v, want one diagnostic with related %v", got, want)
	}
}

func TestWriteGitHubRelated(t *testing.T) {
	var b bytes.Buffer
	if err := related(FileSet{}).WriteGitHub(&b); err != nil {
		t.Fatal(err)
	}
	want := "::error file=b.wf,line=2,col=10,endLine=2,endColumn=11,title=WF121::workflow \"w\" is already defined\n" +
		"::notice file=a.wf,line=1,col=10,endLine=1,endColumn=11,title=WF121::first defined here (workflow \"w\" is already defined)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestSortKeepsDifferentRelated(t *testing.T) {
	f := NewFile("a.wf", []byte("abc\n"))
	d := Errorf(f.Span(2, 3), "WF109", "key %q is already set", "k")
	l := List{d.WithRelated(f.Span(0, 1), "first set here"), d.WithRelated(f.Span(1, 2), "first set here"), d.WithRelated(f.Span(0, 1), "first set here")}
	l.Sort()
	if len(l) != 2 {
		t.Errorf("Sort kept %d diagnostics, want 2: %v", len(l), l)
	}
}
