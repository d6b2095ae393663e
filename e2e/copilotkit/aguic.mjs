// What the Copilot Runtime of server.mjs needs to serve aguic workflows to
// CopilotKit 1.74: an agent per workflow that resumes interrupts with a new
// run id, and a runner that restores from aguic the threads it does not
// know.
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";
import { InMemoryAgentRunner } from "@copilotkit/runtime/v2";
import { Observable } from "rxjs";

// WorkflowAgent is the AG-UI agent of one workflow of `aguic serve`.
// CopilotKit's useInterrupt resumes with the run id of the run it
// interrupted, which aguic refuses (409: a new turn needs a new runId):
// a request with resume entries gets a run id of its own.
export class WorkflowAgent extends HttpAgent {
  constructor(aguic, workflow) {
    super({ url: `${aguic}/agui/workflows/${workflow}` });
  }

  requestInit(input) {
    return super.requestInit(input.resume?.length ? { ...input, runId: randomUUID() } : input);
  }
}

// AguicRunner keeps the threads it runs in memory, as CopilotKit's
// InMemoryAgentRunner does, and restores a thread it does not know (after
// a restart, or on another replica) from aguic's history of it.
// workflows maps each agent id to its workflow's id.
export class AguicRunner extends InMemoryAgentRunner {
  constructor(aguic, workflows) {
    super();
    this.aguic = aguic;
    this.workflows = workflows;
  }

  connect(request) {
    if (this.getThreadEvents(request.threadId).length > 0) return super.connect(request);
    return new Observable((subscriber) => {
      this.isRunning(request)
        .then((running) => (running ? super.connect(request).subscribe(subscriber) : this.restore(request, subscriber)))
        .catch((err) => subscriber.error(err));
    });
  }

  // restore sends the subscriber the events of aguic's history of the
  // thread (its messages, its state, and what it waits for), or none when
  // aguic has no such conversation. They come in the shapes of the AG-UI
  // client CopilotKit bundles, 0.0.59, as the runs of the thread do.
  async restore({ threadId, agentId }, subscriber) {
    const res = await fetch(`${this.aguic}/agui/history`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ threadId, workflowId: this.workflows[agentId], protocolVersion: "0.0.59" }),
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
}
