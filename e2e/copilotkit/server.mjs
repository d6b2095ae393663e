// The Copilot Runtime of the example app: the aguic workflows as CopilotKit
// agents. AGUIC_URL is where `aguic serve` listens, PORT this server's port.
import { createServer } from "node:http";
import { CopilotRuntime } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";
import { AguicRunner, WorkflowAgent } from "./aguic.mjs";

const aguic = process.env.AGUIC_URL ?? "http://127.0.0.1:8080";
const port = Number(process.env.PORT ?? 4000);

// The agents, by id, and the workflow each one runs.
const workflows = {
  support: "support_chat",
  todos: "todos",
  approval: "refund_approval",
  handoff: "handoff",
};

const runtime = new CopilotRuntime({
  agents: Object.fromEntries(Object.entries(workflows).map(([id, workflow]) => [id, new WorkflowAgent(aguic, workflow)])),
  runner: new AguicRunner(aguic, workflows),
});

createServer(createCopilotNodeListener({ runtime, basePath: "/api/copilotkit" })).listen(port, "127.0.0.1", () => {
  console.log(`Copilot Runtime at http://127.0.0.1:${port}/api/copilotkit, aguic at ${aguic}`);
});
