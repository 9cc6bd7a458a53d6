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

/// The bytes those answers may take (the oldest go first): a runtime that makes many large
/// answers cannot make a page hold 1 000 frames of 1 MiB.
pub const RESULT_STORE_BYTES: usize = 16 * 1024 * 1024;

/// Calls one page runs at once (any phase: waiting for a handler, a person, the agent); one more
/// is answered at once with an error result. A runtime cannot make a page hold unbounded state;
/// the bound is well above the 1 000 calls in flight the soak test and the bridge allow.
pub const MAX_LIVE_CALLS: usize = 4_096;

/// The highest `concurrency` a tool may declare (calls of it running at once; more wait their
/// turn): a page never holds more than [`MAX_LIVE_CALLS`] calls, so a higher bound could never be
/// reached. Above it, or not a whole number from 1, the declaration is refused naming the field
/// (no bound is said by leaving the key out).
pub const MAX_CONCURRENCY: usize = MAX_LIVE_CALLS;

/// Log messages one call may send to the agent (`ctx.log`); more are dropped, said once on the
/// page: a chatty handler cannot flood the agent.
pub const MAX_LOGS_PER_CALL: u32 = 100;

/// The largest partial value a handler may keep (`ctx.partial`, as JSON): a call that times out or
/// is cancelled carries it twice in its result (a text block and `structuredContent`, the text
/// escaped at most twice over), well within [`MAX_FRAME_BYTES`]; a larger value is dropped with a
/// `partial_dropped` warning and the earlier one is kept.
pub const MAX_PARTIAL_BYTES: usize = 64 * 1024;

/// Rounds of requests to agents one page may have waiting at once, over all its calls (a call has
/// one at a time; the runtime bounds the requests in each).
pub const MAX_ROUNDS_WAITING: usize = 64;

/// How many frames a page keeps for the runtime while its connection is down (sent after the
/// reconnect; the oldest are dropped first): what a page produces in a reconnect's few seconds,
/// bounded so that a runtime gone for good costs a page little.
pub const BACKLOG_FRAMES: usize = 1_000;

/// How long the page waits for the runtime's answer to its first frame (`clienttools/connect`),
/// and the bridge for that first frame.
pub const CONNECT_TIMEOUT_MS: u64 = 10_000;

/// Tools adopted from the browser's `modelContext` (`adoptBrowserTools`) at most: any script of
/// the page may register tools there, and each one is listed to every agent.
pub const MAX_ADOPTED_TOOLS: usize = 128;

/// The largest declaration (name, description, schema, annotations as JSON) adopted from the
/// browser: a tool list must stay well within [`MAX_FRAME_BYTES`] whoever registers tools.
pub const MAX_ADOPTED_DECLARATION_BYTES: usize = 16 * 1024;

/// The longest `traceparent` a call's `_meta` may carry (W3C Trace Context: version 00 is 55
/// characters; a later version may add fields, which nobody has yet): a runtime cannot make a
/// page hand its handlers, or the bridge log, an unbounded string. Longer: dropped, with a warning.
pub const MAX_TRACEPARENT_CHARS: usize = 128;

/// The longest `tracestate` kept (W3C Trace Context asks to pass on at least 512 characters), and
/// its most list members (W3C's limit): more, and it is dropped with a warning.
pub const MAX_TRACESTATE_CHARS: usize = 512;
pub const MAX_TRACESTATE_MEMBERS: usize = 32;

/// A timeout given as a number of milliseconds (a declaration's `timeoutMs`, the runtime's
/// `clienttools/timeoutMs`), in whole milliseconds rounded up: `None` when it is not positive
/// (NaN included), which the page ignores in a call and refuses in a declaration, and the bridge
/// refuses.
pub fn positive_ms(ms: f64) -> Option<u64> {
    (ms > 0.0).then(|| ms.ceil() as u64)
}

