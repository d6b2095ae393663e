// Workflows that call the tools of MCP servers no one here wrote: the
// reference server @modelcontextprotocol/server-everything, over stdio
// (started by aguic) and over streamable HTTP (started by the test), driven
// through aguic serve by the official AG-UI client.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { HttpAgent } from "@ag-ui/client";
import { startServe, freePort, here, newID, checkedFetch, liveCheckedFetch, agentRun, textOf, waitFor, warnings } from "./lib.mjs";

const everythingJS = path.join(here, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");
const work = mkdtempSync(path.join(tmpdir(), "aguic-mcp-"));
const pidfile = path.join(work, "fragile.pid");
let serve, remote, base;

before(async () => {
  const port = await freePort();
  remote = spawn(process.execPath, [everythingJS, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "ignore", "pipe"] });
  const url = `http://127.0.0.1:${port}/mcp`;
  await waitFor(async () => {
    try {
      await fetch(url, { method: "GET" });
      return true;
    } catch {
      return false;
    }
  }, { what: "the reference MCP server over HTTP" });
  serve = await startServe({
    args: ["--model-script", path.join(here, "mcp", "mcp.script"), path.join(here, "mcp")],
    env: { MCP_PIDFILE: pidfile, EVERYTHING_JS: everythingJS, EVERYTHING_URL: url },
  });
  base = serve.base;
});

after(async () => {
  await serve?.stop();
  remote?.kill();
  rmSync(work, { recursive: true, force: true });
});

const agentFor = (id, fetch = checkedFetch) => new HttpAgent({ fetch, url: `${base}/workflows/${id}`, threadId: newID("thread") });

function send(agent, content, params) {
  agent.addMessage({ id: newID("msg"), role: "user", content });
  return agentRun(agent, params);
}

test("a direct call over streamable HTTP is shown as a tool call and gives its result", async () => {
  const { seen, result } = await agentRun(agentFor("direct"));
  assert.deepEqual(result.result, { text: "The sum of 2 and 40 is 42.", value: null });
  const calls = seen.filter((e) => e.type.startsWith("TOOL_CALL_"));
  assert.deepEqual(calls.map((e) => e.type), ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]);
  assert.equal(calls[0].toolCallName, "get-sum");
  assert.deepEqual(JSON.parse(calls[1].delta), { a: 2, b: 40 });
  assert.equal(calls[3].content, "The sum of 2 and 40 is 42.");
  assert.deepEqual(warnings, []);
});

test("a model's call of an MCP tool streams exactly as a call of a workflow's tool", async () => {
  const agent = agentFor("chat");
  const { seen } = await send(agent, "add two and three");
  const byCall = new Map();
  for (const e of seen.filter((e) => e.type.startsWith("TOOL_CALL_"))) {
    if (!byCall.has(e.toolCallId)) byCall.set(e.toolCallId, []);
    byCall.get(e.toolCallId).push(e);
  }
  const [sum, lookup] = [...byCall.values()];
  assert.equal(sum[0].toolCallName, "get-sum");
  assert.equal(lookup[0].toolCallName, "lookup");
  // The same events, with the same fields, whichever tool it is.
  const shape = (events) => events.map((e) => `${e.type}(${Object.keys(e).filter((k) => k !== "timestamp").sort().join(",")})`);
  assert.deepEqual(shape(sum), shape(lookup));
  assert.equal(sum.at(-1).content, "The sum of 2 and 3 is 5.");
  assert.equal(lookup.at(-1).content, "found five");
  assert.deepEqual(textOf(agent.messages), ["Added."]);
  const toolMessages = agent.messages.filter((m) => m.role === "tool").map((m) => m.content);
  assert.deepEqual(toolMessages, ["The sum of 2 and 3 is 5.", "found five"]);
  assert.deepEqual(warnings, []);
});

test("a stdio server killed mid-call gives the model a tool error, and the next call starts it again", async () => {
  const agent = agentFor("chat", liveCheckedFetch);
  let killed;
  const sub = agent.subscribe({
    onToolCallEndEvent: async () => {
      // The call is on its way to the server, which works for 30 s.
      const pid = Number(readFileSync(pidfile, "utf8"));
      killed = pid;
      await new Promise((r) => setTimeout(r, 300));
      process.kill(pid, "SIGKILL");
    },
  });
  const started = Date.now();
  const { seen } = await send(agent, "something slow");
  sub.unsubscribe();
  assert.ok(killed, "the server was killed");
  assert.ok(Date.now() - started < 25_000, "the run ended without waiting for the dead server's answer");
  const result = seen.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.match(result.content, /^error: .*fragile/);
  assert.deepEqual(textOf(agent.messages), ["The tool failed."]);
  assert.equal(seen.at(-1).type, "RUN_FINISHED");

  // The next call starts the server again.
  const again = agentFor("chat");
  await send(again, "add two and three");
  assert.deepEqual(textOf(again.messages), ["Added."]);
  assert.notEqual(Number(readFileSync(pidfile, "utf8")), killed);
  assert.deepEqual(warnings, []);
});
