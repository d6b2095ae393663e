package diag

import (
	"sort"
	"unicode/utf8"
)

// File is a source file's name and text with an index of its lines, so
// byte offsets turn into positions and positions into source lines.
type File struct {
	Name  string
	Text  []byte
	lines []int // byte offset where each line starts
}

// NewFile indexes text under name.
func NewFile(name string, text []byte) *File {
	lines := []int{0}
	for i, c := range text {
		if c == '\n' {
			lines = append(lines, i+1)
		}
	}
	return &File{Name: name, Text: text, lines: lines}
}

// Pos converts a byte offset into a position; offsets past the end clamp to it.
func (f *File) Pos(offset int) Pos {
	offset = max(0, min(offset, len(f.Text)))
	line := sort.Search(len(f.lines), func(i int) bool { return f.lines[i] > offset }) - 1
	col := utf8.RuneCount(f.Text[f.lines[line]:offset]) + 1
	return Pos{Offset: offset, Line: line + 1, Col: col}
}

// Span converts a byte range into a span of f.
func (f *File) Span(start, end int) Span {
	return Span{File: f.Name, Start: f.Pos(start), End: f.Pos(end)}
}

// Line returns line n (from 1) without its line ending, or "" when out of range.
func (f *File) Line(n int) string {
	if n < 1 || n > len(f.lines) {
		return ""
	}
	start := f.lines[n-1]
	end := len(f.Text)
	if n < len(f.lines) {
		end = f.lines[n] - 1
	}
	if end > start && f.Text[end-1] == '\r' {
		end--
	}
	return string(f.Text[start:end])
}

// Lines returns how many lines f has.
func (f *File) Lines() int { return len(f.lines) }

// FileSet finds files by name for rendering.
type FileSet map[string]*File

// Add indexes text under name and returns the file.
func (fs FileSet) Add(name string, text []byte) *File {
	f := NewFile(name, text)
	fs[name] = f
	return f
}
