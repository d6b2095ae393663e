// The dojo's features that aguic has a workflow for. Each is a page of the
// app, at /feature/<id>, and an agent of its Copilot Runtime: the workflow
// of the same id, at aguic's /agui/workflows/<id>.
export const features = [
  { id: "agentic_chat", title: "Agentic Chat" },
  { id: "agentic_chat_reasoning", title: "Agentic Chat with Reasoning" },
  { id: "backend_tool_rendering", title: "Backend Tool Rendering" },
  { id: "human_in_the_loop", title: "Human in the Loop" },
  { id: "agentic_generative_ui", title: "Agentic Generative UI" },
  { id: "tool_based_generative_ui", title: "Tool-Based Generative UI" },
  { id: "shared_state", title: "Shared State" },
  { id: "predictive_state_updates", title: "Predictive State Updates" },
];
