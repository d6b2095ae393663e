// The studio (/studio), driven in a real headless Chromium: the example
// workflows of workflows/ served as a newcomer serves them, and the
// workflows of e2e/studio/ behind bearer tokens. Every test fails on a
// console error or warning, an uncaught error, a failed request or an
// answer of 400 or more it did not expect. With AGUIC_UPDATE_SCREENSHOTS=1
// the tests write the pictures of docs/studio.md into docs/images/.

import { test, before, after, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { readFileSync, existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { launchChromium, watchPage } from "./browser.mjs";
import { root, startServe, newID, rawRun, waitFor } from "./lib.mjs";
import { Reducer } from "../studio/web/js/reducer.js";

// The pictures of docs/studio.md, each taken by the test that names it.
const SCREENSHOTS = ["studio-workflows.png", "studio-run.png", "studio-frontend-tool.png", "studio-interrupt.png", "studio-thread.png"];
const images = path.join(root, "docs", "images");
const updating = process.env.AGUIC_UPDATE_SCREENSHOTS === "1";

const TOKENS = { ada: "ada-studio-token", bob: "bob-studio-token" };
const WAIT = 20_000; // the longest a test waits for the page to show something

let browser;
let examples; // workflows/, no tokens
let secured; // e2e/studio/, with tokens
let hold; // the service the slow workflow waits for
const held = []; // its requests, held open

before(async () => {
  hold = http.createServer((req, res) => {
    held.push({ req, res, closed: new Promise((r) => res.on("close", r)) });
  });
  await new Promise((r) => hold.listen(0, "127.0.0.1", r));
  // From the repository's root, as a newcomer serves them: the files are
  // named workflows/….wf in the pictures.
  [examples, secured] = await Promise.all([
    startServe({ cwd: root, args: ["--model-script", "workflows/scripts/demo.script", "workflows"] }),
    startServe({
      cwd: root,
      args: ["e2e/studio"],
      env: { AGUIC_TOKENS: `ada:${TOKENS.ada},bob:${TOKENS.bob}`, STUDIO_HOLD_URL: `http://127.0.0.1:${hold.address().port}` },
    }),
  ]);
  browser = await launchChromium();
  if (updating) mkdirSync(images, { recursive: true });
});

after(async () => {
  await browser?.close();
  for (const { res } of held) res.destroy();
  hold?.close();
  await examples?.stop();
  await secured?.stop();
});

// The page of the running test, and what went wrong on it.
let page;
let problems;
let expected; // [{status, url: RegExp}]: answers of 400 or more the test expects

beforeEach(() => {
  page = undefined;
  problems = [];
  expected = [];
});

afterEach(async () => {
  await page?.context().close();
  assert.deepEqual(problems, [], "the page must run without errors, warnings or failed requests");
});

// open opens the studio of server at hash in a fresh browser context; a
// token, when given, is in the tab's sessionStorage from the start.
async function open(server, hash = "", { token } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "light", deviceScaleFactor: 1 });
  page = await context.newPage();
  if (token) {
    await page.addInitScript((t) => sessionStorage.setItem("aguic.studio.token", t), token);
  }
  problems = watchPage(page, { expected: (status, url) => expected.some((e) => e.status === status && e.url.test(url)) });
  await page.goto(`${server.origin}/studio${hash ? `#${hash}` : ""}`);
  return page;
}

// shot takes the picture name of the page, when the pictures are updated.
async function shot(name) {
  assert.ok(SCREENSHOTS.includes(name), `${name} is not one of SCREENSHOTS`);
  if (updating) await page.screenshot({ path: path.join(images, name) });
}

// text waits for the locator's first element to hold text, and returns
// its whole text.
async function text(locator, want) {
  await page.waitForFunction(([sel, w]) => [...document.querySelectorAll(sel)].some((e) => e.textContent.includes(w)), [locator, want], { timeout: WAIT });
  return page.$$eval(locator, (els, w) => els.find((e) => e.textContent.includes(w)).textContent, want);
}

// send writes a message in the run view and sends it with Enter.
async function send(message) {
  await page.fill(".composer textarea", message);
  await page.press(".composer textarea", "Enter");
}

// idle waits for the run view's run to end and returns its status text.
async function idle(want) {
  await page.waitForFunction((w) => {
    const s = document.querySelector(".run-bar [role=status]");
    return s && !s.classList.contains("running") && s.textContent.includes(w);
  }, want, { timeout: WAIT });
  return page.textContent(".run-bar [role=status]");
}

test("the workflows: the list, capabilities and a drawn graph; a node's source lines and keys", async () => {
  await open(examples, "/workflows/refund_approval");
  for (const title of ["Chat", "Human Handoff", "Planner", "Refund Approval", "Todo List", "Weather"]) {
    await text(".sidebar li .title", title);
  }
  await text(".page-head h1", "Refund Approval");
  await text(".page-head .chips", "human in the loop");
  await page.waitForSelector(".graph svg .node", { timeout: WAIT });
  const info = await (await fetch(`${examples.base}/workflows/refund_approval`)).json();
  assert.ok(info.layout, "the workflow has a layout");
  assert.equal(await page.locator(".graph svg .node").count(), info.layout.nodes.length, "one node drawn per node of the layout");
  assert.equal(await page.locator(".graph svg .edge").count(), info.layout.edges.length, "one edge drawn per edge of the layout");
  for (const label of ["confirm", "next_request"]) {
    assert.ok(await page.locator(`.graph svg .node[data-node="${label}"] text`).first().textContent(), `node ${label} has a text`);
  }
  // A node's source, marked in the file, and its keys.
  await page.click('.graph svg .node[data-node="confirm"]');
  await text(".details", "frontend_tool");
  const marked = await page.$$eval(".source .line.hl", (ls) => ls.map((l) => l.textContent));
  assert.ok(marked.some((l) => l.includes('frontend_tool "confirm_refund"')), `the marked lines hold the node: ${marked.join("\n")}`);
  await page.waitForFunction(() => {
    const line = document.querySelector(".source .line.hl").getBoundingClientRect();
    const panel = document.querySelector(".details").getBoundingClientRect();
    return line.top >= panel.top && line.bottom <= panel.bottom;
  }, null, { timeout: WAIT });
  const line = readFileSync(path.join(root, "workflows", "approval.wf"), "utf8").split("\n").findIndex((l) => l.includes("confirm: frontend_tool")) + 1;
  await text(".details dd", `workflows/approval.wf:${line}:5`);
  await text(".details table", "args");
  await shot("studio-workflows.png");
  // The keyboard: Enter on a focused node selects it.
  await page.focus('.graph svg .node[data-node="next_request"]');
  await page.keyboard.press("Enter");
  await text(".details", "suspend");
});

test("a chat turn: the reply, and the events with their timing", async () => {
  await open(examples, "/run/chat");
  await send("hello");
  await text(".msg.assistant .text", "Hello! I am a scripted assistant. Ask me anything.");
  assert.match(await idle("finished"), /finished · success/);
  for (const type of ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]) {
    await text(".events .ev .type", type);
  }
  const times = await page.$$eval(".events .ev:not(.sep) .t", (ts) => ts.map((t) => t.textContent));
  assert.ok(times.length > 0 && times.every((t) => /^\d+$/.test(t)), `every event has its ms since the run started: ${times}`);
  // A stateless workflow gets the whole history with each turn.
  const request = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/agui/workflows/chat"));
  await send("What is aguic?");
  const body = (await request).postDataJSON();
  assert.deepEqual(body.messages.map((m) => [m.role, m.content]), [
    ["user", "hello"],
    ["assistant", "Hello! I am a scripted assistant. Ask me anything."],
    ["user", "What is aguic?"],
  ]);
  await text(".msg.assistant .text", "That is a good question.");
  await idle("finished");
  assert.equal(await page.locator(".chat .msg").count(), 4);
});

