// Edited by tests/e2e/tests/e2e/react.rs while the page runs (in a copy of this app): the version
// changes, and React's Fast Refresh renders the component again in place (its state kept). Its
// effect notes each setup and cleanup: what Fast Refresh does to the effects of a component it
// renders in place.
import { useEffect } from "react";
import { useClientTool } from "client-tools/react";

export default function Greeting() {
  useEffect(() => {
    window.reactApp.log.push("greeting effect set up");
    return () => window.reactApp.log.push("greeting effect cleaned up");
  }, []);
  useClientTool({
    name: "greet",
    description: "Greets a person by name",
    parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    handler: ({ name }) => `Hello, ${name} (v1)`,
  });
  return <p id="greeting">greeting v1</p>;
}
