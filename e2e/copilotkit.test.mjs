// The CopilotKit example app of e2e/copilotkit/ against the real `aguic
// serve`: its Copilot Runtime (server.mjs) and its React app, built with
// Vite and served by `vite preview`, driven in headless Chromium, one
// journey per agent. The pages must show what the workflows answer with
// the scripted model (workflows/scripts/demo.script), with no error in the
// console and no failed request. The app's packages come from `make deps`
// (npm ci in e2e/copilotkit).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { launchChromium, watchPage } from "./browser.mjs";
import { root, here, startServe, freePort, waitFor } from "./lib.mjs";

const app = path.join(here, "copilotkit");
const vite = path.join(app, "node_modules", "vite", "bin", "vite.js");

let serve, runtime, runtimePort, preview, browser, work, origin;

const runtimeURL = () => `http://127.0.0.1:${runtimePort}/api/copilotkit`;

// startNode starts a Node program of the app, args after node, with env
// added to the environment, and resolves once url answers.
async function startNode(args, env, url) {
  const proc = spawn(process.execPath, args, { cwd: app, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  proc.stdout.on("data", (d) => { output += d; });
  proc.stderr.on("data", (d) => { output += d; });
  await waitFor(async () => {
    if (proc.exitCode !== null) assert.fail(`node ${args.join(" ")} exited with ${proc.exitCode}:\n${output}`);
    return (await fetch(url)).ok;
  }, { what: `node ${args.join(" ")} to answer ${url}`, timeout: 120_000, every: 200 });
  return {
    proc,
    output: () => output,
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once("exit", r));
        proc.kill("SIGTERM");
        await exited;
      }
    },
  };
}

// startRuntime starts the Copilot Runtime of the app on runtimePort.
function startRuntime() {
  return startNode(["server.mjs"], {
    AGUIC_URL: serve.origin,
    PORT: String(runtimePort),
    COPILOTKIT_TELEMETRY_DISABLED: "true",
  }, `${runtimeURL()}/info`);
}

