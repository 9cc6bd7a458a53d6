//! The agent's side of a call: waiting for a page, confirmation by the person at the agent
//! (`--confirm-via agent`), calls suspended on a round, and the `requestState`s of both.

use std::time::Duration;

use client_tools_core::limits::{HUMAN_WAIT_MAX_MS, HUMAN_WAIT_TICK_MS};

/// How long an MCP agent's `tools/list` and `tools/call` wait for a first page to connect (or for
/// the page session its `?session=` names).
pub const FIRST_PAGE_WAIT: Duration = Duration::from_secs(10);

/// How often progress is reported while the person at the agent decides (the page's tick too).
pub const CONFIRMATION_PROGRESS_EVERY: Duration = Duration::from_millis(HUMAN_WAIT_TICK_MS);

/// How long a `requestState` (a confirmation's, a round's) is valid, and a call suspended on a
/// round kept: the longest wait for a human (SPEC §5).
pub const REQUEST_STATE_TTL_MS: u64 = HUMAN_WAIT_MAX_MS;

/// The longest `requestState` part (payload or tag) read, in hex digits.
pub const MAX_STATE_HEX: usize = 8_192;

/// Spent confirmation states remembered at once on the bridge (each until it expires): a bound on
/// memory.
pub const MAX_SPENT_STATES: usize = 100_000;

/// Spent confirmation states remembered at once for one page session: one page's agents cannot use
/// up [`MAX_SPENT_STATES`] and block confirmations on every other page.
pub const MAX_SPENT_STATES_PER_SESSION: usize = 1_000;

/// The longest proposed arguments (pretty JSON, in characters) a confirmation question shows. A
/// confirmation covers all of them, so longer ones are never shown cut: the page asks instead.
pub const MAX_SHOWN_ARGUMENTS_CHARS: usize = 4_000;

/// Calls suspended on a round (waiting for the agent's retry) the bridge keeps at once; one more
/// forgets the oldest, and cancels its page call.
pub const MAX_SUSPENDED_CALLS: usize = 256;
