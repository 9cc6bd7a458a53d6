//! Every bound of the bridge in one place, with its default (docs/security.md lists them): the
//! operator's ([`Limits`], set by flags or when embedding), and the fixed ones, by topic — the
//! page's connection (`page.rs`), calls and their rounds (`calls.rs`), the agent's side
//! (`agent.rs`), tasks (`tasks.rs`), resources, prompts and completion (`served.rs`), the cluster (`cluster.rs`) and the guardrails (`policy.rs`)
//! — each named for what it bounds and documented at its definition only. All of them are read
//! as `limits::NAME`.
//!
//! A hostile page or agent meets a limit with a clear error naming it, never an unbounded queue or
//! a task left behind. The bounds of a call's life that the page shares (timeouts, frame size and
//! depth, human waits) are the core's (`client_tools_core::limits`), the same rule on both sides
//! of the page socket.

use std::time::Duration;

use client_tools_core::limits::CONNECT_TIMEOUT_MS;

mod agent;
mod calls;
mod cluster;
mod page;
mod policy;
mod served;
mod tasks;
mod tokens;

pub use agent::*;
pub use calls::*;
pub use cluster::*;
pub use page::*;
pub use policy::*;
pub use served::*;
pub use tasks::*;
pub use tokens::*;

/// The operator's bounds: on connections, sessions, queues and timers.
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
    /// How long an MCP agent's `tools/list` and `tools/call` wait for a first page to connect (or
    /// for the page session its `?session=` names, or a tab of the user its `?user=` names).
    pub first_page_wait: Duration,
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
            first_page_wait: agent::FIRST_PAGE_WAIT,
        }
    }
}

/// `duration` in whole milliseconds, rounded up (the unit of the core's timeout rule,
/// `client_tools_core::limits::call_timeout`): a non-zero duration is never 0 ms.
pub(crate) fn whole_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}
