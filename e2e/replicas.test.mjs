// The multi-replica suite: three real `aguic serve` processes on one
// PostgreSQL schema, as behind a load balancer, driven by the official
// AG-UI client (@ag-ui/client 1.0.0). A client may reach any replica for a
// run that executes on another: these tests prove across processes what
// server/replicas_test.go proves within one (busy policies, cancel,
// following a run, restoring a conversation), and what only processes
// can show: a replica killed with SIGKILL, a rolling upgrade, the
// database going away and coming back.
//
// It needs AGUIC_TEST_POSTGRES (postgres://user@host:port/db, as the
// Makefile sets it when the local server answers): without it the file is
// skipped, unless CI is set, where it fails. Each run makes a schema of
// its own and drops it at the end; psql does both.
//
// The workflows (replicas/) wait on a "gate": an HTTP server of this file
// that holds each request until the test opens its key, so a run is in
// progress on a replica for as long as a test needs. Every frame read,
// by the client or raw, is checked against @ag-ui/core's EventSchemas.
// E2E_VERBOSE=1 shows what the replicas log, each line after its name.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, copyFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { HttpAgent } from "@ag-ui/client";
import {
  here, freePort, newID, warnings, buildAguic, removeBuild, liveCheckedFetch,
  EventStream, waitFor, startRun, within, checkStream,
} from "./lib.mjs";

const PG = process.env.AGUIC_TEST_POSTGRES;

if (!PG) {
  if (process.env.CI) {
    test("the multi-replica suite needs PostgreSQL", () => {
      assert.fail("CI runs the multi-replica suite: set AGUIC_TEST_POSTGRES=postgres://user@host:5432/db (make test sets it when the local server answers)");
    });
  } else {
    test("the multi-replica suite", { skip: "AGUIC_TEST_POSTGRES is not set: run it with AGUIC_TEST_POSTGRES=postgres://user@host:5432/db" }, () => {});
  }
} else {
  suite();
}

