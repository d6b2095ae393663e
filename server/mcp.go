package server

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aguic/aguic/vm"
)

// The server also serves its workflows as the tools of an MCP server, at
// {base}/mcp (Config.MCP): every workflow is a tool named by its id, and a
// tool call is a run request like any other, admitted, run and stored by
// the same code as the AG-UI routes' (begin), whose frames are read into
// the tool's result (collect) instead of being streamed as SSE.
//
// The MCP route speaks the streamable HTTP transport in two modes of the
// official SDK's handler, chosen by the request's MCP-Protocol-Version
// header:
//
//   - Clients of protocol 2026-07-28 and later are served stateless: no
//     session, each request stands alone, and any process of a replica set
//     may take it. An interrupt is answered through the protocol's
//     multi round-trip requests: the result asks for the elicitation, the
//     client asks its user and calls the tool again with the answer, and
//     the request state names the thread, which waits durably meanwhile.
//   - Older clients get a session (Mcp-Session-Id): the server can send a
//     request to the client during a call only on a session, since the
//     client's answer comes back as a request of its own, which must find
//     the call that waits for it. Elicitation then happens within the
//     call. A session lives in the memory of the process that made it, so
//     replicas need sticky sessions for these clients.

// The MCP route's path below the base path, and how long a session of an
// older client may stay idle before the server forgets it.
const (
	mcpPath        = "/mcp"
	mcpIdleSession = 30 * time.Minute
)

// statelessProtocol is the first MCP protocol version without sessions
// (SEP-2575): its requests go to the stateless handler.
const statelessProtocol = "2026-07-28"

// scopeKey is the request header through which the MCP route hands the
// request's scope, found before the MCP layer, to the tool handler: the
// SDK passes a request's headers to the handler, not its context. The
// route sets it on every request, over any value the client sent.
const scopeKey = "Aguic-Internal-Scope"

// mcpHandler is the handler of the MCP route: the SDK's streamable HTTP
// handler over one MCP server whose tools are the workflows, in the mode
// the request's protocol version asks for.
func (s *Server) mcpHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "aguic", Title: "aguic workflows", Version: Version}, &mcp.ServerOptions{
		Instructions: mcpInstructions,
		Logger:       s.log,
		HasTools:     true,
	})
	for _, wf := range s.cfg.Machine.Program.Workflows {
		srv.AddTool(s.mcpToolOf(wf), s.countMCP(wf.ID, s.mcpTool(wf)))
	}
	s.mcpServer = srv
	get := func(*http.Request) *mcp.Server { return srv }
	sessions := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Logger:              s.log,
		SessionTimeout:      mcpIdleSession,
		MaxRequestBodyBytes: s.cfg.BodyLimit,
	})
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		PropagateRequestCancellation: true,
		Logger:                       s.log,
		MaxRequestBodyBytes:          s.cfg.BodyLimit,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set(scopeKey, scopeOf(r.Context()))
		if r.Header.Get("Mcp-Protocol-Version") >= statelessProtocol {
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
}

// mcpInstructions tells a client's model how the tools behave.
const mcpInstructions = `Each tool runs one workflow and answers with what the run said (text) and how it ended (structuredContent.status). A conversation keeps its thread: pass the threadId of a result to continue it. A run that waits for an answer ends with status "interrupted" (answer with threadId and resume) or "waiting_for_tools" (answer with threadId and toolResults).`

// closeMCP ends the sessions of the MCP route's older clients: each
// session's open stream ends with it.
func (s *Server) closeMCP() {
	if s.mcpServer == nil {
		return
	}
	for ss := range s.mcpServer.Sessions() {
		ss.Close()
	}
}

// mcpContext is the context of a tool call as the run routes have it: the
// scope found before the MCP layer and the request's headers (without the
// scope's), for the hook.
func mcpContext(ctx context.Context, extra *mcp.RequestExtra) context.Context {
	info := &requestInfo{scope: defaultScope, header: http.Header{}}
	if extra != nil && extra.Header != nil {
		info.header = extra.Header.Clone()
		if scope := info.header.Get(scopeKey); scope != "" {
			info.scope = scope
		}
		info.header.Del(scopeKey)
	}
	return context.WithValue(ctx, requestKey{}, info)
}

// mcpToolOf describes workflow wf as a tool.
func (s *Server) mcpToolOf(wf *vm.Workflow) *mcp.Tool {
	desc := wf.Description
	if desc == "" {
		desc = "Runs the workflow " + wf.ID + "."
	}
	return &mcp.Tool{
		Name:         wf.ID,
		Title:        wf.Title,
		Description:  desc,
		InputSchema:  inputSchema(wf.Conversation),
		OutputSchema: outputSchema,
	}
}
