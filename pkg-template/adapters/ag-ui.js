// client-tools/ag-ui: the page's tools as AG-UI frontend tools (docs/runtimes/ag-ui.md in the repository).
import { invoke, isListed, isUntrusted, listed, resultText, UNTRUSTED } from "./shared.js";

/** The page's tools as AG-UI `Tool[]`, for `RunAgentInput.tools` (`agent.runAgent({tools})`). */
export function agUiTools(tools) {
  return listed(tools).map((tool) => ({
    name: tool.name,
    description: tool.description ?? "",
    parameters: tool.inputSchema,
  }));
}

/**
 * An `AgentSubscriber` (`agent.subscribe(…)`) that runs the page's tool calls of a run once each
 * (`TOOL_CALL_END`), adds their `{role: "tool"}` messages when the run is over (`error` set on a
 * failed one; `metadata: {"clienttools/untrusted": true}` on the result of a tool declared with
 * `untrustedContentHint`) and runs the agent again with the current tools.
 */
export function agUiSubscriber(tools, agent) {
  const seen = new Set();
  let calls = [];
  let failed = false;
  return {
    onRunInitialized() {
      failed = false;
    },
    onToolCallEndEvent({ event, toolCallName, toolCallArgs }) {
      const toolCallId = event.toolCallId;
      if (seen.has(toolCallId) || !isListed(tools, toolCallName)) return;
      seen.add(toolCallId);
      calls.push(invoke(tools, toolCallName, toolCallArgs).then((result) => ({ toolCallId, result })));
    },
    onRunFailed() {
      failed = true;
    },
    onRunFinalized() {
      if (calls.length === 0) return;
      const answered = Promise.all(calls);
      const runAgain = !failed;
      calls = [];
      answered
        .then((answers) => {
          for (const { toolCallId, result } of answers) {
            const content = resultText(result);
            agent.addMessage({
              id: crypto.randomUUID(),
              role: "tool",
              toolCallId,
              content,
              ...(result.isError ? { error: content } : {}),
              ...(isUntrusted(result) ? { metadata: UNTRUSTED } : {}),
            });
          }
          if (runAgain) return agent.runAgent({ tools: agUiTools(tools) });
        })
        .catch((error) => console.error("client-tools/ag-ui: the follow-up run failed", error));
    },
  };
}
