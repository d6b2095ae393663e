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

// rawRun posts a RunAgentInput, as a client of AG-UI 1.0 does
// (protocolVersion "1.0" unless input says otherwise), and checks the
// stream as bytes: LF framing, an id line per frame, every event valid
// against EventSchemas, one terminal event, last.
export async function rawRun(url, input, headers = {}) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
    body: JSON.stringify({ protocolVersion: "1.0", ...input }),
  });
  assert.equal(res.status, 200, `status ${res.status}: ${await res.clone().text()}`);
  assert.match(res.headers.get("content-type"), /^text\/event-stream/);
  return checkStream(await res.text(), input);
}

// checkStream checks an SSE body as bytes: LF framing, every event valid
// against schemas (AG-UI 1.0's EventSchemas unless given), RUN_STARTED
// first, one terminal event, last.
export function checkStream(text, input, schemas = EventSchemas) {
  assert.ok(!text.includes("\r"), "frames must use LF only");
  assert.ok(text.endsWith("\n\n"), "the stream must end with a whole frame");
  const events = [];
  for (const frame of text.split("\n\n")) {
    const checked = checkFrame(frame, schemas);
    if (checked) events.push(checked.event);
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

// checkFrame checks one SSE frame (its text, without the blank line that
// ends it) and returns { id, event }, or undefined for a frame of
// comments only: LF framing, and an event valid against schemas (AG-UI
// 1.0's EventSchemas unless given).
export function checkFrame(frame, schemas = EventSchemas) {
  assert.ok(!frame.includes("\r"), "frames must use LF only");
  const lines = frame.split("\n").filter((l) => l !== "" && !l.startsWith(":"));
  if (lines.length === 0) return undefined;
  const id = lines.find((l) => l.startsWith("id: "))?.slice(4);
  const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
  const event = JSON.parse(data);
  const parsed = schemas.safeParse(event);
  assert.ok(parsed.success, `invalid event ${data}: ${parsed.error}`);
  return { id, event };
}

// checkedFetch is the fetch the official client uses in these tests: it
// checks every stream it reads, frame by frame, before the client sees it.
export const checkedFetch = checkedFetchWith(EventSchemas);

// checkedFetchWith is checkedFetch checking the events against schemas,
// those of the client that reads them.
export function checkedFetchWith(schemas) {
  return async (url, init) => {
    const res = await fetch(url, init);
    if (!res.ok || !res.headers.get("content-type")?.startsWith("text/event-stream")) return res;
    const text = await res.text();
    checkStream(text, JSON.parse(init.body), schemas);
    return new Response(text, { status: res.status, headers: res.headers });
  };
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

// ---------------------------------------------------------------------
// Live streams: the parts of the multi-replica suite that read a stream
// while its run goes on, rather than once it has ended.

// buildAguic builds aguic once per process into a temporary directory and
// returns the binary's path; removeBuild deletes it.
let built;
export function buildAguic() {
  if (!built) {
    const dir = mkdtempSync(path.join(tmpdir(), "aguic-e2e-bin-"));
    const bin = path.join(dir, "aguic");
    execFileSync("go", ["build", "-o", bin, "./cmd/aguic"], { cwd: root, stdio: "inherit" });
    built = { dir, bin };
  }
  return built.bin;
}
export function removeBuild() {
  if (built) rmSync(built.dir, { recursive: true, force: true, maxRetries: 5 });
  built = undefined;
}

// liveCheckedFetch is checkedFetch for a client that reads a run as it
// goes: the stream is passed on as it comes, each frame checked as it
// passes, and the whole stream checked as checkStream does when it ends
// (a failed check errors the stream, so the client fails).
//
// A connection cut mid-stream (a replica killed) errors the stream with an
// error named AbortError ("the stream was cut: …", its cause the network
// error): @ag-ui/client 1.0.0 cancels the body it read when the read
// fails, and rethrows any error of that cancel but an AbortError as an
// unhandled rejection. The client ends such a run with a RUN_ERROR of its
// own, code "abort", whose message is the error's.
export async function liveCheckedFetch(url, init) {
  const res = await fetch(url, init);
  if (!res.ok || !res.headers.get("content-type")?.startsWith("text/event-stream")) return res;
  const input = typeof init?.body === "string" ? JSON.parse(init.body) : undefined;
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  let text = "";
  let pending = "";
  const body = new ReadableStream({
    async pull(controller) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (err) {
        const cut = new Error(`the stream was cut: ${err.message}`, { cause: err });
        cut.name = "AbortError";
        controller.error(cut);
        return;
      }
      try {
        if (chunk.done) {
          checkStream(text, input);
          controller.close();
          return;
        }
        const s = decoder.decode(chunk.value, { stream: true });
        text += s;
        pending += s;
        for (let i; (i = pending.indexOf("\n\n")) >= 0; pending = pending.slice(i + 2)) {
          checkFrame(pending.slice(0, i));
        }
        controller.enqueue(chunk.value);
      } catch (err) {
        controller.error(err);
      }
    },
    cancel(reason) {
      return reader.cancel(reason).catch(() => {});
    },
  });
  return new Response(body, { status: res.status, headers: res.headers });
}

// EventStream reads an SSE response a frame at a time, checking each
// (checkFrame) as it comes: next() waits for the next { id, event },
// undefined at the end; until(pred) reads up to the first event pred
// accepts; rest() reads to the end. frames holds every frame read.
export class EventStream {
  constructor(res) {
    assert.equal(res.status, 200, `status ${res.status}`);
    assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
    this.reader = res.body.getReader();
    this.decoder = new TextDecoder();
    this.pending = "";
    this.text = "";
    this.frames = [];
    this.ended = false;
  }

  get events() { return this.frames.map((f) => f.event); }

  async next() {
    for (;;) {
      const i = this.pending.indexOf("\n\n");
      if (i >= 0) {
        const frame = checkFrame(this.pending.slice(0, i));
        this.pending = this.pending.slice(i + 2);
        if (!frame) continue;
        this.frames.push(frame);
        return frame;
      }
      if (this.ended) {
        assert.equal(this.pending, "", "the stream must end with a whole frame");
        return undefined;
      }
      const { done, value } = await this.reader.read();
      if (done) {
        this.ended = true;
      } else {
        const s = this.decoder.decode(value, { stream: true });
        this.text += s;
        this.pending += s;
      }
    }
  }

  async until(pred, what = "the awaited event") {
    const from = this.frames.length;
    for (;;) {
      const f = await this.next();
      if (!f) {
        assert.fail(`the stream ended before ${what}; it held ${this.frames.slice(from).map((x) => x.event.type).join(" ")}`);
      }
      if (pred(f.event, f)) return this.frames.slice(from);
    }
  }

  async rest() {
    const from = this.frames.length;
    while (await this.next());
    return this.frames.slice(from);
  }

}

// waitFor polls cond (which may be async) until it returns a truthy value,
// and returns it: a bounded wait for a condition, failing with what after
// timeout milliseconds.
export async function waitFor(cond, { what = "the condition", timeout = 30_000, every = 50 } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await cond();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      assert.fail(`timed out waiting for ${what}${last ? `: ${last.message}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, every));
  }
}