function suite() {
  const schema = `e2e_replicas_${process.pid}_${Date.now().toString(36)}`;
  const work = mkdtempSync(path.join(tmpdir(), "aguic-replicas-"));
  // Two versions of the workflows: common.wf beside v1/ or v2/'s upgrade.wf.
  const dirs = {};
  for (const v of ["v1", "v2"]) {
    dirs[v] = path.join(work, v);
    mkdirSync(dirs[v]);
    copyFileSync(path.join(here, "replicas", "common.wf"), path.join(dirs[v], "common.wf"));
    copyFileSync(path.join(here, "replicas", v, "upgrade.wf"), path.join(dirs[v], "upgrade.wf"));
  }

  // psql runs sql on the database: it makes the suite's schema and drops it.
  const psql = (sql) => {
    try {
      execFileSync("psql", [PG, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], { stdio: ["ignore", "pipe", "pipe"] });
    } catch (err) {
      throw new Error(`psql -c "${sql}": ${err.code === "ENOENT" ? "psql is not installed; the suite needs it" : err.stderr || err.message}`);
    }
  };

  // storeURL is the --store of a replica: the suite's schema, a small pool
  // (three replicas share max_connections with other tests), and, for a
  // replica behind a proxy, the proxy's address.
  const storeURL = (via) => {
    const u = new URL(PG);
    u.searchParams.set("search_path", schema);
    u.searchParams.set("pool_max_conns", "4");
    if (via) u.host = via;
    return u.toString();
  };
  const pg = new URL(PG);
  const pgAddr = { host: pg.hostname || "127.0.0.1", port: Number(pg.port || 5432) };

  // ---- the gate ----------------------------------------------------------

  // gate answers GET /KEY once the test opens KEY (at once if it is open
  // already), with the body given to open. It counts the requests of each
  // key, and knows which are held.
  const gate = {
    opened: new Map(),
    held: new Map(),
    arrivals: new Map(),
    closed: new Map(),
    changed: new Set(),
    server: http.createServer((req, res) => {
      const key = decodeURIComponent(req.url.slice(1));
      gate.arrivals.set(key, (gate.arrivals.get(key) ?? 0) + 1);
      if (gate.opened.has(key)) {
        res.end(gate.opened.get(key));
      } else {
        const list = gate.held.get(key) ?? [];
        list.push(res);
        gate.held.set(key, list);
        res.on("close", () => {
          const l = gate.held.get(key) ?? [];
          if (l.includes(res)) {
            l.splice(l.indexOf(res), 1);
            // The caller went away before it was answered.
            gate.closed.set(key, (gate.closed.get(key) ?? 0) + 1);
          }
          gate.notify();
        });
      }
      gate.notify();
    }),
    notify() {
      for (const f of [...gate.changed]) f();
    },
    // when waits until cond() holds, at most 30 s.
    when(cond, what) {
      if (cond()) return Promise.resolve();
      let f;
      return within(new Promise((resolve) => {
        f = () => { if (cond()) resolve(); };
        gate.changed.add(f);
      }), 30_000, what).finally(() => gate.changed.delete(f));
    },
    // arrived waits for the n-th request of key.
    arrived(key, n = 1) {
      return gate.when(() => (gate.arrivals.get(key) ?? 0) >= n, `request ${n} of ${key} at the gate`);
    },
    // hung up waits until a held request of key has been dropped by its caller.
    hungUp(key) {
      return gate.when(() => (gate.closed.get(key) ?? 0) >= 1, `the caller of ${key} to hang up`);
    },
    open(key, body = "opened") {
      gate.opened.set(key, body);
      for (const res of gate.held.get(key) ?? []) res.end(body);
      gate.held.delete(key);
    },
    url: "",
  };

  // ---- the replicas ------------------------------------------------------

  const live = new Set(); // every process started, until it exits
  const killAll = () => {
    for (const p of live) {
      try { p.kill("SIGKILL"); } catch { /* gone */ }
    }
  };
  process.once("exit", killAll);
  // Stopped from outside (Ctrl-C, a CI timeout), the file still drops
  // what it made.
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.once(signal, () => {
      killAll();
      try {
        psql(`SET lock_timeout = '10s'; DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      } catch { /* as much as can be done */ }
      rmSync(work, { recursive: true, force: true });
      removeBuild();
      process.exit(1);
    });
  }

  // Replica is one `aguic serve` process on the suite's store.
  class Replica {
    constructor(name, { dir = dirs.v1, via } = {}) {
      this.name = name;
      this.dir = dir;
      this.via = via;
      this.stderr = "";
    }

    async start() {
      const port = await freePort();
      this.origin = `http://127.0.0.1:${port}`;
      this.base = `${this.origin}/agui`;
      const proc = spawn(buildAguic(), ["serve", "--addr", `127.0.0.1:${port}`, "--store", storeURL(this.via), "--lease-ttl", "2s", this.dir], {
        stdio: ["ignore", "ignore", "pipe"],
        env: { ...process.env, E2E_GATE_URL: gate.url },
      });
      this.proc = proc;
      live.add(proc);
      this.exited = new Promise((r) => proc.once("exit", (code, signal) => { live.delete(proc); r({ code, signal }); }));
      proc.stderr.on("data", (d) => {
        this.stderr += d;
        if (process.env.E2E_VERBOSE) process.stderr.write(`[${this.name}] ${d}`);
      });
      await waitFor(async () => {
        if (proc.exitCode !== null) throw new Error(`${this.name} exited:\n${this.stderr}`);
        return (await fetch(`${this.origin}/healthz`)).ok;
      }, { what: `${this.name} to listen`, timeout: 30_000 });
      return this;
    }

    // kill ends the process at once: what a crash does.
    async kill() {
      this.proc.kill("SIGKILL");
      await this.exited;
    }

    // stop stops it gracefully (SIGTERM), or kills it after 20 s.
    async stop() {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
      this.proc.kill("SIGTERM");
      const t = setTimeout(() => this.proc.kill("SIGKILL"), 20_000);
      await this.exited;
      clearTimeout(t);
    }

    url(p) { return `${this.base}${p}`; }
  }

  let A, B, C;
  const replicas = () => [A, B, C];
  // any spreads requests over the replicas, round-robin.
  let turn = 0;
  const any = () => replicas()[turn++ % 3];

  before(async () => {
    psql(`CREATE SCHEMA ${schema}`);
    await new Promise((r) => gate.server.listen(0, "127.0.0.1", r));
    gate.url = `http://127.0.0.1:${gate.server.address().port}`;
    buildAguic();
    [A, B, C] = await Promise.all(["A", "B", "C"].map((n) => new Replica(n).start()));
  });

  after(async () => {
    for (const key of gate.held.keys()) gate.open(key, "released at the end");
    await Promise.all([A, B, C].filter(Boolean).map((r) => r.stop()));
    killAll();
    gate.server.closeAllConnections();
    gate.server.close();
    proxies.forEach((p) => p.close());
    try {
      psql(`SET lock_timeout = '10s'; DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    } finally {
      rmSync(work, { recursive: true, force: true, maxRetries: 5 });
      removeBuild();
    }
  });
  const proxies = new Set();

  // ---- helpers -----------------------------------------------------------

  // agentOn is a client of workflow on one replica.
  const agentOn = (replica, workflow, threadId, options = {}) =>
    new HttpAgent({ fetch: liveCheckedFetch, url: replica.url(`/workflows/${workflow}`), threadId, ...options });

  // send adds a user message saying content and starts a run (startRun).
  const send = (agent, content, params = {}) => {
    agent.addMessage({ id: newID("msg"), role: "user", content });
    return startRun(agent, params);
  };

  const finished = (seen) => seen.filter((e) => e.type === "RUN_FINISHED" || e.type === "RUN_ERROR");
  const ofType = (seen, type) => seen.filter((e) => e.type === type);
  const said = (seen) => ofType(seen, "TEXT_MESSAGE_CONTENT").map((e) => e.delta);
  const saysStart = (key) => (e) => e.type === "TEXT_MESSAGE_CONTENT" && e.delta === `start ${key}`;

  // expectStatus fails unless res has the status, with its body (read
  // only then: a stream's body ends with its run).
  async function expectStatus(res, status) {
    if (res.status !== status) assert.fail(`status ${res.status}, want ${status}: ${await res.text()}`);
  }

  // history is the conversation's history, as JSON, from a replica.
  async function history(replica, threadId, workflowId = "gate") {
    const res = await fetch(replica.url("/history"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ threadId, workflowId }),
    });
    await expectStatus(res, 200);
    return res.json();
  }

  // messagesOf is GET /threads/{id}/messages from a replica.
  async function messagesOf(replica, threadId, workflowId = "gate") {
    const res = await fetch(replica.url(`/threads/${threadId}/messages?workflowId=${workflowId}`));
    await expectStatus(res, 200);
    return res.json();
  }

  // textMessages is what a stream of text messages gives a client: the
  // messages of its snapshot, then each text message it streams.
  function textMessages(events) {
    const messages = [];
    for (const e of events) {
      if (e.type === "MESSAGES_SNAPSHOT") messages.splice(0, messages.length, ...e.messages);
      if (e.type === "TEXT_MESSAGE_START") messages.push({ id: e.messageId, role: e.role, content: "" });
      if (e.type === "TEXT_MESSAGE_CONTENT") messages.find((m) => m.id === e.messageId).content += e.delta;
    }
    return messages;
  }

  // turns is the conversation as the user's words and what was said,
  // one string a message.
  const turns = (messages) => messages.filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => `${m.role}: ${m.content}`);

  // follow opens GET /threads/{id}/runs/{runId}/events on a replica.
  async function follow(replica, threadId, runId, headers = {}) {
    const res = await fetch(replica.url(`/threads/${threadId}/runs/${runId}/events?workflowId=gate`), {
      headers: { accept: "text/event-stream", ...headers },
    });
    await expectStatus(res, 200);
    return new EventStream(res);
  }

  // runEnd is how run runId of the thread ended, read from a replica's
  // store: its terminal event, or undefined while it is in progress.
  async function runEnd(replica, threadId, runId, workflowId = "gate") {
    const th = await messagesOf(replica, threadId, workflowId);
    if (th.status === "running") return undefined;
    const res = await fetch(replica.url(`/threads/${threadId}/runs/${runId}/events?workflowId=${workflowId}`), {
      headers: { accept: "text/event-stream" },
      signal: AbortSignal.timeout(10_000),
    });
    if (res.status !== 200) return undefined;
    const events = checkStream(await res.text());
    return events.at(-1);
  }

  // ---- the tests ---------------------------------------------------------

  // limit bounds each test, should a wait the tests do not bound hang: the
  // test fails, and the cleanup still runs.
  const limit = 120_000;

  test("20 simultaneous turns on one thread across the replicas: one runs, 19 are refused with 409 and Retry-After", { timeout: limit }, async () => {
    const threadId = newID("thread");
    const answers = [];
    const runs = [];
    for (let i = 0; i < 20; i++) {
      const replica = any();
      const key = newID("k");
      // The client's fetch notes each answer's status as it comes.
      const fetchNoting = async (url, init) => {
        const res = await liveCheckedFetch(url, init);
        answers.push({ i, key, replica: replica.name, status: res.status, retryAfter: res.headers.get("retry-after"), type: res.headers.get("content-type") });
        return res;
      };
      const agent = new HttpAgent({ fetch: fetchNoting, url: replica.url("/workflows/gate"), threadId });
      runs.push(send(agent, key));
    }
    await waitFor(() => answers.length === 20, { what: "the 20 answers" });

    const ran = answers.filter((a) => a.status === 200);
    assert.equal(ran.length, 1, JSON.stringify(answers));
    const refused = answers.filter((a) => a.status !== 200);
    for (const a of refused) {
      assert.equal(a.status, 409, JSON.stringify(a));
      assert.match(a.type, /^application\/problem\+json/, JSON.stringify(a));
      assert.ok(Number(a.retryAfter) >= 1, `Retry-After: ${a.retryAfter}`);
    }
    // The answers came from every replica, and only the run that was
    // taken reached the gate.
    assert.equal(new Set(answers.map((a) => a.replica)).size, 3);
    const [winner] = ran;
    await gate.arrived(winner.key);
    assert.deepEqual([...gate.arrivals.keys()].filter((k) => answers.some((a) => a.key === k)), [winner.key]);

    gate.open(winner.key);
    const done = await within(Promise.all(runs.map((r) => r.done)), 30_000, "every client to end");
    for (const [i, { seen, error }] of done.entries()) {
      if (i === winner.i) {
        assert.equal(error, undefined);
        assert.equal(seen[0].type, "RUN_STARTED");
        assert.equal(seen.at(-1).type, "RUN_FINISHED");
        assert.equal(seen.at(-1).outcome?.type, "success", JSON.stringify(seen.at(-1)));
        assert.deepEqual(said(seen), [`start ${winner.key}`, `done ${winner.key}: opened`]);
      } else {
        assert.equal(error?.status, 409, String(error));
        assert.deepEqual(seen, [], "a refused request streams nothing");
      }
    }

    // The thread holds the one turn, whichever replica is asked.
    const h = await history(any(), threadId);
    assert.deepEqual(turns(h.messages), [`user: ${winner.key}`, `assistant: start ${winner.key}`, `assistant: done ${winner.key}: opened`]);
    const m = await messagesOf(any(), threadId);
    assert.equal(m.status, "suspended");
    assert.deepEqual(m.messages, h.messages);
    assert.deepEqual(warnings, []);
  });

  test("a cancel or an interrupt sent to another replica stops the run where it executes", { timeout: limit }, async () => {
    const threadId = newID("thread");
    const input = { threadId, forwardedProps: { aguic: { workflowId: "gate" } } };
    // stop runs a turn on replica on, and stops it with cancel: what the
    // client saw, and the answer to cancel.
    const stop = async (on, cancel) => {
      const key = newID("k");
      const runId = newID("run");
      const run = send(agentOn(on, "gate", threadId), key, { runId });
      await gate.arrived(key); // the run waits on the gate, on its replica
      const res = await cancel();
      await expectStatus(res, 200);
      assert.deepEqual(await res.json(), { threadId, workflowId: "gate", runId, status: "cancelled" });
      const { seen, error } = await within(run.done, 15_000, "the cancelled run's stream to end");
      assert.equal(error, undefined);
      assert.equal(seen.at(-1).type, "RUN_FINISHED");
      assert.deepEqual(seen.at(-1).outcome, { type: "cancelled" });
      assert.deepEqual(said(seen), [`start ${key}`]);
      // The replica stopped the run's HTTP call: the gate saw it hang up.
      await gate.hungUp(key);
      return key;
    };
    // POST /cancel to B stops a run on A, and the answer comes once it has
    // stopped; POST /threads/{id}/interrupt to A stops a run on C.
    const k1 = await stop(A, () => fetch(B.url("/cancel"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(input),
      signal: AbortSignal.timeout(15_000),
    }));
    const k2 = await stop(C, () => fetch(A.url(`/threads/${threadId}/interrupt?workflowId=gate`), {
      method: "POST",
      signal: AbortSignal.timeout(15_000),
    }));

    // Nothing runs on the thread any more, for any replica; it takes its
    // next turn, and holds what each client saw, once.
    const again = await fetch(B.url(`/threads/${threadId}/interrupt?workflowId=gate`), { method: "POST" });
    await expectStatus(again, 404);
    const k3 = newID("k");
    gate.open(k3);
    const third = await send(agentOn(B, "gate", threadId), k3).done;
    assert.equal(third.error, undefined);
    assert.deepEqual(said(third.seen), [`start ${k3}`, `done ${k3}: opened`]);
    const h = await history(any(), threadId);
    assert.deepEqual(turns(h.messages), [
      `user: ${k1}`, `assistant: start ${k1}`,
      `user: ${k2}`, `assistant: start ${k2}`,
      `user: ${k3}`, `assistant: start ${k3}`, `assistant: done ${k3}: opened`,
    ]);
    assert.deepEqual(warnings, []);
  });

  test("a run is followed live from other replicas, and resumed after a cursor", { timeout: limit }, async () => {
    const threadId = newID("thread");
    const key = newID("k");
    const runId = newID("run");
    const own = send(agentOn(A, "gate", threadId), key, { runId });
    await gate.arrived(key);

    // B follows the run, and replays the thread with follow, while it
    // waits on the gate: what it said so far is there before it ends.
    const followB = await follow(B, threadId, runId);
    const head = await within(followB.until(saysStart(key)), 15_000, "the follower to read the run's start");
    assert.equal(head[0].event.type, "RUN_STARTED");
    assert.equal(head[0].event.threadId, threadId);
    assert.equal(head[0].event.runId, runId);
    const replayRes = await fetch(B.url(`/threads/${threadId}/replay?follow=true&workflowId=gate`), { headers: { accept: "text/event-stream" } });
    const replay = new EventStream(replayRes);
    await within(replay.until(saysStart(key)), 15_000, "the followed replay to read the run's start");
    assert.equal(gate.held.get(key)?.length, 1, "the run is still in progress");
    const cursor = head.findLast((f) => f.id !== undefined)?.id;
    assert.ok(cursor, "stored events come with an id");
    // A client that lost B reconnects on C with the id of the last frame
    // it read, while the run goes on.
    const followC = await follow(C, threadId, runId, { "last-event-id": cursor });

    gate.open(key);
    const tail = await within(followB.rest(), 15_000, "the follower's stream to end");
    const all = [...head, ...tail].map((f) => f.event);
    checkStream(followB.text, { threadId, runId });
    assert.deepEqual(said(all), [`start ${key}`, `done ${key}: opened`]);
    assert.equal(all.at(-1).type, "RUN_FINISHED");
    assert.equal(all.at(-1).outcome?.type, "success");

    // The run's own client, on A, saw the same messages.
    const { seen } = await own.done;
    const messages = (evs) => ofType(evs, "TEXT_MESSAGE_CONTENT").map((e) => [e.messageId, e.delta]);
    assert.deepEqual(messages(all), messages(seen));

    // The followed replay is the log: the turn's user message and what
    // the run said, in order, without run events of its own; it ends
    // once the run has ended.
    await within(replay.rest(), 15_000, "the followed replay to end");
    const replayed = replay.frames;
    assert.ok(replayed.every((f) => f.event.type !== "RUN_STARTED" && f.event.type !== "RUN_FINISHED"));
    const ids = replayed.map((f) => Number(f.id));
    assert.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]), `ids ${ids}`);
    assert.deepEqual(said(replayed.map((f) => f.event)), [key, `start ${key}`, `done ${key}: opened`]);

    // The reconnection on C got what followed the cursor only, then the
    // end; so does one on A, where the run executed, once it has ended
    // (with the cursor as a parameter).
    await within(followC.rest(), 15_000, "the resumed stream to end");
    const res = await fetch(A.url(`/threads/${threadId}/runs/${runId}/events?workflowId=gate&cursor=${cursor}`), { headers: { accept: "text/event-stream" } });
    const followA = new EventStream(res);
    await within(followA.rest(), 15_000, "the stream resumed on A to end");
    for (const resumed of [followC, followA]) {
      checkStream(resumed.text, { threadId, runId });
      const after = resumed.frames.slice(1, -1);
      assert.ok(after.every((f) => Number(f.id) > Number(cursor)), `ids after ${cursor}: ${after.map((f) => f.id)}`);
      assert.deepEqual(after, tail.slice(0, -1));
      assert.deepEqual(said(resumed.events), [`done ${key}: opened`]);
      assert.deepEqual(resumed.events.at(-1).outcome, all.at(-1).outcome);
    }
    assert.deepEqual(warnings, []);
  });

  test("a client that reloads on another replica during a run restores the conversation and sees the run to its end", { timeout: limit }, async () => {
    const threadId = newID("thread");
    const first = newID("k");
    gate.open(first);
    const onA = agentOn(A, "gate", threadId);
    assert.equal((await send(onA, first).done).error, undefined);
    const key = newID("k");
    const own = send(onA, key);
    await gate.arrived(key);

    // The reload: a client on B with the thread's id and no new message.
    const onB = agentOn(B, "gate", threadId);
    const reload = startRun(onB);
    const snapshot = await reload.until((e) => e.type === "MESSAGES_SNAPSHOT", "the snapshot");
    assert.deepEqual(turns(snapshot.messages), [`user: ${first}`, `assistant: start ${first}`, `assistant: done ${first}: opened`]);
    await reload.until(saysStart(key), "the run's start");
    // The same restore, asked of C as POST /history with
    // Accept: text/event-stream.
    const res = await fetch(C.url("/history"), {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ threadId, workflowId: "gate" }),
    });
    await expectStatus(res, 200);
    const restoreC = new EventStream(res);
    await within(restoreC.until(saysStart(key)), 15_000, "C's restore to read the run's start");
    assert.equal(gate.held.get(key)?.length, 1, "the run is still in progress");

    gate.open(key);
    const [a, b] = await within(Promise.all([own.done, reload.done]), 15_000, "both clients to end");
    assert.equal(a.error, undefined);
    assert.equal(b.error, undefined);
    assert.deepEqual(b.seen.map((e) => e.type).slice(0, 3), ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT"]);
    assert.equal(finished(b.seen).length, 1);
    assert.equal(b.seen.at(-1).type, "RUN_FINISHED");
    assert.equal(b.seen.at(-1).outcome?.type, "success");
    assert.deepEqual(onB.messages, onA.messages);
    assert.deepEqual(turns(onB.messages).slice(3), [`user: ${key}`, `assistant: start ${key}`, `assistant: done ${key}: opened`]);

    await within(restoreC.rest(), 15_000, "C's restore to end");
    const restored = restoreC.events;
    checkStream(restoreC.text);
    assert.deepEqual(restored.map((e) => e.type).slice(0, 3), ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT"]);
    assert.equal(restored.at(-1).type, "RUN_FINISHED");
    assert.equal(restored.at(-1).outcome?.type, "success");
    assert.deepEqual(textMessages(restored), onA.messages);
    assert.deepEqual(warnings, []);
  });

  test("busy policies hold across the replicas with the official client: enqueue and interrupt", { timeout: limit }, async () => {
    // enqueue: turns sent to B and C while A runs all run, in order.
    {
      const threadId = newID("thread");
      const keys = [newID("k"), newID("k"), newID("k")];
      const first = send(agentOn(A, "gate_enqueue", threadId), keys[0]);
      await gate.arrived(keys[0]);
      gate.open(keys[1]);
      gate.open(keys[2]);
      const second = send(agentOn(B, "gate_enqueue", threadId), keys[1]);
      await second.until((e) => e.type === "RUN_STARTED", "the second turn to be queued");
      const third = send(agentOn(C, "gate_enqueue", threadId), keys[2]);
      await third.until((e) => e.type === "RUN_STARTED", "the third turn to be queued");
      assert.deepEqual([second, third].map((r) => said(r.seen)), [[], []], "queued turns wait");
      assert.equal(gate.arrivals.get(keys[1]), undefined);

      gate.open(keys[0]);
      const done = await within(Promise.all([first, second, third].map((r) => r.done)), 20_000, "the three turns");
      for (const [i, { seen, error }] of done.entries()) {
        assert.equal(error, undefined);
        assert.equal(seen.at(-1).type, "RUN_FINISHED");
        assert.equal(seen.at(-1).outcome?.type, "success");
        assert.deepEqual(said(seen), [`start ${keys[i]}`, `done ${keys[i]}: opened`], `turn ${i + 1}`);
      }
      const h = await history(any(), threadId, "gate_enqueue");
      assert.deepEqual(turns(h.messages), keys.flatMap((k) => [`user: ${k}`, `assistant: start ${k}`, `assistant: done ${k}: opened`]));
    }
    // interrupt: a turn sent to B cancels A's run, and runs.
    {
      const threadId = newID("thread");
      const [k1, k2] = [newID("k"), newID("k")];
      const first = send(agentOn(A, "gate_interrupt", threadId), k1);
      await gate.arrived(k1);
      gate.open(k2);
      const second = send(agentOn(B, "gate_interrupt", threadId), k2);
      const [a, b] = await within(Promise.all([first.done, second.done]), 20_000, "both turns");
      assert.equal(a.error, undefined);
      assert.deepEqual(a.seen.at(-1).outcome, { type: "cancelled" });
      assert.deepEqual(said(a.seen), [`start ${k1}`]);
      assert.equal(b.error, undefined);
      assert.equal(b.seen.at(-1).outcome?.type, "success");
      assert.deepEqual(said(b.seen), [`start ${k2}`, `done ${k2}: opened`]);
      await gate.hungUp(k1);
      const h = await history(any(), threadId, "gate_interrupt");
      assert.deepEqual(turns(h.messages), [
        `user: ${k1}`, `assistant: start ${k1}`,
        `user: ${k2}`, `assistant: start ${k2}`, `assistant: done ${k2}: opened`,
      ]);
    }
    assert.deepEqual(warnings, []);
  });

  test("the runs of a replica killed with SIGKILL are recovered by the others", { timeout: limit }, async () => {
    const convs = [];
    for (let i = 0; i < 4; i++) {
      const threadId = newID("thread");
      const before = newID("k");
      gate.open(before);
      // A turn before, on any replica, then one in progress on A.
      assert.equal((await send(agentOn(any(), "gate", threadId), before).done).error, undefined);
      const key = newID("k");
      const runId = newID("run");
      const run = send(agentOn(A, "gate", threadId), key, { runId });
      convs.push({ threadId, before, key, runId, run });
    }
    for (const c of convs) {
      await gate.arrived(c.key);
      await c.run.until((e) => e.type === "RUN_STARTED", "RUN_STARTED"); // acknowledged
    }
    // And a conversation whose turns are queued behind its run on A: the
    // second on A, the third on B.
    const queued = { threadId: newID("thread"), keys: [newID("k"), newID("k"), newID("k")], runIds: [newID("run"), newID("run"), newID("run")], runs: [] };
    for (const [i, on] of [A, A, B].entries()) {
      queued.runs.push(send(agentOn(on, "gate_enqueue", queued.threadId), queued.keys[i], { runId: queued.runIds[i] }));
      await queued.runs[i].until((e) => e.type === "RUN_STARTED", "RUN_STARTED");
    }
    await gate.arrived(queued.keys[0]);
    // B follows one of the runs from before the kill.
    const watched = convs[0];
    const followB = await follow(B, watched.threadId, watched.runId);
    await within(followB.until(saysStart(watched.key)), 15_000, "the follower to read the run's start");

    await A.kill();
    try {
      await recovered(convs, queued, watched, followB);
    } finally {
      A = await new Replica("A").start(); // A comes back
    }
    assert.deepEqual(warnings, []);
  });

  // recovered checks that the runs of convs and queued, cut short on A,
  // are recovered by the other replicas, and that followB, a follower of
  // watched's run, gets its end.
  async function recovered(convs, queued, watched, followB) {
    let n = 0;
    const survivor = () => [B, C][n++ % 2];
    for (const key of [...convs.map((c) => c.key), ...queued.keys]) gate.open(key, "after the crash");
    // A's clients lost their streams: the client ends the run with an
    // abort of its own.
    for (const run of [...convs.map((c) => c.run), ...queued.runs.slice(0, 2)]) {
      const { seen } = await within(run.done, 15_000, "A's clients to lose their streams");
      assert.equal(ofType(seen, "RUN_FINISHED").length, 0);
      assert.equal(seen.at(-1).type, "RUN_ERROR");
      assert.equal(seen.at(-1).code, "abort");
      assert.match(seen.at(-1).message, /the stream was cut/);
    }

    // B and C take over every run once its lease expires.
    for (const c of convs) {
      const end = await waitFor(() => runEnd(survivor(), c.threadId, c.runId), { what: `the recovery of ${c.runId}`, timeout: 30_000, every: 250 });
      assert.equal(end.type, "RUN_FINISHED", JSON.stringify(end));
      assert.equal(end.outcome?.type, "success", JSON.stringify(end));
      const h = await history(survivor(), c.threadId);
      assert.deepEqual(turns(h.messages), [
        `user: ${c.before}`, `assistant: start ${c.before}`, `assistant: done ${c.before}: opened`,
        `user: ${c.key}`, `assistant: start ${c.key}`, `assistant: done ${c.key}: after the crash`,
      ]);
      assert.equal((await messagesOf(survivor(), c.threadId)).status, "suspended");
      // The turn's call was made again by the replica that took it over.
      assert.equal(gate.arrivals.get(c.key), 2);
    }
    // The queued turns ran after the recovered one, in their order; the
    // client of the turn queued on B saw its own turn.
    const third = await within(queued.runs[2].done, 30_000, "the turn queued on B");
    assert.equal(third.error, undefined);
    assert.deepEqual(said(third.seen), [`start ${queued.keys[2]}`, `done ${queued.keys[2]}: after the crash`]);
    assert.equal(third.seen.at(-1).outcome?.type, "success");
    for (const runId of queued.runIds) {
      const end = await waitFor(() => runEnd(survivor(), queued.threadId, runId, "gate_enqueue"), { what: `the end of ${runId}`, every: 250 });
      assert.equal(end.outcome?.type, "success", JSON.stringify(end));
    }
    const h = await history(survivor(), queued.threadId, "gate_enqueue");
    assert.deepEqual(turns(h.messages), queued.keys.flatMap((k) => [`user: ${k}`, `assistant: start ${k}`, `assistant: done ${k}: after the crash`]));
    assert.deepEqual(queued.keys.map((k) => gate.arrivals.get(k)), [2, 1, 1]);

    // The follower on B saw the recovered run to its end.
    const tail = await within(followB.rest(), 15_000, "the follower's stream to end");
    assert.deepEqual(said(tail.map((f) => f.event)), [`done ${watched.key}: after the crash`]);
    assert.equal(tail.at(-1).event.type, "RUN_FINISHED");
    assert.equal(tail.at(-1).event.outcome?.type, "success");
    checkStream(followB.text, { threadId: watched.threadId, runId: watched.runId });
  }

  test("a rolling upgrade: a conversation goes on with its version on an upgraded replica, new ones start on the new version", { timeout: limit }, async () => {
    // A conversation started on v1, waiting for the user.
    const old = newID("thread");
    const first = await send(agentOn(A, "upgrade", old), "hello").done;
    assert.deepEqual(said(first.seen), ["v1 first: hello"]);

    // C is upgraded: stopped, and started again on v2.
    await C.stop();
    C = await new Replica("C", { dir: dirs.v2 }).start();

    // The old conversation goes on with v1's flow on C.
    const second = await send(agentOn(C, "upgrade", old), "again").done;
    assert.equal(second.error, undefined);
    assert.deepEqual(said(second.seen), ["v1 second: again"]);

    // A new conversation on C runs v2, and goes on with v2 on a replica
    // not yet upgraded.
    const fresh = newID("thread");
    const v2first = await send(agentOn(C, "upgrade", fresh), "hi").done;
    assert.deepEqual(said(v2first.seen), ["v2 first: hi"]);
    const v2second = await send(agentOn(B, "upgrade", fresh), "more").done;
    assert.equal(v2second.error, undefined);
    assert.deepEqual(said(v2second.seen), ["v2 second: more"]);
    // And a new conversation on A still runs v1.
    const onA = await send(agentOn(A, "upgrade", newID("thread")), "yo").done;
    assert.deepEqual(said(onA.seen), ["v1 first: yo"]);
    assert.deepEqual(warnings, []);
  });

  test("a replica whose database goes away answers 503, ends its run with store_unavailable, and serves again once it is back", { timeout: limit }, async () => {
    const proxy = await proxied();

    const threadId = newID("thread");
    const before = newID("k");
    gate.open(before);
    assert.equal((await send(agentOn(B, "gate", threadId), before).done).error, undefined);
    const key = newID("k");
    const runId = newID("run");
    const run = send(agentOn(B, "gate", threadId), key, { runId });
    await gate.arrived(key);
    await run.until((e) => e.type === "RUN_STARTED", "RUN_STARTED");

    proxy.cut();
    // A request to B is answered 503, with the reason and when to try again.
    const res = await fetch(B.url(`/threads/${threadId}/messages?workflowId=gate`), { signal: AbortSignal.timeout(30_000) });
    await expectStatus(res, 503);
    assert.match(res.headers.get("content-type"), /^application\/problem\+json/);
    assert.ok(Number(res.headers.get("retry-after")) >= 1, `Retry-After: ${res.headers.get("retry-after")}`);
    const problem = await res.json();
    assert.match(problem.detail, /store is unavailable/, JSON.stringify(problem));
    const post = await fetch(B.url("/workflows/gate"), {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ threadId: newID("thread"), runId: newID("run"), messages: [{ id: newID("msg"), role: "user", content: newID("k") }] }),
      signal: AbortSignal.timeout(30_000),
    });
    await expectStatus(post, 503);
    assert.match((await post.json()).detail, /store is unavailable/);

    // The run in flight ends its stream with RUN_ERROR, not hanging.
    gate.open(key, "while the database was away");
    const { seen, error } = await within(run.done, 30_000, "the run in flight to end");
    assert.equal(error, undefined);
    assert.equal(seen.at(-1).type, "RUN_ERROR", JSON.stringify(seen.at(-1)));
    assert.equal(seen.at(-1).code, "store_unavailable", JSON.stringify(seen.at(-1)));

    // The database comes back: B serves again by itself, and the run is
    // recovered, by B or another replica.
    await proxy.listen();
    await waitFor(async () => (await fetch(B.url(`/threads/${threadId}/messages?workflowId=gate`))).status === 200, { what: "B to serve again", every: 250 });
    const end = await waitFor(() => runEnd(B, threadId, runId), { what: `the recovery of ${runId}`, every: 250 });
    assert.equal(end.type, "RUN_FINISHED", JSON.stringify(end));
    assert.equal(end.outcome?.type, "success", JSON.stringify(end));
    const h = await history(B, threadId);
    assert.deepEqual(turns(h.messages), [
      `user: ${before}`, `assistant: start ${before}`, `assistant: done ${before}: opened`,
      `user: ${key}`, `assistant: start ${key}`, `assistant: done ${key}: while the database was away`,
    ]);
    // The conversation takes its next turn on B.
    const next = newID("k");
    gate.open(next);
    const third = await send(agentOn(B, "gate", threadId), next).done;
    assert.equal(third.error, undefined);
    assert.deepEqual(said(third.seen), [`start ${next}`, `done ${next}: opened`]);
    assert.deepEqual(warnings, []);
  });

  test("a replica cut off from the database longer than its lease: another takes its run over, and it stops its own once it learns it", { timeout: limit }, async () => {
    const proxy = await proxied();
    const threadId = newID("thread");
    const key = newID("k");
    const runId = newID("run");
    const run = send(agentOn(B, "gate", threadId), key, { runId });
    await gate.arrived(key);
    await run.until((e) => e.type === "RUN_STARTED", "RUN_STARTED");

    // B cannot renew its lease: once it expires, A or C takes the run
    // over, and runs its turn again.
    proxy.cut();
    await gate.arrived(key, 2);
    // The database comes back: B learns that its lease was taken, stops
    // its run (it hangs up on the gate) and ends its client's stream,
    // though the gate has not answered.
    await proxy.listen();
    await gate.hungUp(key);
    const { seen, error } = await within(run.done, 15_000, "B's client to learn that its run was taken over");
    assert.equal(error, undefined);
    assert.equal(seen.at(-1).type, "RUN_ERROR", JSON.stringify(seen.at(-1)));
    assert.match(seen.at(-1).message, /lease is no longer held/);
    assert.equal(gate.held.get(key)?.length, 1, "the run taken over still waits on the gate");

    // The turn ends on the replica that took it over, once.
    gate.open(key, "taken over");
    const end = await waitFor(() => runEnd(any(), threadId, runId), { what: `the end of ${runId}`, every: 250 });
    assert.equal(end.outcome?.type, "success", JSON.stringify(end));
    const h = await history(B, threadId);
    assert.deepEqual(turns(h.messages), [`user: ${key}`, `assistant: start ${key}`, `assistant: done ${key}: taken over`]);
    assert.deepEqual(warnings, []);
  });

  // proxied makes B a replica that reaches PostgreSQL through a proxy, if
  // it is not one yet, and returns the proxy.
  let proxy;
  async function proxied() {
    if (!proxy) {
      proxy = new Proxy(pgAddr);
      proxies.add(proxy);
      await proxy.listen();
      await B.stop();
      B = await new Replica("B", { via: `127.0.0.1:${proxy.port}` }).start();
    }
    return proxy;
  }

  // Proxy forwards TCP connections to PostgreSQL; cut closes them and
  // stops listening (the database went away), listen starts again on the
  // same port.
  class Proxy {
    constructor(upstream) {
      this.upstream = upstream;
      this.sockets = new Set();
      this.port = 0;
    }

    listen() {
      this.server = net.createServer((client) => {
        const up = net.connect(this.upstream);
        for (const s of [client, up]) {
          this.sockets.add(s);
          s.on("close", () => this.sockets.delete(s));
          s.on("error", () => {});
        }
        client.pipe(up);
        up.pipe(client);
        client.on("close", () => up.destroy());
        up.on("close", () => client.destroy());
      });
      return new Promise((resolve, reject) => {
        this.server.once("error", reject);
        this.server.listen(this.port, "127.0.0.1", () => {
          this.port = this.server.address().port;
          resolve();
        });
      });
    }

    cut() {
      this.server.close();
      for (const s of this.sockets) s.destroy();
    }

    close() {
      this.cut();
    }
  }
}
