//! The TypeScript of the package (`client_tools.d.ts`), emitted by wasm-bindgen from the Rust code:
//! the methods' signatures from `src/api.rs` (`unchecked_param_type` where a JS value is read by
//! hand); the options, the declaration and the `strings` keys from the very lists the SDK checks
//! pages' objects against (`typescript_interface!` in `client_tools_core::page_api`,
//! `ui/strings.rs`); the error and warning codes from their one list in `client_tools_core::codes`;
//! the shapes the SDK hands to pages (contexts, results, events) written in `src/shapes.d.ts`, next
//! to nothing else that could disagree with them.
//! `cargo xtask test` type-checks a page using every API against the result (`tests/types/`,
//! `tsc --strict`).

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const ERROR_CODES: &str = client_tools_core::codes::ERROR_CODE_TS;

#[wasm_bindgen(typescript_custom_section)]
const WARNING_CODES: &str = client_tools_core::codes::WARNING_CODE_TS;

#[wasm_bindgen(typescript_custom_section)]
const OPTIONS: &str = client_tools_core::page_api::OPTIONS_TS;

#[wasm_bindgen(typescript_custom_section)]
const DECLARATION: &str = client_tools_core::page_api::DECLARATION_TS;

#[wasm_bindgen(typescript_custom_section)]
const UI_STRING_KEYS: &str = crate::ui::strings::UI_STRING_KEY_TS;

#[wasm_bindgen(typescript_custom_section)]
const SHAPES: &str = TYPES;

/// The shapes the SDK hands to pages. Public for the browser test that compares them with the
/// objects the SDK really makes (`tests/browser.rs`, `typescript_shapes_are_what_pages_get`).
pub const TYPES: &str = include_str!("shapes.d.ts");

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
    #[wasm_bindgen(typescript_type = "ResourceDefinition")]
    pub type ResourceDefinitionArg;
    #[wasm_bindgen(typescript_type = "PromptDefinition")]
    pub type PromptDefinitionArg;
    #[wasm_bindgen(typescript_type = "() => boolean")]
    pub type Undefine;
}
