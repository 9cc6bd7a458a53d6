//! The page never sends a frame the runtime would refuse (SPEC §6). Every frame passes [`fit`]
//! before it leaves: the runtime's own rule (`protocol::check_outgoing`, the size and depth limits
//! its `decode` applies). What does not fit is replaced or dropped, by kind, with a page `warning`.

use client_tools_core::protocol::{
    check_outgoing, code, encode_error, encode_result, CallToolResult, RequestId, RpcError,
};
use client_tools_core::WarningCode;

use crate::events::EventHub;

/// The `warning` code of a frame that was over the limits.
pub const WARNING_CODE: WarningCode = WarningCode::FrameLimit;

/// The answer frame to `tools/call` `id` (sent, and kept for re-sends): when the runtime would
/// refuse it, an error result for the same call naming the limit, so the call still ends with
/// exactly one outcome.
pub fn call_answer(
    events: &EventHub,
    id: &RequestId,
    tool: &str,
    result: &CallToolResult,
) -> String {
    let frame = encode_result(id, result);
    let Err(limit) = check_outgoing(&frame) else {
        return frame;
    };
    drop(frame);
    events.warn(
        WARNING_CODE,
        &format!(
            "the result of '{tool}' (call {id}) was not sent: {limit}; \
             the agent gets an error result instead"
        ),
        Some(tool),
    );
    let error = CallToolResult::error(format!("the tool's result was not sent: {limit}"));
    encode_result(id, &error)
}

/// What any other frame is, which decides what replaces it when it does not fit.
pub enum Kind<'a> {
    /// The answer to `tools/list` `id`: replaced by a JSON-RPC error response.
    ToolsList { id: &'a RequestId },
    /// `notifications/progress` of a call: dropped (a hint; the result still comes).
    Progress { call_id: &'a str },
    /// Anything else (small by construction, such as `initialize` or an error echoing a request):
    /// dropped.
    Other,
}

/// `frame` when the runtime would accept it; otherwise what is sent instead (`None`: nothing), and a
/// `warning` for the page.
pub fn fit(events: &EventHub, frame: String, kind: Kind<'_>) -> Option<String> {
    let Err(limit) = check_outgoing(&frame) else {
        return Some(frame);
    };
    drop(frame);
    match kind {
        Kind::ToolsList { id } => {
            events.warn(
                WARNING_CODE,
                &format!(
                    "the tool list was not sent: {limit}; the runtime gets an error instead \
                     (a tool's schema or description is too large)"
                ),
                None,
            );
            let error = RpcError::new(
                code::INTERNAL_ERROR,
                format!("the page's tool list was not sent: {limit}"),
            );
            Some(encode_error(Some(id), &error))
        }
        Kind::Progress { call_id } => {
            events.warn(
                WARNING_CODE,
                &format!("a progress notification of call {call_id} was dropped: {limit}"),
                None,
            );
            None
        }
        Kind::Other => {
            events.warn(
                WARNING_CODE,
                &format!("a frame for the runtime was dropped: {limit}"),
                None,
            );
            None
        }
    }
}