before(async () => {
  if (!existsSync(vite)) throw new Error("e2e/copilotkit has no node_modules: run `make deps`");
  serve = await startServe({
    args: ["--model-script", path.join(root, "workflows", "scripts", "demo.script"), path.join(root, "workflows")],
  });
  work = mkdtempSync(path.join(tmpdir(), "aguic-copilotkit-"));
  const dist = path.join(work, "dist");
  execFileSync(process.execPath, [vite, "build", "--outDir", dist, "--emptyOutDir", "--logLevel", "error"], { cwd: app, stdio: "inherit" });
  runtimePort = await freePort();
  runtime = await startRuntime();
  const previewPort = await freePort();
  origin = `http://127.0.0.1:${previewPort}`;
  preview = await startNode(
    [vite, "preview", "--outDir", dist, "--host", "127.0.0.1", "--port", String(previewPort), "--strictPort"],
    { RUNTIME_URL: new URL(runtimeURL()).origin },
    origin,
  );
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await preview?.stop();
  await runtime?.stop();
  await serve?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

// open opens the app at address (a path) in a new page, and collects in
// problems what its console reports as an error or a warning, the page's
// uncaught errors, and every request that failed or was answered with an
// error status.
async function open(address) {
  const page = await browser.newPage();
  const problems = watchPage(page);
  await page.goto(origin + address);
  await page.getByTestId("copilot-chat-textarea").waitFor();
  return { page, problems };
}

// close checks that the page reported no problem, and closes it.
async function close({ page, problems }) {
  assert.deepEqual(problems, [], "the page reported problems");
  await page.close();
}

// pathOf is the page's address without its origin: its path and query.
function pathOf(page) {
  const url = new URL(page.url());
  return url.pathname + url.search;
}

// send types text into the chat and sends it.
async function send(page, text) {
  const input = page.getByTestId("copilot-chat-textarea");
  await input.fill(text);
  await input.press("Enter");
}

// showsTranscript waits for the chat to show the last of lines and to
// stop running, then checks that its messages are lines, in order: each
// "user: …" or "assistant: …".
async function showsTranscript(page, lines) {
  const messages = page.getByTestId(/^copilot-(user|assistant)-message$/);
  await messages.filter({ hasText: lines.at(-1).replace(/^\w+: /, "") }).last().waitFor();
  await page.locator('[data-testid="copilot-chat"][data-copilot-running="false"]').waitFor();
  const shown = [];
  for (const m of await messages.all()) {
    const role = (await m.getAttribute("data-testid")).replace(/^copilot-(\w+)-message$/, "$1");
    const text = (await m.innerText()).trim();
    if (text) shown.push(`${role}: ${text}`);
  }
  assert.deepEqual(shown, lines);
}

// restartRuntime stops the Copilot Runtime and starts a new one on its
// port, with no thread in memory.
async function restartRuntime() {
  await runtime.stop();
  runtime = await startRuntime();
}

// The refund card of the approval page, and the reply form of the
// handoff page.
const refundCard = (page) => page.getByRole("region", { name: "Refund" });
const handoffForm = (page) => page.getByRole("form", { name: "Handoff" });

// replyAsPerson answers the handoff's interrupt through its form.
async function replyAsPerson(page, reply) {
  const form = handoffForm(page);
  await form.getByText("The customer asks for a person: Can I talk to a person?").waitFor();
  await form.getByRole("textbox", { name: "Reply as a person" }).fill(reply);
  await form.getByRole("button", { name: "Send reply" }).click();
}

const teapot = [
  "user: I ordered a teapot, order A-17.",
  "assistant: Thanks! I have noted order A-17, your teapot. How can I help with it?",
];
const arrival = [
  "user: When will it arrive?",
  "assistant: Order A-17 left our warehouse yesterday: your teapot should arrive on Monday.",
];

// The support page's thread, kept for the history test.
let supportAddress;

test("support: a chat turn shows the workflow's reply", async () => {
  const opened = await open("/support");
  await send(opened.page, "I ordered a teapot, order A-17.");
  await showsTranscript(opened.page, teapot);
  supportAddress = pathOf(opened.page);
  assert.match(supportAddress, /^\/support\?thread=[\w-]+$/);
  await close(opened);
});

test("support: a reload shows the conversation, also from aguic after the runtime restarts", async () => {
  assert.ok(supportAddress, "the chat turn test ran first");
  const opened = await open(supportAddress);
  await showsTranscript(opened.page, teapot);
  await send(opened.page, "When will it arrive?");
  await showsTranscript(opened.page, [...teapot, ...arrival]);
  await opened.page.reload();
  await showsTranscript(opened.page, [...teapot, ...arrival]);
  await close(opened);

  // A new runtime process has no thread in memory: its runner restores
  // the conversation from aguic's history.
  await restartRuntime();
  const again = await open(supportAddress);
  await showsTranscript(again.page, [...teapot, ...arrival]);
  await close(again);
});

test("todos: the list the workflow keeps in the shared state shows on the page", async () => {
  const opened = await open("/todos");
  const { page } = opened;
  const todos = page.getByRole("list", { name: "Todos" }).getByRole("listitem");
  const said = [];
  for (const [command, answer] of [
    ["add buy milk", "[ ] buy milk"],
    ["add call Ada", "[ ] buy milk; [ ] call Ada"],
    ["done buy milk", "[x] buy milk; [ ] call Ada"],
  ]) {
    await send(page, command);
    said.push(`user: ${command}`, `assistant: ${answer}`);
    await showsTranscript(page, said);
  }
  assert.deepEqual(await todos.allInnerTexts(), [" buy milk", " call Ada"]);
  assert.deepEqual(await todos.getByRole("checkbox").evaluateAll((boxes) => boxes.map((b) => b.checked)), [true, false]);
  await close(opened);
  assert.equal(runtime.proc.exitCode, null, `the Copilot Runtime exited:\n${runtime.output()}`);
  assert.ok((await fetch(`${runtimeURL()}/info`)).ok, "the Copilot Runtime still answers");
});

test("approval: approving the refund in the card resumes the workflow", async () => {
  const opened = await open("/approval");
  const { page } = opened;
  await send(page, "Please refund order A-17.");
  await refundCard(page).getByText("Refund requested: Please refund order A-17.").waitFor();
  await refundCard(page).getByRole("button", { name: "Approve" }).click();
  // The card is the assistant's tool call, shown with its answer.
  await showsTranscript(page, [
    "user: Please refund order A-17.",
    "assistant: Refund requested: Please refund order A-17.\n\nApproved",
    "assistant: Done: your refund is queued.",
  ]);
  assert.equal(await refundCard(page).getByRole("button").count(), 0, "the answered card has no buttons");
  await close(opened);
});

test("handoff: the person's reply, sent through the interrupt's form, shows in the chat", async () => {
  const opened = await open("/handoff");
  const { page } = opened;
  await send(page, "Can I talk to a person?");
  await replyAsPerson(page, "Hi, I am Sam from support.");
  await showsTranscript(page, [
    "user: Can I talk to a person?",
    "assistant: Let me get a colleague of mine.",
    "assistant: Hi, I am Sam from support.",
  ]);
  assert.equal(await handoffForm(page).count(), 0, "the form is gone once answered");
  await close(opened);
});

test("handoff: when nobody is free, the form cancels the interrupt and the workflow says so", async () => {
  const opened = await open("/handoff");
  const { page } = opened;
  await send(page, "Can I talk to a person?");
  await handoffForm(page).getByRole("button", { name: "Nobody is free" }).click();
  await showsTranscript(page, [
    "user: Can I talk to a person?",
    "assistant: Let me get a colleague of mine.",
    "assistant: Nobody is free right now, sorry. I will keep helping you myself.",
  ]);
  assert.equal(await handoffForm(page).count(), 0, "the form is gone once cancelled");
  await close(opened);
});

test("a pending refund card and a pending handoff form outlive a runtime restart", async () => {
  const approval = await open("/approval");
  await send(approval.page, "Please refund order A-17.");
  await refundCard(approval.page).getByRole("button", { name: "Reject" }).waitFor();
  const approvalAddress = pathOf(approval.page);
  await close(approval);
  const handoff = await open("/handoff");
  await send(handoff.page, "Can I talk to a person?");
  await handoffForm(handoff.page).waitFor();
  const handoffAddress = pathOf(handoff.page);
  await close(handoff);

  await restartRuntime();

  const card = await open(approvalAddress);
  await refundCard(card.page).getByRole("button", { name: "Reject" }).click();
  await showsTranscript(card.page, [
    "user: Please refund order A-17.",
    "assistant: Refund requested: Please refund order A-17.\n\nRejected",
    "assistant: All right, I will not issue a refund.",
  ]);
  await close(card);

  // aguic's history of the handoff holds what the workflow stored, which
  // leaves out the question that asked for a person.
  const form = await open(handoffAddress);
  await replyAsPerson(form.page, "Hi, I am Sam from support.");
  await showsTranscript(form.page, [
    "assistant: Let me get a colleague of mine.",
    "assistant: Hi, I am Sam from support.",
  ]);
  await close(form);
});

// The README's CopilotKit code blocks are the app's own files: a block
// whose first line is the comment `// e2e/copilotkit/<file>` holds that
// file, whole.
test("README: the CopilotKit snippets are the app's files", () => {
  const readme = readFileSync(path.join(root, "README.md"), "utf8");
  const shown = [];
  for (const [, body] of readme.matchAll(/^```[a-z]*\n([\s\S]*?)^```$/gm)) {
    const named = body.match(/^\/\/ (e2e\/copilotkit\/\S+)\n/);
    if (!named) continue;
    shown.push(named[1]);
    assert.equal(body.slice(named[0].length), readFileSync(path.join(root, named[1]), "utf8"), `README's ${named[1]}`);
  }
  assert.deepEqual(shown.sort(), ["e2e/copilotkit/server.mjs", "e2e/copilotkit/src/Support.jsx", "e2e/copilotkit/src/main.jsx"]);
});
