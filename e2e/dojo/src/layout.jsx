// The two ways a page shows its chat: in the middle of the page, or in a
// sidebar beside what the page draws.
import { CopilotChat, CopilotSidebar } from "@copilotkit/react-core/v2";

// CenteredChat is the chat in the middle of the page; props go to
// CopilotChat.
export function CenteredChat({ agentId, ...props }) {
  return (
    <div className="chat-frame">
      <CopilotChat agentId={agentId} className="chat" {...props} />
    </div>
  );
}

// Sidebar is the chat beside the page, open unless the address says
// ?chatDefaultOpen=false.
export function Sidebar({ agentId, title }) {
  const open = new URLSearchParams(window.location.search).get("chatDefaultOpen") !== "false";
  return <CopilotSidebar agentId={agentId} defaultOpen={open} labels={{ modalHeaderTitle: title }} />;
}

// parseResult is a tool call's result as an object: CopilotKit hands it
// over as the JSON text of the TOOL_CALL_RESULT's content.
export function parseResult(result) {
  if (typeof result !== "string") return result ?? {};
  try {
    return JSON.parse(result) ?? {};
  } catch {
    return {};
  }
}
