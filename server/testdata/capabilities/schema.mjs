// schema.mjs writes schema.json: the JSON Schema of AgentCapabilities, the
// agent capabilities of @ag-ui/core 1.0.0 (AgentCapabilitiesSchema,
// converted by zod's toJSONSchema), made strict: every object of it
// refuses the keys it does not name, so a misspelt capability fails
// (the official schemas are loose objects, and the client drops unknown
// keys silently). TestCapabilitiesSchema validates the capabilities of
// every test workflow against it.
//
// Run it where @ag-ui/core@1.0.0 is installed (e2e/ after npm ci):
//
//   cd e2e && node ../server/testdata/capabilities/schema.mjs
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(path.join(process.cwd(), "noop.js"));
const { AgentCapabilitiesSchema } = require("@ag-ui/core/schemas");
const { z } = require("zod/v4");

const schema = z.toJSONSchema(AgentCapabilitiesSchema, { unrepresentable: "any", io: "input" });

// strict closes every object that names its properties.
function strict(s) {
  if (s === null || typeof s !== "object") return;
  if (s.type === "object" && s.properties) s.additionalProperties = false;
  for (const v of Object.values(s.properties ?? {})) strict(v);
  if (s.items) strict(s.items);
}
strict(schema);
// custom is open by design: any object.
schema.properties.custom = { type: "object" };
schema.title = "AgentCapabilities of @ag-ui/core 1.0.0, strict";

const out = path.join(path.dirname(fileURLToPath(import.meta.url)), "schema.json");
writeFileSync(out, JSON.stringify(schema, null, 2) + "\n");
console.log(`wrote ${out}`);
