// The model suite: `aguic serve` calls a real OpenAI-compatible server,
// aimock's LLMock, through its OpenAI provider, and the official AG-UI
// client drives it. Each scenario's workflow names its own model, so the
// fixtures and the mock's journal of requests tell the scenarios apart.
// Every raw frame is checked as agui.test.mjs checks it, and no client
// warning may be printed.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import path from "node:path";
import { HttpAgent } from "@ag-ui/client";
import { LLMock } from "@copilotkit/aimock";
import { here, startServe, newID, rawRun, checkStream, checkedFetch, agentRun, textOf, warnings } from "./lib.mjs";

let serve, base, mock;

// weather is the HTTP API the backend tool "weather" calls.
const weatherCalls = [];
const weather = http.createServer((req, res) => {
  const url = new URL(req.url, "http://localhost");
  weatherCalls.push(url.pathname + url.search);
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ city: url.searchParams.get("city"), sky: "sunny", celsius: 21 }));
});

const pickColor = {
  name: "pick_color",
  description: "Ask the user to pick a colour",
  parameters: { type: "object", properties: { options: { type: "array", items: { type: "string" } } }, required: ["options"] },
};

const triageSchema = {
  type: "object",
  properties: { kind: { enum: ["refund", "question"] }, confidence: { type: "number" } },
  required: ["kind", "confidence"],
};

// slowAnswer streams in about 60 chunks of 50 ms: a cancel lands in the
// middle of it.
const slowAnswer = "This answer takes its time, one small piece after another, so that the client can cancel it while it streams.";

function fixtures(m) {
  // 1. Stateless chat, in small chunks so the text arrives as several deltas.
  m.on({ model: "chat-model" }, { content: "Paris is the capital of France, and it is lovely in spring." }, { chunkSize: 8 });

  // The server's default model, for nodes that name none.
  m.on({ model: "default-model" }, { content: "The default model answers." });

  // 2. Reasoning before the text.
  m.on({ model: "reasoning-model" }, { reasoning: "The user asks for a number; seven is prime.", content: "Seven." });

  // 3. Backend tools: two calls in one answer, then the answer that reads them.
  m.on({ model: "tools-model", hasToolResult: false }, {
    toolCalls: [
      { id: "call_add", name: "add", arguments: JSON.stringify({ a: 2, b: 3 }) },
      { id: "call_weather", name: "weather", arguments: JSON.stringify({ city: "Paris" }) },
    ],
  });
  m.on({ model: "tools-model", hasToolResult: true }, { content: "2 + 3 = 5, and Paris is sunny." });

  // 4. Frontend tools, stateless and in a conversation.
  m.on({ model: "frontend-model", hasToolResult: false }, {
    toolCalls: [{ id: "call_pick_stateless", name: "pick_color", arguments: JSON.stringify({ options: ["red", "blue"] }) }],
  });
  m.on({ model: "frontend-model", toolCallId: "call_pick_stateless" }, { content: "You picked blue." });
  m.on({ model: "frontend-conv-model", hasToolResult: false }, {
    toolCalls: [{ id: "call_pick_conv", name: "pick_color", arguments: JSON.stringify({ options: ["green", "gold"] }) }],
  });
  m.on({ model: "frontend-conv-model", toolCallId: "call_pick_conv" }, { content: "Gold it is." });

  // 5. A conversation over two turns.
  m.on({ model: "conversation-model", userMessage: "My name is Ada." }, { content: "Nice to meet you, Ada." });
  m.on({ model: "conversation-model", userMessage: "What is my name?" }, { content: "Your name is Ada." });

  // 6. Structured output.
  m.on({ model: "structured-model" }, { content: JSON.stringify({ kind: "refund", confidence: 0.75 }) });

  // 7. Failures.
  m.on({ model: "flaky-500", sequenceIndex: 0 }, { error: { message: "the model is overloaded", type: "server_error" }, status: 500 });
  m.on({ model: "flaky-500", sequenceIndex: 1 }, { content: "Recovered after a 500." });
  m.on({ model: "flaky-429", sequenceIndex: 0 }, { error: { message: "slow down", type: "rate_limit_error" }, status: 429 });
  m.on({ model: "flaky-429", sequenceIndex: 1 }, { content: "Recovered after a 429." });
  m.on({ model: "down-model" }, { error: { message: "the model is on fire", type: "server_error" }, status: 503 });
  m.on({ model: "cut-model" }, { content: "This answer is cut off in the middle of its sentence." }, { chunkSize: 5, latency: 20, truncateAfterChunks: 3 });
  m.on({ model: "disconnect-model" }, { content: "Never sent." }, { chaos: { disconnectRate: 1 } });

  // 8. Token usage over three calls of two models.
  m.on({ model: "usage-a", hasToolResult: false }, {
    toolCalls: [{ id: "call_usage_add", name: "add", arguments: JSON.stringify({ a: 40, b: 2 }) }],
    usage: { prompt_tokens: 10, completion_tokens: 3 },
  });
  m.on({ model: "usage-a", hasToolResult: true }, { content: "The sum is 42.", usage: { prompt_tokens: 20, completion_tokens: 5 } });
  m.on({ model: "usage-b" }, { content: "Forty-two.", usage: { prompt_tokens: 7, completion_tokens: 2 } });
  m.on({ model: "usage-c" }, { content: "Spent.", usage: { prompt_tokens: 12, completion_tokens: 4 } });

  // 9. Images.
  m.on({ model: "vision-model" }, { content: "A cat." });

  // 10. A slow answer, for cancelling while it streams.
  m.on({ model: "slow-model" }, { content: slowAnswer }, { chunkSize: 4, latency: 50 });
}

