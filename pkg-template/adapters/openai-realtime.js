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
 * A handler for the session's server events (give it every event: `rt.on("event", handler)`):
 * each `response.function_call_arguments.done` for a page tool runs once, and `send` gets its
 * `conversation.item.create` (a `function_call_output`; a failed call's output is
 * `{"error": "…"}`). Turn-taking: the calls of one response get one `response.create`, sent once
 * all their outputs are sent and the response is done (`response.done`), and never while a
 * response is active (`response.created` until its `response.done`) or asked for and not yet
 * begun (the handler's own `response.create` until the `response.created` that carries its tag,
 * `response.metadata.client_tools`): the Realtime API refuses a second one
 * (`conversation_already_has_active_response`). When the page's tools change, `send` gets a
 * `session.update` with the new list. `handler.stop()` ends that.
 */
export function realtimeHandler(tools, send) {
  const seen = new Set();
  // By response id: how many of its calls still run, and whether it is done.
  const responses = new Map();
  const active = new Set();
  let owed = false;
  // The tag (and event id) of the handler's `response.create` whose response has not begun: the
  // API counts it as active from the moment it reads it, so no second one goes out until then.
  let asked;
  let count = 0;
  const response = (id) => {
    if (!responses.has(id)) responses.set(id, { running: 0, done: false });
    return responses.get(id);
  };
  const answerWhenFree = () => {
    if (owed && active.size === 0 && !asked) {
      owed = false;
      asked = `client_tools_${++count}`;
      send({ type: "response.create", event_id: asked, response: { metadata: { client_tools: asked } } });
    }
  };
  const settle = (id) => {
    const state = responses.get(id);
    if (!state || state.running > 0 || !state.done) return;
    responses.delete(id);
    owed = true;
    answerWhenFree();
  };
  const handler = async (event) => {
    const id = event?.response?.id ?? event?.response_id ?? "";
    if (event?.type === "response.created") {
      // Another response (the server's own, e.g. voice activity) may begin first: only the one
      // with the tag is the answer asked for.
      if (asked && event.response?.metadata?.client_tools === asked) asked = undefined;
      return void active.add(id);
    }
    if (event?.type === "error" && asked && event.error?.event_id === asked) {
      // Refused (a response began before the API read ours): asked again when the active one ends.
      asked = undefined;
      owed ||= event.error.code === "conversation_already_has_active_response";
      return;
    }
    if (event?.type === "response.done") {
      active.delete(id);
      if (responses.has(id)) {
        response(id).done = true;
        settle(id);
      }
      return answerWhenFree();
    }
    if (event?.type !== "response.function_call_arguments.done") return;
    if (seen.has(event.call_id) || !isListed(tools, event.name)) return;
    seen.add(event.call_id);
    // A call whose response was never announced (`response.created`) counts as one done already.
    response(id).running += 1;
    if (!active.has(id)) response(id).done = true;
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
    response(id).running -= 1;
    settle(id);
  };
  handler.stop = tools.on("toolschanged", () =>
    send({ type: "session.update", session: { type: "realtime", tools: realtimeTools(tools) } }),
  );
  return handler;
}
