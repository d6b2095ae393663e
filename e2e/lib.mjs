// Shared parts of the conformance suites: starting the real `aguic serve`
// on loopback, and checking every stream it sends as raw frames (framing,
// schemas, one terminal event) before the official client reads it.

import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { EventSchemas } from "@ag-ui/core/schemas";

export const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.dirname(here);

// warnings collects what the client prints: a clean run prints nothing.
export const warnings = [];
for (const level of ["warn", "error"]) {
  const original = console[level];
  console[level] = (...args) => {
    warnings.push(args.map(String).join(" "));
    original.apply(console, args);
  };
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// startServe builds aguic and starts `aguic serve` on a free loopback port
// with a fresh data directory: args are the flags and paths after "serve",
// env is added to the environment. It resolves once /healthz answers.
export async function startServe({ args = [], env = {} } = {}) {
  const work = mkdtempSync(path.join(tmpdir(), "aguic-e2e-"));
  const bin = path.join(work, "aguic");
  execFileSync("go", ["build", "-o", bin, "./cmd/aguic"], { cwd: root, stdio: "inherit" });
  const port = await freePort();
  const server = spawn(bin, ["serve", "--addr", `127.0.0.1:${port}`, "--data", path.join(work, "data"), ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, ...env },
  });
  let stderr = "";
  server.stderr.on("data", (d) => { stderr += d; });
  const origin = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      const res = await fetch(`${origin}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (i > 300 || server.exitCode !== null) {
      throw new Error(`aguic serve did not start:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    origin,
    base: `${origin}/agui`,
    bin,
    stderr: () => stderr,
    async stop() {
      if (server.exitCode === null) {
        const exited = new Promise((r) => server.once("exit", r));
        server.kill("SIGTERM");
        await exited;
      }
      rmSync(work, { recursive: true, force: true, maxRetries: 5 });
    },
  };
}

let ids = 0;
export const newID = (p) => `${p}-${process.pid}-${++ids}`;

// rawRun posts a RunAgentInput and checks the stream as bytes: LF framing,
// an id line per frame, every event valid against EventSchemas, one
// terminal event, last.
export async function rawRun(url, input, headers = {}) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
    body: JSON.stringify(input),
  });
  assert.equal(res.status, 200, `status ${res.status}: ${await res.clone().text()}`);
  assert.match(res.headers.get("content-type"), /^text\/event-stream/);
  return checkStream(await res.text(), input);
}

// checkStream checks an SSE body as bytes: LF framing, every event valid
// against EventSchemas, RUN_STARTED first, one terminal event, last.
export function checkStream(text, input) {
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
export async function checkedFetch(url, init) {
  const res = await fetch(url, init);
  if (!res.ok || !res.headers.get("content-type")?.startsWith("text/event-stream")) return res;
  const text = await res.text();
  checkStream(text, JSON.parse(init.body));
  return new Response(text, { status: res.status, headers: res.headers });
}

// agentRun runs the official client and returns what it saw.
export async function agentRun(agent, params = {}) {
  const seen = [];
  const result = await agent.runAgent({ runId: newID("run"), ...params }, {
    onEvent: ({ event }) => { seen.push(event); },
  });
  return { seen, result };
}

// textOf is the text of the assistant messages among messages.
export function textOf(messages) {
  return messages.filter((m) => m.role === "assistant" && typeof m.content === "string").map((m) => m.content);
}
