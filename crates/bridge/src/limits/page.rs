//! The page's connection (`GET /ws`) and the session table that keeps page sessions.

use std::time::Duration;

use client_tools_core::limits::MAX_FRAME_BYTES;

/// The largest WebSocket message the bridge reads from a page. A frame up to [`MAX_FRAME_BYTES`] is
/// decoded (and refused there with a clear JSON-RPC error when larger); a message beyond this
/// closes the connection rather than being buffered — before the page is authenticated too.
pub const MAX_MESSAGE_BYTES: usize = MAX_FRAME_BYTES + 64 * 1024;

/// How long the page has to answer each of `initialize` and `tools/list` (its tool list is not
/// (re)read otherwise).
pub const PAGE_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The read buffer of one page connection. tungstenite's default, 128 KiB, is allocated up front
/// and zero-filled on every read: it was 90 % of an idle session's memory (`client-tools-load`) and
/// a tenth of the CPU under call load. Frames are small; a large one still grows the buffer as
/// needed.
pub const PAGE_READ_BUFFER_BYTES: usize = 4 * 1024;

/// How long a closing connection's writer may take to send what is queued (its close frame).
pub const CLOSING_WRITER_GRACE: Duration = Duration::from_secs(1);

/// The longest close reason sent to a page: a close frame is a control frame (payload at most 125
/// bytes, 2 of them the code), so the message is cut, at a character boundary.
pub const MAX_CLOSE_REASON_BYTES: usize = 120;

/// How often, at most, the session table sweeps expired sessions (on its next access).
pub const SESSION_SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Routes of relayed requests a session keeps per call it may have waiting on one node
/// (`max_pending_per_session` times this): room for the calls of four nodes at their limit (more
/// nodes share it; the oldest routes go first).
pub const RELAY_ROUTES_PER_PENDING: usize = 4;