test("a state delta: the paths it touched are marked in the state", async () => {
  await open(examples, "/run/todos");
  await send("add buy milk");
  await text(".msg.assistant .text", "[ ] buy milk");
  await idle("finished");
  await send("add call Ada");
  await text(".msg.assistant .text", "[ ] buy milk; [ ] call Ada");
  await idle("finished");
  await text(".events .ev .type", "STATE_DELTA");
  const touched = await page.$$eval(".state-panel .touched", (els) => els.map((e) => e.textContent));
  assert.ok(touched.some((t) => t.includes('"call Ada"')), `the new todo is marked: ${touched}`);
  assert.ok(!touched.some((t) => t.includes('"buy milk"')), `the todo the delta left alone is not marked: ${touched}`);
  await text(".state-panel .touched-list", "/todos/1");
  await shot("studio-run.png");
});

test("the node the run is at moves along the graph", async () => {
  await open(examples, "/run/planner");
  await page.waitForSelector(".graph svg .node", { timeout: WAIT });
  // Record every node that becomes the current one, in order.
  await page.evaluate(() => {
    window.visited = [];
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.target.classList?.contains("current") && window.visited.at(-1) !== r.target.dataset.node) window.visited.push(r.target.dataset.node);
      }
    }).observe(document.querySelector(".graph svg"), { subtree: true, attributes: true, attributeFilter: ["class"] });
  });
  await send("How do I brew green tea?");
  await text(".msg.assistant .text", "Heat water to about 80 °C");
  await idle("finished");
  const visited = await page.evaluate(() => window.visited);
  assert.ok(visited.length >= 5, `the run went through its nodes: ${visited}`);
  assert.ok(visited.indexOf("3") < visited.indexOf("4"), `the plan is shown before its first step: ${visited}`);
  const done = await page.$$eval(".graph svg .node.visited", (ns) => ns.map((n) => n.dataset.node));
  assert.ok(visited.every((id) => done.includes(id)), `every node the run went through is marked visited: ${done}`);
  assert.ok(await page.locator(".graph svg .edge.taken").count() > 0, "the edges the run took are marked");
});

