import { createRoot } from "react-dom/client";
import { CopilotKitProvider } from "@copilotkit/react-core/v2";
import "@copilotkit/react-core/v2/styles.css";
import { App } from "./App.jsx";

createRoot(document.getElementById("root")).render(
  <CopilotKitProvider runtimeUrl="/api/copilotkit" useSingleEndpoint={false}>
    <App />
  </CopilotKitProvider>,
);
