//! A page's answer over the frame limit (`MAX_FRAME_BYTES`): the frame is refused, yet the request
//! it answers is known — so the request fails at once with an error naming the limit, instead of
//! waiting out its timeout. The id is read by serde_json's own parser with every other value
//! skipped (`IgnoredAny`: nothing of the frame is kept but the id): the same JSON rules as a frame
//! the bridge accepts (escapes, duplicate keys refused, nesting bounded), so a frame is only ever
//! taken for the answer to the request it names. The frame is at most `MAX_MESSAGE_BYTES` (a larger
//! WebSocket message closes the connection before it is read), so the pass is bounded.

use client_tools_core::limits::MAX_FRAME_BYTES;
use client_tools_core::protocol::{code, RequestId, RpcError};
use serde::de::IgnoredAny;
use serde::Deserialize;

/// The fields that make a frame an answer; the rest is skipped.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Option<&'a str>,
    id: Option<RequestId>,
    method: Option<IgnoredAny>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
}

/// When `text` is over the frame limit and is, as JSON, an answer (`jsonrpc: "2.0"`, an `id`, a
/// `result` or an `error`, no `method`): the id it answers, and the error that request ends with
/// (`-32603`, naming the limit). `None` for a frame within the limit, or anything else.
pub(crate) fn refused_answer(text: &str) -> Option<(RequestId, RpcError)> {
    if text.len() <= MAX_FRAME_BYTES {
        return None;
    }
    let envelope: Envelope = serde_json::from_str(text).ok()?;
    let answers = envelope.result.is_some() != envelope.error.is_some();
    if envelope.jsonrpc != Some("2.0") || envelope.method.is_some() || !answers {
        return None;
    }
    let error = RpcError::new(
        code::INTERNAL_ERROR,
        format!(
            "the page's answer is {} bytes, over the frame limit of {MAX_FRAME_BYTES} bytes \
             (MAX_FRAME_BYTES): the bridge refused it (have the page answer less, e.g. a \
             resource in parts or a link to it)",
            text.len()
        ),
    );
    Some((envelope.id?, error))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn padded(frame: serde_json::Value) -> String {
        let mut text = frame.to_string();
        assert!(text.ends_with('}'));
        text.pop();
        text.push_str(&format!(",\"pad\":\"{}\"}}", "x".repeat(MAX_FRAME_BYTES)));
        text
    }

    #[test]
    fn an_oversized_answer_names_its_request_and_the_limit() {
        let big = "x".repeat(MAX_FRAME_BYTES);
        let answer = json!({"jsonrpc": "2.0", "id": "a-7", "result": {"text": big}}).to_string();
        let (id, error) = refused_answer(&answer).unwrap();
        assert_eq!(id, RequestId::String("a-7".into()));
        assert!(error
            .message
            .contains("over the frame limit of 1048576 bytes"));
        // The id after the result, an error answer, a number id.
        let after =
            format!("{{\"result\": {{\"t\": \"{big}\"}}, \"jsonrpc\": \"2.0\", \"id\": 12}}");
        assert_eq!(refused_answer(&after).unwrap().0, RequestId::Number(12));
        let error =
            padded(json!({"jsonrpc": "2.0", "id": "e", "error": {"code": 1, "message": "m"}}));
        assert_eq!(
            refused_answer(&error).unwrap().0,
            RequestId::String("e".into())
        );
    }

    #[test]
    fn nothing_else_is_taken_for_an_answer() {
        for frame in [
            // Within the limit: decode's to read.
            json!({"jsonrpc": "2.0", "id": "a", "result": {}}).to_string(),
            // A request, a notification, no id, an id only nested, both result and error.
            padded(json!({"jsonrpc": "2.0", "id": "a", "method": "x", "params": {}})),
            padded(json!({"jsonrpc": "2.0", "method": "x"})),
            padded(json!({"jsonrpc": "2.0", "result": {"id": "a"}})),
            padded(json!({"jsonrpc": "2.0", "id": "a", "result": 1, "error": {}})),
            padded(json!({"id": "a", "result": 1})),
            // Not JSON, duplicate ids, an id that is neither a string nor an integer.
            format!(
                "{{\"jsonrpc\": \"2.0\", \"id\": \"a\", \"result\": \"{}",
                "x".repeat(MAX_FRAME_BYTES)
            ),
            padded(json!({"jsonrpc": "2.0", "id": {"a": 1}, "result": 1})),
        ] {
            assert_eq!(
                refused_answer(&frame),
                None,
                "{}",
                &frame[..frame.len().min(120)]
            );
        }
        let twice = format!(
            "{{\"jsonrpc\": \"2.0\", \"id\": \"a\", \"id\": \"b\", \"result\": \"{}\"}}",
            "x".repeat(MAX_FRAME_BYTES)
        );
        assert_eq!(refused_answer(&twice), None);
    }
}
