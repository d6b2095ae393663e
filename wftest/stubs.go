package wftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aguic/aguic/mcpclient"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

// stubs answers a test's HTTP requests and MCP calls, and remembers those
// it has no answer for, with the place in the .wf file that made them.
type stubs struct {
	r    *runner
	prog *vm.Program
	http []*HTTPStub
	mcp  []*MCPStub
	pool *mcpclient.Pool

	mu        sync.Mutex
	node      *vm.Node // the node of the main flow that runs
	unstubbed []string
	servers   []*mcp.ServerSession
}

func newStubs(r *runner, prog *vm.Program, s Setup) *stubs {
	return &stubs{r: r, prog: prog, http: s.HTTP, mcp: s.MCP}
}

// toolKey is the context key of the backend tool a model node calls.
type toolKey struct{}

// observeTool notes in ctx which backend tool runs, so a request it makes
// is placed at the tool's node.
func (s *stubs) observeTool(ctx context.Context, call stdlib.ToolCallInfo) (context.Context, func(error)) {
	return context.WithValue(ctx, toolKey{}, call.Name), func(error) {}
}

// NodeStarted notes the node that runs.
func (s *stubs) NodeStarted(n *vm.Node) error {
	s.mu.Lock()
	s.node = n
	s.mu.Unlock()
	return nil
}

// NodeFinished does nothing.
func (s *stubs) NodeFinished(*vm.Node, vm.NodeEnd) error { return nil }

// where is the place in the .wf file of what made a request in ctx: the
// backend tool's node, else the node that runs.
func (s *stubs) where(ctx context.Context) string {
	if name, ok := ctx.Value(toolKey{}).(string); ok {
		if t := s.r.wf.Tool(name); t != nil {
			if t.Impl != nil {
				return t.Impl.Span.String()
			}
			return t.Span.String()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.node != nil {
		return s.node.Span.String()
	}
	return s.r.wf.Span.String()
}

func (s *stubs) noteUnstubbed(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.unstubbed {
		if u == msg {
			return
		}
	}
	s.unstubbed = append(s.unstubbed, msg)
}

// takeUnstubbed returns what had no stub since the last call.
func (s *stubs) takeUnstubbed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.unstubbed
	s.unstubbed = nil
	return out
}

// errNotStubbed is the error of a request no stub answers.
var errNotStubbed = errors.New("not stubbed by the test")

// httpClient is the client of the test's http nodes and tools.
func (s *stubs) httpClient() *http.Client { return &http.Client{Transport: s} }

// RoundTrip answers req with the first stub that matches it.
func (s *stubs) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	url := req.URL.String()
	for _, st := range s.http {
		if st.Method != req.Method || !st.re.MatchString(url) {
			continue
		}
		if st.Err != "" {
			return nil, errors.New(st.Err)
		}
		h := http.Header{}
		if st.JSON {
			h.Set("Content-Type", "application/json")
		} else {
			h.Set("Content-Type", "text/plain; charset=utf-8")
		}
		return &http.Response{
			Status:        fmt.Sprintf("%d %s", st.Status, http.StatusText(st.Status)),
			StatusCode:    st.Status,
			Proto:         "HTTP/1.1",
			ProtoMajor:    1,
			ProtoMinor:    1,
			Header:        h,
			Body:          io.NopCloser(bytes.NewReader(st.Body)),
			ContentLength: int64(len(st.Body)),
			Request:       req,
		}, nil
	}
	s.noteUnstubbed(fmt.Sprintf("http %s %s was not stubbed (%s): add a line such as `http %s %s => 200 {…}`",
		req.Method, url, s.where(req.Context()), req.Method, stubURL(url)))
	return nil, errNotStubbed
}

// stubURL is url with its query as a wildcard, for a suggested stub.
func stubURL(url string) string {
	if i := strings.IndexByte(url, '?'); i >= 0 {
		return url[:i+1] + "*"
	}
	return url
}

// mcpPool is the pool of the test's MCP servers: each is a server in
// memory that lists the tools the lock records of it and answers from the
// stubs.
func (s *stubs) mcpPool() *mcpclient.Pool {
	if len(s.prog.Servers) == 0 {
		return nil
	}
	s.pool = mcpclient.NewPool(mcpclient.Options{
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Connect: s.connectMCP,
	})
	return s.pool
}

// connectMCP starts the in-memory server of the declared server name.
func (s *stubs) connectMCP(ctx context.Context, name string) (mcp.Transport, error) {
	var decl *vm.Server
	for _, d := range s.prog.Servers {
		if d.Name == name {
			decl = d
		}
	}
	if decl == nil {
		return nil, fmt.Errorf("no declaration of server %q", name)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "test"}, nil)
	tools := map[string]bool{}
	if decl.Locked != nil {
		for _, t := range decl.Locked.Tools {
			tools[t.Name] = true
			schema := t.InputSchema
			if schema == nil {
				schema = map[string]any{"type": "object"}
			}
			srv.AddTool(&mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema, OutputSchema: nilIfEmpty(t.OutputSchema), Annotations: nil}, s.callMCP(name, t.Name))
		}
	}
	// A server the lock does not record: the tools the workflows call
	// by a literal name, and those the stubs name.
	for _, w := range s.prog.Workflows {
		nodes := slices.Clone(w.Nodes)
		for _, t := range w.Tools {
			if t.Impl != nil {
				nodes = append(nodes, t.Impl)
			}
		}
		for _, n := range nodes {
			if n.Kind != "mcp" || n.Word != name || n.Arg == nil {
				continue
			}
			if tool, err := strconv.Unquote(n.Arg.Source); err == nil && !tools[tool] && !strings.Contains(tool, "<<") {
				tools[tool] = true
				srv.AddTool(&mcp.Tool{Name: tool, InputSchema: map[string]any{"type": "object"}}, s.callMCP(name, tool))
			}
		}
	}
	for _, st := range s.mcp {
		if st.Server == name && !tools[st.Tool] {
			tools[st.Tool] = true
			srv.AddTool(&mcp.Tool{Name: st.Tool, InputSchema: map[string]any{"type": "object"}}, s.callMCP(name, st.Tool))
		}
	}
	client, server := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), server, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.servers = append(s.servers, ss)
	s.mu.Unlock()
	return client, nil
}

func nilIfEmpty(m map[string]any) any {
	if len(m) == 0 {
		return nil
	}
	return m
}

// callMCP answers the calls of one tool from the stubs.
func (s *stubs) callMCP(server, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, st := range s.mcp {
			if st.Server != server || st.Tool != tool {
				continue
			}
			if text, ok := st.Result.(string); ok {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: st.IsErr}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: jsonText(st.Result)}}, StructuredContent: st.Result}, nil
		}
		s.noteUnstubbed(fmt.Sprintf("mcp %s %s was not stubbed (%s): add a line such as `mcp %s %s => \"result\"`",
			server, tool, s.where(ctx), server, tool))
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not stubbed by the test"}}, IsError: true}, nil
	}
}

// close ends the MCP servers.
func (s *stubs) close() {
	if s.pool != nil {
		s.pool.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.servers {
		ss.Close()
	}
}
