// The Copilot Runtime of the example app: it serves the aguic example
// workflows to CopilotKit as AG-UI agents. AGUIC_URL is where `aguic serve`
// listens; PORT is this server's port.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { HttpAgent } from "@ag-ui/client";
import { CopilotRuntime, InMemoryAgentRunner } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";
import { Observable } from "rxjs";

const aguic = process.env.AGUIC_URL ?? "http://127.0.0.1:8080";

// The agents, by id, and the workflow each one runs.
const workflows = {
  support: "support_chat",
  todos: "todos",
  approval: "refund_approval",
  handoff: "handoff",
};

// Workflow is the agent of one workflow. CopilotKit 1.74 resumes an
// interrupt with the run id of the run it interrupted, and aguic refuses a
// run id its thread has used: a resume gets a run id of its own.
class Workflow extends HttpAgent {
  requestInit(input) {
    return super.requestInit(input.resume?.length ? { ...input, runId: randomUUID() } : input);
  }
}

// Runner keeps the threads it runs in memory, as CopilotKit's runner does,
// and restores one it does not know (after a restart, or on another
// replica) from aguic, which keeps every conversation.
class Runner extends InMemoryAgentRunner {
  connect(request) {
    if (this.getThreadEvents(request.threadId).length > 0) return super.connect(request);
    return new Observable((subscriber) => {
      this.isRunning(request)
        .then((running) => (running ? super.connect(request).subscribe(subscriber) : restore(request, subscriber)))
        .catch((err) => subscriber.error(err));
    });
  }
}

// restore sends the subscriber aguic's history of the thread: its
// messages, its state, and what it waits for.
async function restore({ threadId, agentId }, subscriber) {
  const res = await fetch(`${aguic}/agui/history`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ threadId, workflowId: workflows[agentId] }),
  });
  if (res.status !== 404) {
    if (!res.ok) throw new Error(`aguic answered the history of thread ${threadId} with ${res.status}: ${await res.text()}`);
    for (const frame of (await res.text()).split("\n\n")) {
      const data = frame.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6));
      if (data.length > 0) subscriber.next(JSON.parse(data.join("\n")));
    }
  }
  subscriber.complete();
}

const runtime = new CopilotRuntime({
  agents: Object.fromEntries(
    Object.entries(workflows).map(([id, workflow]) => [id, new Workflow({ url: `${aguic}/agui/workflows/${workflow}` })]),
  ),
  runner: new Runner(),
});

const listener = createCopilotNodeListener({ runtime, basePath: "/api/copilotkit" });
const port = Number(process.env.PORT ?? 4000);
createServer(listener).listen(port, "127.0.0.1", () => {
  console.log(`Copilot Runtime on http://127.0.0.1:${port}/api/copilotkit, aguic at ${aguic}`);
});
