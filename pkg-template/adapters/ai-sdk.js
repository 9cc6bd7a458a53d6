// client-tools/ai-sdk: the page's tools as client-side tools of the AI SDK (`useChat` / `Chat`)
// (docs/runtimes/ai-sdk.md in the repository).
import { invoke, isListed, listed, resultText } from "./shared.js";

/**
 * The page's tools as `{name: {description, inputSchema}}` (JSON Schema), sent in the request body
 * for the server route to give `streamText` (each as `tool({description, inputSchema:
 * jsonSchema(inputSchema)})`, without `execute`: the page runs it).
 */
export function aiSdkTools(tools) {
  return Object.fromEntries(
    listed(tools).map((tool) => [
      tool.name,
      { description: tool.description ?? "", inputSchema: tool.inputSchema },
    ]),
  );
}

/**
 * The `onToolCall` of `useChat` / `Chat`: runs a call of a page tool once and hands its outcome to
 * `addToolOutput` (`output`: the structured result, else its text; a failed call:
 * `state: "output-error"` with `errorText`). Calls of other tools are left to the app.
 */
export function aiSdkOnToolCall(tools, addToolOutput) {
  const seen = new Set();
  return ({ toolCall }) => {
    const { toolCallId, toolName } = toolCall;
    if (seen.has(toolCallId) || !isListed(tools, toolName)) return;
    seen.add(toolCallId);
    // Not awaited: the AI SDK asks `onToolCall` not to wait for `addToolOutput`.
    void invoke(tools, toolName, toolCall.input).then((result) =>
      result.isError
        ? addToolOutput({ tool: toolName, toolCallId, state: "output-error", errorText: resultText(result) })
        : addToolOutput({ tool: toolName, toolCallId, output: result.structuredContent ?? resultText(result) }),
    );
  };
}
