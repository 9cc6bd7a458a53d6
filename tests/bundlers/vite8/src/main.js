// A page built by a bundler that uses the package as an app would: the module API from the npm
// tarball, two tools (one asks the person first), connected to the bridge named by the page's
// query (`?bridge=ws://…/ws`).
// The outcome goes to `window.bundlerApp` (and the page) for the test to read.
import init, { ClientTools } from "client-tools";

const report = (state, detail) => {
  window.bundlerApp = { state, detail };
  document.getElementById("status").textContent = detail ? `${state}: ${detail}` : state;
};

try {
  const endpoint = new URLSearchParams(location.search).get("bridge");
  if (!endpoint) throw new Error("no ?bridge=ws://…/ws in the page's address");
  await init();
  const tools = new ClientTools({ endpoint });
  tools.defineFunction({
    name: "Greet",
    description: "Greets a person by name",
    parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    handler: ({ name }) => "Hello, " + name,
  });
  // A call the person approves: the dialog (a module of the package loaded on first use) must come
  // from the bundle too.
  tools.defineFunction({
    name: "Greet Loudly",
    description: "Greets a person by name, once approved",
    parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    requireConfirmation: true,
    handler: ({ name }) => "HELLO, " + name,
  });
  await tools.connect();
  report("connected");
} catch (error) {
  report("failed", String((error && error.stack) || error));
}
