// Starts an aimock server for the Go tests of package aimock.
//
//   node start.mjs <aimock entry file> [fixture file…]
//
// It imports aimock from the file given (the package lives in
// e2e/node_modules, which no resolution from here finds), loads each fixture
// file (a JSON array of fixtures or {"fixtures": […]}), starts on
// 127.0.0.1 with a free port, prints the server's URL as one line on stdout
// and runs until its stdin closes. Errors go to stderr with exit status 1.

import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [entry, ...files] = process.argv.slice(2);

function fail(message) {
  process.stderr.write(`aimock: ${message}\n`);
  process.exit(1);
}

if (!entry) fail("usage: node start.mjs <aimock entry file> [fixture file…]");

let LLMock;
try {
  ({ LLMock } = await import(pathToFileURL(entry).href));
} catch (err) {
  fail(`import ${entry}: ${err.message}`);
}

const mock = new LLMock({ host: "127.0.0.1", port: 0, logLevel: "warn", journalMaxEntries: 0 });
for (const file of files) {
  try {
    const data = JSON.parse(readFileSync(file, "utf8"));
    mock.addFixturesFromJSON(Array.isArray(data) ? data : data.fixtures ?? []);
  } catch (err) {
    fail(`fixture file ${file}: ${err.message}`);
  }
}

const url = await mock.start();
process.stdout.write(url + "\n");

// The process ends with its stdin: the Go test closed it, or died. Open
// connections end with it; there is nothing to flush.
process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
