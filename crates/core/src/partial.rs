//! `ctx.partial(value)` (SPEC §7, issue 36): a handler's progress so far, kept by the page engine
//! so that a call cut short still tells the agent what was already done.
//!
//! The rules of the value, written once for the page and the runtime: what a partial value may be
//! ([`read`]), how an error result carries it ([`attach`]), and how the runtime finds it again
//! ([`of`]).

use serde_json::Value;

use crate::limits::MAX_PARTIAL_BYTES;
use crate::protocol::{CallToolResult, Content};
use crate::tape::{Tape, TapeError, MAX_DEPTH};

/// The member of `structuredContent` (and of the text block's JSON) that holds the value.
pub const MEMBER: &str = "partial";

/// A handler's partial value, as JSON text (`Err`: why it is dropped already — [`not_json`],
/// [`too_large`], said by the driver), read: the value, or why it is dropped (the message of a
/// `partial_dropped` warning). Bounded by [`MAX_PARTIAL_BYTES`], and nested so that the result
/// carrying it still fits the frame's depth.
pub fn read(json: Result<&str, &str>) -> Result<Value, String> {
    let text = json.map_err(str::to_owned)?;
    if text.len() > MAX_PARTIAL_BYTES {
        return Err(too_large());
    }
    // The result nests it four levels down (`result`, `structuredContent`, `partial`, …).
    // (A member named twice is no reason to drop it: serde_json keeps the last, as JSON.parse.)
    if let Err(TapeError::Invalid(why)) = Tape::parse_within(text, MAX_DEPTH - 4) {
        return Err(not_json(&why));
    }
    serde_json::from_str(text).map_err(|error| not_json(&error.to_string()))
}

/// Why a value is dropped that has no JSON form: a cycle, a BigInt, `undefined` (`why`: what
/// `JSON.stringify` said).
pub fn not_json(why: &str) -> String {
    format!("the value is not JSON ({why})")
}

/// Why a value is dropped whose JSON is over [`MAX_PARTIAL_BYTES`] (the driver may know it before
/// copying the text: JavaScript's length in UTF-16 units never exceeds the UTF-8 bytes).
pub fn too_large() -> String {
    format!("the value's JSON is larger than the bound of {MAX_PARTIAL_BYTES} bytes (MAX_PARTIAL_BYTES)")
}

/// Adds `partial` to an error result: a second text block, the JSON of `{"partial": value}`, and,
/// when `structured` (the tool declares no output schema), `structuredContent: {"partial": value}`.
/// A tool with an output schema gets the text block only: MCP clients (the TypeScript SDK among
/// them) check any `structuredContent` against the output schema, an error result's too, and
/// would replace the result with their own error.
pub fn attach(result: &mut CallToolResult, partial: &Value, structured: bool) {
    let mut carried = serde_json::Map::new();
    carried.insert(MEMBER.into(), partial.clone());
    let carried = Value::Object(carried);
    result.content.push(Content::text(carried.to_string()));
    if structured {
        result.structured_content = Some(carried);
    }
}

/// The partial value an error result carries ([`attach`]): from `structuredContent`, else from a
/// text block after the first that is the JSON of `{"partial": value}`.
pub fn of(result: &CallToolResult) -> Option<Value> {
    if !result.is_error {
        return None;
    }
    if let Some(value) = (result.structured_content.as_ref()).and_then(|s| s.get(MEMBER)) {
        return Some(value.clone());
    }
    (result.content.iter().skip(1))
        .filter_map(Content::as_text)
        .filter(|text| text.starts_with("{\"partial\":"))
        .find_map(|text| match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(mut object)) if object.len() == 1 => object.remove(MEMBER),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_value_is_json_within_its_bounds() {
        assert_eq!(read(Ok(r#"{"done": 3}"#)), Ok(json!({"done": 3})));
        let why = read(Err(&not_json("cyclic object value"))).unwrap_err();
        assert_eq!(why, "the value is not JSON (cyclic object value)");
        let big = format!("\"{}\"", "a".repeat(MAX_PARTIAL_BYTES));
        let why = read(Ok(&big)).unwrap_err();
        assert_eq!(why, too_large());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(read(Ok(&deep)).is_err());
        assert!(read(Ok("{")).is_err());
    }

    #[test]
    fn a_result_carries_it_and_the_runtime_finds_it() {
        let mut result = CallToolResult::error("timed out after 10 ms");
        attach(&mut result, &json!({"rows": 2}), true);
        assert_eq!(
            result.structured_content,
            Some(json!({"partial": {"rows": 2}}))
        );
        assert_eq!(
            result.content[1].as_text(),
            Some(r#"{"partial":{"rows":2}}"#)
        );
        assert_eq!(of(&result), Some(json!({"rows": 2})));

        let mut text_only = CallToolResult::error("timed out after 10 ms");
        attach(&mut text_only, &json!([1, "two"]), false);
        assert_eq!(text_only.structured_content, None);
        assert_eq!(of(&text_only), Some(json!([1, "two"])));

        assert_eq!(of(&CallToolResult::error("cancelled")), None);
        assert_eq!(of(&CallToolResult::success(json!({"partial": 1}))), None);
    }
}
