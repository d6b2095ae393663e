// aguic as an MCP server: the official TypeScript SDK's client
// (@modelcontextprotocol/sdk 1.32.2, protocol 2025-11-25, over streamable
// HTTP) lists the example workflows of `aguic serve` as tools, calls them,
// continues a conversation across calls, and answers an interrupt by
// elicitation, then, with a client that cannot elicit, by the resume
// argument. The client checks every result against the tool's output
// schema.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { root, startServe } from "./lib.mjs";

let serve;
const clients = [];

before(async () => {
  serve = await startServe({
    args: ["--model-script", path.join(root, "workflows", "scripts", "demo.script"), path.join(root, "workflows")],
  });
});

after(async () => {
  for (const c of clients) await c.close();
  await serve?.stop();
});

// connect opens a session with aguic's /agui/mcp; elicit, when given, is
// the client's answer to an elicitation request (the client then declares
// the capability).
async function connect(elicit) {
  const client = new Client({ name: "aguic-e2e", version: "1.0.0" }, { capabilities: elicit ? { elicitation: {} } : {} });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, (req) => elicit(req.params));
  await client.connect(new StreamableHTTPClientTransport(new URL(`${serve.base}/mcp`)));
  clients.push(client);
  return client;
}

// textOf is the text of a tool result.
const textOf = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");

test("the workflows are the server's tools", async () => {
  const client = await connect();
  assert.equal(client.getServerVersion().name, "aguic");
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  for (const id of ["chat", "handoff", "refund_approval", "planner"]) assert.ok(byName[id], `no tool ${id}: ${Object.keys(byName)}`);
  assert.equal(byName.chat.title, "Chat");
  assert.equal(byName.chat.description, "A plain assistant that answers with the conversation so far.");
  assert.deepEqual(Object.keys(byName.chat.inputSchema.properties).sort(), ["message", "state", "threadId"]);
  assert.deepEqual(Object.keys(byName.handoff.inputSchema.properties).sort(), ["message", "resume", "state", "threadId", "toolResults"]);
  assert.equal(byName.chat.outputSchema.type, "object");
});

test("a call runs a workflow and answers with its text and outcome", async () => {
  const client = await connect();
  const res = await client.callTool({ name: "chat", arguments: { message: "hello there" } });
  assert.equal(res.isError, undefined);
  assert.equal(textOf(res), "Hello! I am a scripted assistant. Ask me anything.");
  assert.equal(res.structuredContent.status, "finished");
  assert.deepEqual(res.structuredContent.output, { text: "Hello! I am a scripted assistant. Ask me anything." });
  // The run is in its thread, which the AG-UI routes show.
  const thread = await (await fetch(`${serve.base}/threads/${res.structuredContent.threadId}`)).json();
  assert.equal(thread.workflow, "chat");
  assert.equal(thread.runs[0].runId, res.structuredContent.runId);
});

test("a conversation goes on across calls with its threadId", async () => {
  const client = await connect();
  const first = await client.callTool({ name: "handoff", arguments: { message: "What are your opening hours?" } });
  assert.equal(textOf(first), "We are open Monday to Friday, from 9:00 to 17:00.");
  const { threadId } = first.structuredContent;
  const second = await client.callTool({ name: "handoff", arguments: { threadId, message: "Thanks, what about where is my order?" } });
  assert.equal(second.structuredContent.threadId, threadId);
  assert.equal(textOf(second), "I can look that up. What is your order number? It looks like A-17.");
});

test("an interrupt is answered by elicitation within the call", async () => {
  const asked = [];
  const client = await connect(async (params) => {
    asked.push(params);
    return { action: "accept", content: { reply: "Hi, I am Sam from support." } };
  });
  const res = await client.callTool({ name: "handoff", arguments: { message: "Can I talk to a person?" } });
  assert.equal(textOf(res), "Let me get a colleague of mine.\n\nHi, I am Sam from support.");
  assert.equal(res.structuredContent.status, "finished");
  assert.equal(asked.length, 1);
  assert.equal(asked[0].message, "The customer asks for a person: Can I talk to a person?");
  assert.deepEqual(asked[0].requestedSchema, { type: "object", properties: { reply: { type: "string" } }, required: ["reply"] });
});

test("without elicitation, an interrupt is answered by the resume argument", async () => {
  const client = await connect();
  const first = await client.callTool({ name: "handoff", arguments: { message: "I want a human" } });
  const { threadId, status, interrupts } = first.structuredContent;
  assert.equal(status, "interrupted");
  assert.equal(interrupts.length, 1);
  assert.equal(interrupts[0].reason, "human_handoff");
  assert.equal(textOf(first), `Let me get a colleague of mine.\n\nThe workflow waits for an answer to each of its interrupts; call the tool again with threadId "${threadId}" and resume, one entry per interrupt:\n- ${interrupts[0].id} (human_handoff): The customer asks for a person: I want a human`);
  const second = await client.callTool({
    name: "handoff",
    arguments: { threadId, resume: [{ interruptId: interrupts[0].id, status: "resolved", payload: { reply: "Sam here." } }] },
  });
  assert.equal(second.structuredContent.status, "finished");
  assert.equal(textOf(second), "Sam here.");
});

test("a call the workflow cannot take is an error result", async () => {
  const client = await connect();
  const res = await client.callTool({ name: "chat", arguments: { threadId: "no-such-thread", message: "hi" } });
  assert.equal(res.isError, true);
  assert.equal(textOf(res), 'workflow "chat" has no thread "no-such-thread": leave threadId out to start a new one');
});

test("with tokens, a client sends its bearer token and sees its own threads only", async () => {
  const guarded = await startServe({
    args: ["--model-script", path.join(root, "workflows", "scripts", "demo.script"), path.join(root, "workflows")],
    env: { AGUIC_TOKENS: "alice:alice-token,bob:bob-token" },
  });
  try {
    const denied = await fetch(`${guarded.base}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    assert.equal(denied.status, 401);
    const as = async (token) => {
      const client = new Client({ name: "aguic-e2e", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${guarded.base}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }));
      clients.push(client);
      return client;
    };
    const alice = await as("alice-token");
    const first = await alice.callTool({ name: "handoff", arguments: { message: "What are your opening hours?" } });
    const { threadId } = first.structuredContent;
    const bob = await as("bob-token");
    const stolen = await bob.callTool({ name: "handoff", arguments: { threadId, message: "Where is my order?" } });
    assert.equal(stolen.isError, true);
    assert.equal(textOf(stolen), `workflow "handoff" has no thread "${threadId}": leave threadId out to start a new one`);
  } finally {
    for (const c of clients.splice(0)) await c.close();
    await guarded.stop();
  }
});
