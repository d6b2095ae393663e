// Package server serves compiled workflows as AG-UI 1.0 agents over HTTP.
//
// What goes in: a Config with the machine of the current program (its
// workflows, the node kinds that run them), the program's sources, a
// store.Store and a loader for older program versions. What comes out: an
// http.Handler (Huma on the standard ServeMux) with the AG-UI run routes,
// the workflow list and OpenAPI 3.1 at /openapi.json and /openapi.yaml.
//
// One AG-UI request: Huma decodes and validates the RunAgentInput; the
// server resolves the workflow and the thread, takes the thread's lease
// (409 while another run holds it), builds $agent from the request and
// starts the run in a goroutine the server owns, then streams the run's
// events as server-sent events. Every failure before the stream starts is
// a 4xx problem+json answer; once it starts, the stream ends with exactly
// one terminal event (RUN_FINISHED or RUN_ERROR) and the body closes.
//
// What stays true: a client that goes away does not stop its run; a run
// ends by its outcome, its deadline or Shutdown, always with a terminal
// event, and its lease is released before that event is sent, so a client
// may send its next turn as soon as it reads it. The server keeps no
// package-level state: several servers can share a process.
package server
