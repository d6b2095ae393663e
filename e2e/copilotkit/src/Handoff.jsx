import { useState } from "react";
import { CopilotChat, useAgent, useInterrupt } from "@copilotkit/react-core/v2";

// An interrupt: the workflow handoff asks for a person; the form's reply,
// valid against the interrupt's response schema, resumes it.
export function Handoff({ threadId }) {
  useInterrupt({
    agentId: "handoff",
    render: ({ interrupt, resolve, cancel }) => <Reply interrupt={interrupt} resolve={resolve} cancel={cancel} />,
  });
  const { isReady } = useAgent({ agentId: "handoff" });
  return isReady ? <CopilotChat agentId="handoff" threadId={threadId} /> : null;
}

function Reply({ interrupt, resolve, cancel }) {
  const [reply, setReply] = useState("");
  return (
    <form
      aria-label="Handoff"
      onSubmit={(e) => {
        e.preventDefault();
        resolve({ reply });
      }}
    >
      <p>{interrupt?.message}</p>
      <label>
        Reply as a person <input value={reply} onChange={(e) => setReply(e.target.value)} />
      </label>
      <button type="submit" disabled={!reply}>Send reply</button>
      <button type="button" onClick={() => cancel()}>Nobody is free</button>
    </form>
  );
}