before(async () => {
  await new Promise((r) => weather.listen(0, "127.0.0.1", r));
  // The mock answers only requests that carry the key aguic is given.
  mock = new LLMock({ port: 0, host: "127.0.0.1", auth: { apiKeys: ["test-key"] } });
  fixtures(mock);
  await mock.start();
  serve = await startServe({
    args: [path.join(here, "model")],
    env: {
      OPENAI_BASE_URL: `${mock.url}/v1`,
      OPENAI_API_KEY: "test-key",
      AGUIC_MODEL: "openai/default-model",
      E2E_MODEL_HTTP: `http://127.0.0.1:${weather.address().port}`,
    },
  });
  base = serve.base;
});

after(async () => {
  await serve?.stop();
  await mock?.stop();
  weather.close();
});

// journal returns the mock's journal entries of the chat completion
// requests for a model, oldest first, from its journal route.
async function journal(model) {
  const res = await fetch(`${mock.url}/__aimock/journal`, { headers: { authorization: "Bearer test-key" } });
  assert.equal(res.status, 200);
  const entries = await res.json();
  return entries.filter((e) => e.path === "/v1/chat/completions" && e.body?.model === model);
}

// requests returns the bodies of those requests.
async function requests(model) {
  return (await journal(model)).map((e) => e.body);
}

// roles gives each message of a request as "role: text", tool calls and
// tool results included, for comparisons that read like the conversation.
function roles(messages) {
  return messages.map((m) => {
    let text = typeof m.content === "string" ? m.content : (m.content ?? []).map((p) => p.text ?? `[${p.type}]`).join(" ");
    if (m.tool_calls) text += ` calls ${m.tool_calls.map((c) => `${c.function.name}#${c.id}`).join(", ")}`;
    if (m.tool_call_id) text = `#${m.tool_call_id} ${text}`;
    return `${m.role}: ${text.trim()}`;
  });
}

// agentFor is the official client for a workflow, on a fresh thread.
function agentFor(id, extra = {}) {
  return new HttpAgent({ fetch: checkedFetch, url: `${base}/workflows/${id}`, threadId: newID("thread"), ...extra });
}

// finishedOf is the one RUN_FINISHED among the events a run saw.
function finishedOf(seen) {
  const finished = seen.filter((e) => e.type === "RUN_FINISHED");
  assert.equal(finished.length, 1, seen.map((e) => e.type).join(" "));
  return finished[0];
}

// runInput is a RunAgentInput of AG-UI 1.0 on a fresh thread, for rawRun.
function runInput(messages, extra = {}) {
  return { threadId: newID("thread"), runId: newID("run"), protocolVersion: "1.0", state: {}, tools: [], context: [], forwardedProps: {}, messages, ...extra };
}

