// The app: /feature/<id> is the page of one dojo feature, inside a
// CopilotKit provider whose agent is the workflow of that id; / lists them.
import { createRoot } from "react-dom/client";
import { CopilotKit } from "@copilotkit/react-core";
import "@copilotkit/react-core/v2/styles.css";
import "./styles.css";
import { features } from "./features.js";
import AgenticChat from "./pages/AgenticChat.jsx";
import AgenticChatReasoning from "./pages/AgenticChatReasoning.jsx";
import BackendToolRendering from "./pages/BackendToolRendering.jsx";
import HumanInTheLoop from "./pages/HumanInTheLoop.jsx";
import AgenticGenerativeUI from "./pages/AgenticGenerativeUI.jsx";
import ToolBasedGenerativeUI from "./pages/ToolBasedGenerativeUI.jsx";
import SharedState from "./pages/SharedState.jsx";
import PredictiveStateUpdates from "./pages/PredictiveStateUpdates.jsx";

const pages = {
  agentic_chat: AgenticChat,
  agentic_chat_reasoning: AgenticChatReasoning,
  backend_tool_rendering: BackendToolRendering,
  human_in_the_loop: HumanInTheLoop,
  agentic_generative_ui: AgenticGenerativeUI,
  tool_based_generative_ui: ToolBasedGenerativeUI,
  shared_state: SharedState,
  predictive_state_updates: PredictiveStateUpdates,
};

function App() {
  const id = window.location.pathname.match(/^\/feature\/(\w+)\/?$/)?.[1];
  const Page = pages[id];
  if (!Page) return <Index />;
  // No inspector: it is a developer's tool that loads its fonts and news
  // from the Internet, and the app works offline.
  return (
    <CopilotKit runtimeUrl="/api/copilotkit" showDevConsole={false} enableInspector={false} agent={id}>
      <div className="feature">
        <Page />
      </div>
    </CopilotKit>
  );
}

function Index() {
  return (
    <main className="index">
      <h1>aguic dojo</h1>
      <p>Each page talks to the aguic workflow of the same name.</p>
      <ul>
        {features.map((f) => (
          <li key={f.id}>
            <a href={`/feature/${f.id}`}>{f.title}</a> <code>{f.id}</code>
          </li>
        ))}
      </ul>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<App />);
