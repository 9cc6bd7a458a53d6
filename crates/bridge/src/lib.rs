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
//!
//! The modules, from the routes down to the engines and the bounds. Files import each other in
//! no circle of more than three (`farm-studio look`), but modules of one layer do use each other
//! (a page session and the calls' rounds, the cluster and the tasks):
//!
//! - `server`: the HTTP server around a [`Bridge`]: its routers and `serve`.
//! - `routes/`: `/ws` (`page`), `/mcp` (`agent`), `/api` (`api`), `/pkg/` and `/` (`site`).
//! - `guard`: a check in front of a route that may answer instead of it, without boxing.
//! - [`mcp`]: the bridge as an MCP server for agents (rmcp), one `McpAgent` per MCP session.
//! - `auth`: credentials, `Host` and `Origin` checks.
//! - `bridge`: [`Bridge`], the state every route shares: config, sessions, cluster.
//! - `cluster/`: many nodes on NATS, one set of sessions; plugs into the session layer from above,
//!   and carries rounds' retries to the node keeping their call.
//! - `session_table`: the bridge's page sessions: ownership by secret, limits, expiry, newest.
//! - [`page_session`]: one page session: its tools, its connection, its calls and their trace.
//! - `input_rounds`: a page call running on its own task, the rules of its rounds for every
//!   caller (MCP, `/api`, a retry carried from another node), and the calls suspended on a round
//!   until the caller retries (2026-07-28, `/api`).
//! - `agent_confirmation`: confirmation by the person at the agent (`--confirm-via agent`).
//! - `tasks`: page calls as MCP tasks (the tasks extension): runs them on, whatever happens to
//!   the agent's connection, over `task_book` (the node's tasks as a sans-IO state machine).
//! - `request_engine`: the rules of the requests waiting on one page (deadlines, grace, progress),
//!   sans-IO: its outputs are values that `page_session` performs.
//! - `policy`: the operator's guardrails (`--policy FILE`): rules on every call's input and
//!   result, decided in one place for every route.
//! - `prepared_call`: what a call carries besides its arguments (`_meta`, timeout), checked once.
//! - [`config`]: the bridge's settings (the command-line flags as a struct).
//! - `relay_routes`: where the page's answers to requests relayed to it go back.
//! - `connection_queue`: the bounded queue of frames to one page connection (socket or link).
//! - [`agent_tools`]: the operator's `--tools FILE` tools.
//! - [`limits`]: every bound of the bridge, with its default.

mod agent_confirmation;
pub mod agent_tools;
mod auth;
mod bridge;
mod cluster;
pub mod config;
mod connection_queue;
#[cfg(test)]
mod fake_page;
mod guard;
mod input_rounds;
pub mod limits;

mod policy;
#[cfg(test)]
mod policy_session_tests;
mod prepared_call;
mod relay_routes;
mod request_engine;
mod routes;
mod server;
#[cfg(test)]
mod session_driver_tests;
mod sessions;
mod task_book;
mod tasks;

pub use agent_tools::AgentTools;
pub use bridge::Bridge;
pub use client_tools_core::protocol::CallToolResult;
pub use cluster::ClusterOptions;
pub use config::{BridgeConfig, ConfirmVia};
pub use limits::Limits;
pub use policy::{Policy, ACTED_META};
pub use prepared_call::{PreparedCall, CONFIRMED_BY_AGENT};
pub use routes::mcp::McpAgent;
pub use sessions::call_options::{CallEnd, CallEvent, CallOptions, InputRound, ToolCall};
pub use sessions::page_session::{PageSession, SessionInfo};
