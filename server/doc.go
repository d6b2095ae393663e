// Package server serves compiled workflows as AG-UI 1.0 agents over HTTP.
//
// What goes in: a Config with the machine of the current program (its
// workflows, the node kinds that run them), the program's sources, a
// store.Store and a loader for older program versions. What comes out: an
// http.Handler (Huma on the standard ServeMux) with OpenAPI 3.1 at
// /openapi.json and /openapi.yaml, /healthz, an API browser at /docs, a
// home page of links at /, with Config.Studio the studio (package studio)
// at /studio, and under the base path (default /agui):
//
//	POST {base}/workflows/{id}           run a workflow (SSE)
//	POST {base}                          run the workflow forwardedProps names (SSE)
//	POST {base}/threads/{threadId}/runs  run on an existing thread (SSE)
//	POST {base}/history                  a conversation's messages, state and pending tool call (JSON or SSE)
//	GET  {base}/threads/{threadId}/messages  a thread's messages, paged
//	GET  {base}/threads/{threadId}/replay    a thread's stored events from a cursor (SSE)
//	GET  {base}/threads                      the scope's threads, paged, by workflow and status
//	GET  {base}/threads/{threadId}           a thread: what it waits for, its latest runs
//	GET  {base}/threads/{threadId}/runs      a thread's runs, newest first, paged
//	GET  {base}/threads/{threadId}/events    a thread's stored events, as JSON pages
//	GET  {base}/threads/{threadId}/runs/{runId}/events  follow a run (SSE)
//	POST {base}/threads/{threadId}/interrupt and POST {base}/cancel  cancel the run in progress
//	GET  {base}/workflows, GET {base}/workflows/{id}  the workflows, their graphs and capabilities
//
// One AG-UI request: Huma decodes and validates the RunAgentInput; the
// server resolves the workflow and the thread, takes the thread's lease
// (409 while another run holds it), builds $agent from the request and
// starts the run in a goroutine the server owns, then streams the run's
// events as server-sent events, each with the sequence number of its
// stored event as id. Every failure before the stream starts is a 4xx
// problem+json answer (400 where Huma would say 422); once it starts, the
// stream ends with exactly one terminal event (RUN_FINISHED or RUN_ERROR)
// and the body closes. A conversation request with no messages and no
// resume, on a thread that exists, is answered with the thread's snapshot
// (RUN_STARTED, STATE_SNAPSHOT, MESSAGES_SNAPSHOT, RUN_FINISHED) and runs
// nothing. The request's protocolVersion decides, once, the dialect of
// its stream (agui.DialectOf): AG-UI 1.0, or, for a request without one
// as the clients before 1.0 send it, the shapes those clients accept;
// every stream writes its frames in its own dialect (stream). A run's
// first STATE_DELTA comes after a STATE_SNAPSHOT of the client's state,
// stored with the run's events.
//
// Identity, tenancy and the request hook, all off by default: Config.Auth
// authenticates every request but /healthz, the OpenAPI document, /docs,
// / and the studio's files before any route sees it (401 problem+json
// otherwise); Tokens.Auth
// is one, for bearer tokens that each belong to a name, JWT.Auth another,
// for JWTs an OpenID Connect issuer or a JWKS signs (NewJWT), and
// BearerAuth takes both. The Identity Auth returns is the user: $user of
// the request's runs ({id, claims}, with the claims the JWTConfig
// selects). A thread's key holds a scope: the user's id, else the value of
// Config.ScopeHeader, else "default". Every thread route (run, history,
// messages, replay, events, runs, cancel, interrupt) reads and writes in
// the request's scope only, so a thread of another scope answers 404 as
// one that does not exist, and the thread list shows the scope's own.
// Config.CORSOrigins lets browser clients of other origins call the
// server: preflight requests are answered, and answers (event streams
// included) carry Access-Control-Allow-Origin.
//
// A run streams the lifecycle of its nodes (the activity
// "graph.node.lifecycle") when Config.NodeLifecycle is on, when its
// request asks (forwardedProps.aguic.nodeEvents), or, from then on, when a
// client that follows it in this process asks (nodeEvents=true); each
// stream of the run shows it only when its own client asked.
//
// Config.Hook sees every run request once
// its workflow and thread are known, before anything runs: the body, a
// copy of the headers, the thread, the workflow, whether it is a
// conversation and the scope (HookRequest). It may add derived values to
// the run's context (the root context of a stateless run; merged into the
// saved context of a conversation) and to $agent. An error refuses the
// request: its stream is RUN_STARTED, then RUN_ERROR with the hook's
// message, and nothing runs or is stored. Context and $agent are stored
// with the thread, so a hook that validates a bearer token keeps the
// claims it derives (user id, roles, tenant), never the token.
//
// What stays true: a client that goes away does not stop its run; a run
// ends by its outcome, its deadline, a cancel request or Shutdown, always
// with a terminal event, and its lease is released before that event is
// sent, so a client may send its next turn as soon as it reads it. No
// request reaches a thread of another scope. The server keeps no
// package-level state: several servers can share a process, and several
// processes one store.
package server