test("a frontend tool: its form, from the declared schema, answers it and the run goes on", async () => {
  await open(examples, "/run/refund_approval");
  // The client tools start from the workflow's frontend tools.
  await page.click("text=Client tools");
  const declared = JSON.parse(await page.inputValue(".tools-dialog textarea"));
  assert.deepEqual(declared.map((t) => t.name), ["confirm_refund"]);
  declared[0].description = "Ask the user to confirm a refund";
  declared[0].responseSchema = { type: "object", properties: { approved: { type: "boolean", title: "approve the refund" } }, required: ["approved"] };
  await page.fill(".tools-dialog textarea", JSON.stringify(declared, null, 2));
  await page.click(".tools-dialog button[type=submit]");
  await text(".run-bar button", "Client tools (1)");

  const first = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/agui/workflows/refund_approval"));
  await send("Please refund order A-17.");
  const body = (await first).postDataJSON();
  assert.deepEqual(body.tools, [{ name: "confirm_refund", description: "Ask the user to confirm a refund", parameters: { type: "object", properties: {} } }], "the request declares the tool, without the studio's responseSchema");
  await text(".hitl .pending-call", "confirm_refund");
  await text(".hitl pre.args", "Please refund order A-17.");
  assert.match(await idle("waits"), /waits for confirm_refund/);
  await page.check(".hitl .pending-call input[type=checkbox]");
  const callId = await page.getAttribute(".hitl .pending-call", "data-tool-call");
  await shot("studio-frontend-tool.png");

  // A conversation gets only the new turn: the tool message.
  const answer = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/agui/workflows/refund_approval"));
  await page.click(".hitl button[type=submit]");
  const resumed = (await answer).postDataJSON();
  assert.equal(resumed.messages.length, 1);
  assert.equal(resumed.messages[0].role, "tool");
  assert.equal(resumed.messages[0].toolCallId, callId);
  assert.deepEqual(JSON.parse(resumed.messages[0].content), { approved: true });
  await text(".msg.assistant .text", "Done: your refund is queued.");
  assert.match(await idle("finished"), /finished · success/);
  await text(".toolcall .badge", "answered");
  assert.equal(await page.locator(".hitl").count(), 0, "nothing waits any more");
});

test("an interrupt: its form, from the response schema, with validation; resolve sends resume", async () => {
  await open(examples, "/run/handoff");
  await send("Can I talk to a person?");
  await text(".msg.assistant .text", "Let me get a colleague of mine.");
  assert.match(await idle("interrupt"), /interrupt/);
  await text(".pending-interrupt", "The customer asks for a person: Can I talk to a person?");
  await text(".pending-interrupt label", "reply");
  assert.equal(await page.textContent(".pending-interrupt label .req"), "*", "the required field is marked");
  // Resolving without the required field says what is missing, and sends nothing.
  await page.click(".pending-interrupt button:has-text('Resolve')");
  await text(".pending-interrupt .invalid", "Required.");
  await page.fill(".pending-interrupt input[type=text]", "Hi, I am Sam from support.");
  await shot("studio-interrupt.png");
  const request = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/agui/workflows/handoff"));
  await page.click(".pending-interrupt button:has-text('Resolve')");
  const body = (await request).postDataJSON();
  assert.deepEqual(body.messages, []);
  assert.equal(body.resume.length, 1);
  assert.equal(body.resume[0].status, "resolved");
  assert.deepEqual(body.resume[0].payload, { reply: "Hi, I am Sam from support." });
  await text(".msg.assistant .text", "Hi, I am Sam from support.");
  assert.match(await idle("finished"), /finished · success/);
});

