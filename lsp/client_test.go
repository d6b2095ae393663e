package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/aguic/aguic/stdlib"
	"github.com/sourcegraph/jsonrpc2"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

// client is a JSON-RPC client connected to a server in the same process
// over a pipe. It keeps every publishDiagnostics notification.
type client struct {
	t    testing.TB
	conn *jsonrpc2.Conn
	done chan error // what Serve returned

	mu    sync.Mutex
	diags map[string][]publication // by URI, in order
	seq   int                      // publications so far
	cond  *sync.Cond
}

func newClient(t testing.TB) *client {
	t.Helper()
	serverEnd, clientEnd := net.Pipe()
	s := New(stdlib.Registry(), Options{})
	c := &client{t: t, done: make(chan error, 1), diags: map[string][]publication{}}
	c.cond = sync.NewCond(&c.mu)
	go func() { c.done <- s.Serve(context.Background(), serverEnd) }()
	c.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(clientEnd, jsonrpc2.VSCodeObjectCodec{}), jsonrpc2.HandlerWithError(c.handle))
	t.Cleanup(func() { c.conn.Close() })
	var res protocol.InitializeResult
	c.call("initialize", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}, &res)
	c.notify("initialized", map[string]any{})
	return c
}

func (c *client) handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	if req.Method == "textDocument/publishDiagnostics" && req.Params != nil {
		var p publication
		if err := json.Unmarshal(*req.Params, &p); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.seq++
		p.seq = c.seq
		c.diags[p.URI] = append(c.diags[p.URI], p)
		c.cond.Broadcast()
		c.mu.Unlock()
	}
	return nil, nil
}

// call sends a request and decodes its result into result; it fails the
// test on an error.
func (c *client) call(method string, params, result any) {
	c.t.Helper()
	if err := c.conn.Call(context.Background(), method, params, result); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

// callErr sends a request and returns its error.
func (c *client) callErr(method string, params, result any) error {
	return c.conn.Call(context.Background(), method, params, result)
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	if err := c.conn.Notify(context.Background(), method, params); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

func (c *client) open(uri, text string, version int) {
	c.t.Helper()
	c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "wf", "version": version, "text": text}})
}

// diagnostics waits for the diagnostics of uri at version (the server
// publishes every version it checks, the last one always).
func (c *client) diagnostics(uri string, version int) []diagnostic {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for _, p := range c.diags[uri] {
			if p.Version != nil && *p.Version == version {
				return p.Diagnostics
			}
		}
		c.cond.Wait()
	}
}

// publication waits until uri has had n publications and returns the
// last.
func (c *client) publication(uri string, n int) publication {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.diags[uri]) < n {
		c.cond.Wait()
	}
	return c.diags[uri][n-1]
}

func pos(line, char int) map[string]any { return map[string]any{"line": line, "character": char} }

func at(uri string, p protocol.Position) map[string]any {
	return map[string]any{"textDocument": map[string]any{"uri": uri}, "position": p}
}

func fmtRange(r protocol.Range) string {
	return fmt.Sprintf("%d:%d-%d:%d", r.Start.Line+1, r.Start.Character+1, r.End.Line+1, r.End.Character+1)
}

// publication is a publishDiagnostics notification as the wire has it.
type publication struct {
	URI         string       `json:"uri"`
	Version     *int         `json:"version"`
	Diagnostics []diagnostic `json:"diagnostics"`
	seq         int          // its place among all the publications
}

// diagnostic is a diagnostic as the wire has it.
type diagnostic struct {
	Range              protocol.Range                          `json:"range"`
	Severity           int                                     `json:"severity"`
	Code               any                                     `json:"code"`
	Source             string                                  `json:"source"`
	Message            string                                  `json:"message"`
	RelatedInformation []protocol.DiagnosticRelatedInformation `json:"relatedInformation"`
}

func (c *client) change(uri string, version int, changes ...any) {
	c.t.Helper()
	c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": version}, "contentChanges": changes})
}

// count returns how many publications uri has had.
func (c *client) count(uri string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.diags[uri])
}

// after waits for the first publication of uri that follows the one of
// uri0 at version.
func (c *client) after(uri0 string, version int, uri string) publication {
	c.diagnostics(uri0, version)
	c.mu.Lock()
	defer c.mu.Unlock()
	seq := 0
	for _, p := range c.diags[uri0] {
		if p.Version != nil && *p.Version == version {
			seq = p.seq
			break
		}
	}
	for {
		for _, p := range c.diags[uri] {
			if p.seq > seq {
				return p
			}
		}
		c.cond.Wait()
	}
}