// ConversationAgent sends only the messages the server has not seen yet,
// as a client of a conversation workflow does; bodies records each request.
class ConversationAgent extends HttpAgent {
  known = new Set();
  bodies = [];
  constructor(config) {
    super({ ...config, fetch: (url, init) => { this.bodies.push(JSON.parse(init.body)); return checkedFetch(url, init); } });
  }
  requestInit(input) {
    return super.requestInit({ ...input, messages: input.messages.filter((m) => !this.known.has(m.id)) });
  }
  async runAgent(params, subscriber) {
    try {
      return await super.runAgent(params, subscriber);
    } finally {
      for (const m of this.messages) this.known.add(m.id);
    }
  }
}

test("a stateless chat streams the model's text and sends it the system prompt, the history and the prompt", async () => {
  const agent = agentFor("chat");
  agent.addMessage({ id: newID("msg"), role: "user", content: "Hi, I have a geography question." });
  agent.addMessage({ id: newID("msg"), role: "assistant", content: "Sure, ask away." });
  agent.addMessage({ id: newID("msg"), role: "user", content: "What is the capital of France?" });
  const { seen, result } = await agentRun(agent);

  const want = "Paris is the capital of France, and it is lovely in spring.";
  const deltas = seen.filter((e) => e.type === "TEXT_MESSAGE_CONTENT");
  assert.ok(deltas.length >= 3, `the text arrives in several deltas: ${JSON.stringify(deltas)}`);
  assert.equal(new Set(deltas.map((e) => e.messageId)).size, 1, "the deltas belong to one message");
  assert.equal(deltas.map((e) => e.delta).join(""), want);
  assert.deepEqual(result.result, { text: want });
  const last = agent.messages.at(-1);
  assert.equal(last.role, "assistant");
  assert.equal(last.content, want);
  assert.equal(finishedOf(seen).outcome?.type, "success");

  const entries = await journal("chat-model");
  assert.equal(entries.length, 1);
  assert.equal(entries[0].response.status, 200);
  const sent = entries.map((e) => e.body);
  assert.equal(sent[0].stream, true);
  assert.deepEqual(roles(sent[0].messages), [
    "system: You are the e2e test assistant.",
    "user: Hi, I have a geography question.",
    "assistant: Sure, ask away.",
    "user: What is the capital of France?",
  ]);
  assert.deepEqual(warnings, []);
});

test("a node that names no model calls the server's default model, AGUIC_MODEL", async () => {
  const agent = agentFor("default_model");
  agent.addMessage({ id: newID("msg"), role: "user", content: "Who answers?" });
  const { result } = await agentRun(agent);
  assert.deepEqual(result.result, { text: "The default model answers." });
  const [sent] = await requests("default-model");
  assert.deepEqual(roles(sent.messages), ["user: Who answers?"]);
  assert.deepEqual(warnings, []);
});

test("reasoning streams as REASONING_* events before the text, unless stream_reasoning = false", async () => {
  const agent = agentFor("reasoning");
  agent.addMessage({ id: newID("msg"), role: "user", content: "Pick a prime." });
  const { seen, result } = await agentRun(agent);
  const types = seen.map((e) => e.type);
  const order = ["REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END", "TEXT_MESSAGE_START"];
  const at = order.map((t) => types.indexOf(t));
  assert.ok(at.every((i) => i >= 0), types.join(" "));
  assert.deepEqual([...at].sort((a, b) => a - b), at, `reasoning comes first: ${types.join(" ")}`);
  assert.ok(types.lastIndexOf("REASONING_MESSAGE_CONTENT") < types.indexOf("TEXT_MESSAGE_START"), types.join(" "));
  const reasoning = seen.filter((e) => e.type === "REASONING_MESSAGE_CONTENT");
  assert.equal(reasoning.map((e) => e.delta).join(""), "The user asks for a number; seven is prime.");
  assert.ok(reasoning.every((e) => e.messageId.startsWith("reason:")), JSON.stringify(reasoning));
  assert.deepEqual(result.result, { text: "Seven." });
  assert.deepEqual(textOf(agent.messages), ["Seven."]);

  const hidden = agentFor("reasoning_hidden");
  hidden.addMessage({ id: newID("msg"), role: "user", content: "Pick a prime." });
  const quiet = await agentRun(hidden);
  const quietTypes = quiet.seen.map((e) => e.type);
  assert.ok(!quietTypes.some((t) => t.startsWith("REASONING")), quietTypes.join(" "));
  assert.ok(quietTypes.includes("TEXT_MESSAGE_CONTENT"), quietTypes.join(" "));
  assert.deepEqual(quiet.result.result, { text: "Seven." });
  assert.equal((await requests("reasoning-model")).length, 2);
  assert.deepEqual(warnings, []);
});

