// The example workflows of workflows/, served as a newcomer serves them:
//
//   aguic serve --model-script workflows/scripts/demo.script workflows
//
// and driven with the official AG-UI client, one test per example. The
// weather example's API is a local server that answers like Open-Meteo,
// named by WEATHER_API_URL.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import path from "node:path";
import { HttpAgent } from "@ag-ui/client";
import { root, startServe, newID, rawRun, checkedFetch, agentRun, textOf, warnings } from "./lib.mjs";

let serve, base;

// api answers GET /v1/forecast like Open-Meteo and records each request.
const forecast = {
  latitude: 52.52,
  longitude: 13.41,
  current_units: { temperature_2m: "°C", wind_speed_10m: "km/h" },
  current: { time: "2025-05-01T12:00", temperature_2m: 18.4, wind_speed_10m: 9.7 },
};
const apiRequests = [];
const api = http.createServer((req, res) => {
  const url = new URL(req.url, "http://localhost");
  apiRequests.push(url);
  if (req.method !== "GET" || url.pathname !== "/v1/forecast") {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(forecast));
});

before(async () => {
  await new Promise((r) => api.listen(0, "127.0.0.1", r));
  serve = await startServe({
    args: ["--model-script", path.join(root, "workflows", "scripts", "demo.script"), path.join(root, "workflows")],
    env: { WEATHER_API_URL: `http://127.0.0.1:${api.address().port}` },
  });
  base = serve.base;
});

after(async () => {
  api.close();
  await serve?.stop();
});

// agentFor is a client of one example workflow, on a thread of its own.
function agentFor(id, options = {}) {
  return new HttpAgent({ fetch: checkedFetch, url: `${base}/workflows/${id}`, threadId: newID("thread"), ...options });
}

// run runs the agent and returns the events it saw and the run's result.
async function run(agent, params) {
  const { seen, result } = await agentRun(agent, params);
  return { seen, result: result.result };
}

// send adds a user message and runs the agent.
function send(agent, content) {
  agent.addMessage({ id: newID("msg"), role: "user", content });
  return run(agent);
}

const finishedOf = (seen) => seen.find((e) => e.type === "RUN_FINISHED");
const ofType = (seen, type) => seen.filter((e) => e.type === type);
const lastText = (agent) => textOf(agent.messages).at(-1);

// toolCalls gathers the tool calls a run started: name, parsed arguments
// and the result's content. (A resumed run may also carry the result of a
// call an earlier run started.)
function toolCalls(seen) {
  const calls = new Map();
  for (const e of seen) {
    if (e.type === "TOOL_CALL_START") calls.set(e.toolCallId, { name: e.toolCallName, args: "", result: undefined });
    const call = calls.get(e.toolCallId);
    if (e.type === "TOOL_CALL_ARGS") call.args += e.delta;
    if (e.type === "TOOL_CALL_RESULT" && call) call.result = e.content;
  }
  return [...calls.values()].map((c) => ({ ...c, args: JSON.parse(c.args || "{}") }));
}

test("chat.wf: a stateless chat answers every message", async () => {
  const agent = agentFor("chat");
  const { result } = await send(agent, "hello there");
  assert.deepEqual(result, { text: "Hello! I am a scripted assistant. Ask me anything." });
  await send(agent, "what is aguic?");
  assert.equal(lastText(agent), "That is a good question. A real model would answer it; this script only shows how the answer streams.");
  assert.deepEqual(warnings, []);
});

test("support.wf: a conversation keeps its history on the server", async () => {
  const agent = agentFor("support_chat");
  await send(agent, "I ordered a teapot, order A-17.");
  assert.equal(lastText(agent), "Thanks! I have noted order A-17, your teapot. How can I help with it?");
  const { seen } = await send(agent, "When will it arrive?");
  assert.equal(finishedOf(seen).outcome?.type, "success");
  assert.equal(lastText(agent), "Order A-17 left our warehouse yesterday: your teapot should arrive on Monday.");

  const res = await fetch(`${base}/history`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ threadId: agent.threadId, workflowId: "support_chat" }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const history = await res.json();
  assert.deepEqual(textOf(history.messages), textOf(agent.messages));
  assert.equal(textOf(history.messages).length, 2);
  assert.deepEqual(warnings, []);
});

