// client-tools/openai-realtime: the page's tools for the OpenAI Realtime API, over WebSocket or a
// WebRTC data channel (docs/runtimes/openai-realtime.md in the repository).
import { failed, invoke, isListed, listed, resultText } from "./shared.js";

/** The page's tools as Realtime function tools, for `session.update`'s `session.tools`. */
export function realtimeTools(tools) {
  return listed(tools).map((tool) => ({
    type: "function",
    name: tool.name,
    description: tool.description ?? "",
    parameters: tool.inputSchema,
  }));
}

/**
 * A handler for the session's server events: each `response.function_call_arguments.done` for a
 * page tool runs once, then `send` gets `conversation.item.create` (a `function_call_output`; a
 * failed call's output is `{"error": "…"}`) and `response.create`. When the page's tools change,
 * `send` gets a `session.update` with the new list. `handler.stop()` ends that.
 */
export function realtimeHandler(tools, send) {
  const seen = new Set();
  const handler = async (event) => {
    if (event?.type !== "response.function_call_arguments.done") return;
    if (seen.has(event.call_id) || !isListed(tools, event.name)) return;
    seen.add(event.call_id);
    let result;
    try {
      // `invoke` turns every failure into an error result: only the parse can throw here.
      result = await invoke(tools, event.name, JSON.parse(event.arguments || "{}"));
    } catch (error) {
      result = failed(`the arguments are not JSON: ${error.message}`);
    }
    const text = resultText(result);
    send({
      type: "conversation.item.create",
      item: {
        type: "function_call_output",
        call_id: event.call_id,
        output: result.isError ? JSON.stringify({ error: text }) : text,
      },
    });
    send({ type: "response.create" });
  };
  handler.stop = tools.on("toolschanged", () =>
    send({ type: "session.update", session: { type: "realtime", tools: realtimeTools(tools) } }),
  );
  return handler;
}
