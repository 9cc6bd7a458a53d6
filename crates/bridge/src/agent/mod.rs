//! The agent's side of a call, the same for every agent protocol (MCP on `/mcp` and stdio, `/api`,
//! a retry carried from another cluster node): its rounds of requests to the agent, confirmation
//! by the person at the agent, the sealed `requestState`s both hand out, and calls that run on as
//! MCP tasks.

pub(crate) mod confirmation;
pub(crate) mod request_state;
pub(crate) mod rounds;
pub(crate) mod task_book;
pub(crate) mod tasks;