test("approval.wf: the browser confirms through a frontend tool, and the flow branches on the answer", async () => {
  const agent = agentFor("refund_approval");

  // Each request asks the client to run confirm_refund and waits for it.
  const ask = async (content) => {
    const { seen } = await send(agent, content);
    const pending = finishedOf(seen).outcome?.pendingToolCallIds ?? [];
    assert.equal(pending.length, 1, JSON.stringify(finishedOf(seen)));
    const [call] = toolCalls(seen);
    assert.deepEqual(call, { name: "confirm_refund", args: { request: content }, result: undefined });
    return pending[0];
  };
  const answer = async (toolCallId, value) => {
    agent.addMessage({ id: newID("msg"), role: "tool", toolCallId, content: JSON.stringify(value) });
    return run(agent);
  };

  const yes = await answer(await ask("Please refund order A-17."), { approved: true });
  assert.equal(finishedOf(yes.seen).outcome?.type, "success");
  const refund = toolCalls(yes.seen).find((c) => c.name === "issue_refund");
  assert.deepEqual(refund, { name: "issue_refund", args: { request: "Please refund order A-17." }, result: '{"status":"queued"}' });
  const custom = ofType(yes.seen, "CUSTOM");
  assert.deepEqual(custom.map((e) => [e.name, e.value]), [["refund_issued", { status: "queued" }]]);
  assert.equal(lastText(agent), "Done: your refund is queued.");

  const no = await answer(await ask("Refund order A-18 too."), { approved: false });
  assert.equal(toolCalls(no.seen).find((c) => c.name === "issue_refund"), undefined);
  assert.equal(lastText(agent), "All right, I will not issue a refund.");

  // A message instead of an answer abandons the question and asks about
  // the new request.
  await ask("Refund order A-19.");
  await ask("No wait, refund order A-20.");
  assert.deepEqual(warnings, []);
});

test("handoff.wf: an interrupt hands over to a person, who answers or cancels", async () => {
  const agent = agentFor("handoff");
  await send(agent, "What are your opening hours?");
  assert.equal(lastText(agent), "We are open Monday to Friday, from 9:00 to 17:00.");

  const handOver = async (content) => {
    const { seen } = await send(agent, content);
    const outcome = finishedOf(seen).outcome;
    assert.equal(outcome?.type, "interrupt", JSON.stringify(outcome));
    const [interrupt] = outcome.interrupts;
    assert.equal(interrupt.reason, "human_handoff");
    assert.equal(interrupt.message, `The customer asks for a person: ${content}`);
    assert.deepEqual(interrupt.responseSchema.required, ["reply"]);
    assert.equal(lastText(agent), "Let me get a colleague of mine.");
    return interrupt;
  };

  let interrupt = await handOver("Can I talk to a person?");
  // An answer the response schema refuses fails the resumed run; the
  // interrupt stays open.
  const refused = await rawRun(`${base}/workflows/handoff`, {
    threadId: agent.threadId, runId: newID("run"), state: {}, tools: [], context: [], forwardedProps: {}, messages: [],
    resume: [{ interruptId: interrupt.id, status: "resolved", payload: { note: "no reply" } }],
  });
  assert.equal(refused.at(-1).type, "RUN_ERROR");
  assert.match(refused.at(-1).message, /response_schema/);

  const reply = "Hi, I am Sam from support. How can I help?";
  const resolved = await run(agent, { resume: [{ interruptId: interrupt.id, status: "resolved", payload: { reply } }] });
  assert.equal(finishedOf(resolved.seen).outcome?.type, "success");
  assert.equal(lastText(agent), reply);

  interrupt = await handOver("I want a human, please.");
  await run(agent, { resume: [{ interruptId: interrupt.id, status: "cancelled" }] });
  assert.equal(lastText(agent), "Nobody is free right now, sorry. I will keep helping you myself.");
  assert.deepEqual(warnings, []);
});

