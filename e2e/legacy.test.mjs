// The clients before AG-UI 1.0: @ag-ui/client 0.0.57 (CopilotKit 1.61,
// the AG-UI dojo) and 0.0.59 (CopilotKit 1.74). They send no
// protocolVersion, and check every event against their own schemas. Each
// runs the examples of workflows/, one of the AG-UI dojo's pages among
// them (and e2e/workflows' slow one, to be cancelled): every raw frame is
// checked against that client's schemas, the client itself must end every
// run without an error, and no client warning may be printed.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import path from "node:path";
import { readdirSync, readFileSync } from "node:fs";
import jsonpatch from "fast-json-patch";
import { HttpAgent as HttpAgent0057 } from "ag-ui-client-0057";
import { HttpAgent as HttpAgent0059 } from "ag-ui-client-0059";
import { EventSchemas as EventSchemas0057 } from "ag-ui-core-0057";
import { EventSchemas as EventSchemas0059 } from "ag-ui-core-0059";
import { root, here, startServe, newID, checkedFetchWith, agentRun, textOf, warnings } from "./lib.mjs";

const clients = [
  { version: "0.0.57", HttpAgent: HttpAgent0057, schemas: EventSchemas0057 },
  { version: "0.0.59", HttpAgent: HttpAgent0059, schemas: EventSchemas0059 },
];

// examples serves workflows/ as the examples suite does; e2e serves
// e2e/workflows, whose slow workflow waits on the server slow until the
// test lets it go.
let examples, e2e;
let arrived = () => {};
const held = [];
const slow = http.createServer((req, res) => {
  held.push(res);
  arrived();
});

before(async () => {
  await new Promise((r) => slow.listen(0, "127.0.0.1", r));
  [examples, e2e] = await Promise.all([
    startServe({ args: ["--model-script", path.join(root, "workflows", "scripts", "demo.script"), path.join(root, "workflows")] }),
    startServe({
      args: ["--model-script", path.join(here, "workflows", "e2e.script"), path.join(here, "workflows")],
      env: { E2E_SLOW_URL: `http://127.0.0.1:${slow.address().port}` },
    }),
  ]);
});

after(async () => {
  for (const res of held) res.end("released");
  slow.close();
  await Promise.all([examples?.stop(), e2e?.stop()]);
});

// agentFor is a client of one workflow, on a thread of its own: every
// stream it reads is checked against its own schemas, and every request
// body it sends is kept in bodies.
function agentFor(client, base, id, options = {}) {
  const checked = checkedFetchWith(client.schemas);
  const bodies = [];
  const agent = new client.HttpAgent({
    url: `${base}/workflows/${id}`,
    threadId: newID("thread"),
    fetch: (url, init) => {
      bodies.push(JSON.parse(init.body));
      return checked(url, init);
    },
    ...options,
  });
  agent.bodies = bodies;
  return agent;
}

// send adds a user message and runs the agent.
function send(agent, content, params) {
  agent.addMessage({ id: newID("msg"), role: "user", content });
  return agentRun(agent, params);
}

const finishedOf = (seen) => seen.find((e) => e.type === "RUN_FINISHED");
const lastText = (agent) => textOf(agent.messages).at(-1);

// stateOf folds the state events of events into state, with the JSON
// Patch library the clients use: what a client holds once it has applied
// them.
function stateOf(events, state) {
  for (const e of events) {
    if (e.type === "STATE_SNAPSHOT") state = structuredClone(e.snapshot);
    if (e.type === "STATE_DELTA") state = jsonpatch.applyPatch(state, e.delta, true, false).newDocument;
  }
  return state;
}

// replay is the thread's stored events, as the server replays them.
async function replay(base, threadId) {
  const res = await fetch(`${base}/threads/${threadId}/replay?limit=500`);
  assert.equal(res.status, 200, await res.clone().text());
  const text = await res.text();
  return text.split("\n\n").filter((f) => f.trim() !== "").map((f) => JSON.parse(f.split("\n").find((l) => l.startsWith("data: ")).slice(6)));
}

