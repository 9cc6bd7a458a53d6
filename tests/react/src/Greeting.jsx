// Edited by tests/e2e/tests/e2e/react.rs while the page runs (in a copy of this app): the version
// changes, and React's Fast Refresh renders the component again in place (its state kept).
import { useClientTool } from "client-tools/react";

export default function Greeting() {
  useClientTool({
    name: "greet",
    description: "Greets a person by name",
    parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    handler: ({ name }) => `Hello, ${name} (v1)`,
  });
  return <p id="greeting">greeting v1</p>;
}
