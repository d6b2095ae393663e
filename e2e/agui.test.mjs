// The conformance suite: it starts the real `aguic serve` on loopback and
// drives it with the official AG-UI client (@ag-ui/client 1.0.0). Every raw
// frame is checked against the protocol's schemas and framing rules, every
// stream goes through the client's own verification, and no client warning
// may be printed.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import path from "node:path";
import { HttpAgent } from "@ag-ui/client";
import { here, startServe, newID, rawRun, checkStream, checkedFetch, agentRun, textOf, warnings } from "./lib.mjs";

let serve, base;

// slow is an HTTP server the "slow" workflow calls: it holds each request
// until the test releases it.
let held = [];
let arrived = () => {};
const slow = http.createServer((req, res) => {
  held.push(res);
  arrived();
});

before(async () => {
  await new Promise((r) => slow.listen(0, "127.0.0.1", r));
  serve = await startServe({
    args: ["--model-script", path.join(here, "workflows", "e2e.script"), path.join(here, "workflows")],
    env: { E2E_SLOW_URL: `http://127.0.0.1:${slow.address().port}` },
  });
  base = serve.base;
});

after(async () => {
  for (const res of held) res.end("released");
  slow.close();
  await serve?.stop();
});

test("a stateless chat streams valid frames the client accepts", async () => {
  const threadId = newID("thread");
  const events = await rawRun(`${base}/workflows/chat`, {
    threadId, runId: newID("run"), state: {}, tools: [], context: [], forwardedProps: {},
    messages: [{ id: newID("msg"), role: "user", content: "hello there" }],
  });
  const types = events.map((e) => e.type);
  assert.ok(types.includes("TEXT_MESSAGE_CONTENT"), types.join(" "));
  assert.ok(types.includes("REASONING_MESSAGE_CONTENT"), types.join(" "));

  const agent = new HttpAgent({ fetch: checkedFetch, url: `${base}/workflows/chat`, threadId: newID("thread") });
  agent.addMessage({ id: newID("msg"), role: "user", content: "hello" });
  const { result } = await agentRun(agent);
  assert.deepEqual(result.result, { text: "Hello! How can I help you today?" });
  assert.ok(textOf(agent.messages).includes("Hello! How can I help you today?"), JSON.stringify(agent.messages));
  assert.deepEqual(warnings, []);
});

test("the selector route runs a workflow named in forwardedProps", async () => {
  await rawRun(base, {
    threadId: newID("thread"), runId: newID("run"), state: {}, tools: [], context: [],
    forwardedProps: { aguic: { workflowName: "E2E Chat" } },
    messages: [{ id: newID("msg"), role: "user", content: "hi" }],
  });
  await rawRun(base, {
    threadId: newID("thread"), runId: newID("run"), state: {}, tools: [], context: [],
    forwardedProps: { workflowId: "chat" },
    messages: [{ id: newID("msg"), role: "user", content: "hi" }],
  });
});

test("a conversation keeps state, activities and steps across turns", async () => {
  const agent = new HttpAgent({ fetch: checkedFetch, url: `${base}/workflows/notes`, threadId: newID("thread"), initialState: {} });
  for (const [i, note] of ["milk", "eggs"].entries()) {
    agent.addMessage({ id: newID("msg"), role: "user", content: note });
    const { seen } = await agentRun(agent);
    const types = new Set(seen.map((e) => e.type));
    for (const t of ["STEP_STARTED", "STEP_FINISHED", "CUSTOM"]) {
      assert.ok(types.has(t), `turn ${i + 1} lacks ${t}: ${[...types].join(" ")}`);
    }
    assert.ok(types.has("STATE_SNAPSHOT") || types.has("STATE_DELTA"));
    assert.ok(textOf(agent.messages).includes(`Noted (turn ${i + 1}): ${note}`), JSON.stringify(agent.messages));
  }
  assert.deepEqual(agent.state.todos, ["milk", "eggs"]);
  assert.ok(agent.messages.some((m) => m.role === "activity" && m.activityType === "PLAN"), JSON.stringify(agent.messages));
  assert.deepEqual(warnings, []);
});

test("a frontend tool call ends the run with pendingToolCallIds and resumes with the result", async () => {
  const agent = new HttpAgent({ fetch: checkedFetch, url: `${base}/workflows/approve`, threadId: newID("thread") });
  agent.addMessage({ id: newID("msg"), role: "user", content: "the refund" });
  const first = await agentRun(agent);
  const finished = first.seen.find((e) => e.type === "RUN_FINISHED");
  const pending = finished.outcome?.pendingToolCallIds ?? [];
  assert.equal(pending.length, 1, JSON.stringify(finished));
  agent.addMessage({ id: newID("msg"), role: "tool", toolCallId: pending[0], content: "yes" });
  await agentRun(agent);
  assert.ok(textOf(agent.messages).includes("You answered yes."), JSON.stringify(agent.messages));
  assert.deepEqual(warnings, []);
});

