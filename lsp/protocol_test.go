package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aguic/aguic/stdlib"
	"github.com/sourcegraph/jsonrpc2"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

// TestPositions converts between byte offsets and UTF-16 positions with
// non-ASCII text before the cursor, a byte order mark and CRLF line ends.
func TestPositions(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		off  int // in the cleaned text
		want protocol.Position
	}{
		{"ascii", "ab\ncd", 4, protocol.Position{Line: 1, Character: 1}},
		{"two-byte rune", "é$x", 2, protocol.Position{Line: 0, Character: 1}},
		{"surrogate pair", "😀$x", 4, protocol.Position{Line: 0, Character: 2}},
		{"mixed", "a\né😀 $x", 9, protocol.Position{Line: 1, Character: 4}},
		{"bom", "\uFEFFwf 1", 2, protocol.Position{Line: 0, Character: 3}},
		{"crlf", "a\r\nbc", 3, protocol.Position{Line: 1, Character: 1}},
		{"end", "ab", 2, protocol.Position{Line: 0, Character: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx := newText([]byte(tt.raw))
			if got := tx.position(tt.off); got != tt.want {
				t.Errorf("position(%d) = %+v, want %+v", tt.off, got, tt.want)
			}
			if got := tx.offset(tt.want); got != tt.off {
				t.Errorf("offset(%+v) = %d, want %d", tt.want, got, tt.off)
			}
		})
	}
	// A position past the end of a line is the line's end; one inside a
	// surrogate pair is the start of its rune.
	tx := newText([]byte("😀\nx"))
	if got := tx.offset(protocol.Position{Line: 0, Character: 9}); got != 4 {
		t.Errorf("past the end: %d, want 4", got)
	}
	if got := tx.offset(protocol.Position{Line: 0, Character: 1}); got != 0 {
		t.Errorf("inside a pair: %d, want 0", got)
	}
}

// TestIncrementalSync applies ranged changes counted in UTF-16 units, as
// a client sends them, and whole-text changes.
func TestIncrementalSync(t *testing.T) {
	raw := []byte("say \"é😀\"\r\nend")
	rng := func(l1, c1, l2, c2 int) *protocol.Range {
		return &protocol.Range{Start: protocol.Position{Line: protocol.UInteger(l1), Character: protocol.UInteger(c1)}, End: protocol.Position{Line: protocol.UInteger(l2), Character: protocol.UInteger(c2)}}
	}
	steps := []struct {
		change any
		want   string
	}{
		{protocol.TextDocumentContentChangeEvent{Range: rng(0, 8, 0, 8), Text: "!"}, "say \"é😀!\"\r\nend"},
		{protocol.TextDocumentContentChangeEvent{Range: rng(0, 5, 0, 8), Text: "ü"}, "say \"ü!\"\r\nend"},
		{protocol.TextDocumentContentChangeEvent{Range: rng(0, 8, 1, 0), Text: "\n"}, "say \"ü!\"\nend"},
		{protocol.TextDocumentContentChangeEvent{Range: rng(1, 3, 1, 3), Text: "\nfail \"x\""}, "say \"ü!\"\nend\nfail \"x\""},
		{protocol.TextDocumentContentChangeEventWhole{Text: "wf 1\n"}, "wf 1\n"},
	}
	for i, st := range steps {
		raw = applyChange(raw, st.change)
		if string(raw) != st.want {
			t.Fatalf("step %d: %q, want %q", i, raw, st.want)
		}
	}
}

const goodWF = "wf 1\n\nworkflow w {\n  flow {\n    say \"hi\"\n  }\n}\n"

// TestDiagnosticsAsYouType opens a file, breaks it and fixes it with
// incremental changes: each version gets its diagnostics, the fixed one
// none; an open buffer stands for its file on disk, for the other files
// too.
func TestDiagnosticsAsYouType(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.wf"), filepath.Join(dir, "b.wf")
	write(t, a, goodWF)
	write(t, b, "wf 1\n\nworkflow b {\n  flow {\n    call w\n  }\n}\n")
	c := newClient(t)
	uriA, uriB := pathURI(a), pathURI(b)
	c.open(uriB, "wf 1\n\nworkflow b {\n  flow {\n    call w\n  }\n}\n", 1)
	if d := c.diagnostics(uriB, 1); len(d) != 0 {
		t.Fatalf("b.wf: %v", d)
	}
	// The buffer of a.wf renames the workflow b calls: b.wf gets the error,
	// though a.wf on disk still declares w.
	c.open(uriA, goodWF, 1)
	c.change(uriA, 2, protocol.TextDocumentContentChangeEvent{Range: lineRange(2, 9, 10), Text: "v"})
	if d := c.diagnostics(uriA, 2); len(d) != 0 {
		t.Fatalf("a.wf v2: %v", d)
	}
	c.change(uriA, 3, protocol.TextDocumentContentChangeEvent{Range: lineRange(4, 4, 7), Text: "sya"})
	got := c.diagnostics(uriA, 3)
	if len(got) != 1 || got[0].Code != "WF101" || got[0].Message != `unknown node kind "sya" (did you mean "say"?)` || fmtRange(got[0].Range) != "5:5-5:8" {
		t.Fatalf("a.wf v3: %+v", got)
	}
	p := c.after(uriA, 3, uriB)
	if len(p.Diagnostics) != 1 || p.Diagnostics[0].Code != "WF170" {
		t.Fatalf("b.wf after a.wf renamed w: %+v", p.Diagnostics)
	}
	c.change(uriA, 4, protocol.TextDocumentContentChangeEventWhole{Text: goodWF})
	if d := c.diagnostics(uriA, 4); len(d) != 0 {
		t.Fatalf("a.wf v4: %v", d)
	}
	if p := c.after(uriA, 4, uriB); len(p.Diagnostics) != 0 {
		t.Fatalf("b.wf after the fix: %+v", p.Diagnostics)
	}
}

