//! Where agents and pages come in: the HTTP server around a [`crate::Bridge`] (`server`), the checks
//! in front of each route (`route_check`, with `auth`), and the routes an embedding runtime picks
//! from: pages (`/ws`), agents (`/mcp` with the MCP server in `mcp`, also on stdio; `/api`), and
//! the site (`/pkg/`, `/`).

pub mod agent;
pub mod api;
pub mod api_served;
pub(crate) mod auth;
pub mod mcp;
pub mod page;
pub(crate) mod route_check;
pub(crate) mod server;
pub mod site;
