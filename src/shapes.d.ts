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



/** RFC 5424 log levels (MCP `LoggingLevel`), least severe first. */
export type LogLevel = "debug" | "info" | "notice" | "warning" | "error" | "critical" | "alert" | "emergency";

/** One request a handler puts to the calling agent (`ctx.input`). */
export type AgentRequest =
  | { method: "elicitation/create"; params: ElicitParams }
  | { method: "sampling/createMessage"; params: Record<string, unknown> }
  | { method: "roots/list"; params?: Record<string, unknown> };

/** MCP `elicitation/create` params: a form (`requestedSchema`), or a URL (`mode: "url"`). */
export interface ElicitParams {
  message: string;
  requestedSchema?: Record<string, unknown>;
  [key: string]: unknown;
}

/** What the person at the agent answered. */
export interface ElicitResult {
  action: "accept" | "decline" | "cancel";
  content?: Record<string, unknown>;
}

export interface ToolContext {
  signal: AbortSignal;
  callId: string;
  toolName: string;
  originalName: string;
  /** The call's W3C trace context (`_meta.traceparent`, checked); `undefined` when it has none. */
  traceparent?: string;
  /** Its `tracestate`, only beside a valid `traceparent`. */
  tracestate?: string;
  reportProgress(progress: number, total?: number, message?: string): void;
  /** An MCP log message to the calling agent, at or above the level it asked for; never fails. */
  log(level: LogLevel, data: unknown, logger?: string): void;
  /**
   * The handler's progress so far (JSON, at most 64 KiB): a call that times out, or that the
   * runtime cancels asking for the answer, ends with an error result carrying the last one
   * (`{"partial": value}`); `toolcancel` carries it too. Never throws: a value that is not JSON
   * (a cycle, a BigInt) or too large is a `partial_dropped` warning, the earlier value kept.
   */
  partial(value: unknown): void;
  /** Asks the person at the agent (rejects with `CAPABILITY_MISSING` or `AGENT_FAILED`). */
  elicit(params: ElicitParams): Promise<ElicitResult>;
  /** Asks the agent's model: MCP `sampling/createMessage` params → `CreateMessageResult`. */
  createMessage(params: Record<string, unknown>): Promise<Record<string, any>>;
  listRoots(): Promise<{ roots: { uri: string; name?: string }[] }>;
  /** Several requests in one round, keyed by the page: `{key: result}`. */
  input(requests: Record<string, AgentRequest>): Promise<Record<string, any>>;
}

export type ToolHandler = (input: any, ctx: ToolContext) => unknown | Promise<unknown>;


export interface ListedTool {
  name: string;
  originalName: string;
  description?: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  kind: "function" | "handler" | "form" | "browser";
}

/** An MCP content block (a handler may return any; the SDK's own results are text). */
export type ContentBlock =
  | { type: "text"; text: string; annotations?: Record<string, unknown>; _meta?: Record<string, unknown> }
  | { type: "image" | "audio"; data: string; mimeType: string; annotations?: Record<string, unknown>; _meta?: Record<string, unknown> }
  | { type: "resource_link"; uri: string; name: string; title?: string; description?: string; mimeType?: string; size?: number }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } };

export interface CallToolResult {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError: boolean;
  _meta?: Record<string, unknown>;
}

/** What a resource's `read`, a prompt's `get` and a `complete` function get: a tool's context. */
export type ServeContext = ToolContext;

/** One item of a resource's contents: text or base64 bytes (`blob`). */
export type ResourceContents =
  | { uri?: string; mimeType?: string; text: string; _meta?: Record<string, unknown> }
  | { uri?: string; mimeType?: string; blob: string; _meta?: Record<string, unknown> };

/** What completing a value answers: at most 100 are sent, the rest counted in `total`. */
export type Completion = string[] | { values: string[]; total?: number; hasMore?: boolean };
export type CompleteFunction = (value: string, context: { arguments: Record<string, string>; signal: AbortSignal }) => Completion | Promise<Completion>;

interface ResourceCommon {
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  annotations?: Record<string, unknown>;
  /** Answers a string (text), bytes (sent as a base64 blob) or `{contents: [...]}`. */
  read(uri: string, vars: Record<string, string>, ctx: ServeContext): string | Uint8Array | ArrayBuffer | { contents: ResourceContents[] } | Promise<string | Uint8Array | ArrayBuffer | { contents: ResourceContents[] }>;
}
/** `defineResource`: a static `uri`, or an RFC 6570 `uriTemplate` (`{var}`, `{+var}`) whose variables `complete` may complete. */
export type ResourceDefinition =
  | (ResourceCommon & { uri: string; uriTemplate?: never; complete?: never })
  | (ResourceCommon & { uriTemplate: string; uri?: never; complete?: Record<string, CompleteFunction> });

/** An MCP prompt message. */
export interface PromptMessage {
  role: "user" | "assistant";
  content: ContentBlock;
}
export interface PromptDefinition {
  name: string;
  title?: string;
  description?: string;
  arguments?: { name: string; description?: string; required?: boolean }[];
  /** Answers `{description?, messages}`, an array of messages, or a string (one user message). */
  get(args: Record<string, string>, ctx: ServeContext): PromptAnswer | Promise<PromptAnswer>;
  complete?: Record<string, CompleteFunction>;
}
export type PromptAnswer = { description?: string; messages: PromptMessage[] } | PromptMessage[] | string;

export interface ClientToolsEvents {
  toolqueued: { type: "toolqueued"; toolName: string; callId: string; position: number };
  toolactivated: { type: "toolactivated"; toolName: string; callId: string };
  /** `partial`: the handler's last `ctx.partial` value, when it kept one. */
  toolcancel: { type: "toolcancel"; toolName: string; callId: string; reason: string; partial?: unknown };
  toolresult: { type: "toolresult"; toolName: string; callId: string; isError: boolean; durationMs: number };
  toolschanged: { type: "toolschanged" };
  connectionchange: { type: "connectionchange"; state: ConnectionState };
  warning: { type: "warning"; code: WarningCode; message: string; toolName?: string };
}

/** `tools.approvals`: the "Always allow" approvals this origin keeps for the page's user (`allowAlways`). */
export interface Approvals {
  /** The user's approvals: each tool's original name and when (ms since the epoch) it was allowed. */
  list(): { name: string; approvedAt: number }[];
  /** Forgets the user's approval of tool `name` (original name), or all of the user's; returns how many. */
  revoke(name?: string): number;
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