test("todos.wf: the todo list lives in the shared state", async () => {
  const agent = agentFor("todos", { initialState: { theme: "dark" } });
  const stateEvents = (seen) => seen.filter((e) => e.type === "STATE_SNAPSHOT" || e.type === "STATE_DELTA").map((e) => e.type);

  let run = await send(agent, "add buy milk");
  assert.equal(stateEvents(run.seen).length, 1);
  assert.deepEqual(agent.state, { theme: "dark", todos: [{ title: "buy milk", done: false }] });

  // A run's first STATE_DELTA comes after a STATE_SNAPSHOT of the state
  // the client sent: the state the delta applies to.
  let before = structuredClone(agent.state);
  run = await send(agent, "add call Ada");
  assert.deepEqual(stateEvents(run.seen), ["STATE_SNAPSHOT", "STATE_DELTA"]);
  assert.deepEqual(ofType(run.seen, "STATE_SNAPSHOT")[0].snapshot, before);
  assert.deepEqual(agent.state.todos, [{ title: "buy milk", done: false }, { title: "call Ada", done: false }]);

  before = structuredClone(agent.state);
  run = await send(agent, "done buy milk");
  assert.deepEqual(stateEvents(run.seen), ["STATE_SNAPSHOT", "STATE_DELTA"]);
  assert.deepEqual(ofType(run.seen, "STATE_SNAPSHOT")[0].snapshot, before);
  assert.deepEqual(ofType(run.seen, "STATE_DELTA")[0].delta, [{ op: "replace", path: "/todos/0/done", value: true }]);
  assert.deepEqual(agent.state.todos, [{ title: "buy milk", done: true }, { title: "call Ada", done: false }]);
  assert.equal(lastText(agent), "[x] buy milk; [ ] call Ada");

  run = await send(agent, "done walk the dog");
  assert.deepEqual(stateEvents(run.seen), []);
  assert.equal(lastText(agent), 'There is no todo "walk the dog".');

  run = await send(agent, "clear");
  assert.deepEqual(stateEvents(run.seen), ["STATE_SNAPSHOT"]);
  assert.deepEqual(agent.state, { todos: [] });
  assert.deepEqual(warnings, []);
});

test("planner.wf: the plan is a PLAN activity whose statuses follow the steps", async () => {
  const agent = agentFor("planner");
  // The plan's statuses each time the client's copy of the activity
  // changes, and the step events in between.
  const timeline = [];
  const planOf = (messages) => messages.find((m) => m.role === "activity" && m.activityType === "PLAN");
  const sub = agent.subscribe({
    onMessagesChanged: ({ messages }) => {
      const statuses = planOf(messages)?.content.steps.map((s) => s.status).join(" ");
      if (statuses && statuses !== timeline.findLast((t) => t.startsWith("plan:"))?.slice(6)) timeline.push(`plan: ${statuses}`);
    },
    onStepStartedEvent: ({ event }) => { timeline.push(`start ${event.stepName}`); },
    onStepFinishedEvent: ({ event }) => { timeline.push(`finish ${event.stepName}`); },
  });
  const { seen, result } = await send(agent, "How do I brew green tea?");
  sub.unsubscribe();

  assert.deepEqual(timeline, [
    "plan: in_progress pending pending",
    "start Outline",
    "finish Outline",
    "plan: done in_progress pending",
    "start Draft",
    "finish Draft",
    "plan: done done in_progress",
    "start Review",
    "finish Review",
    "plan: done done done",
  ]);
  assert.deepEqual(ofType(seen, "ACTIVITY_SNAPSHOT").length, 1);
  assert.deepEqual(ofType(seen, "ACTIVITY_DELTA").length, 3);
  const plan = planOf(agent.messages);
  assert.deepEqual(plan.content, {
    request: "How do I brew green tea?",
    steps: [
      { title: "Outline", status: "done" },
      { title: "Draft", status: "done" },
      { title: "Review", status: "done" },
    ],
  });
  assert.match(result.answer, /^Heat water to about 80 °C/);
  assert.equal(lastText(agent), result.answer);
  assert.equal(result.review, "The answer is short, correct and easy to follow.");
  assert.deepEqual(warnings, []);
});

