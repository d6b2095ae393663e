import { CopilotChat, useAgent } from "@copilotkit/react-core/v2";

// A conversation that aguic keeps: the workflow support_chat.
export function Support({ threadId }) {
  const { isReady } = useAgent({ agentId: "support" });
  return isReady ? <CopilotChat agentId="support" threadId={threadId} /> : null;
}
