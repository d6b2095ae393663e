package lsp

import (
	"unicode/utf8"

	"github.com/aguic/aguic/lang"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

// text is a document as the parser reads it (lang.Clean: no byte order
// mark, LF line ends) with the offset where each line starts. bom says that
// the text the client holds starts with a byte order mark, one UTF-16 unit
// before the first column of the first line; a CR before a line end is past
// the last column, so positions are the same in both texts.
type text struct {
	src   []byte
	lines []int
	bom   bool
}

// newText indexes raw, the text as the client holds it.
func newText(raw []byte) *text {
	src := lang.Clean(raw)
	t := &text{src: src, lines: lineStarts(src), bom: len(raw) >= 3 && string(raw[:3]) == "\uFEFF"}
	return t
}

func lineStarts(src []byte) []int {
	lines := []int{0}
	for i, c := range src {
		if c == '\n' {
			lines = append(lines, i+1)
		}
	}
	return lines
}

// lineEnd returns the offset of the end of line i (before its newline).
func lineEnd(src []byte, lines []int, i int) int {
	if i+1 < len(lines) {
		return lines[i+1] - 1
	}
	return len(src)
}

// offset converts an LSP position into a byte offset of t.src. A position
// past the end of its line stands for the line's end, one past the last
// line for the end of the text.
func (t *text) offset(p protocol.Position) int {
	units := int(p.Character)
	if p.Line == 0 && t.bom {
		units--
	}
	return offsetIn(t.src, t.lines, int(p.Line), units)
}

// offsetIn converts a line and a column in UTF-16 units into a byte offset
// of src, whose lines start at lines.
func offsetIn(src []byte, lines []int, line, units int) int {
	if line >= len(lines) {
		return len(src)
	}
	off, end := lines[line], lineEnd(src, lines, line)
	for off < end && units > 0 {
		r, size := utf8.DecodeRune(src[off:end])
		if r == '\r' && off+size == end && end < len(src) {
			break
		}
		units -= utf16Len(r)
		if units < 0 {
			break // inside a surrogate pair: the rune's start
		}
		off += size
	}
	return off
}

// position converts a byte offset of t.src into an LSP position.
func (t *text) position(off int) protocol.Position {
	off = max(0, min(off, len(t.src)))
	line := t.line(off)
	units := 0
	for _, r := range string(t.src[t.lines[line]:off]) {
		units += utf16Len(r)
	}
	if line == 0 && t.bom {
		units++
	}
	return protocol.Position{Line: protocol.UInteger(line), Character: protocol.UInteger(units)}
}

// line returns the index of the line that holds offset off.
func (t *text) line(off int) int {
	lo, hi := 0, len(t.lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if t.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// span converts a byte range of t.src into an LSP range.
func (t *text) span(start, end int) protocol.Range {
	return protocol.Range{Start: t.position(start), End: t.position(end)}
}

func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// applyChange applies one change of a didChange notification to raw, the
// text as the client holds it: a whole new text, or the replacement of a
// range counted in UTF-16 units of raw.
func applyChange(raw []byte, change any) []byte {
	switch c := change.(type) {
	case protocol.TextDocumentContentChangeEventWhole:
		return []byte(c.Text)
	case protocol.TextDocumentContentChangeEvent:
		if c.Range == nil {
			return []byte(c.Text)
		}
		lines := lineStarts(raw)
		start := offsetIn(raw, lines, int(c.Range.Start.Line), int(c.Range.Start.Character))
		end := offsetIn(raw, lines, int(c.Range.End.Line), int(c.Range.End.Character))
		end = max(start, end)
		out := make([]byte, 0, len(raw)-(end-start)+len(c.Text))
		out = append(out, raw[:start]...)
		out = append(out, c.Text...)
		return append(out, raw[end:]...)
	}
	return raw
}