test("backend tools run inside the node: calls, results and the final text in one run", async () => {
  weatherCalls.length = 0;
  const agent = agentFor("backend_tools");
  agent.addMessage({ id: newID("msg"), role: "user", content: "What is 2 + 3, and how is Paris?" });
  const { seen, result } = await agentRun(agent);
  const types = seen.map((e) => e.type);

  for (const [id, name] of [["call_add", "add"], ["call_weather", "weather"]]) {
    const mine = seen.filter((e) => e.toolCallId === id);
    const lifecycle = mine.map((e) => e.type).filter((t, i, all) => t !== all[i - 1]);
    assert.deepEqual(lifecycle, ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"], `${id}: ${types.join(" ")}`);
    assert.equal(mine[0].toolCallName, name);
    assert.equal(mine.at(-1).messageId, `tool:${id}`);
  }
  const args = (id) => JSON.parse(seen.filter((e) => e.type === "TOOL_CALL_ARGS" && e.toolCallId === id).map((e) => e.delta).join(""));
  assert.deepEqual(args("call_add"), { a: 2, b: 3 });
  assert.deepEqual(args("call_weather"), { city: "Paris" });
  const resultOf = (id) => seen.find((e) => e.type === "TOOL_CALL_RESULT" && e.toolCallId === id).content;
  assert.equal(resultOf("call_add"), "5");
  const fetched = JSON.parse(resultOf("call_weather"));
  assert.equal(fetched.status, 200);
  assert.deepEqual(fetched.body, { city: "Paris", sky: "sunny", celsius: 21 });
  assert.deepEqual(weatherCalls, ["/weather?city=Paris"]);

  const lastResult = types.lastIndexOf("TOOL_CALL_RESULT");
  assert.ok(types.indexOf("TEXT_MESSAGE_START") > lastResult, `the final text follows the results: ${types.join(" ")}`);
  assert.deepEqual(result.result, { text: "2 + 3 = 5, and Paris is sunny.", calls: 2 });
  assert.equal(finishedOf(seen).outcome?.pendingToolCallIds, undefined);
  assert.equal(agent.messages.at(-1).content, "2 + 3 = 5, and Paris is sunny.");

  const sent = await requests("tools-model");
  assert.equal(sent.length, 2);
  assert.deepEqual(sent[0].tools.map((t) => t.function.name).sort(), ["add", "weather"]);
  assert.deepEqual(sent[0].tools.find((t) => t.function.name === "add").function.parameters.required, ["a", "b"]);
  const second = sent[1].messages;
  assert.deepEqual(roles(second).slice(0, 2), [
    "user: What is 2 + 3, and how is Paris?",
    "assistant: calls add#call_add, weather#call_weather",
  ]);
  const toolMessages = second.filter((m) => m.role === "tool");
  assert.deepEqual(toolMessages.map((m) => m.tool_call_id), ["call_add", "call_weather"]);
  assert.equal(toolMessages[0].content, "5");
  assert.deepEqual(JSON.parse(toolMessages[1].content).body, { city: "Paris", sky: "sunny", celsius: 21 });
  assert.deepEqual(warnings, []);
});

test("a frontend tool call in a stateless workflow ends the run, and the next request carries the result", async () => {
  const agent = agentFor("frontend_stateless");
  agent.addMessage({ id: newID("msg"), role: "user", content: "Choose a colour for me." });
  const first = await agentRun(agent, { tools: [pickColor] });
  const finished = finishedOf(first.seen);
  assert.equal(finished.outcome?.type, "success", JSON.stringify(finished));
  assert.deepEqual(finished.outcome.pendingToolCallIds, ["call_pick_stateless"]);
  const start = first.seen.find((e) => e.type === "TOOL_CALL_START");
  assert.equal(start.toolCallName, "pick_color");
  const call = agent.messages.find((m) => m.role === "assistant" && m.toolCalls?.length);
  assert.equal(call.toolCalls[0].id, "call_pick_stateless");
  assert.deepEqual(JSON.parse(call.toolCalls[0].function.arguments), { options: ["red", "blue"] });

  agent.addMessage({ id: newID("msg"), role: "tool", toolCallId: "call_pick_stateless", content: "blue" });
  const second = await agentRun(agent, { tools: [pickColor] });
  const done = finishedOf(second.seen);
  assert.equal(done.outcome?.type, "success");
  assert.equal(done.outcome.pendingToolCallIds, undefined);
  assert.deepEqual(second.result.result, { text: "You picked blue." });
  assert.equal(agent.messages.at(-1).content, "You picked blue.");

  const sent = await requests("frontend-model");
  assert.equal(sent.length, 2);
  assert.deepEqual(sent[0].tools.map((t) => t.function), [pickColor]);
  assert.deepEqual(roles(sent[1].messages), [
    "user: Choose a colour for me.",
    "assistant: calls pick_color#call_pick_stateless",
    "tool: #call_pick_stateless blue",
  ]);
  assert.deepEqual(warnings, []);
});

test("a frontend tool call in a conversation suspends the node, which goes on when the result comes", async () => {
  const agent = new ConversationAgent({ url: `${base}/workflows/frontend_conversation`, threadId: newID("thread") });
  agent.addMessage({ id: newID("msg"), role: "user", content: "Choose a colour for me." });
  const first = await agentRun(agent, { tools: [pickColor] });
  const finished = finishedOf(first.seen);
  assert.equal(finished.outcome?.type, "success", JSON.stringify(finished));
  assert.deepEqual(finished.outcome.pendingToolCallIds, ["call_pick_conv"]);
  const calls = first.seen.filter((e) => e.toolCallId === "call_pick_conv").map((e) => e.type);
  assert.deepEqual(calls.filter((t, i) => t !== calls[i - 1]), ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]);
  assert.equal((await requests("frontend-conv-model")).length, 1);

  const toolMsg = { id: newID("msg"), role: "tool", toolCallId: "call_pick_conv", content: "gold" };
  agent.addMessage(toolMsg);
  const second = await agentRun(agent, { tools: [pickColor] });
  assert.deepEqual(agent.bodies[1].messages, [toolMsg], "the second request sends only the tool message");
  const result = second.seen.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.equal(result?.toolCallId, "call_pick_conv", second.seen.map((e) => e.type).join(" "));
  assert.equal(result.content, "gold");
  assert.equal(result.messageId, "tool:call_pick_conv");
  const done = finishedOf(second.seen);
  assert.equal(done.outcome?.type, "success");
  assert.equal(done.outcome.pendingToolCallIds, undefined);
  assert.deepEqual(second.result.result, { text: "Gold it is.", history: 4 });
  assert.ok(textOf(agent.messages).includes("Gold it is."), JSON.stringify(agent.messages));

  const sent = await requests("frontend-conv-model");
  assert.equal(sent.length, 2);
  assert.deepEqual(roles(sent[1].messages), [
    "system: You pick colours.",
    "user: Choose a colour for me.",
    "assistant: calls pick_color#call_pick_conv",
    "tool: #call_pick_conv gold",
  ]);
  assert.deepEqual(warnings, []);
});

