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
//! The map: the layers a request crosses, from the routes down to the page, then what every layer
//! may read (tokens, bounds, ids). Each layer imports only the layers below it, and no two modules
//! import each other in a circle: tests/module_graph.rs checks both.
//!
//! 1. `routes/`: where agents and pages come in. `server` (the HTTP server around a [`Bridge`]),
//!    `route_check` (the credential, `Host` and `Origin` checks in front of each route, with `auth`),
//!    `page` (`/ws`), `api` (`/api`), `agent` (`/mcp`) and [`mcp`](routes::mcp) (the MCP server for
//!    agents, on `/mcp` and `--stdio`: one [`McpAgent`] per MCP session), `site` (`/pkg/`, `/`).
//! 2. `bridge`: [`Bridge`], the state every route shares: config, sessions, rounds, tasks, cluster.
//! 3. `cluster/`: many nodes on NATS as one bridge: one set of sessions, rounds' retries and tasks
//!    carried to the node keeping their call.
//! 4. `agent/`: the agent's side of a call, the same for every agent protocol (MCP, `/api`, a
//!    retry from another node): `rounds` (a call on its own task, its rounds of requests to the
//!    agent, calls suspended on a round), `confirmation` (by the person at the agent,
//!    `--confirm-via agent`), `request_state` (the sealed `requestState` both hand out), `tasks` and
//!    `task_book` (calls as MCP tasks).
//! 5. `sessions/`: page sessions. [`page_session`](sessions::page_session) (one page: its tools,
//!    connection, calls and rounds), `table` (the node's sessions: ownership by secret, limits,
//!    expiry, newest), `call_options` (the one way to call: [`PageSession::call_tool`]).
//! 6. [`config`]: the command-line flags as a struct, with the operator's policy and tools it
//!    loaded (so above `calls`); the bridge, the cluster and the routes read it.
//! 7. `calls/`: what a call carries and the rules it follows on its way: `prepared_call` (`_meta`,
//!    timeout, confirmation, checked once), `policy/` (the operator's guardrails), `agent_tools`
//!    (the operator's `--tools FILE` tools), `request_engine` (the rules of the requests waiting on
//!    one page, sans-IO).
//! 8. `page/`: the page's connection: `connection_queue` (the bounded queue of frames to it),
//!    `relay_routes` (where its answers to relayed requests go back).
//! 9. [`tokens`]: signed page and agent tokens (SPEC §13).
//! 10. [`limits`] (every bound of the bridge, with its default, docs/security.md) and `ids` (hex,
//!     random hex and unix milliseconds), which import nothing of the bridge.

mod agent;
mod bridge;
mod calls;
mod cluster;
pub mod config;
mod ids;
pub mod limits;
mod page;
mod routes;
mod sessions;
pub mod tokens;

pub use bridge::Bridge;
pub use calls::agent_tools::AgentTools;
pub use calls::policy::{Policy, ACTED_META};
pub use calls::prepared_call::{PreparedCall, CONFIRMED_BY_AGENT};
pub use calls::served::{ServedRequest, Subject};
pub use calls::tool_annotations::UNTRUSTED_META;
pub use client_tools_core::protocol::CallToolResult;
pub use cluster::ClusterOptions;
pub use config::{BridgeConfig, ConfirmVia};
pub use limits::Limits;
pub use routes::mcp::McpAgent;
pub use sessions::call_options::{CallEnd, CallEvent, CallOptions, InputRound, ToolCall};
pub use sessions::page_session::{Offered, PageSession, ServedOutcome, SessionInfo};
pub use sessions::scope::AgentScope;
