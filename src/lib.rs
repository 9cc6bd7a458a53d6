//! client-tools: the browser SDK, compiled to WebAssembly.
//!
//! A driver of the core's page engine (`client_tools_core::page_engine`), which decides everything
//! about a call (SPEC §5–§7); this crate converts JavaScript values, owns the JS callbacks, the one
//! page timer, the WebSocket and the DOM. Where to look:
//!
//! - [`api`]: the `ClientTools` class exported to JavaScript (SPEC §4);
//! - [`page`]: the state one instance shares, and the loop that feeds the engine and performs
//!   what it returns, with one timer;
//! - [`driver`]: each engine output performed (frames, handlers and their `ctx`, events);
//! - [`ask`]: asking a person (the dialog, the page's `confirm`, the result form);
//! - [`transport`]: the connection to the agent runtime (SPEC §6): [`transport::websocket`], or a
//!   channel the page supplies ([`transport::custom`]);
//! - [`session`]: what the page keeps of its session in `sessionStorage`;
//! - [`ui`]: the dialog and the form generated from a schema (SPEC §7);
//! - [`webmcp`]: `<form toolname>` tools and the browser's own `modelContext` (SPEC §8), driving
//!   the page; [`webmcp_state`]: what the page keeps of them;
//! - [`events`]: `on(type, fn)` listeners and the DOM events;
//! - [`options`], [`declaration`]: reading the constructor's options and `defineFunction`'s
//!   declarations; [`typescript`]: the types they have in TypeScript;
//! - [`validator`]: `SchemaValidator`, the core's JSON Schema validation for page code;
//! - [`js`]: conversions between JavaScript values and JSON; [`errors`]: errors thrown to
//!   JavaScript; [`oneshot`]: one value from one place of the page to a task waiting for it.

pub mod api;
pub mod ask;
pub mod declaration;
pub mod driver;
pub mod errors;
pub mod events;
pub mod js;
pub mod oneshot;
pub mod options;
pub mod page;
pub mod page_server;
pub mod session;
pub mod transport;
pub mod typescript;
pub mod ui;
pub mod validator;
pub mod webmcp;
pub mod webmcp_state;

pub use api::ClientTools;
pub use validator::SchemaValidator;

use wasm_bindgen::prelude::*;

/// Runs once when the module is instantiated: Rust panics show up in the console with a message.
///
/// Not in the package `cargo xtask build` makes with the build-std toolchain: there a panic is
/// `immediate-abort` (docs/building.md), it traps before any hook could run, and the hook would
/// only be code. Builds that format panics (tests, a rustup wasm32 std) keep it.
#[wasm_bindgen(start)]
pub fn start() {
    #[cfg(not(panic = "immediate-abort"))]
    console_error_panic_hook::set_once();
}

/// `normalize(name)`: the agent-safe name a tool named `original` gets (SPEC §2), for pages that
/// want to know it before defining the tool.
#[wasm_bindgen(js_name = normalizeToolName)]
pub fn normalize_tool_name(original: &str) -> Result<String, JsValue> {
    client_tools_core::names::normalize(original).map_err(errors::to_js)
}