// TestCoalescedEdits sends many edits at once: the last version is always
// checked, and no check is of a version that never existed.
func TestCoalescedEdits(t *testing.T) {
	dir := t.TempDir()
	uri := pathURI(filepath.Join(dir, "a.wf"))
	c := newClient(t)
	c.open(uri, goodWF, 1)
	for v := 2; v <= 40; v++ {
		c.change(uri, v, protocol.TextDocumentContentChangeEvent{Range: lineRange(4, 9, 9), Text: "!"})
	}
	if d := c.diagnostics(uri, 40); len(d) != 0 {
		t.Fatalf("v40: %v", d)
	}
	c.mu.Lock()
	n := len(c.diags[uri])
	c.mu.Unlock()
	t.Logf("40 versions, %d checks", n)
}

// TestClose clears the diagnostics of a closed document.
func TestClose(t *testing.T) {
	dir := t.TempDir()
	uri := pathURI(filepath.Join(dir, "a.wf"))
	c := newClient(t)
	c.open(uri, "wf 1\nworkflow w { flow { sya \"x\" } }\n", 1)
	if d := c.diagnostics(uri, 1); len(d) != 1 {
		t.Fatalf("%v", d)
	}
	c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uri}})
	if p := c.publication(uri, 2); len(p.Diagnostics) != 0 || p.Version != nil {
		t.Fatalf("after close: %+v", p)
	}
}

// TestErrors sends what a server must answer with an error and survive:
// an unknown method, bad params, a body that is not JSON, JSON that is not
// a message, a header without a length; then shuts down and exits.
func TestErrors(t *testing.T) {
	serverEnd, clientEnd := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- New(stdlib.Registry(), Options{}).Serve(context.Background(), serverEnd) }()
	r := bufio.NewReader(clientEnd)
	send := func(body string) {
		t.Helper()
		if _, err := fmt.Fprintf(clientEnd, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			t.Fatal(err)
		}
	}
	type reply struct {
		ID    any             `json:"id"`
		Error *jsonrpc2.Error `json:"error"`
	}
	read := func() reply {
		t.Helper()
		var rep reply
		if err := newStreamReader(r, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	tests := []struct {
		name, send string
		code       int64
	}{
		{"before initialize", `{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{}}`, codeServerNotInitialized},
		{"not JSON", `{"jsonrpc":"2.0","id":3,`, jsonrpc2.CodeParseError},
		{"not a message", `{"jsonrpc":"2.0","id":4}`, jsonrpc2.CodeInvalidRequest},
		{"bad params", `{"jsonrpc":"2.0","id":5,"method":"initialize","params":[1]}`, jsonrpc2.CodeInvalidParams},
		{"initialize", `{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"capabilities":{}}}`, 0},
		{"unknown method", `{"jsonrpc":"2.0","id":2,"method":"workspace/frobnicate","params":{}}`, jsonrpc2.CodeMethodNotFound},
		{"bad hover params", `{"jsonrpc":"2.0","id":9,"method":"textDocument/hover","params":{"position":"x"}}`, jsonrpc2.CodeInvalidParams},
		{"closed document", `{"jsonrpc":"2.0","id":10,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///nowhere.wf"},"position":{"line":0,"character":0}}}`, codeRequestFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			send(tt.send)
			rep := read()
			if tt.code == 0 {
				if rep.Error != nil {
					t.Fatalf("got %+v", rep.Error)
				}
				return
			}
			if rep.Error == nil || rep.Error.Code != tt.code {
				t.Fatalf("got %+v, want code %d", rep.Error, tt.code)
			}
		})
	}
	t.Run("no length", func(t *testing.T) {
		if _, err := io.WriteString(clientEnd, "Content-Type: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if rep := read(); rep.Error == nil || rep.Error.Code != jsonrpc2.CodeParseError {
			t.Fatalf("got %+v", rep.Error)
		}
	})
	send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":99}}`) // ignored: no answer
	send(`{"jsonrpc":"2.0","id":7,"method":"shutdown"}`)
	if rep := read(); rep.Error != nil {
		t.Fatalf("shutdown: %v", rep.Error)
	}
	send(`{"jsonrpc":"2.0","id":8,"method":"textDocument/hover","params":{}}`)
	if rep := read(); rep.Error == nil || rep.Error.Code != jsonrpc2.CodeInvalidRequest {
		t.Fatalf("after shutdown: %+v", rep.Error)
	}
	send(`{"jsonrpc":"2.0","method":"exit"}`)
	if err := <-done; err != nil {
		t.Fatalf("Serve after shutdown and exit: %v", err)
	}
}

// TestExitWithoutShutdown ends with ErrNoShutdown.
func TestExitWithoutShutdown(t *testing.T) {
	c := newClient(t)
	c.notify("exit", nil)
	if err := <-c.done; !errors.Is(err, ErrNoShutdown) {
		t.Fatalf("got %v", err)
	}
}

// newStreamReader reads one framed message from r into v.
func newStreamReader(r *bufio.Reader, v any) error {
	var n int
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		fmt.Sscanf(line, "Content-Length: %d", &n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lineRange(line, from, to int) *protocol.Range {
	return &protocol.Range{Start: protocol.Position{Line: protocol.UInteger(line), Character: protocol.UInteger(from)}, End: protocol.Position{Line: protocol.UInteger(line), Character: protocol.UInteger(to)}}
}
