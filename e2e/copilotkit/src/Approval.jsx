import { CopilotChat, useAgent, useHumanInTheLoop } from "@copilotkit/react-core/v2";
import { z } from "zod";

// A frontend tool: the workflow refund_approval calls confirm_refund and
// waits; the card's answer resumes it.
export function Approval({ threadId }) {
  useHumanInTheLoop({
    agentId: "approval",
    name: "confirm_refund",
    description: "Asks the user to confirm a refund.",
    parameters: z.object({ request: z.string() }),
    render: ({ args, respond, result }) => (
      <section aria-label="Refund">
        <p>Refund requested: {args.request}</p>
        {respond && (
          <>
            <button onClick={() => respond({ approved: true })}>Approve</button>
            <button onClick={() => respond({ approved: false })}>Reject</button>
          </>
        )}
        {result && <p>{JSON.parse(result).approved ? "Approved" : "Rejected"}</p>}
      </section>
    ),
  });
  const { isReady } = useAgent({ agentId: "approval" });
  return isReady ? <CopilotChat agentId="approval" threadId={threadId} /> : null;
}
