// client-tools/react as a React app writes it, type-checked with `tsc --strict` against the
// package's `adapters/react.d.ts` and `@types/react` (cargo xtask test).
import { useState } from "react";
import { ClientTools } from "client-tools";
import {
  ClientToolsProvider,
  useClientTool,
  useClientTools,
  useClientToolsState,
  type ClientToolsState,
  type RunningCall,
} from "client-tools/react";

function Counter() {
  const [count, setCount] = useState(0);
  useClientTool({
    name: "read_counter",
    description: "Reads the counter",
    parameters: { type: "object", properties: {} },
    handler: (_input, ctx) => (ctx.signal.aborted ? "stopped" : { count }),
  });
  const client: ClientTools | null = useClientTools();
  const state: ClientToolsState = useClientToolsState();
  const running: readonly RunningCall[] = state.runningCalls;
  // @ts-expect-error a declaration needs its handler
  useClientTool({ name: "no_handler" });
  // @ts-expect-error the client may not be there yet
  useClientTools().connectionState;
  return (
    <button onClick={() => setCount(count + 1)} title={`${state.connectionState} ${running.length}`}>
      {client?.sessionId ?? "no session"}
    </button>
  );
}

export function App({ tools }: { tools: ClientTools | null }) {
  return (
    <ClientToolsProvider client={tools}>
      <Counter />
    </ClientToolsProvider>
  );
}

// @ts-expect-error the provider needs its client
export const missing = <ClientToolsProvider>{null}</ClientToolsProvider>;