/// The timeout of a call or a tool, the one rule of the page and the runtime (SPEC §3, docs/api.md
/// *Timeouts*). None asked: the tool's `budget` if it has one, else `default_ms`. Asked (positive,
/// see [`positive_ms`]): what was asked, when it is at most the budget, else at most
/// [`MAX_TIMEOUT_MS`]; above it, [`TimeoutTooLong`] names the bound. Each side decides what going
/// over means: the page clamps (the runtime's timeout for a page tool, bounded by the page's own;
/// its declarations, with a warning), the bridge refuses the call naming the limit.
///
/// The page's budget is a page tool's own timeout (an agent-defined tool has none: the runtime's
/// timeout is its timeout); the bridge's is a `--tools` tool's `timeoutMs`.
pub fn call_timeout(
    asked: Option<u64>,
    budget: Option<u64>,
    default_ms: u64,
) -> Result<u64, TimeoutTooLong> {
    let Some(asked) = asked else {
        return Ok(budget.unwrap_or(default_ms).min(MAX_TIMEOUT_MS));
    };
    match budget {
        Some(budget) if asked > budget => Err(TimeoutTooLong {
            asked,
            limit: budget,
            bound: TimeoutBound::Budget,
        }),
        _ if asked > MAX_TIMEOUT_MS => Err(TimeoutTooLong {
            asked,
            limit: MAX_TIMEOUT_MS,
            bound: TimeoutBound::Max,
        }),
        _ => Ok(asked),
    }
}

/// A timeout asked for above its bound ([`call_timeout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeoutTooLong {
    /// What was asked, in milliseconds.
    pub asked: u64,
    /// The bound it went over, in milliseconds: the timeout when clamped.
    pub limit: u64,
    pub bound: TimeoutBound,
}

/// Which bound a timeout went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutBound {
    /// The tool's own timeout.
    Budget,
    /// [`MAX_TIMEOUT_MS`].
    Max,
}

// The runtime outwaits the page, and a person's wait reports in time: checked when compiling.
const _: () = assert!(ANSWER_SLACK_MS > HANDLER_GRACE_MS);
const _: () = assert!(HUMAN_WAIT_TICK_MS < ANSWER_SLACK_MS);
const _: () = assert!(DEFAULT_TIMEOUT_MS <= MAX_TIMEOUT_MS);
const _: () = assert!(4 * MAX_PARTIAL_BYTES < MAX_FRAME_BYTES);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_timeout_rule() {
        // None asked: the budget, else the default; never above the maximum.
        assert_eq!(call_timeout(None, Some(5_000), 30_000), Ok(5_000));
        assert_eq!(call_timeout(None, None, 30_000), Ok(30_000));
        assert_eq!(call_timeout(None, None, u64::MAX), Ok(MAX_TIMEOUT_MS));
        // Asked: at most the budget, else at most the maximum.
        assert_eq!(call_timeout(Some(100), Some(5_000), 30_000), Ok(100));
        assert_eq!(call_timeout(Some(5_000), Some(5_000), 30_000), Ok(5_000));
        let over = |asked, limit, bound| {
            Err(TimeoutTooLong {
                asked,
                limit,
                bound,
            })
        };
        assert_eq!(
            call_timeout(Some(5_001), Some(5_000), 30_000),
            over(5_001, 5_000, TimeoutBound::Budget)
        );
        assert_eq!(
            call_timeout(Some(MAX_TIMEOUT_MS), None, 1),
            Ok(MAX_TIMEOUT_MS)
        );
        assert_eq!(
            call_timeout(Some(MAX_TIMEOUT_MS + 1), None, 1),
            over(MAX_TIMEOUT_MS + 1, MAX_TIMEOUT_MS, TimeoutBound::Max)
        );
        // Whole milliseconds, rounded up; nothing not positive.
        assert_eq!(positive_ms(0.2), Some(1));
        assert_eq!(positive_ms(1_000.0), Some(1_000));
        assert_eq!(positive_ms(f64::INFINITY), Some(u64::MAX));
        for not in [0.0, -1.0, f64::NAN, f64::NEG_INFINITY] {
            assert_eq!(positive_ms(not), None, "{not}");
        }
    }
}