test("an interrupt cancelled: resume says cancelled, and the workflow takes its other way", async () => {
  await open(examples, "/run/handoff");
  await send("Can I talk to a person?");
  await idle("interrupt");
  const request = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/agui/workflows/handoff"));
  await page.click(".pending-interrupt button:has-text('Cancel interrupt')");
  const body = (await request).postDataJSON();
  assert.deepEqual(body.resume.map((r) => [r.status, r.payload]), [["cancelled", undefined]]);
  await text(".msg.assistant .text", "Nobody is free right now, sorry.");
  await idle("finished");
});

test("a form from a richer schema: every type it draws, required fields, what is wrong with each", async () => {
  await open(examples, "/run/refund_approval");
  await page.click("text=Client tools");
  const schema = {
    type: "object",
    required: ["reason", "amount"],
    properties: {
      reason: { type: "string", title: "reason", minLength: 3 },
      amount: { type: "integer", minimum: 1, maximum: 500 },
      rate: { type: "number" },
      channel: { enum: ["card", "bank", "voucher"] },
      tags: { type: "array", items: { type: "string" } },
      contact: { type: "object", title: "contact", properties: { email: { type: "string", pattern: "^[^@]+@[^@]+$" }, call: { type: "boolean" } } },
    },
  };
  await page.fill(".tools-dialog textarea", JSON.stringify([{ name: "confirm_refund", parameters: { type: "object" }, responseSchema: schema }]));
  await page.click(".tools-dialog button[type=submit]");
  await send("Please refund order A-17.");
  await idle("waits");
  const card = ".hitl .pending-call";
  assert.equal(await page.locator(`${card} .req`).count(), 2, "the two required fields are marked");
  // Sent empty: each field says what is wrong, and nothing is sent.
  await page.click(".hitl button[type=submit]");
  await text(`${card} .invalid`, "Required.");
  assert.equal(await page.locator(`${card} .invalid:has-text('Required.')`).count(), 2);
  await page.fill(`${card} .field:has(> label:has-text('reason')) input`, "no");
  await text(`${card} .invalid`, "At least 3 characters.");
  await page.fill(`${card} .field:has(> label:has-text('reason')) input`, "broken on arrival");
  await page.fill(`${card} .field:has(> label:has-text('amount')) input`, "2.5");
  await text(`${card} .invalid`, "A whole number.");
  await page.fill(`${card} .field:has(> label:has-text('amount')) input`, "900");
  await text(`${card} .invalid`, "At most 500.");
  await page.fill(`${card} .field:has(> label:has-text('amount')) input`, "42");
  await page.fill(`${card} .field:has(> label:has-text('rate')) input`, "0.5");
  await page.selectOption(`${card} .field:has(> label:has-text('channel')) select`, { label: "bank" });
  for (const tag of ["fragile", "urgent"]) {
    await page.click(`${card} .field:has(> label:has-text('tags')) button:has-text('Add')`);
    await page.locator(`${card} .field:has(> label:has-text('tags')) .array-item input`).last().fill(tag);
  }
  await page.fill(`${card} fieldset .field:has(> label:has-text('email')) input`, "ada");
  await text(`${card} .invalid`, "Must match");
  await page.fill(`${card} fieldset .field:has(> label:has-text('email')) input`, "ada@example.com");
  await page.check(`${card} fieldset input[type=checkbox]`);
  // The JSON editor holds what the form holds.
  await page.click(`${card} .editor-tabs button:has-text('JSON')`);
  const want = { reason: "broken on arrival", amount: 42, rate: 0.5, channel: "bank", tags: ["fragile", "urgent"], contact: { email: "ada@example.com", call: true } };
  assert.deepEqual(JSON.parse(await page.inputValue(`${card} .json-editor textarea`)), want);
  await page.click(`${card} .editor-tabs button:has-text('Form')`);
  const request = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/agui/workflows/refund_approval"));
  await page.click(".hitl button[type=submit]");
  assert.deepEqual(JSON.parse((await request).postDataJSON().messages[0].content), want);
  await text(".msg.assistant .text", "All right, I will not issue a refund.");
  await idle("finished");
});

