import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The app calls the Copilot Runtime at /api/copilotkit; the dev server and
// `vite preview` pass those requests on to RUNTIME_URL.
const runtime = process.env.RUNTIME_URL ?? "http://127.0.0.1:4000";

export default defineConfig({
  plugins: [react()],
  server: { proxy: { "/api/copilotkit": runtime } },
  preview: { proxy: { "/api/copilotkit": runtime } },
});
