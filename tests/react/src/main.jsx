// The app as a React user writes it: `<StrictMode>` on, `<ClientToolsProvider>` at the root,
// rendered at once with no client and again with one once the module is loaded (the hooks wait
// for it). What the test reads goes to `window.reactApp.log`: every `defineFunction` and
// `unregister` of the client, its events, and anything React logs as an error. Connects to the
// bridge named by the page's query (`?bridge=ws://…/ws`).
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import init, { ClientTools } from "client-tools";
import { ClientToolsProvider } from "client-tools/react";
import App from "./App.jsx";

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

try {
  render(null);
  await init();
  const endpoint = new URLSearchParams(location.search).get("bridge") ?? undefined;
  const tools = new ClientTools({ endpoint });
  for (const method of ["defineFunction", "unregister"]) {
    const original = tools[method].bind(tools);
    tools[method] = (what) => {
      log.push(`${method} ${typeof what === "string" ? what : what.name}`);
      return original(what);
    };
  }
  for (const type of ["toolschanged", "toolactivated", "toolcancel"]) {
    tools.on(type, (event) => log.push(event.toolName ? `${type} ${event.toolName}` : type));
  }
  tools.on("toolresult", (event) => log.push(`toolresult ${event.toolName}${event.isError ? " error" : ""}`));
  tools.on("warning", (event) => log.push(`warning ${event.code} ${event.toolName ?? ""}: ${event.message}`));
  render(tools);
  if (endpoint) await tools.connect();
} catch (error) {
  window.reactApp.failed = String(error?.stack ?? error);
}
