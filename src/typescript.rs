//! The TypeScript of the package (`client_tools.d.ts`), emitted by wasm-bindgen from the Rust code:
//! the methods' signatures from `src/api.rs` (`unchecked_param_type` where a JS value is read by
//! hand); the options, the declaration and the `strings` keys from the very lists the SDK checks
//! pages' objects against (`typescript_interface!` in `options.rs`, `declaration.rs`,
//! `ui/strings.rs`); the error and warning codes from their one list in `client_tools_core::codes`;
//! the shapes the SDK hands to pages (contexts, results, events) written below, next to nothing
//! else that could disagree with them.
//! `cargo xtask test` type-checks a page using every API against the result (`tests/types/`,
//! `tsc --strict`).

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const ERROR_CODES: &str = client_tools_core::codes::ERROR_CODE_TS;

#[wasm_bindgen(typescript_custom_section)]
const WARNING_CODES: &str = client_tools_core::codes::WARNING_CODE_TS;

#[wasm_bindgen(typescript_custom_section)]
const OPTIONS: &str = crate::options::OPTIONS_TS;

#[wasm_bindgen(typescript_custom_section)]
const DECLARATION: &str = crate::declaration::DECLARATION_TS;

#[wasm_bindgen(typescript_custom_section)]
const UI_STRING_KEYS: &str = crate::ui::strings::UI_STRING_KEY_TS;

/// Declares the keys a plain object of the page may have and its TypeScript interface, from one
/// list: the keys checked at run time (`js::reject_unknown_keys`) and those the `.d.ts` offers
/// cannot drift apart. Each entry: `"key" "?" : "TypeScript type", "doc";` (`""` when required).
macro_rules! typescript_interface {
    (
        $(#[$meta:meta])*
        $keys:ident, $ts:ident = $name:literal {
            $($key:literal $optional:literal : $ty:literal, $doc:literal;)*
        }
    ) => {
        $(#[$meta])*
        pub const $keys: &[&str] = &[$($key,)*];

        /// The TypeScript interface of these keys (emitted into the `.d.ts` by `src/typescript.rs`).
        pub const $ts: &str = concat!(
            "export interface ", $name, " {\n",
            $("  /** ", $doc, " */\n  ", $key, $optional, ": ", $ty, ";\n",)*
            "}\n"
        );
    };
}
pub(crate) use typescript_interface;

#[wasm_bindgen(typescript_custom_section)]
const SHAPES: &str = TYPES;

/// The shapes the SDK hands to pages. Public for the browser test that compares them with the
/// objects the SDK really makes (`tests/browser.rs`, `typescript_shapes_are_what_pages_get`).
pub const TYPES: &str = r#"
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
