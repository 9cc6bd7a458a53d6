import { defineConfig } from "vite";

// Nothing for client-tools: from Vite 8 on, the dev server's pre-bundling rewrites the package's
// `new URL("client_tools_bg.wasm", import.meta.url)` to point at the file in node_modules (Vite 7
// and older need `optimizeDeps: { exclude: ["client-tools"] }`: tests/bundlers/vite/).
export default defineConfig({});
