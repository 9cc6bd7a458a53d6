// Edited by tests/e2e/tests/e2e/react.rs while the page runs (in a copy of this app): the version
// changes, and React's Fast Refresh renders the component again in place. Its root has no
// <StrictMode> (main.jsx): there Fast Refresh runs the effects of a component it renders in place
// again, whatever their dependencies. Its effect notes each setup and cleanup.
import { useEffect } from "react";
import { useClientTool } from "client-tools/react";

export default function Plain() {
  useEffect(() => {
    window.reactApp.log.push("plain effect set up");
    return () => window.reactApp.log.push("plain effect cleaned up");
  }, []);
  useClientTool({
    name: "plain_tool",
    description: "Says which version of its component answers",
    parameters: { type: "object", properties: {} },
    handler: () => "plain v1",
  });
  return <p id="plain">plain v1</p>;
}
