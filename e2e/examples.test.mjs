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

// api answers GET /v1/forecast like Open-Meteo and records each request;
// while apiDown is set it drops every connection unanswered, as a service
// that cannot be reached.
let apiDown = false;
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
  if (apiDown) {
    req.socket.destroy();
    return;
  }
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

// pendingCall returns the id of the one tool call a run ended waiting for.
function pendingCall(seen) {
  const pending = finishedOf(seen).outcome?.pendingToolCallIds ?? [];
  assert.equal(pending.length, 1, JSON.stringify(finishedOf(seen)));
  return pending[0];
}

// answer adds the client's result of a tool call and runs the agent.
function answer(agent, toolCallId, value) {
  agent.addMessage({ id: newID("msg"), role: "tool", toolCallId, content: typeof value === "string" ? value : JSON.stringify(value) });
  return run(agent);
}

// argsDeltas counts the TOOL_CALL_ARGS events of the call named name.
function argsDeltas(seen, name) {
  const id = seen.find((e) => e.type === "TOOL_CALL_START" && e.toolCallName === name)?.toolCallId;
  return seen.filter((e) => e.type === "TOOL_CALL_ARGS" && e.toolCallId === id).length;
}

// tool is a frontend tool as a client declares it.
const tool = (name, properties = {}) => ({ name, description: name, parameters: { type: "object", properties } });

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
    const [call] = toolCalls(seen);
    assert.deepEqual(call, { name: "confirm_refund", args: { request: content }, result: undefined });
    return pendingCall(seen);
  };

  const yes = await answer(agent, await ask("Please refund order A-17."), { approved: true });
  assert.equal(finishedOf(yes.seen).outcome?.type, "success");
  const refund = toolCalls(yes.seen).find((c) => c.name === "issue_refund");
  assert.deepEqual(refund, { name: "issue_refund", args: { request: "Please refund order A-17." }, result: '{"status":"queued"}' });
  const custom = ofType(yes.seen, "CUSTOM");
  assert.deepEqual(custom.map((e) => [e.name, e.value]), [["refund_issued", { status: "queued" }]]);
  assert.equal(lastText(agent), "Done: your refund is queued.");

  const no = await answer(agent, await ask("Refund order A-18 too."), { approved: false });
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
  assert.deepEqual(JSON.parse(calls[0].result), forecast, "the model gets the body of the response");

  assert.equal(apiRequests.length, 1);
  const [req] = apiRequests;
  assert.equal(req.pathname, "/v1/forecast");
  assert.equal(req.searchParams.get("latitude"), "52.52");
  assert.equal(req.searchParams.get("longitude"), "13.41");
  assert.equal(req.searchParams.get("current"), "temperature_2m,wind_speed_10m");

  const text = "That is the weather in Berlin right now, straight from the weather service.";
  assert.deepEqual(result, { text });
  assert.equal(lastText(agent), text);
  assert.ok(agent.messages.some((m) => m.role === "tool" && JSON.parse(m.content).current.temperature_2m === 18.4), JSON.stringify(agent.messages));
  assert.deepEqual(warnings, []);
});

