//! Calls to a page and the rounds of requests its handlers send the agent mid-call.

use std::time::Duration;

use client_tools_core::limits::ANSWER_SLACK_MS;

/// How long a call whose page disconnected waits for the page to come back (a reload, a network
/// blip) before it fails. When the page reconnects, the call is sent again with the same id.
pub const RECONNECT_GRACE: Duration = Duration::from_secs(5);

/// Extra time the bridge waits beyond a call's timeout (the core's `ANSWER_SLACK_MS`: the page's
/// grace for late handlers plus the network), so the page's own, more precise, outcome normally
/// arrives first.
pub const ANSWER_SLACK: Duration = Duration::from_millis(ANSWER_SLACK_MS);

/// Rounds of a page's requests to agents (`clienttools/input`) waiting for an answer in one page
/// session; one more is refused with a JSON-RPC error (the page's promise rejects). A call has at
/// most one open round at a time, so this also bounds suspended calls per page.
pub const MAX_OPEN_ROUNDS_PER_SESSION: usize = 64;

/// Requests in one round (`inputRequests` keys); more refuse the round.
pub const MAX_REQUESTS_PER_ROUND: usize = 16;

/// Log messages (`notifications/message`) buffered towards one agent per call; more are dropped
/// (the page bounds them at 100 per call too).
pub const LOG_BUFFER: usize = 32;

/// The most characters of a value an agent sent that an error message quotes (then `…`).
pub const MAX_QUOTED_VALUE_CHARS: usize = 80;

/// The most characters of an id a page sent that an error message quotes.
pub const MAX_QUOTED_ID_CHARS: usize = 64;