test("a conversation keeps the model history in $input.chat across turns", async () => {
  const agent = new ConversationAgent({ url: `${base}/workflows/conversation`, threadId: newID("thread") });
  agent.addMessage({ id: newID("msg"), role: "user", content: "My name is Ada." });
  await agentRun(agent);
  agent.addMessage({ id: newID("msg"), role: "user", content: "What is my name?" });
  await agentRun(agent);
  assert.equal(agent.bodies[1].messages.length, 1, "the second request sends only the new message");
  assert.deepEqual(textOf(agent.messages), [
    "Nice to meet you, Ada.", "History: 2 messages.",
    "Your name is Ada.", "History: 4 messages.",
  ]);

  const sent = await requests("conversation-model");
  assert.equal(sent.length, 2);
  assert.deepEqual(roles(sent[1].messages), [
    "system: You remember things.",
    "user: My name is Ada.",
    "assistant: Nice to meet you, Ada.",
    "user: What is my name?",
  ]);
  assert.deepEqual(warnings, []);
});

test("output_schema asks for structured output and gives the parsed value", async () => {
  const agent = agentFor("structured");
  agent.addMessage({ id: newID("msg"), role: "user", content: "I want my money back." });
  const { seen, result } = await agentRun(agent);
  assert.deepEqual(result.result, { kind: "refund", confidence: 0.75 });
  assert.deepEqual(finishedOf(seen).result, { kind: "refund", confidence: 0.75 });

  const [sent] = await requests("structured-model");
  assert.equal(sent.response_format?.type, "json_schema", JSON.stringify(sent.response_format));
  assert.deepEqual(sent.response_format.json_schema.schema, triageSchema);
  assert.deepEqual(warnings, []);
});

