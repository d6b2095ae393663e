// Agentic chat with reasoning: the agent's reasoning streams before its
// answer, and the user picks the reasoning model, kept in the shared state
// ({model}). The agent may change the page's background, as in the
// agentic chat.
import { useState } from "react";
import { useAgent, UseAgentUpdate, useConfigureSuggestions, useFrontendTool } from "@copilotkit/react-core/v2";
import { z } from "zod";
import { CenteredChat } from "../layout.jsx";

const models = ["OpenAI", "Anthropic", "Gemini"];

export default function AgenticChatReasoning() {
  const [background, setBackground] = useState();
  const { agent } = useAgent({ agentId: "agentic_chat_reasoning", updates: [UseAgentUpdate.OnStateChanged] });
  const model = agent.state?.model || models[0];

  useConfigureSuggestions({
    suggestions: [
      { title: "Change background", message: "Change the background to something new." },
      { title: "Generate sonnet", message: "Write a short sonnet about AI." },
    ],
    available: "always",
  });

  useFrontendTool({
    agentId: "agentic_chat_reasoning",
    name: "change_background",
    description: "Sets the chat's background to any CSS background value: a color, or a linear or radial gradient.",
    parameters: z.object({ background: z.string().describe("The CSS background; gradients look best.") }),
    handler: async ({ background }) => {
      setBackground(background);
    },
  });

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
