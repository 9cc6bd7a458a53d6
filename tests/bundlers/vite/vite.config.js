import { defineConfig } from "vite";

export default defineConfig({
  // The one setting client-tools needs with Vite, for its dev server: the dev server pre-bundles
  // dependencies into node_modules/.vite/deps/ without the files they load by URL, so the package's
  // `new URL("client_tools_bg.wasm", import.meta.url)` would fetch a .wasm that is not there
  // (vitejs/vite#8427). Excluded, the package is served as published. `vite build` needs nothing.
  optimizeDeps: { exclude: ["client-tools"] },
});
