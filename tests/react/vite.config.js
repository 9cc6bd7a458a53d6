import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// React's Fast Refresh (the plugin), nothing for client-tools (Vite 8: tests/bundlers/README.md).
export default defineConfig({ plugins: [react()] });