test("a thread: its runs, stepping back through its events, replay from a cursor", async () => {
  await open(examples, "/run/todos");
  for (const [command, reply] of [["add buy milk", "[ ] buy milk"], ["add call Ada", "[ ] buy milk; [ ] call Ada"], ["done buy milk", "[x] buy milk; [ ] call Ada"]]) {
    await send(command);
    await text(".msg.assistant .text", reply);
    await idle("finished");
  }
  const thread = (await page.textContent(".run-bar .thread")).replace(/^thread /, "");
  await page.click(".run-bar .thread");
  await text(".thread-page h1", thread);
  assert.equal(await page.locator(".runs-panel tbody tr").count(), 3, "three runs");
  await text(".runs-panel tbody", "success");

  // At the end of the log: the state as the last turn left it.
  await text(".thread-page .panel h3", "State after the last event");
  let state = await page.textContent(".thread-page .panel:last-child .tree");
  assert.match(state, /"done": true/);
  // Back to the start: nothing yet.
  await page.keyboard.press("Home");
  await text(".thread-page .panel h3", "State before the first event");
  await text(".thread-page .panel:last-child .body", "no state");
  // The first state event: one todo, not done, marked as it changed.
  const rows = page.locator(".stepper-panel .ev[data-seq]");
  const types = await rows.evaluateAll((rs) => rs.map((r) => r.dataset.type));
  const firstState = types.findIndex((t) => t.startsWith("STATE_"));
  await rows.nth(firstState).click();
  state = await page.textContent(".thread-page .panel:last-child .tree");
  assert.match(state, /"buy milk"/);
  assert.doesNotMatch(state, /call Ada/);
  assert.equal(await page.locator(".thread-page .panel:last-child .touched").count() > 0, true, "the event's changes are marked");
  // One step forward at a time, with the keyboard, up to the reply of the first turn.
  const firstReply = types.indexOf("TEXT_MESSAGE_END");
  for (let i = firstState; i < firstReply; i++) await page.keyboard.press("ArrowRight");
  await text(".thread-page .messages", "[ ] buy milk");
  assert.equal(await page.locator(".thread-page .messages .msg").count(), 1, "the messages as they were then");
  await shot("studio-thread.png");

  // Replay from the cursor: the events after it, streamed again.
  const seq = Number(await rows.nth(firstReply).getAttribute("data-seq"));
  await page.click(".stepper-panel header button");
  await text(".replay-out h3", `Replay after #${seq}`);
  await text(".replay-out .replay-head", "done");
  const replayed = await page.$$eval(".replay-out .ev .seq", (ss) => ss.map((s) => Number(s.textContent)));
  const after = (await rows.evaluateAll((rs) => rs.map((r) => Number(r.dataset.seq)))).filter((s) => s > seq);
  assert.deepEqual(replayed, after, "the replay streams every event after the cursor");
  await text(".thread-page .panel:last-child h3", "State after the replay");
  assert.match(await page.textContent(".thread-page .panel:last-child .tree"), /"done": true/);
});

test("a conversation goes on from its thread page", async () => {
  await open(examples, "/run/support_chat");
  await send("I ordered a teapot, order A-17.");
  await text(".msg.assistant .text", "Thanks! I have noted order A-17");
  await idle("finished");
  await page.click(".run-bar .thread");
  await text(".thread-page h1", "studio-");
  // A reload forgets the run view; the thread's page opens it again, and
  // it restores the conversation as a client that reloads does. (Once
  // nothing loads: a reload would cut a request short.)
  await page.waitForLoadState("networkidle");
  await page.reload();
  await page.click("text=Continue in the run view");
  await text(".events .ev .type", "MESSAGES_SNAPSHOT");
  await text(".msg.assistant .text", "Thanks! I have noted order A-17");
  await send("When will it arrive?");
  await text(".msg.assistant .text", "your teapot should arrive on Monday");
  await idle("finished");
});

test("cancel a run in progress", async () => {
  await open(secured, "/run/slow", { token: TOKENS.ada });
  const before = held.length;
  await send("go");
  await text(".msg.assistant .text", "Working on it…");
  await page.waitForFunction(() => document.querySelector(".run-bar [role=status]")?.textContent.startsWith("running"), null, { timeout: WAIT });
  // The run waits for the held service.
  await waitFor(() => held.length > before, { what: "the run's call of the held service" });
  const cancel = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/agui/cancel"));
  await page.click(".run-bar button:has-text('Cancel run')");
  assert.equal((await cancel).postDataJSON().forwardedProps.aguic.workflowId, "slow");
  assert.match(await idle("cancelled"), /cancelled/);
  await text(".events .ev.terminal .data", '"outcome":{"type":"cancelled"}');
  await held.at(-1).closed;
  assert.equal(await page.locator(".msg.assistant").count(), 1, "the run stopped before it said Done");
});

