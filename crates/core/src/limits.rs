//! Every limit and default of a call's life, each with its reason, in one place: the page engine
//! and the bridge both read them from here (a rule written once cannot drift).

/// A handler's timeout when neither the page nor the runtime names one (SPEC §3).
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// The longest timeout a tool may have; longer ones are clamped, with a warning (SPEC §3).
pub const MAX_TIMEOUT_MS: u64 = 300_000;

/// How long a call for a tool with no handler waits for one to be registered: pages register
/// their handlers after load (SPEC §3).
pub const HANDLER_GRACE_MS: u64 = 2_000;

/// What the runtime waits past a call's own timeout before it gives up on the page's answer: the
/// handler may start only after the [`HANDLER_GRACE_MS`] wait, and its answer still has to travel.
pub const ANSWER_SLACK_MS: u64 = HANDLER_GRACE_MS + 500;

/// The longest wait for a human (a confirmation, a result form, a form the person submits), and its
/// default (SPEC §5): not handler time, bounded on its own.
pub const HUMAN_WAIT_MAX_MS: u64 = 300_000;

/// How often progress is reported while a person decides: well inside [`ANSWER_SLACK_MS`], so each
/// report extends the runtime's deadline in time.
pub const HUMAN_WAIT_TICK_MS: u64 = 1_000;

/// Frames larger than this are refused (SPEC §6), by both sides.
pub const MAX_FRAME_BYTES: usize = 1024 * 1024;

/// Frames nested deeper than this are refused: serde_json's recursion limit, which
/// `protocol::decode` applies on both sides; `protocol::check_outgoing` measures a frame against it
/// before it is sent.
pub const MAX_FRAME_DEPTH: usize = 128;

/// How many finished calls' answers a page keeps for re-sends after a reconnect (SPEC §5).
pub const RESULT_STORE_LIMIT: usize = 1_000;

/// How long the page waits for the runtime's answer to its first frame (`clienttools/connect`),
/// and the bridge for that first frame.
pub const CONNECT_TIMEOUT_MS: u64 = 10_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_outwaits_the_page() {
        assert!(ANSWER_SLACK_MS > HANDLER_GRACE_MS);
        assert!(HUMAN_WAIT_TICK_MS < ANSWER_SLACK_MS);
        assert!(DEFAULT_TIMEOUT_MS <= MAX_TIMEOUT_MS);
    }
}