test("a model call that fails with 500 or 429 is tried again with retry = 1", async () => {
  for (const [model, want] of [["flaky-500", "Recovered after a 500."], ["flaky-429", "Recovered after a 429."]]) {
    const agent = agentFor("retry_once", { initialState: { model } });
    agent.addMessage({ id: newID("msg"), role: "user", content: "Are you there?" });
    const { seen, result } = await agentRun(agent);
    assert.equal(finishedOf(seen).outcome?.type, "success");
    assert.deepEqual(result.result, { text: want });
    assert.deepEqual(textOf(agent.messages), [want]);
    const sent = await requests(model);
    assert.equal(sent.length, 2, `${model}: two requests`);
    assert.deepEqual(sent[1].messages, sent[0].messages, `${model}: the same request twice`);
  }
  assert.deepEqual(warnings, []);
});

test("a model that keeps failing, or drops the connection, ends the run with RUN_ERROR that says why", async () => {
  const run = async (model) => {
    const events = await rawRun(`${base}/workflows/retry_once`, runInput(
      [{ id: newID("msg"), role: "user", content: "Are you there?" }],
      { state: { model } },
    ));
    const last = events.at(-1);
    assert.equal(last.type, "RUN_ERROR", `${model}: ${JSON.stringify(last)}`);
    return { events, types: events.map((e) => e.type), message: last.message, sent: await requests(model) };
  };

  // A 503 on every try: both tries are made, and the message gives the
  // status and the server's own message.
  const down = await run("down-model");
  assert.match(down.message, /model "openai\/down-model" failed after 2 tries: model API status 503: the model is on fire/);
  assert.equal(down.sent.length, 2);
  assert.deepEqual(down.types, ["RUN_STARTED", "RUN_ERROR"]);

  // The connection drops in the middle of the answer: the text streamed so
  // far is closed before RUN_ERROR, and the call is not tried again.
  const cut = await run("cut-model");
  assert.match(cut.message, /openai\/cut-model/);
  assert.match(cut.message, /closed|EOF/i);
  assert.equal(cut.sent.length, 1, "text was already streamed, so the answer is not asked for again");
  const content = cut.events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT");
  assert.ok(content.length >= 1, cut.types.join(" "));
  assert.ok("This answer is cut off in the middle of its sentence.".startsWith(content.map((e) => e.delta).join("")));
  assert.ok(cut.types.indexOf("TEXT_MESSAGE_END") > cut.types.lastIndexOf("TEXT_MESSAGE_CONTENT"), cut.types.join(" "));

  // aimock's chaos drops the connection before any byte of the answer.
  const dropped = await run("disconnect-model");
  assert.match(dropped.message, /openai\/disconnect-model/);
  assert.match(dropped.message, /EOF|closed|reset/i);
  assert.ok(dropped.sent.length >= 1, "the mock saw the request");
  assert.deepEqual(dropped.types, ["RUN_STARTED", "RUN_ERROR"]);
  assert.deepEqual(warnings, []);
});

test("the official client reports a failed model call as RUN_ERROR", async () => {
  const agent = agentFor("retry_once", { initialState: { model: "down-model" } });
  agent.addMessage({ id: newID("msg"), role: "user", content: "Are you there?" });
  const { seen, result } = await agentRun(agent);
  assert.equal(result.result, undefined);
  assert.deepEqual(result.newMessages, []);
  const errors = seen.filter((e) => e.type === "RUN_ERROR");
  assert.equal(errors.length, 1, seen.map((e) => e.type).join(" "));
  assert.equal(seen.at(-1), errors[0]);
  assert.match(errors[0].message, /model "openai\/down-model" failed after 2 tries: model API status 503: the model is on fire/);
  assert.ok(!seen.some((e) => e.type === "RUN_FINISHED"));
  assert.deepEqual(warnings, []);
});

test("an unknown model provider computed at run time ends the run with RUN_ERROR naming it", async () => {
  const events = await rawRun(`${base}/workflows/unknown_provider`, runInput([{ id: newID("msg"), role: "user", content: "hi" }]));
  const last = events.at(-1);
  assert.equal(last.type, "RUN_ERROR", JSON.stringify(last));
  assert.match(last.message, /"nope"/);
  assert.match(last.message, /openai/, "the message lists the known providers");
  assert.deepEqual(warnings, []);
});