test("with tokens: the token prompt, the scoped thread list, sign out", async () => {
  // Threads of two names.
  for (const [who, thread] of [["ada", newID("ada")], ["bob", newID("bob")]]) {
    const res = await fetch(`${secured.base}/workflows/echo`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKENS[who]}` },
      body: JSON.stringify({ threadId: thread, messages: [{ id: "m1", role: "user", content: `I am ${who}` }] }),
    });
    assert.equal(res.status, 200);
    await res.text();
  }
  expected.push({ status: 401, url: /\/agui\// });
  await open(secured, "/threads");
  // The studio's files need no token; the first call of the API does.
  await text(".token-dialog", "This server needs a token");
  await text(".token-dialog", "the request needs a bearer token");
  await page.fill(".token-dialog input", "not-a-token");
  await page.click(".token-dialog button[type=submit]");
  await text(".token-dialog", "the bearer token is not valid");
  await page.fill(".token-dialog input", TOKENS.ada);
  await page.click(".token-dialog button[type=submit]");
  await page.waitForSelector("table.threads tbody tr", { timeout: WAIT });
  const threads = await page.$$eval("table.threads tbody tr", (rs) => rs.map((r) => r.dataset.thread));
  assert.ok(threads.length >= 1 && threads.every((t) => !t.startsWith("bob-")), `only ada's threads: ${threads}`);
  assert.ok(threads.some((t) => t.startsWith("ada-")), `ada's thread is listed: ${threads}`);
  // Sign out forgets the token: the prompt comes back.
  await page.click("#signout");
  await text(".token-dialog", "This server needs a token");
  assert.equal(await page.evaluate(() => sessionStorage.getItem("aguic.studio.token")), null);
});

test("the reducer folds a thread's stored events into the messages the server restores", async () => {
  const turns = {
    support_chat: [[{ role: "user", content: "I ordered a teapot, order A-17." }], [{ role: "user", content: "When will it arrive?" }]],
    refund_approval: [[{ role: "user", content: "Please refund order A-17." }], "answer the tool"],
    planner: [[{ role: "user", content: "How do I brew green tea?" }]],
    todos: [[{ role: "user", content: "add buy milk" }]],
  };
  for (const [workflow, list] of Object.entries(turns)) {
    const threadId = newID(workflow);
    let pending;
    for (const turn of list) {
      const messages = turn === "answer the tool"
        ? [{ id: newID("t"), role: "tool", toolCallId: pending, content: '{"approved": true}' }]
        : turn.map((m) => ({ id: newID("m"), ...m }));
      const events = await rawRun(`${examples.base}/workflows/${workflow}`, { threadId, runId: newID("run"), messages });
      pending = events.at(-1).outcome?.pendingToolCallIds?.[0];
    }
    const stored = [];
    for (let after = ""; ;) {
      const page = await (await fetch(`${examples.base}/threads/${threadId}/events?workflow=${workflow}&after=${after}`)).json();
      stored.push(...page.events);
      if (!page.next) break;
      after = page.next;
    }
    const r = new Reducer();
    for (const e of stored) r.apply(e.event);
    const history = await (await fetch(`${examples.base}/threads/${threadId}/messages?workflowId=${workflow}&limit=500`)).json();
    assert.deepEqual(r.problems, [], workflow);
    assert.deepEqual(r.messages, history.messages, `${workflow}: the fold of the log is the thread's history`);
  }
});

test("docs/studio.md shows only pictures this suite takes", () => {
  const doc = readFileSync(path.join(root, "docs", "studio.md"), "utf8");
  const refs = [...doc.matchAll(/\]\((images\/[^)\s]+)\)/g)].map((m) => path.basename(m[1]));
  assert.ok(refs.length > 0, "docs/studio.md has pictures");
  for (const r of refs) {
    assert.ok(SCREENSHOTS.includes(r), `docs/studio.md shows ${r}, which no test takes`);
    assert.ok(existsSync(path.join(images, r)), `docs/images/${r} is missing: run AGUIC_UPDATE_SCREENSHOTS=1 npm test in e2e/`);
  }
  for (const s of SCREENSHOTS) assert.ok(refs.includes(s), `docs/studio.md does not show ${s}`);
});
