//! Many nodes on NATS as one bridge (`--nats`).

use std::time::Duration;

/// How often a node says it is alive (its heartbeat).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(500);

/// A node not heard from for this long is gone (its socket's pages with it).
pub const NODE_TIMEOUT: Duration = Duration::from_millis(2_000);

/// How long a directory entry saying a page is connected is believed without being announced
/// again.
pub const DIRECTORY_LEASE: Duration = Duration::from_secs(30);

/// Every this many heartbeats, a node announces its pages again (within [`DIRECTORY_LEASE`]).
pub const ANNOUNCE_BEATS: u64 = 20;

/// Every this many heartbeats, link records of expired sessions are dropped.
pub const LINK_SWEEP_BEATS: u64 = 20;

/// The directory of other nodes' pages holds at most this many times a node's `max_sessions`.
pub const DIRECTORY_PER_NODE_SESSIONS: usize = 16;

/// How long a link that NATS said nobody serves is not remade to the same connection.
pub const REFUSED_LINK_BACKOFF: Duration = Duration::from_secs(1);

/// Claims of one session waiting for its probe at once; more are answered "live" at once (the
/// page keeps its session; the newcomer gets a new one).
pub const MAX_CLAIMS_WAITING: usize = 4;

/// How much longer than the takeover probe (`Limits::takeover_probe`) a node waits for the
/// answer to a claim it sent the node holding the page; silence then gives the newcomer a new
/// session.
pub const CLAIM_ANSWER_SLACK: Duration = Duration::from_secs(1);

/// Messages waiting for the task that publishes them to NATS; beyond it one is dropped with a
/// warning (a relayed call then ends at its caller's deadline).
pub const NATS_PUBLISH_QUEUE: usize = 65_536;

/// Room a message leaves under the NATS server's `max_payload` (what NATS adds to the payload):
/// a relayed frame, retry, result, progress or log message larger than `max_payload` minus this
/// is refused (or dropped) saying so.
pub const NATS_HEADROOM_BYTES: usize = 512;

/// How long joining NATS may take.
pub const NATS_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The NATS client's connection events (connected, disconnected, …) waiting to be logged; more are
/// dropped.
pub const NATS_EVENTS_BUFFER: usize = 64;

/// How often the node keeping a relayed retry says it still drives it.
pub const RELAYED_RETRY_ALIVE_EVERY: Duration = Duration::from_secs(2);

/// How long the agent's node waits without a word from the node keeping a relayed retry before it
/// ends the agent's request with an error result.
pub const RELAYED_RETRY_SILENCE: Duration = Duration::from_secs(10);

/// How long the agent's node waits for the answer of the node keeping a task (`tasks/get`,
/// `tasks/update`, `tasks/cancel` carried there).
pub const RELAYED_TASK_ANSWER_WITHIN: Duration = Duration::from_secs(10);
