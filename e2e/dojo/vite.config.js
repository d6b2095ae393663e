import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The app is built into dist/ (or the directory --outDir names) and served
// by server.mjs, beside the Copilot Runtime.
export default defineConfig({
  plugins: [react()],
  build: { chunkSizeWarningLimit: 8192 },
});
