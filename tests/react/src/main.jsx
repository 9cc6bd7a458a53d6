// The app as a React user writes it: `<StrictMode>` on, `<ClientToolsProvider>` at the root,
// rendered at once with no client and again with one once the module is loaded (the hooks wait
// for it); a second root's provider has its own client from its first render, and a third root
// (without <StrictMode>) shares that client. What the test reads goes to `window.reactApp.log`:
// every `defineFunction`, `unregister` and `warning` of the clients, the first one's events, and
// anything React logs as an error. Connects to the bridge named by the page's query
// (`?bridge=ws://…/ws`).
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import init, { ClientTools } from "client-tools";
import { ClientToolsProvider } from "client-tools/react";
import App, { ReadyTool } from "./App.jsx";
import Plain from "./Plain.jsx";

const log = [];
// `boot` changes with every full load of the page: a Fast Refresh keeps it.
window.reactApp = { log, boot: crypto.randomUUID(), failed: null };
const consoleError = console.error;
console.error = (...args) => {
  log.push(`console.error ${args.map(String).join(" ")}`);
  consoleError(...args);
};

const root = createRoot(document.getElementById("root"));
const render = (tools) =>
  root.render(
    <StrictMode>
      <ClientToolsProvider client={tools}>
        <App />
      </ClientToolsProvider>
    </StrictMode>,
  );

/** Notes each `defineFunction`, `unregister` and `warning` of `tools` in the log. */
function recorded(tools, prefix) {
  for (const method of ["defineFunction", "unregister"]) {
    const original = tools[method].bind(tools);
    tools[method] = (what) => {
      log.push(`${prefix}${method} ${typeof what === "string" ? what : what.name}`);
      return original(what);
    };
  }
  tools.on("warning", (event) => log.push(`${prefix}warning ${event.code} ${event.toolName ?? ""}: ${event.message}`));
}

try {
  render(null);
  await init();
  const endpoint = new URLSearchParams(location.search).get("bridge") ?? undefined;
  const tools = new ClientTools({ endpoint });
  recorded(tools, "");
  for (const type of ["toolschanged", "toolactivated", "toolcancel"]) {
    tools.on(type, (event) => log.push(event.toolName ? `${type} ${event.toolName}` : type));
  }
  tools.on("toolresult", (event) => log.push(`toolresult ${event.toolName}${event.isError ? " error" : ""}`));
  render(tools);
  // A second root, its provider given a client that exists before its first render (its log
  // entries start with "ready "), and a third one with that client, without <StrictMode>.
  const ready = new ClientTools({ forms: false, exposeToBrowser: false });
  window.reactApp.ready = ready;
  recorded(ready, "ready ");
  createRoot(document.getElementById("ready-root")).render(
    <StrictMode>
      <ClientToolsProvider client={ready}>
        <ReadyTool />
      </ClientToolsProvider>
    </StrictMode>,
  );
  createRoot(document.getElementById("plain-root")).render(
    <ClientToolsProvider client={ready}>
      <Plain />
    </ClientToolsProvider>,
  );
  if (endpoint) await tools.connect();
} catch (error) {
  window.reactApp.failed = String(error?.stack ?? error);
}