// startRun starts a run of the official client without waiting for its
// end: seen collects the events the client applied as they came, done is
// the run's { seen, result, error } (error: why the run failed, the
// client's own report of it kept quiet), and until(pred) waits for the
// first event pred accepts.
export function startRun(agent, params = {}) {
  const seen = [];
  const waiters = [];
  let error;
  let finished = false;
  const done = agent.runAgent({ runId: newID("run"), ...params }, {
    onEvent: ({ event }) => {
      seen.push(event);
      for (const w of [...waiters]) {
        if (w.pred(event)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(event);
        }
      }
    },
    onRunFailed: ({ error: e }) => {
      error = e;
      return { stopPropagation: true };
    },
  }).catch((e) => {
    error ??= e;
    return undefined;
  }).then((result) => {
    finished = true;
    for (const w of waiters) w.reject(new Error(`the run ended before ${w.what}; it saw ${seen.map((e) => e.type).join(" ")}${error ? `; ${error.message}` : ""}`));
    return { seen, result, error };
  });
  const until = (pred, what = "the awaited event") => {
    const hit = seen.find(pred);
    if (hit) return Promise.resolve(hit);
    if (finished) return Promise.reject(new Error(`the run ended before ${what}; it saw ${seen.map((e) => e.type).join(" ")}`));
    return within(new Promise((resolve, reject) => waiters.push({ pred, resolve, reject, what })), 30_000, what);
  };
  return { seen, done, until };
}

// within is promise, or a failure naming what once ms milliseconds have
// passed: a bounded wait.
export function within(promise, ms, what = "the awaited result") {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