test("weather.wf: when the weather service cannot be reached, the answer says so", async () => {
  apiRequests.length = 0;
  apiDown = true;
  try {
    const agent = agentFor("weather");
    const { seen, result } = await send(agent, "What is the weather in Berlin?");
    const calls = toolCalls(seen);
    assert.equal(calls.length, 1, JSON.stringify(calls));
    assert.match(calls[0].result, /^error: http GET http:\/\/127\.0\.0\.1:\d+\/v1\/forecast\?…: .* \(after 2 tries\)$/);
    // The tool tries twice (retry = 1); Go's transport may send a request
    // once more itself when a reused connection drops it.
    assert.ok(apiRequests.length >= 2, `${apiRequests.length} requests`);
    const text = "I could not reach the weather service, so I cannot tell you the weather in Berlin right now.";
    assert.deepEqual(result, { text });
    assert.equal(lastText(agent), text);
    assert.equal(finishedOf(seen).outcome?.type, "success");
    assert.deepEqual(warnings, []);
  } finally {
    apiDown = false;
  }
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

// The examples named after the AG-UI dojo's features, driven as the dojo's
// pages drive them: the same agent ids, frontend tools, state and answers
// (docs/dojo.md has the contract of each).

test("agentic_chat.wf: a streamed countdown, the client's change_background tool and the weather tool", async () => {
  const agent = agentFor("agentic_chat");
  const tools = [tool("change_background", { background: { type: "string" } })];

  let { seen } = await send(agent, "Hey there");
  assert.match(lastText(agent), /counting down:\s*10\s+9\s+8\s+7\s+6\s+5\s+4\s+3\s+2\s+1\s+\u2713/);
  assert.ok(ofType(seen, "TEXT_MESSAGE_CONTENT").length >= 12, "the answer streams word by word");

  agent.addMessage({ id: newID("msg"), role: "user", content: "Change the background to blue." });
  ({ seen } = await run(agent, { tools }));
  const [call] = toolCalls(seen);
  assert.equal(call.name, "change_background");
  assert.match(call.args.background, /gradient/);
  await answer(agent, pendingCall(seen), { status: "success", message: `Background changed to ${call.args.background}` });
  assert.equal(lastText(agent), "Done: I changed the background.");

  agent.addMessage({ id: newID("msg"), role: "user", content: "What's the weather in Tokyo?" });
  ({ seen } = await run(agent, { tools }));
  const [weather] = toolCalls(seen);
  assert.deepEqual(weather.args, { location: "Tokyo" });
  assert.deepEqual(JSON.parse(weather.result), { city: "Tokyo", temperature: 21, conditions: "rainy", humidity: 84, wind_speed: 6, feels_like: 21 });
  assert.equal(lastText(agent), "Here is the weather there right now.");
  assert.deepEqual(warnings, []);
});

test("agentic_chat_reasoning.wf: the reasoning streams before the answer", async () => {
  const agent = agentFor("agentic_chat_reasoning", { initialState: { model: "Anthropic" } });
  const { seen } = await send(agent, "What is the best car to buy?");
  const types = seen.map((e) => e.type);
  assert.ok(types.includes("REASONING_MESSAGE_CONTENT"), types.join(" "));
  assert.ok(types.indexOf("REASONING_END") < types.indexOf("TEXT_MESSAGE_START"), types.join(" "));
  assert.match(lastText(agent), /Toyota/);
  assert.deepEqual(warnings, []);
});

test("backend_tool_rendering.wf: get_weather runs on the server and its call carries the card's data", async () => {
  const agent = agentFor("backend_tool_rendering");
  const { seen, result } = await send(agent, "What's the weather like in San Francisco?");
  const calls = toolCalls(seen);
  assert.equal(calls.length, 1, JSON.stringify(calls));
  assert.equal(calls[0].name, "get_weather");
  assert.deepEqual(calls[0].args, { location: "San Francisco" });
  const card = JSON.parse(calls[0].result);
  for (const key of ["temperature", "conditions", "humidity", "wind_speed", "feels_like"]) assert.ok(key in card, key);
  assert.equal(card.city, "San Francisco");
  assert.deepEqual(result, { text: "Here is the weather there right now." });
  assert.deepEqual(warnings, []);
});

test("human_in_the_loop.wf: the user picks the steps of the plan in the browser", async () => {
  const agent = agentFor("human_in_the_loop");
  const plan = async (content) => {
    const { seen } = await send(agent, content);
    const [call] = toolCalls(seen);
    assert.equal(call.name, "generate_task_steps");
    assert.ok(argsDeltas(seen, "generate_task_steps") >= 3, "the steps stream in pieces");
    assert.ok(call.args.steps.length > 0 && call.args.steps.every((s) => s.status === "enabled" && s.description), JSON.stringify(call.args));
    return { id: pendingCall(seen), steps: call.args.steps };
  };

  let asked = await plan("Please plan a trip to mars in 5 steps.");
  assert.equal(asked.steps.length, 5);
  const kept = asked.steps.slice(1, 3);
  const yes = await answer(agent, asked.id, { accepted: true, steps: kept });
  assert.equal(finishedOf(yes.seen).outcome?.type, "success");
  assert.equal(lastText(agent), `Ok! I'm working on it: ${kept.map((s) => s.description).join(", ")}.`);

  asked = await plan("Please plan a pasta dish in 10 steps.");
  await answer(agent, asked.id, { accepted: false });
  assert.equal(lastText(agent), "All right, I will not carry the plan out.");
  assert.deepEqual(warnings, []);
});

test("agentic_generative_ui.wf: the steps of the plan turn completed one by one in the shared state", async () => {
  const agent = agentFor("agentic_generative_ui");
  const completed = [];
  const sub = agent.subscribe({
    onStateChanged: ({ state }) => { completed.push(state.steps.filter((s) => s.status === "completed").length); },
  });
  const { seen } = await send(agent, "Please build a plan to go to mars in 5 steps.");
  sub.unsubscribe();
  const stateEvents = seen.filter((e) => e.type === "STATE_SNAPSHOT" || e.type === "STATE_DELTA").map((e) => e.type);
  assert.deepEqual(stateEvents, ["STATE_SNAPSHOT", "STATE_DELTA", "STATE_DELTA", "STATE_DELTA", "STATE_DELTA", "STATE_DELTA"]);
  assert.deepEqual(completed, [0, 1, 2, 3, 4, 5]);
  assert.equal(agent.state.steps.length, 5);
  assert.ok(agent.state.steps.every((s) => s.status === "completed" && s.description));
  assert.equal(lastText(agent), "Done: all 5 steps are completed.");
  assert.deepEqual(warnings, []);
});

test("tool_based_generative_ui.wf: the model answers with the client's generate_haiku tool, its arguments streamed", async () => {
  const agent = agentFor("tool_based_generative_ui");
  const tools = [tool("generate_haiku", { japanese: { type: "array" }, english: { type: "array" }, image_name: { type: "string" }, gradient: { type: "string" } })];
  const haiku = async (content) => {
    agent.addMessage({ id: newID("msg"), role: "user", content });
    const { seen } = await run(agent, { tools });
    const [call] = toolCalls(seen);
    assert.equal(call.name, "generate_haiku");
    assert.ok(argsDeltas(seen, "generate_haiku") >= 3, "the arguments stream in pieces");
    assert.equal(call.args.japanese.length, 3);
    assert.equal(call.args.english.length, 3);
    assert.match(call.args.gradient, /gradient/);
    // The page's handler shows the haiku and answers; it asks for no
    // follow-up run.
    agent.addMessage({ id: newID("msg"), role: "tool", toolCallId: pendingCall(seen), content: "Haiku generated!" });
    return call.args;
  };
  const first = await haiku('Generate Haiku for "I will always win"');
  const second = await haiku('Generate Haiku for "The moon shines bright"');
  assert.notDeepEqual(first.japanese, second.japanese);
  assert.deepEqual(warnings, []);
});

test("shared_state.wf: the workflow rewrites the recipe in the shared state", async () => {
  const recipe = {
    title: "Make Your Recipe", skill_level: "Intermediate", cooking_time: "45 min", special_preferences: [],
    ingredients: [{ icon: "🥕", name: "Carrots", amount: "3 large, grated" }], instructions: ["Preheat oven to 350°F (175°C)"],
  };
  const agent = agentFor("shared_state", { initialState: { recipe } });
  const names = () => agent.state.recipe.ingredients.map((i) => i.name);

  let { seen } = await send(agent, 'Please give me a pasta recipe of your choosing, but one of the ingredients should be "Pasta"');
  assert.ok(seen.some((e) => e.type === "STATE_DELTA" || e.type === "STATE_SNAPSHOT"));
  assert.ok(names().includes("Pasta") && names().includes("Salt"), names().join(", "));
  assert.ok(agent.state.recipe.instructions.length > 0);

  await send(agent, "Give me all the ingredients");
  for (const name of ["chicken breast", "chili powder", "Salt", "Lettuce leaves"]) assert.ok(names().includes(name), names().join(", "));
  assert.equal(agent.state.recipe.instructions.length, 3);
  assert.match(lastText(agent), /lettuce wraps/);
  assert.deepEqual(warnings, []);
});

test("predictive_state_updates.wf: PredictState announces the streamed document, and the user confirms or rejects it", async () => {
  const agent = agentFor("predictive_state_updates");
  const write = async (content) => {
    const { seen } = await send(agent, content);
    const types = seen.map((e) => e.type);
    const predict = seen.findIndex((e) => e.type === "CUSTOM" && e.name === "PredictState");
    const start = seen.findIndex((e) => e.type === "TOOL_CALL_START" && e.toolCallName === "write_document_local");
    assert.ok(predict >= 0 && predict < start, types.join(" "));
    assert.deepEqual(seen[predict].value, [{ state_key: "document", tool: "write_document_local", tool_argument: "document" }]);
    assert.ok(argsDeltas(seen, "write_document_local") >= 3, "the document streams in pieces");
    const calls = toolCalls(seen);
    assert.equal(calls[0].args.document, agent.state.document);
    assert.equal(calls[1].name, "confirm_changes");
    return pendingCall(seen);
  };

  await answer(agent, await write("Write a story"), { accepted: true });
  const first = agent.state.document;
  assert.match(first, /^Once upon a time/);
  assert.equal(lastText(agent), "Ok! The document is updated.");

  await answer(agent, await write("Update the story"), { accepted: false });
  assert.equal(agent.state.document, first);
  assert.equal(lastText(agent), "All right, I kept the document as it was.");
  assert.deepEqual(warnings, []);
});

test("mcp_tools.wf: the reference MCP server's tools, called by the flow and by the model", async () => {
  const agent = agentFor("mcp_tools");
  const { seen, result } = await send(agent, "What is 2 plus 3?");
  const calls = toolCalls(seen);
  assert.deepEqual(calls.map((c) => [c.name, c.args, c.result]), [["add", { a: 2, b: 3 }, "The sum of 2 and 3 is 5."]]);
  assert.deepEqual(textOf(agent.messages), ["Echo: An MCP server answers.", "2 plus 3 is 5, as the MCP server's get-sum tool says."]);
  assert.deepEqual(result, { text: "2 plus 3 is 5, as the MCP server's get-sum tool says." });
  assert.deepEqual(warnings, []);
});
