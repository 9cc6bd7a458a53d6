// The script embed's globals as a page's own script uses them (checked with usage.ts).
import type { ClientToolsCommand } from "client-tools/embed";

window.ClientTools = window.ClientTools || [];
const queued: ClientToolsCommand[] = [
  ["defineFunction", { name: "Read Cart", description: "…", handler: () => ({ items: [] }) }],
  (tools, ClientTools) => {
    tools?.on("toolresult", (event) => console.log(event.durationMs));
    console.log(ClientTools.tools === tools);
  },
];
window.ClientTools.push(...queued);
// @ts-expect-error: a command is a function or an array starting with a method name
window.ClientTools.push(42);

window.addEventListener("clienttools:ready", (event) => {
  const instance = event.detail.tools;
  console.log(instance?.connectionState, event.detail.ClientTools.tools);
});
window.clientToolsReady?.then((ClientTools) => new ClientTools({ endpoint: "ws://127.0.0.1:8787/ws" }));
