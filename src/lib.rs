//! client-tools: the browser SDK, compiled to WebAssembly.
//!
//! This crate is the thin binding of STYLE.md: it converts JavaScript values, owns JS callbacks and
//! the WebSocket, and delegates every decision to `client-tools-core`. Where to look:
//!
//! - [`api`]: the `ClientTools` class exported to JavaScript (SPEC §4);
//! - [`page`]: the state one `ClientTools` instance shares with its transport and calls;
//! - [`call_runner`]: what happens to one call, from arrival to its single result (SPEC §5);
//! - [`transport::websocket`]: the connection to the agent runtime (SPEC §6);
//! - [`ui`]: the confirmation dialog and the result form (SPEC §7);
//! - [`outgoing`]: no frame leaves that the runtime would refuse (size, depth).

pub mod api;
pub mod call_runner;
pub mod confirmation;
pub mod context;
mod deadlines;
pub mod declaration;
pub mod errors;
pub mod events;
pub mod js;
pub mod mcp_server;
pub mod options;
pub mod outgoing;
pub mod page;
pub mod session;
pub mod transport;
pub mod typescript;
pub mod ui;
pub mod validator;
pub mod webmcp;

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
