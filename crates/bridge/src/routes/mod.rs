//! The bridge's HTTP routes, in the parts an embedding runtime picks from (see [`crate::Bridge`]):
//! pages (`/ws`), agents (`/mcp`, `/api`), and the site (`/pkg/`, `/`).

pub mod agent;
pub mod api;
pub mod mcp;
pub mod page;
pub mod site;
