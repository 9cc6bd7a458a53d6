import type { PageTools } from "./shared.js";

/**
 * The `clientTools` of `@elevenlabs/client`'s `Conversation.startSession`: one function per tool,
 * kept in step with the page's tools. A failed call throws its error text (the client then sends
 * `is_error: true`).
 */
export function elevenLabsClientTools(
  tools: PageTools,
): Record<string, (parameters: any) => Promise<string>>;
