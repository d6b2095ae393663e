// validate.mjs checks the golden events of this directory against the
// official AG-UI 1.0 packages: every non-empty line of every *.json file
// (or of the files named on the command line) must be one event that
//
//   1. EventSchemas of @ag-ui/core/schemas (1.0.0) accepts, and
//   2. @ag-ui/client's enforceEvents passes without a warning: the client
//      strips, with a console warning, every key its schemas do not know,
//      which the schemas alone (loose objects) let through.
//
// The packages are looked up from this file (node_modules above it), then
// from the working directory and NODE_PATH, so a scratch install works:
//
//   (mkdir -p /tmp/agui-ref && cd /tmp/agui-ref && npm init -y &&
//    npm install @ag-ui/core@1.0.0 @ag-ui/client@1.0.0)
//   cd /tmp/agui-ref && node /path/to/server/agui/testdata/events/validate.mjs
//
// Without @ag-ui/client only the first check runs (it says so). Exit
// status 1 when any event fails, 2 when @ag-ui/core cannot be found.

import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

// load imports a package from here, else requires it from the working
// directory (which also searches NODE_PATH); null when neither finds it.
async function load(spec) {
  try {
    return await import(spec);
  } catch (err) {
    if (err?.code !== "ERR_MODULE_NOT_FOUND") throw err;
  }
  try {
    return createRequire(path.join(process.cwd(), "noop.js"))(spec);
  } catch (err) {
    if (err?.code !== "MODULE_NOT_FOUND") throw err;
  }
  return null;
}

const schemas = await load("@ag-ui/core/schemas");
if (!schemas?.EventSchemas) {
  console.error("validate.mjs: cannot find @ag-ui/core/schemas; install @ag-ui/core@1.0.0 and run from that directory");
  process.exit(2);
}
const { EventSchemas } = schemas;
const client = await load("@ag-ui/client");
const rxjs = client ? await load("rxjs") : null;
const strict = Boolean(client?.enforceEvents && rxjs?.of);
if (!strict) {
  console.log("validate.mjs: @ag-ui/client or rxjs not found: unknown keys are not checked");
}

// enforce runs one event through the client's enforceEvents and returns
// the warnings it printed and the error it raised.
function enforce(event) {
  const warnings = [];
  const warn = console.warn;
  console.warn = (...args) => warnings.push(args.join(" "));
  let error;
  try {
    client.enforceEvents()(rxjs.of(event)).subscribe({ error: (e) => (error = e) });
  } finally {
    console.warn = warn;
  }
  return { warnings, error };
}

const files = process.argv.length > 2
  ? process.argv.slice(2)
  : readdirSync(here).filter((f) => f.endsWith(".json")).sort().map((f) => path.join(here, f));

let events = 0;
let failures = 0;
const types = new Set();
for (const file of files) {
  const lines = readFileSync(file, "utf8").split("\n");
  lines.forEach((line, i) => {
    if (line.trim() === "") return;
    const where = `${path.basename(file)}:${i + 1}`;
    const fail = (msg) => {
      failures++;
      console.log(`FAIL ${where}: ${msg}`);
    };
    if (line.includes("\r")) return fail("CR in the line");
    let event;
    try {
      event = JSON.parse(line);
    } catch (err) {
      return fail(`not JSON: ${err.message}`);
    }
    events++;
    const result = EventSchemas.safeParse(event);
    if (!result.success) {
      return fail(JSON.stringify(result.error.issues));
    }
    types.add(event.type);
    if (strict) {
      const { warnings, error } = enforce(event);
      if (error) return fail(`enforceEvents: ${error.message ?? error}`);
      if (warnings.length > 0) return fail(`enforceEvents warned: ${warnings.join(" | ")}`);
    }
  });
}

console.log(`${failures === 0 ? "ok" : "FAILED"}: ${events} events in ${files.length} files, ${types.size} event types, ${failures} failures (${strict ? "schemas and client" : "schemas only"})`);
process.exit(failures === 0 ? 0 : 1);