test("subworkflow.wf: tldr calls the summarize workflow and uses its output", async () => {
  const agent = agentFor("tldr");
  const text = "aguic is a small language for AI-agent and chat workflows, its compiler and its runtime, which serves every workflow to AG-UI clients.";
  const { seen, result } = await send(agent, text);
  const summary = "aguic: a workflow language, compiler and runtime for AG-UI chat agents.";
  assert.deepEqual(result, { summary });
  assert.equal(lastText(agent), `TL;DR: ${summary}`);
  const started = ofType(seen, "SUBAGENT_STARTED");
  const finished = ofType(seen, "SUBAGENT_FINISHED");
  assert.equal(started.length, 1);
  assert.equal(finished.length, 1);
  assert.equal(started[0].name, "summarize");
  assert.equal(finished[0].subagentRunId, started[0].subagentRunId);
  assert.equal(finished[0].result, summary);

  // The helper fails without a text; tldr catches the failed call.
  const empty = agentFor("tldr");
  const failed = await send(empty, "   ");
  const errors = ofType(failed.seen, "SUBAGENT_ERROR");
  assert.equal(errors.length, 1, JSON.stringify(errors));
  assert.equal(errors[0].message, "there is no text to summarize");
  assert.equal(finishedOf(failed.seen).outcome?.type, "success");
  assert.match(lastText(empty), /^I could not summarize that: .*there is no text to summarize$/);
  assert.deepEqual(warnings, []);
});

test("weather.wf: the model calls a backend tool that gets the forecast from the HTTP API", async () => {
  const agent = agentFor("weather");
  const { seen, result } = await send(agent, "What is the weather in Berlin?");
  const calls = toolCalls(seen);
  assert.equal(calls.length, 1, JSON.stringify(calls));
  assert.equal(calls[0].name, "get_weather");
  assert.deepEqual(calls[0].args, { latitude: 52.52, longitude: 13.41 });
  const response = JSON.parse(calls[0].result);
  assert.equal(response.status, 200);
  assert.deepEqual(response.body, forecast);

  assert.equal(apiRequests.length, 1);
  const [req] = apiRequests;
  assert.equal(req.pathname, "/v1/forecast");
  assert.equal(req.searchParams.get("latitude"), "52.52");
  assert.equal(req.searchParams.get("longitude"), "13.41");
  assert.equal(req.searchParams.get("current"), "temperature_2m,wind_speed_10m");

  const text = "That is the weather in Berlin right now, straight from the weather service.";
  assert.deepEqual(result, { text });
  assert.equal(lastText(agent), text);
  assert.ok(agent.messages.some((m) => m.role === "tool" && JSON.parse(m.content).body.current.temperature_2m === 18.4), JSON.stringify(agent.messages));
  assert.deepEqual(warnings, []);
});

test("fanout.wf: parallel branches ask for both sides and the flow merges them", async () => {
  const agent = agentFor("pros_cons");
  const { result } = await send(agent, "Should I learn Go?");
  const pros = "Go is simple to learn, compiles fast, and is great for servers and command-line tools.";
  const cons = "Its type system is plain, and handling every error by hand is verbose.";
  assert.deepEqual(result, { pros, cons });
  assert.equal(lastText(agent), `For: ${pros}\nAgainst: ${cons}`);
  assert.deepEqual(warnings, []);
});
