import type { JsonSchema, PageTools } from "./shared.js";

/** A Realtime function tool (`session.update`'s `session.tools`). */
export interface RealtimeFunctionTool {
  type: "function";
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** The client events the handler sends. */
export type RealtimeClientEventSent =
  | { type: "conversation.item.create"; item: { type: "function_call_output"; call_id: string; output: string } }
  | { type: "response.create"; event_id: string; response: { metadata: { client_tools: string } } }
  | { type: "session.update"; session: { type: "realtime"; tools: RealtimeFunctionTool[] } };

/** The page's tools as Realtime function tools. */
export function realtimeTools(tools: PageTools): RealtimeFunctionTool[];

/**
 * Handles the session's server events (call it with every one: `rt.on("event", handler)`): runs
 * each `response.function_call_arguments.done` of a page tool once and sends its
 * `function_call_output` (a failed call's output is `{"error": "…"}`); the calls of one response
 * get one `response.create`, once all their outputs are sent and after its `response.done`, never
 * while a response is active or the handler's own `response.create` (tagged
 * `response.metadata.client_tools`) has not begun; sends `session.update` when the page's tools
 * change, until `stop()`.
 */
export function realtimeHandler(
  tools: PageTools,
  send: (event: RealtimeClientEventSent) => void,
): ((event: { readonly type: string; readonly [key: string]: any }) => Promise<void>) & { stop(): void };
