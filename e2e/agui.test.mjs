// The conformance suite: it starts the real `aguic serve` on loopback and
// drives it with the official AG-UI client (@ag-ui/client 1.0.0). Every raw
// frame is checked against the protocol's schemas and framing rules, every
// stream goes through the client's own verification, and no client warning
// may be printed.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { HttpAgent } from "@ag-ui/client";
import { EventSchemas } from "@ag-ui/core/schemas";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(here);
const work = mkdtempSync(path.join(tmpdir(), "aguic-e2e-"));
let server, base, stderr = "";

// slow is an HTTP server the "slow" workflow calls: it holds each request
// until the test releases it.
let held = [];
let arrived = () => {};
const slow = http.createServer((req, res) => {
  held.push(res);
  arrived();
});

// warnings collects what the client prints: a clean run prints nothing.
const warnings = [];
for (const level of ["warn", "error"]) {
  const original = console[level];
  console[level] = (...args) => {
    warnings.push(args.map(String).join(" "));
    original.apply(console, args);
  };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

before(async () => {
  const bin = path.join(work, "aguic");
  execFileSync("go", ["build", "-o", bin, "./cmd/aguic"], { cwd: root, stdio: "inherit" });
  const port = await freePort();
  await new Promise((r) => slow.listen(0, "127.0.0.1", r));
  server = spawn(bin, [
    "serve",
    "--addr", `127.0.0.1:${port}`,
    "--data", path.join(work, "data"),
    "--model-script", path.join(here, "workflows", "e2e.script"),
    path.join(here, "workflows"),
  ], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, E2E_SLOW_URL: `http://127.0.0.1:${slow.address().port}` },
  });
  server.stderr.on("data", (d) => { stderr += d; });
  base = `http://127.0.0.1:${port}/agui`;
  for (let i = 0; ; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (i > 300 || server.exitCode !== null) {
      throw new Error(`aguic serve did not start:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
});

after(async () => {
  for (const res of held) res.end("released");
  slow.close();
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once("exit", r));
    server.kill("SIGTERM");
    await exited;
  }
  rmSync(work, { recursive: true, force: true, maxRetries: 5 });
});

let ids = 0;
const newID = (p) => `${p}-${process.pid}-${++ids}`;

// rawRun posts a RunAgentInput and checks the stream as bytes: LF framing,
// an id line per frame, every event valid against EventSchemas, one
// terminal event, last.
async function rawRun(url, input) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(input),
  });
  assert.equal(res.status, 200, `status ${res.status}: ${await res.clone().text()}`);
  assert.match(res.headers.get("content-type"), /^text\/event-stream/);
  return checkStream(await res.text(), input);
}

// checkStream checks an SSE body as bytes: LF framing, every event valid
// against EventSchemas, RUN_STARTED first, one terminal event, last.
function checkStream(text, input) {
  assert.ok(!text.includes("\r"), "frames must use LF only");
  assert.ok(text.endsWith("\n\n"), "the stream must end with a whole frame");
  const events = [];
  for (const frame of text.split("\n\n")) {
    const lines = frame.split("\n").filter((l) => l !== "" && !l.startsWith(":"));
    if (lines.length === 0) continue;
    const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
    const event = JSON.parse(data);
    const parsed = EventSchemas.safeParse(event);
    assert.ok(parsed.success, `invalid event ${data}: ${parsed.error}`);
    events.push(event);
  }
  assert.equal(events[0].type, "RUN_STARTED");
  if (input) {
    assert.equal(events[0].threadId, input.threadId);
    assert.equal(events[0].runId, input.runId);
  }
  const terminal = events.filter((e) => e.type === "RUN_FINISHED" || e.type === "RUN_ERROR");
  assert.equal(terminal.length, 1, "exactly one terminal event");
  assert.equal(events.at(-1), terminal[0], "the terminal event comes last");
  return events;
}

// checkedFetch is the fetch the official client uses in these tests: it
// checks every stream it reads, frame by frame, before the client sees it.
async function checkedFetch(url, init) {
  const res = await fetch(url, init);
  if (!res.ok || !res.headers.get("content-type")?.startsWith("text/event-stream")) return res;
  const text = await res.text();
  checkStream(text, JSON.parse(init.body));
  return new Response(text, { status: res.status, headers: res.headers });
}

// agentRun runs the official client and returns what it saw.
async function agentRun(agent, params = {}) {
  const seen = [];
  const result = await agent.runAgent({ runId: newID("run"), ...params }, {
    onEvent: ({ event }) => { seen.push(event); },
  });
  return { seen, result };
}

function textOf(messages) {
  return messages.filter((m) => m.role === "assistant" && typeof m.content === "string").map((m) => m.content);
}

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
    threadId, runId, state: {}, tools: [], context: [], forwardedProps: {},
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
