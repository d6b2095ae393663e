// The AG-UI routes of the server, under the base path the page's meta tag
// names, with the user's token.

import { frames } from "./sse.js";

// APIError is an answer of the server that is not a success: its status
// and the detail of its problem document.
export class APIError extends Error {
  constructor(status, detail, problem) {
    super(detail || `status ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

export class API {
  constructor(base, auth) {
    this.base = base.replace(/\/+$/, "");
    this.auth = auth;
  }

  url(path, query = {}) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
    }
    const qs = q.toString();
    return this.base + path + (qs ? `?${qs}` : "");
  }

  // request sends one request and returns its successful response; a 401
  // asks for a token and sends the request again with it.
  async request(path, { method = "GET", body, query, accept = "application/json", signal } = {}) {
    for (;;) {
      const headers = { Accept: accept, ...this.auth.headers() };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      const res = await fetch(this.url(path, query), {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        cache: "no-store",
      });
      if (res.ok) return res;
      const problem = await res.json().catch(() => ({}));
      if (res.status === 401) {
        await this.auth.ask(problem.detail ?? "The server asks for a bearer token.");
        continue;
      }
      throw new APIError(res.status, problem.detail ?? res.statusText, problem);
    }
  }

  async json(path, options) {
    return (await this.request(path, options)).json();
  }

  // stream yields {id, event} for every frame of an event stream.
  async *stream(path, options = {}) {
    const res = await this.request(path, { ...options, accept: "text/event-stream" });
    for await (const f of frames(res.body)) {
      yield { id: f.id, event: JSON.parse(f.data) };
    }
  }

  workflows() {
    return this.json("/workflows");
  }

  workflow(id) {
    return this.json(`/workflows/${encodeURIComponent(id)}`);
  }

  // run posts a RunAgentInput to the workflow and yields its events. The
  // studio speaks AG-UI 1.0: a request without protocolVersion gets the
  // shapes of the clients before 1.0 (no pendingToolCallIds, no cancelled
  // outcome).
  run(workflowId, input, signal) {
    const body = { ...input, protocolVersion: "1.0" };
    return this.stream(`/workflows/${encodeURIComponent(workflowId)}`, { method: "POST", body, signal });
  }

  cancel(workflowId, threadId) {
    return this.json("/cancel", { method: "POST", body: { threadId, forwardedProps: { aguic: { workflowId } } } });
  }

  // history is the stream that restores a conversation (SSE).
  history(workflowId, threadId, signal) {
    return this.stream("/history", { method: "POST", body: { threadId, workflowId }, signal });
  }

  threads(query) {
    return this.json("/threads", { query });
  }

  thread(workflowId, threadId) {
    return this.json(`/threads/${encodeURIComponent(threadId)}`, { query: { workflow: workflowId } });
  }

  threadRuns(workflowId, threadId, after) {
    return this.json(`/threads/${encodeURIComponent(threadId)}/runs`, { query: { workflow: workflowId, after } });
  }

  threadEvents(workflowId, threadId, after, limit = 500) {
    return this.json(`/threads/${encodeURIComponent(threadId)}/events`, { query: { workflow: workflowId, after, limit } });
  }

  messages(workflowId, threadId, cursor) {
    return this.json(`/threads/${encodeURIComponent(threadId)}/messages`, { query: { workflowId, cursor, limit: 500 } });
  }

  // replay streams the thread's stored events after cursor.
  replay(workflowId, threadId, cursor, signal) {
    return this.stream(`/threads/${encodeURIComponent(threadId)}/replay`, { query: { workflowId, cursor, limit: 500 }, signal });
  }
}
