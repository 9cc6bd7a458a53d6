//! client-tools-bridge: the agent-runtime side of client-tools (SPEC §9).
//!
//! Pages connect over WebSocket (`GET /ws`) and act as MCP servers; the bridge keeps one
//! [`PageSession`] per page session id and calls their tools. A Rust agent runtime embeds the same
//! logic through [`Bridge`] and [`PageSession::call_tool`]; the binary adds the JSON API of the demo
//! console (`/api/sessions`) and serves the package (`/pkg/`) and a site (`/`).
//!
//! The rule that shapes every API here: a call always ends with a [`CallToolResult`]. A page that is
//! missing, gone or silent yields a text error result, never a failed request or a hang.

pub mod config;
pub mod http_api;
pub mod mcp;
pub mod page_socket;
pub mod server;
pub mod session;

pub use client_tools_core::protocol::CallToolResult;
pub use config::BridgeConfig;
pub use server::Bridge;
pub use session::PageSession;
