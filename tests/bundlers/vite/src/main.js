// A page built by a bundler that uses the package as an app would: the module API from the npm
// tarball, one tool, connected to the bridge named by the page's query (`?bridge=ws://…/ws`).
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
  await tools.connect();
  report("connected");
} catch (error) {
  report("failed", String((error && error.stack) || error));
}
