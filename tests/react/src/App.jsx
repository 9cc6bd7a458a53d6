// The components the test drives: a counter whose tool answers with the count of the latest render
// (buttons change its schema, write its declaration with the keys in the other order, and rename
// it), two the test edits during the run (Greeting.jsx, Farewell.jsx), one whose call the test
// unmounts mid-call, `useClientToolsState`, and a tool of a second root whose provider has its
// client from the first render (`ReadyTool`).
import { useEffect, useState } from "react";
import { useClientTool, useClientToolsState } from "client-tools/react";
import Farewell from "./Farewell.jsx";
import Greeting from "./Greeting.jsx";

const log = (entry) => window.reactApp.log.push(entry);

/** Counts its effect's runs: two under StrictMode's double mount, one without. */
function StrictModeProbe() {
  useEffect(() => {
    window.reactApp.probeMounts = (window.reactApp.probeMounts ?? 0) + 1;
  }, []);
  return null;
}

/** `value` with every object's keys written in the other order (the same JSON value). */
const backwards = (value) =>
  value && typeof value === "object" && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value).reverse().map(([key, v]) => [key, backwards(v)]))
    : value;

function Counter() {
  const [count, setCount] = useState(0);
  const [labelled, setLabelled] = useState(false);
  const [reordered, setReordered] = useState(false);
  const [renamed, setRenamed] = useState(false);
  const declaration = {
    name: renamed ? "read_count" : "read_counter",
    description: "Reads the counter on the page",
    parameters: labelled
      ? { type: "object", properties: { label: { type: "string" } }, required: ["label"] }
      : { type: "object", properties: {} },
    // A new function every render, closing over this render's `count`.
    handler: ({ label }) => (label ? `${label}: ${count}` : `count: ${count}`),
  };
  useClientTool(reordered ? backwards(declaration) : declaration);
  return (
    <section>
      <p>
        count <output id="count">{count}</output>
      </p>
      <button id="increment" onClick={() => setCount((c) => c + 1)}>
        +1
      </button>
      <button id="label" onClick={() => setLabelled(true)}>
        ask for a label
      </button>
      <button id="reorder" onClick={() => setReordered(true)}>
        the same declaration, its keys in the other order
      </button>
      <output id="reordered">{reordered ? "yes" : "no"}</output>
      <button id="rename" onClick={() => setRenamed(true)}>
        rename the tool
      </button>
    </section>
  );
}

/** The tool of the second root (main.jsx), whose provider has a client from its first render:
 * StrictMode's double mount runs with it. */
export function ReadyTool() {
  useEffect(() => {
    window.reactApp.readyMounts = (window.reactApp.readyMounts ?? 0) + 1;
  }, []);
  useClientTool({
    name: "ready_tool",
    description: "A tool defined from the first render",
    parameters: { type: "object", properties: {} },
    handler: () => "ready",
  });
  return <p id="ready">ready tool mounted</p>;
}

function SlowTask() {
  useClientTool({
    name: "slow_task",
    description: "Works until its component is unmounted",
    parameters: { type: "object", properties: {} },
    handler: async (_input, ctx) => {
      const reason = await new Promise((resolve) => {
        ctx.signal.addEventListener("abort", () => resolve(ctx.signal.reason), { once: true });
      });
      log(`slow_task signal aborted: ${reason?.message ?? reason}`);
      return "the handler's own late answer";
    },
  });
  return <p id="slow">slow task mounted</p>;
}

function State() {
  const { connectionState, runningCalls } = useClientToolsState();
  return (
    <section>
      <p>
        connection <output id="connection">{connectionState}</output>
      </p>
      <p>
        running <output id="running">{runningCalls.map((call) => call.toolName).join(",")}</output>
      </p>
    </section>
  );
}

export default function App() {
  const [slow, setSlow] = useState(true);
  return (
    <main>
      <StrictModeProbe />
      <State />
      <Counter />
      <Greeting />
      <Farewell />
      {slow && <SlowTask />}
      <button id="unmount-slow" onClick={() => setSlow(false)}>
        unmount the slow task
      </button>
    </main>
  );
}
