// Agentic chat with reasoning: the agent's reasoning streams before its
// answer, and the user picks the reasoning model, kept in the shared state
// ({model}). The agent may change the page's background, as in the
// agentic chat.
import { useState } from "react";
import { useAgent, UseAgentUpdate } from "@copilotkit/react-core/v2";
import { useBackground } from "../background.js";
import { CenteredChat } from "../layout.jsx";

const models = ["OpenAI", "Anthropic", "Gemini"];

export default function AgenticChatReasoning() {
  const background = useBackground("agentic_chat_reasoning");
  const { agent } = useAgent({ agentId: "agentic_chat_reasoning", updates: [UseAgentUpdate.OnStateChanged] });
  const model = agent.state?.model || models[0];

  return (
    <div className="page-column" style={{ background }}>
      <div className="model-bar">
        <span>Reasoning Model:</span>
        <ModelMenu value={model} onPick={(m) => agent.setState({ model: m })} />
      </div>
      <CenteredChat agentId="agentic_chat_reasoning" />
    </div>
  );
}

// ModelMenu is a button that shows the model picked and opens the list of
// models.
function ModelMenu({ value, onPick }) {
  const [open, setOpen] = useState(false);
  return (
    <div className="menu">
      <button type="button" className="menu-button" aria-haspopup="menu" aria-expanded={open} onClick={() => setOpen(!open)}>
        {value} ▾
      </button>
      {open && (
        <div role="menu" className="menu-list">
          {models.map((m) => (
            <button
              key={m}
              type="button"
              role="menuitem"
              onClick={() => {
                onPick(m);
                setOpen(false);
              }}
            >
              {m}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}
