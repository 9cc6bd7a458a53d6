//! Every bound of the bridge in one place, with its default (docs/security.md lists them).
//!
//! A hostile page or agent meets a limit with a clear error naming it, never an unbounded queue or
//! a task left behind. Frame size and depth are the core's (`protocol::check_outgoing`), the same
//! rule on both sides of the page socket.

use std::time::Duration;

use client_tools_core::limits::{CONNECT_TIMEOUT_MS, MAX_FRAME_BYTES};

/// The largest WebSocket message the bridge reads from a page. A frame up to [`MAX_FRAME_BYTES`] is
/// decoded (and refused there with a clear JSON-RPC error when larger); a message beyond this
/// closes the connection rather than being buffered — before the page is authenticated too.
pub const MAX_MESSAGE_BYTES: usize = MAX_FRAME_BYTES + 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Page WebSocket connections open at once; more are refused (`503`).
    pub max_connections: usize,
    /// Page sessions kept (connected, or disconnected within [`Self::session_ttl`]); when full, the
    /// session disconnected longest (with no call waiting on it) is forgotten first, and a connect
    /// is refused only when there is none.
    pub max_sessions: usize,
    /// Calls waiting for one page's answers; one more fails at once with an error result.
    pub max_pending_per_session: usize,
    /// Frames queued towards one page connection that it has not read yet.
    pub outgoing_queue_frames: usize,
    /// Bytes queued towards one page connection that it has not read yet.
    pub outgoing_queue_bytes: usize,
    /// Progress notifications buffered towards one agent per call; more are dropped (progress is a
    /// hint: the next one supersedes it).
    pub progress_buffer: usize,
    /// A disconnected session is forgotten after this long (its page gets a new session if it
    /// comes back later).
    pub session_ttl: Duration,
    /// The bridge pings each page connection this often (WebSocket ping; browsers answer it).
    pub ping_interval: Duration,
    /// A page connection silent for this long (no frame, no pong) is closed.
    pub idle_timeout: Duration,
    /// How long a page has to send its first frame (`clienttools/connect`).
    pub connect_timeout: Duration,
    /// How long a claimed session's current connection has to answer a ping before a newcomer with
    /// the resume secret replaces it (a live one keeps it: the newcomer, a duplicated tab, gets a
    /// new session).
    pub takeover_probe: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 20_000,
            max_sessions: 20_000,
            max_pending_per_session: 1_024,
            outgoing_queue_frames: 2_048,
            outgoing_queue_bytes: 4 * 1024 * 1024,
            progress_buffer: 64,
            session_ttl: Duration::from_secs(10 * 60),
            ping_interval: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(45),
            connect_timeout: Duration::from_millis(CONNECT_TIMEOUT_MS),
            takeover_probe: Duration::from_secs(2),
        }
    }
}

/// `duration` in whole milliseconds, rounded up (the unit of the core's timeout rule,
/// `client_tools_core::limits::call_timeout`): a non-zero duration is never 0 ms.
pub(crate) fn whole_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// Rounds of a page's requests to agents (`clienttools/input`) waiting for an answer in one page
/// session; one more is refused with a JSON-RPC error (the page's promise rejects). A call has at
/// most one open round at a time, so this also bounds suspended calls per page.
pub const MAX_OPEN_ROUNDS_PER_SESSION: usize = 64;
/// Requests in one round (`inputRequests` keys); more refuse the round.
pub const MAX_REQUESTS_PER_ROUND: usize = 16;
/// Log messages (`notifications/message`) buffered towards one agent per call; more are dropped
/// (the page bounds them at 100 per call too).
pub const LOG_BUFFER: usize = 32;
