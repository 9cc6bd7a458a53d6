import type { JsonSchema, PageTools } from "./shared.js";

/** A tool definition for the server route: `tool({ description, inputSchema: jsonSchema(inputSchema) })`. */
export interface AiSdkToolDefinition {
  description: string;
  inputSchema: JsonSchema;
}

/** What `aiSdkOnToolCall` hands to `addToolOutput` (the AI SDK's `ChatAddToolOutputFunction`). */
export type AiSdkToolOutput =
  | { tool: string; toolCallId: string; output: unknown; state?: undefined; errorText?: undefined }
  | { tool: string; toolCallId: string; state: "output-error"; errorText: string; output?: undefined };

/** The page's tools as `{name: {description, inputSchema}}`, for the request body. */
export function aiSdkTools(tools: PageTools): Record<string, AiSdkToolDefinition>;

/**
 * The `onToolCall` of `useChat` / `Chat`: runs a page tool's call once and hands its outcome to
 * `addToolOutput` (a failed call: `state: "output-error"`). Other tools' calls are left alone.
 */
export function aiSdkOnToolCall(
  tools: PageTools,
  addToolOutput: (output: AiSdkToolOutput) => void | PromiseLike<void>,
): (options: { toolCall: { toolCallId: string; toolName: string; input: unknown } }) => void;
