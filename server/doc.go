// Package server serves compiled workflows as AG-UI 1.0 agents over HTTP.
//
// What goes in: a Config with the machine of the current program (its
// workflows, the node kinds that run them), the program's sources, a
// store.Store and a loader for older program versions. What comes out: an
// http.Handler (Huma on the standard ServeMux) with OpenAPI 3.1 at
// /openapi.json and /openapi.yaml, /healthz, and under the base path
// (default /agui):
//
//	POST {base}/workflows/{id}           run a workflow (SSE)
//	POST {base}                          run the workflow forwardedProps names (SSE)
//	POST {base}/threads/{threadId}/runs  run on an existing thread (SSE)
//	POST {base}/history                  a conversation's messages, state and pending tool call (JSON or SSE)
//	GET  {base}/threads/{threadId}/messages  a thread's messages, paged
//	GET  {base}/threads/{threadId}/replay    a thread's stored events from a cursor (SSE)
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
// nothing.
//
// What stays true: a client that goes away does not stop its run; a run
// ends by its outcome, its deadline, a cancel request or Shutdown, always
// with a terminal event, and its lease is released before that event is
// sent, so a client may send its next turn as soon as it reads it. Every
// thread is in the scope "default" until requests carry an identity. The
// server keeps no package-level state: several servers can share a
// process, and several processes one store.
package server