test("RUN_FINISHED carries the token usage of the run's model calls, per provider and model", async () => {
  const agent = agentFor("usage");
  agent.addMessage({ id: newID("msg"), role: "user", content: "Add 40 and 2." });
  const { seen, result } = await agentRun(agent);
  assert.equal(result.result.text, "Forty-two.");
  assert.deepEqual(result.result.first, { inputTokens: 30, outputTokens: 8 });
  assert.deepEqual(result.result.second, { inputTokens: 7, outputTokens: 2 });
  assert.equal((await requests("usage-a")).length, 2);
  assert.equal((await requests("usage-b")).length, 1);

  const usage = [...(finishedOf(seen).usage ?? [])].sort((a, b) => a.model.localeCompare(b.model));
  assert.deepEqual(usage, [
    { provider: "openai", model: "usage-a", inputTokens: 30, outputTokens: 8, totalTokens: 38 },
    { provider: "openai", model: "usage-b", inputTokens: 7, outputTokens: 2, totalTokens: 9 },
  ]);
  assert.deepEqual(warnings, []);
});

test("RUN_ERROR carries the token usage of the model calls made before the failure", async () => {
  const events = await rawRun(`${base}/workflows/usage_then_fail`, runInput([{ id: newID("msg"), role: "user", content: "Spend some tokens." }]));
  const last = events.at(-1);
  assert.equal(last.type, "RUN_ERROR", JSON.stringify(last));
  assert.match(last.message, /failed after the model answered/);
  assert.deepEqual(last.usage, [{ provider: "openai", model: "usage-c", inputTokens: 12, outputTokens: 4, totalTokens: 16 }]);
  assert.deepEqual(warnings, []);
});

test("the images of the latest user message reach the model as image_url parts", async () => {
  const agent = agentFor("vision");
  agent.addMessage({
    id: newID("msg"),
    role: "user",
    content: [
      { type: "text", text: "what is this?" },
      { type: "image", source: { type: "url", value: "https://example.com/cat.png" } },
    ],
  });
  const { result } = await agentRun(agent);
  assert.deepEqual(result.result, { text: "A cat." });

  const [sent] = await requests("vision-model");
  const user = sent.messages.at(-1);
  assert.equal(user.role, "user");
  assert.ok(Array.isArray(user.content), JSON.stringify(user));
  assert.deepEqual(user.content.find((p) => p.type === "text")?.text, "what is this?");
  const image = user.content.find((p) => p.type === "image_url");
  assert.equal(image?.image_url?.url, "https://example.com/cat.png", JSON.stringify(user.content));
  assert.deepEqual(warnings, []);
});

test("cancelling a run while the model streams ends it as cancelled, with the text so far closed and no new call", async () => {
  const input = runInput([{ id: newID("msg"), role: "user", content: "Take your time." }], { state: { model: "slow-model" } });
  const res = await fetch(`${base}/workflows/retry_once`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(input),
  });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let body = "";
  while (!body.includes('"TEXT_MESSAGE_CONTENT"')) {
    const { value, done } = await reader.read();
    assert.ok(!done, `the stream ended before any text: ${body}`);
    body += decoder.decode(value, { stream: true });
  }
  const cancel = await fetch(`${base}/cancel`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ threadId: input.threadId, forwardedProps: { aguic: { workflowId: "retry_once" } } }),
  });
  assert.equal(cancel.status, 200, await cancel.clone().text());
  assert.equal((await cancel.json()).status, "cancelled");
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    body += decoder.decode(value, { stream: true });
  }
  const events = checkStream(body, input);
  const end = events.at(-1);
  assert.equal(end.type, "RUN_FINISHED");
  assert.deepEqual(end.outcome, { type: "cancelled" });
  const text = events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
  assert.ok(text.length > 0 && text.length < slowAnswer.length && slowAnswer.startsWith(text), `a strict prefix of the answer: ${JSON.stringify(text)}`);
  assert.ok(events.some((e) => e.type === "TEXT_MESSAGE_END"), "the text message is closed");
  assert.equal((await journal("slow-model")).length, 1, "the call is not tried again");
  assert.deepEqual(warnings, []);
});
