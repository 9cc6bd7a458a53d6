//! The browser-independent heart of client-tools.
//!
//! Everything here is plain Rust, tested with `cargo test`: the wasm SDK (`src/` of the root crate)
//! and the native bridge (`crates/bridge`) both build on it, so a tool call means the same thing on
//! both sides of the wire.
//!
//! - [`names`]: SPEC §2, how an original tool name becomes an agent-safe name;
//! - [`registry`]: the tools a page offers, and the original ⇄ normalized mapping;
//! - [`validate`]: JSON Schema compiled once per tool, errors as `instancePath: message`;
//! - [`protocol`]: the JSON-RPC / MCP messages of SPEC §6;
//! - [`connect`]: the page's first frame (credentials and session resumption, outside the URL);
//! - [`form`]: which form field a schema becomes (the confirmation dialog, the result form);
//! - [`codes`]: the stable error and warning codes, with their TypeScript unions;
//! - [`call`]: the outcomes of SPEC §5 and the per-call state machine (injected clock).

pub mod call;
pub mod codes;
pub mod connect;
pub mod error;
pub mod form;
pub mod form_tool;
pub mod ledger;
pub mod names;
pub mod protocol;
pub mod registry;
pub mod tape;
pub mod validate;

pub use codes::{ErrorCode, WarningCode};
pub use error::CoreError;