test("an interrupt is answered through resume, approved and cancelled", async () => {
  const agent = new HttpAgent({ fetch: checkedFetch, url: `${base}/workflows/handoff`, threadId: newID("thread") });
  for (const [status, want] of [["resolved", "Approved: true"], ["cancelled", "Cancelled."]]) {
    agent.addMessage({ id: newID("msg"), role: "user", content: "the payment" });
    const first = await agentRun(agent);
    const finished = first.seen.find((e) => e.type === "RUN_FINISHED");
    assert.equal(finished.outcome?.type, "interrupt", JSON.stringify(finished));
    const [interrupt] = finished.outcome.interrupts;
    const entry = status === "resolved"
      ? { interruptId: interrupt.id, status, payload: { ok: true } }
      : { interruptId: interrupt.id, status };
    await agentRun(agent, { resume: [entry] });
    assert.ok(textOf(agent.messages).includes(want), JSON.stringify(agent.messages));
  }
  assert.deepEqual(warnings, []);
});

test("a failing workflow ends with RUN_ERROR", async () => {
  const events = await rawRun(`${base}/workflows/broken`, {
    threadId: newID("thread"), runId: newID("run"), state: {}, tools: [], context: [], forwardedProps: {},
    messages: [{ id: newID("msg"), role: "user", content: "go" }],
  });
  assert.equal(events.at(-1).type, "RUN_ERROR");
  assert.match(events.at(-1).message, /this workflow always fails/);
});

test("invalid requests are answered with problem+json before any stream", async () => {
  const cases = [
    [`${base}/workflows/chat`, "{not json", 400],
    [`${base}/workflows/chat`, JSON.stringify({ runId: "r", messages: [] }), 400],
    [`${base}/workflows/nope`, JSON.stringify({ threadId: "t", runId: "r", messages: [] }), 404],
    [base, JSON.stringify({ threadId: "t", runId: "r", messages: [], forwardedProps: {} }), 400],
  ];
  for (const [url, body, status] of cases) {
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
    assert.equal(res.status, status, `${url} ${body}: ${await res.clone().text()}`);
    assert.match(res.headers.get("content-type"), /problem\+json/);
    const problem = await res.json();
    assert.ok(problem.title || problem.detail, JSON.stringify(problem));
  }
});

test("history restores what the client reduced from the live streams", async () => {
  const threadId = newID("thread");
  const agent = new HttpAgent({ fetch: checkedFetch, url: `${base}/workflows/notes`, threadId, initialState: {} });
  for (const note of ["bread", "tea"]) {
    agent.addMessage({ id: newID("msg"), role: "user", content: note });
    await agentRun(agent);
  }
  const res = await fetch(`${base}/history`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ threadId, workflowId: "notes" }),
  });
  assert.equal(res.status, 200);
  const history = await res.json();
  assert.deepEqual(history.state, agent.state);
  // The client holds the user messages it sent; the server stores what the
  // workflow produced. Every message the server restores is the client's.
  const byId = new Map(agent.messages.map((m) => [m.id, m]));
  for (const m of history.messages) {
    assert.deepEqual(m, byId.get(m.id), `restored message ${m.id} differs from the client's`);
  }
  const said = textOf(history.messages);
  assert.deepEqual(said, ["Noted (turn 1): bread", "Noted (turn 2): tea"]);
  assert.deepEqual(history.pendingFrontendTools, []);
  assert.deepEqual(warnings, []);
});

test("a second run on a busy thread is refused with 409, and cancel ends the first", async () => {
  const threadId = newID("thread");
  const input = (runId) => JSON.stringify({
    threadId, runId, protocolVersion: "1.0", state: {}, tools: [], context: [], forwardedProps: {},
    messages: [{ id: newID("msg"), role: "user", content: "go" }],
  });
  const came = new Promise((r) => { arrived = r; });
  const first = fetch(`${base}/workflows/slow`, { method: "POST", headers: { "content-type": "application/json" }, body: input("run-1") });
  await came;
  const second = await fetch(`${base}/workflows/slow`, { method: "POST", headers: { "content-type": "application/json" }, body: input("run-2") });
  assert.equal(second.status, 409, await second.clone().text());
  assert.match(second.headers.get("content-type"), /problem\+json/);

  const cancel = await fetch(`${base}/threads/${threadId}/interrupt`, { method: "POST" });
  assert.equal(cancel.status, 200, await cancel.clone().text());
  const text = await (await first).text();
  const last = JSON.parse(text.trim().split("\n\n").at(-1).split("\n").find((l) => l.startsWith("data: ")).slice(6));
  assert.equal(last.type, "RUN_FINISHED");
  assert.equal(last.outcome?.type, "cancelled", JSON.stringify(last));

  const idle = await fetch(`${base}/threads/${threadId}/interrupt`, { method: "POST" });
  assert.equal(idle.status, 404);
});
