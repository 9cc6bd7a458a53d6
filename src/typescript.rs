//! TypeScript shapes of the options, declarations, contexts and events (STYLE #9): written next to
//! the Rust that reads them, emitted into `client_tools.d.ts` by wasm-bindgen. The error and
//! warning codes are generated from their one list in `client_tools_core::codes`; the methods'
//! signatures come from `src/api.rs` (`unchecked_param_type` where a JS value is read by hand).
//! `cargo xtask test` type-checks a page using every API against the result (`tests/types/`,
//! `tsc --strict`).

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const ERROR_CODES: &str = client_tools_core::codes::ERROR_CODE_TS;

#[wasm_bindgen(typescript_custom_section)]
const WARNING_CODES: &str = client_tools_core::codes::WARNING_CODE_TS;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
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

/** Keys of the `strings` option; `{tool}` and `{n}` are filled in. */
export type UiStringKey =
  | "approve" | "reject" | "edit" | "submit" | "cancel" | "add" | "remove" | "reason"
  | "allowSession" | "queue" | "tool" | "confirmIntro" | "resultIntro" | "input" | "invalid"
  | "invalidJson" | "item" | "none";

export interface ClientToolsOptions {
  /** Agent runtime WebSocket URL (ws:// or wss://); omit for page-only use. */
  endpoint?: string;
  /** The page token (the bridge's `--page-token`): sent in the first frame on the socket, never in the URL. */
  token?: string;
  /** Allow-list of ORIGINAL tool names agents may call; empty = all. */
  allow?: string[];
  /** Handler timeout when a tool sets none (default 30000, max 300000). */
  defaultTimeoutMs?: number;
  /** Custom confirmation instead of the built-in dialog (the result form stays built in). */
  confirm?: (call: ConfirmRequest) => Promise<ConfirmDecision> | ConfirmDecision;
  /** The built-in dialog offers "Allow <tool> for the rest of this session" (default false). */
  allowForSession?: boolean;
  /** Words of the built-in dialog and result form, for localization (unknown keys throw). */
  strings?: Partial<Record<UiStringKey, string>>;
  /** Expose `<form toolname>` declarative tools (default true). */
  forms?: boolean;
  /** Also register with `document/navigator.modelContext` when present (default true). */
  exposeToBrowser?: boolean;
  /** Connect as soon as the instance exists (default false). */
  autoConnect?: boolean;
}

export interface ToolContext {
  signal: AbortSignal;
  callId: string;
  toolName: string;
  originalName: string;
  reportProgress(progress: number, total?: number, message?: string): void;
}

export type ToolHandler = (input: any, ctx: ToolContext) => unknown | Promise<unknown>;

export interface FunctionDeclaration {
  name: string;
  description?: string;
  parameters?: JsonSchema;
  outputSchema?: JsonSchema;
  /** `destructiveHint` / `consequentialHint: true` ask the user first; `title` heads the dialog. */
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; consequentialHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean; untrustedContentHint?: boolean; title?: string };
  /** `true`: always ask the user first; `false`: never, whatever the annotations say (a call's `_meta` may still ask). */
  requireConfirmation?: boolean;
  timeoutMs?: number;
  handler: ToolHandler;
}

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
}
"#;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(typescript_type = "ClientToolsOptions | undefined")]
    pub type ClientToolsOptionsArg;
    #[wasm_bindgen(typescript_type = "FunctionDeclaration")]
    pub type FunctionDeclarationArg;
    #[wasm_bindgen(typescript_type = "ToolHandler")]
    pub type ToolHandlerArg;
    #[wasm_bindgen(typescript_type = "ListedTool[]")]
    pub type ListedTools;
    #[wasm_bindgen(typescript_type = "keyof ClientToolsEvents")]
    pub type EventTypeArg;
    #[wasm_bindgen(typescript_type = "(event: any) => void")]
    pub type ListenerArg;
    #[wasm_bindgen(typescript_type = "() => void")]
    pub type Unsubscribe;
    #[wasm_bindgen(typescript_type = "Promise<CallToolResult>")]
    pub type CallToolResultPromise;
    #[wasm_bindgen(typescript_type = "(frame: string) => void")]
    pub type SendFrameArg;
    #[wasm_bindgen(typescript_type = "JsonSchema")]
    pub type JsonSchemaArg;
    #[wasm_bindgen(typescript_type = "string[] | undefined")]
    pub type ValidationErrors;
    #[wasm_bindgen(typescript_type = "Promise<void>")]
    pub type VoidPromise;
}
