import { createRoot } from "react-dom/client";
import { CopilotKitProvider } from "@copilotkit/react-core/v2";
import "@copilotkit/react-core/v2/styles.css";
import { App } from "./App.jsx";

// useSingleEndpoint matches the runtime's endpoint mode: false for the
// routes of server.mjs (multi-route), true for a single-route runtime.
createRoot(document.getElementById("root")).render(
  <CopilotKitProvider runtimeUrl="/api/copilotkit" useSingleEndpoint={false}>
    <App />
  </CopilotKitProvider>,
);
