// aguic lsp driven by the language client libraries VS Code's own
// extensions use (vscode-jsonrpc and vscode-languageserver-protocol):
// open a file with errors and see them, complete a key, hover a kind, go
// to a label, rename a workflow, format, shut down.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import lsp from "vscode-languageserver-protocol/node.js";
import { root } from "./lib.mjs";

const {
  createProtocolConnection, StreamMessageReader, StreamMessageWriter,
  InitializeRequest, InitializedNotification, DidOpenTextDocumentNotification,
  DidChangeTextDocumentNotification, PublishDiagnosticsNotification, CompletionRequest,
  HoverRequest, DefinitionRequest, RenameRequest, PrepareRenameRequest,
  DocumentFormattingRequest, DocumentSymbolRequest, ShutdownRequest, ExitNotification,
} = lsp;

const chat = `wf 1

workflow chat {
  flow {
    start: sya "Hello é😀"
    model {
      
      prompt = "<<$agent.latestUserMessage?.content ?? ''>>"
    } -> $reply
    call summarize
    goto start
  }
}
`;
const fixed = chat.replace("sya", "say");
const other = `wf 1

workflow summarize {
  flow {
        output "done"
  }
}
`;

let work, server, conn, chatURI, otherURI, exited;
const diagnostics = new Map(); // uri -> [params…]
const waiters = [];

function published(uri, version) {
  const found = (diagnostics.get(uri) ?? []).find((p) => p.version === version);
  if (found) return Promise.resolve(found);
  return new Promise((resolve) => waiters.push({ uri, version, resolve }));
}

before(async () => {
  work = mkdtempSync(path.join(tmpdir(), "aguic-lsp-"));
  const bin = path.join(work, "aguic");
  execFileSync("go", ["build", "-o", bin, "./cmd/aguic"], { cwd: root, stdio: "inherit" });
  const dir = path.join(work, "project");
  execFileSync("mkdir", ["-p", dir]);
  writeFileSync(path.join(dir, "chat.wf"), chat);
  writeFileSync(path.join(dir, "other.wf"), other);
  chatURI = pathToFileURL(path.join(dir, "chat.wf")).href;
  otherURI = pathToFileURL(path.join(dir, "other.wf")).href;
  server = spawn(bin, ["lsp", "--stdio"], { stdio: ["pipe", "pipe", "pipe"] });
  server.stderr.resume();
  exited = new Promise((resolve) => server.once("exit", (code) => resolve(code)));
  conn = createProtocolConnection(new StreamMessageReader(server.stdout), new StreamMessageWriter(server.stdin));
  conn.onNotification(PublishDiagnosticsNotification.type, (p) => {
    diagnostics.set(p.uri, [...(diagnostics.get(p.uri) ?? []), p]);
    for (const w of waiters.filter((w) => w.uri === p.uri && w.version === p.version)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(p);
    }
  });
  conn.listen();
  const init = await conn.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    rootUri: pathToFileURL(dir).href,
    capabilities: {},
    workspaceFolders: null,
  });
  assert.equal(init.serverInfo.name, "aguic");
  assert.equal(init.capabilities.textDocumentSync.change, 2, "incremental sync");
  await conn.sendNotification(InitializedNotification.type, {});
  await conn.sendNotification(DidOpenTextDocumentNotification.type, {
    textDocument: { uri: chatURI, languageId: "wf", version: 1, text: chat },
  });
});

after(() => {
  conn?.dispose();
  if (server && server.exitCode === null) server.kill();
  rmSync(work, { recursive: true, force: true });
});

test("a file with errors shows them, the same as aguic check", async () => {
  const p = await published(chatURI, 1);
  const codes = p.diagnostics.map((d) => `${d.range.start.line + 1}:${d.range.start.character + 1} ${d.code} ${d.message}`);
  assert.ok(codes.some((c) => c.startsWith('5:12 WF101 unknown node kind "sya" (did you mean "say"?)')), codes.join("\n"));
  assert.ok(p.diagnostics.every((d) => d.source === "aguic"));
});

test("completion offers the keys of a node body", async () => {
  const list = await conn.sendRequest(CompletionRequest.type, {
    textDocument: { uri: chatURI },
    position: { line: 6, character: 6 },
  });
  const labels = list.items.map((i) => i.label);
  assert.ok(labels.includes("chat_in"), labels.join(", "));
  const byRank = [...list.items].sort((a, b) => a.sortText.localeCompare(b.sortText)).map((i) => i.label);
  assert.equal(byRank.at(-1), "prompt", "a key written already comes last");
  const chatIn = list.items.find((i) => i.label === "chat_in");
  assert.deepEqual(chatIn.textEdit.range, { start: { line: 6, character: 6 }, end: { line: 6, character: 6 } });
});

test("the fixed file has no diagnostics", async () => {
  await conn.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri: chatURI, version: 2 },
    contentChanges: [{ text: fixed }],
  });
  const p = await published(chatURI, 2);
  assert.deepEqual(p.diagnostics, []);
});

test("hover on a node kind shows its reference", async () => {
  // line 5: `    start: say "Hello é😀"`; the cursor on "say".
  const h = await conn.sendRequest(HoverRequest.type, {
    textDocument: { uri: chatURI },
    position: { line: 4, character: 12 },
  });
  assert.match(h.contents.value, /^\*\*say\*\* \(node kind\)/);
  assert.deepEqual(h.range, { start: { line: 4, character: 11 }, end: { line: 4, character: 14 } });
});

test("go to a label", async () => {
  const locs = await conn.sendRequest(DefinitionRequest.type, {
    textDocument: { uri: chatURI },
    position: { line: 10, character: 10 },
  });
  assert.deepEqual(locs, [{ uri: chatURI, range: { start: { line: 4, character: 4 }, end: { line: 4, character: 9 } } }]);
});

test("rename a workflow across files", async () => {
  const prep = await conn.sendRequest(PrepareRenameRequest.type, {
    textDocument: { uri: chatURI },
    position: { line: 9, character: 10 },
  });
  assert.equal(prep.placeholder, "summarize");
  const edit = await conn.sendRequest(RenameRequest.type, {
    textDocument: { uri: chatURI },
    position: { line: 9, character: 10 },
    newName: "digest",
  });
  assert.deepEqual(Object.keys(edit.changes).sort(), [chatURI, otherURI].sort());
  assert.deepEqual(edit.changes[otherURI], [{ range: { start: { line: 2, character: 9 }, end: { line: 2, character: 18 } }, newText: "digest" }]);
  await assert.rejects(
    conn.sendRequest(RenameRequest.type, { textDocument: { uri: chatURI }, position: { line: 9, character: 10 }, newName: "chat" }),
    /workflow "chat" already exists/,
  );
});

test("format a document", async () => {
  await conn.sendNotification(DidOpenTextDocumentNotification.type, {
    textDocument: { uri: otherURI, languageId: "wf", version: 1, text: other },
  });
  const edits = await conn.sendRequest(DocumentFormattingRequest.type, {
    textDocument: { uri: otherURI },
    options: { tabSize: 2, insertSpaces: true },
  });
  assert.equal(edits.length, 1);
  assert.equal(edits[0].newText, other.replace('        output "done"', '    output "done"'));
  const symbols = await conn.sendRequest(DocumentSymbolRequest.type, { textDocument: { uri: otherURI } });
  assert.deepEqual(symbols.map((s) => s.name), ["summarize"]);
});

test("shutdown and exit end the server with status 0", async () => {
  await conn.sendRequest(ShutdownRequest.type);
  await conn.sendNotification(ExitNotification.type);
  assert.equal(await exited, 0);
});
