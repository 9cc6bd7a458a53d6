// Edited by tests/e2e/tests/e2e/react.rs while the page runs (in a copy of this app): the version
// changes and a `useState` call is added — a new hook, so React's Fast Refresh remounts the
// component (its effects cleaned up, the new one's run).
import { useClientTool } from "client-tools/react";

export default function Farewell() {
  useClientTool({
    name: "say_goodbye",
    description: "Says goodbye to a person by name",
    parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    handler: ({ name }) => `Goodbye, ${name} (v1)`,
  });
  return <p id="farewell">farewell v1</p>;
}
