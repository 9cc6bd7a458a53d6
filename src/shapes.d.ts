// The shapes the SDK hands to pages, emitted into the package's `.d.ts` by `src/typescript.rs`.
export type JsonSchema = Record<string, unknown> | boolean;

/** What the SDK throws: a real `Error` (a `TypeError` for misuse) with a stable `code`. */
export interface ClientToolsError extends Error {
  code: ErrorCode;
}

export type ConnectionState = "disconnected" | "connecting" | "connected" | "reconnecting";

export interface ConfirmRequest {
  toolName: string;
  originalName: string;
  description?: string;
  callId: string;
  input: unknown;
  /** The schema the input was checked against; absent when the tool has none. */
  inputSchema?: JsonSchema;
}
/** What a `confirm` callback decides; anything else is an error result naming what was wrong. */
export type ConfirmDecision =
  | { action: "approve" }
  | { action: "modify"; input: unknown }
  | { action: "reject"; reason?: string };



export interface ToolContext {
  signal: AbortSignal;
  callId: string;
  toolName: string;
  originalName: string;
  reportProgress(progress: number, total?: number, message?: string): void;
}

export type ToolHandler = (input: any, ctx: ToolContext) => unknown | Promise<unknown>;


export interface ListedTool {
  name: string;
  originalName: string;
  description?: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  kind: "function" | "handler" | "form";
}

export interface CallToolResult {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError: boolean;
  _meta?: Record<string, unknown>;
}

export interface ClientToolsEvents {
  toolactivated: { type: "toolactivated"; toolName: string; callId: string };
  toolcancel: { type: "toolcancel"; toolName: string; callId: string; reason: string };
  toolresult: { type: "toolresult"; toolName: string; callId: string; isError: boolean; durationMs: number };
  toolschanged: { type: "toolschanged" };
  connectionchange: { type: "connectionchange"; state: ConnectionState };
  warning: { type: "warning"; code: WarningCode; message: string; toolName?: string };
}

export interface ClientTools {
  /** Subscribes to an event; returns the function that unsubscribes. */
  on<K extends keyof ClientToolsEvents>(type: K, listener: (event: ClientToolsEvents[K]) => void): () => void;
  /**
   * The page calls one of its tools itself: same validation, events and result as an agent call.
   * Resolves to the MCP result; rejects with `UNKNOWN_TOOL` for a name that is not defined.
   */
  invoke(name: string, input?: unknown): Promise<CallToolResult>;
}
