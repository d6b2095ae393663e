// The Copilot Runtime of the example app: it serves the aguic example
// workflows to CopilotKit as AG-UI agents. AGUIC_URL is where `aguic serve`
// listens; PORT is this server's port.
import { createServer } from "node:http";
import { HttpAgent } from "@ag-ui/client";
import { CopilotRuntime } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";

const aguic = process.env.AGUIC_URL ?? "http://127.0.0.1:8080";
const workflow = (id) => new HttpAgent({ url: `${aguic}/agui/workflows/${id}` });

const runtime = new CopilotRuntime({
  agents: {
    support: workflow("support_chat"),
    todos: workflow("todos"),
    approval: workflow("refund_approval"),
    handoff: workflow("handoff"),
  },
});

const listener = createCopilotNodeListener({ runtime, basePath: "/api/copilotkit" });
const port = Number(process.env.PORT ?? 4000);
createServer(listener).listen(port, "127.0.0.1", () => {
  console.log(`Copilot Runtime on http://127.0.0.1:${port}/api/copilotkit, aguic at ${aguic}`);
});
