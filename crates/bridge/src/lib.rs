//! client-tools-bridge: the agent-runtime side of client-tools (SPEC §9).
//!
//! Pages connect over WebSocket (`GET /ws`) and act as MCP servers; the bridge keeps one
//! [`PageSession`] per page session and calls their tools. A Rust agent runtime embeds the same
//! logic through [`Bridge`] and [`PageSession::call_tool`], and takes the routes it needs
//! ([`Bridge::page_router`], [`Bridge::agent_router`], [`Bridge::site_router`]).
//!
//! The rule that shapes every API here: a call always ends with a [`CallToolResult`]. A page that is
//! missing, gone or silent yields a text error result, never a failed request or a hang.
//! Who may connect, and every bound, is in docs/security.md.

pub mod agent_tools;
mod auth;
mod bridge;
mod call_frame;
mod call_meta;
mod cluster;
pub mod config;
mod confirm;
mod guard;
pub mod limits;
pub mod mcp;
mod outgoing;
mod page_answer;
mod relay_routes;
mod request_engine;
mod routes;
mod server;
pub mod session;
mod sessions;

pub use agent_tools::AgentTools;
pub use bridge::Bridge;
pub use call_meta::{PreparedCall, CONFIRMED_BY_AGENT};
pub use client_tools_core::protocol::CallToolResult;
pub use cluster::ClusterOptions;
pub use config::{BridgeConfig, ConfirmVia};
pub use limits::Limits;
pub use session::PageSession;
