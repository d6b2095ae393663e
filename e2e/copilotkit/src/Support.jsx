import { CopilotChat, useAgent } from "@copilotkit/react-core/v2";

// A conversation that aguic keeps: the workflow support_chat. The chat is
// shown once the runtime has described the agent (isReady); before that,
// CopilotChat would connect the thread with a stand-in agent and cancel
// that request when the real agent comes.
export function Support({ threadId }) {
  const { isReady } = useAgent({ agentId: "support" });
  return isReady ? <CopilotChat agentId="support" threadId={threadId} /> : null;
}
