//! The browser-independent heart of client-tools.
//!
//! Everything here is plain Rust, tested with `cargo test`: the wasm SDK (`src/` of the root crate)
//! and the native bridge (`crates/bridge`) both build on it, so a tool call means the same thing on
//! both sides of the wire.
//!
//! - [`page_engine`]: the page as an MCP server, sans-IO: a call's whole life (SPEC §5–§7) as one
//!   state machine that takes inputs and the time and hands back what to do;
//! - [`call`]: the rules of one call that need no time (admission, a person's decision, the
//!   result checks) and the error results of SPEC §5, worded once;
//! - [`ledger`]: at most once per call id, across reconnects and reloads;
//! - [`partial`]: a handler's partial value (`ctx.partial`), and how a result carries it;
//! - [`limits`]: every limit and default of a call's life, with its reason;
//! - [`time`]: the engines' time ([`time::Millis`]), given by the driver;
//! - [`page_api`]: what a page may pass to the SDK (options, declarations), their keys, checks
//!   and TypeScript, from one list each;
//! - [`names`]: SPEC §2, how an original tool name becomes an agent-safe name;
//! - [`registry`]: the tools a page offers, and the original ⇄ normalized mapping;
//! - [`validate`]: JSON Schema compiled once per tool, errors as `instancePath: message`;
//! - [`tape`]: JSON read in place (validation of arguments as they stand in a frame);
//! - [`protocol`]: the JSON-RPC / MCP messages of SPEC §6, and every codec of the wire (the
//!   runtime's `tools/call` frame and its reading of answers too);
//! - [`connect`]: the page's first frame (credentials and session resumption, outside the URL);
//! - [`connection`]: the page's connection, sans-IO: handshake, reconnects with backoff;
//! - [`tabs`]: a user's tabs: which of a person's pages a call goes to (the one most recently in
//!   front);
//! - [`schema_field`]: which form field a schema becomes (the confirmation dialog, the result form);
//! - [`form_tool`]: a `<form toolname>`'s controls as a tool's input schema, and its filling;
//! - [`codes`]: the stable error and warning codes, with their TypeScript unions;
//! - [`error`]: the one error type of misuse ([`CoreError`]).

pub mod call;
pub mod codes;
pub mod connect;
pub mod connection;
pub mod error;
pub mod form_tool;
pub mod ledger;
pub mod limits;
pub mod names;
pub mod page_api;
pub mod page_engine;
pub mod partial;
pub mod plain_object;
pub mod protocol;
pub mod registry;
pub mod schema_field;
pub mod tabs;
pub mod tape;
pub mod time;
pub mod validate;

pub use codes::{ErrorCode, WarningCode};
pub use error::CoreError;