for (const client of clients) {
  const name = `@ag-ui/client ${client.version}`;

  test(`${name}: every event aguic sends before 1.0 is valid for it (server/agui/testdata/v0)`, () => {
    const dir = path.join(root, "server", "agui", "testdata", "v0");
    const files = readdirSync(dir).filter((f) => f.endsWith(".json"));
    assert.ok(files.length > 0);
    for (const f of files) {
      const line = readFileSync(path.join(dir, f), "utf8").trim();
      if (line === "") continue; // an event not sent before 1.0
      const parsed = client.schemas.safeParse(JSON.parse(line));
      assert.ok(parsed.success, `${f}: ${parsed.error}`);
    }
  });

  test(`${name}: a chat turn, without protocolVersion`, async () => {
    const agent = agentFor(client, examples.base, "chat");
    const { seen, result } = await send(agent, "hello there");
    assert.deepEqual(result.result, { text: "Hello! I am a scripted assistant. Ask me anything." });
    assert.equal(lastText(agent), "Hello! I am a scripted assistant. Ask me anything.");
    assert.equal(agent.bodies[0].protocolVersion, undefined, "the client sends no protocolVersion");
    assert.equal(seen[0].protocolVersion, undefined);
    assert.deepEqual(finishedOf(seen).outcome, { type: "success" });
    assert.deepEqual(warnings, []);
  });

  test(`${name}: approval.wf's frontend tool: the run ends as a success the client takes, and the answer resumes it`, async () => {
    const agent = agentFor(client, examples.base, "refund_approval");
    const { seen } = await send(agent, "Please refund order A-17.");
    // No pendingToolCallIds: the client learns of the call from its events.
    assert.deepEqual(finishedOf(seen).outcome, { type: "success" });
    const call = seen.find((e) => e.type === "TOOL_CALL_START");
    assert.equal(call?.toolCallName, "confirm_refund");
    const asked = agent.messages.find((m) => m.toolCalls?.some((c) => c.id === call.toolCallId));
    assert.ok(asked, JSON.stringify(agent.messages));

    agent.addMessage({ id: newID("msg"), role: "tool", toolCallId: call.toolCallId, content: JSON.stringify({ approved: true }) });
    const yes = await agentRun(agent);
    assert.deepEqual(finishedOf(yes.seen).outcome, { type: "success" });
    assert.deepEqual(yes.seen.filter((e) => e.type === "CUSTOM").map((e) => [e.name, e.value]), [["refund_issued", { status: "queued" }]]);
    assert.equal(lastText(agent), "Done: your refund is queued.");
    assert.deepEqual(warnings, []);
  });

  test(`${name}: handoff.wf's interrupt: the client holds it and answers it with resume, resolved and cancelled`, async () => {
    const agent = agentFor(client, examples.base, "handoff");
    const handOver = async (content) => {
      const { seen } = await send(agent, content);
      const outcome = finishedOf(seen).outcome;
      assert.equal(outcome?.type, "interrupt", JSON.stringify(outcome));
      assert.equal(outcome.interrupts.length, 1);
      assert.deepEqual(agent.pendingInterrupts.map((i) => i.id), [outcome.interrupts[0].id]);
      assert.equal(outcome.interrupts[0].reason, "human_handoff");
      return outcome.interrupts[0];
    };

    let interrupt = await handOver("Can I talk to a person?");
    // The client refuses, before sending anything, a run that leaves the
    // interrupt unanswered.
    agent.addMessage({ id: newID("msg"), role: "user", content: "Hello?" });
    await assert.rejects(agentRun(agent), /pending interrupt/);
    agent.messages.pop();

    const reply = "Hi, I am Sam from support. How can I help?";
    const resolved = await agentRun(agent, { resume: [{ interruptId: interrupt.id, status: "resolved", payload: { reply } }] });
    assert.deepEqual(finishedOf(resolved.seen).outcome, { type: "success" });
    assert.equal(lastText(agent), reply);
    assert.deepEqual(agent.pendingInterrupts, []);

    interrupt = await handOver("I want a human, please.");
    await agentRun(agent, { resume: [{ interruptId: interrupt.id, status: "cancelled" }] });
    assert.equal(lastText(agent), "Nobody is free right now, sorry. I will keep helping you myself.");
    assert.deepEqual(warnings, []);
  });

  test(`${name}: todos.wf's state deltas: the client's state is the server's, and a client that starts each run from {} gets it too`, async () => {
    const agent = agentFor(client, examples.base, "todos", { initialState: { theme: "dark" } });
    const steps = [
      ["add buy milk", { theme: "dark", todos: [{ title: "buy milk", done: false }] }],
      ["add call Ada", { theme: "dark", todos: [{ title: "buy milk", done: false }, { title: "call Ada", done: false }] }],
      ["done buy milk", { theme: "dark", todos: [{ title: "buy milk", done: true }, { title: "call Ada", done: false }] }],
      ["clear", { todos: [] }],
    ];
    for (const [command, want] of steps) {
      const { seen } = await send(agent, command);
      assert.deepEqual(agent.state, want, command);
      // The first state event of every run is a snapshot: a client that
      // applies a run's first delta to an empty state (Copilot Runtime
      // 1.74's in-memory runner) holds the right state all the same.
      const states = seen.filter((e) => e.type === "STATE_SNAPSHOT" || e.type === "STATE_DELTA");
      assert.equal(states[0].type, "STATE_SNAPSHOT", `${command}: ${states.map((e) => e.type).join(" ")}`);
      assert.deepEqual(stateOf(seen, {}), want, command);
    }
    // The thread's log holds those snapshots: its replay alone rebuilds
    // the state.
    assert.deepEqual(stateOf(await replay(examples.base, agent.threadId), {}), agent.state);
    assert.deepEqual(warnings, []);
  });

  test(`${name}: predictive_state_updates.wf, the dojo's page: the document streams, then the client confirms the pending call`, async () => {
    const agent = agentFor(client, examples.base, "predictive_state_updates");
    const write = async (content) => {
      const { seen } = await send(agent, content);
      assert.deepEqual(finishedOf(seen).outcome, { type: "success" });
      assert.ok(seen.some((e) => e.type === "CUSTOM" && e.name === "PredictState"), seen.map((e) => e.type).join(" "));
      const confirm = seen.find((e) => e.type === "TOOL_CALL_START" && e.toolCallName === "confirm_changes");
      assert.ok(confirm, seen.map((e) => e.type).join(" "));
      return confirm.toolCallId;
    };
    const answer = (toolCallId, value) => {
      agent.addMessage({ id: newID("msg"), role: "tool", toolCallId, content: JSON.stringify(value) });
      return agentRun(agent);
    };

    await answer(await write("Write a story"), { accepted: true });
    const first = agent.state.document;
    assert.match(first, /^Once upon a time/);
    assert.equal(lastText(agent), "Ok! The document is updated.");
    await answer(await write("Update the story"), { accepted: false });
    assert.equal(agent.state.document, first);
    assert.equal(lastText(agent), "All right, I kept the document as it was.");
    assert.deepEqual(warnings, []);
  });

  test(`${name}: subworkflow.wf: the called workflow's events are the run's own`, async () => {
    const agent = agentFor(client, examples.base, "tldr");
    const text = "aguic is a small language for AI-agent and chat workflows, its compiler and its runtime, which serves every workflow to AG-UI clients.";
    const { seen, result } = await send(agent, text);
    const summary = "aguic: a workflow language, compiler and runtime for AG-UI chat agents.";
    assert.deepEqual(result.result, { summary });
    assert.equal(lastText(agent), `TL;DR: ${summary}`);
    assert.deepEqual(seen.filter((e) => e.type.startsWith("SUBAGENT_")), []);
    assert.deepEqual(seen.filter((e) => e.subagentRunId !== undefined), []);
    assert.deepEqual(warnings, []);
  });

  test(`${name}: a cancelled run ends with RUN_FINISHED, without an outcome`, async () => {
    const agent = agentFor(client, e2e.base, "slow");
    const came = new Promise((r) => { arrived = r; });
    const run = send(agent, "go");
    await came;
    const cancel = await fetch(`${e2e.base}/threads/${agent.threadId}/interrupt`, { method: "POST" });
    assert.equal(cancel.status, 200, await cancel.clone().text());
    assert.equal((await cancel.json()).status, "cancelled");
    const { seen } = await run;
    const end = seen.at(-1);
    assert.equal(end.type, "RUN_FINISHED");
    assert.equal(end.outcome, undefined);
    assert.deepEqual(warnings, []);
  });
}
