//! Results a handler shapes itself (SPEC §4 "MCP results"): a plain object whose keys are among
//! `content`, `structuredContent`, `isError` and `_meta`, with `content` an array of MCP content
//! blocks, is sent as it is — what the MCP TypeScript SDK's and MCP-B's handlers return — once every
//! block is checked here. A malformed block is an error result naming it (`content[2]: …`): the
//! agent never gets a block its client cannot read.

use serde_json::Value;

use super::{CallToolResult, Content};

/// The keys of an MCP `CallToolResult` a handler may return.
const RESULT_KEYS: [&str; 4] = ["content", "structuredContent", "isError", "_meta"];

/// Whether `value` is shaped as an MCP result: an object with a `content` array and no key other
/// than [`RESULT_KEYS`]. Anything else is a plain value (text, or structured content).
pub fn is_mcp_result(value: &Value) -> bool {
    let Value::Object(object) = value else {
        return false;
    };
    object.get("content").is_some_and(Value::is_array)
        && object.keys().all(|key| RESULT_KEYS.contains(&key.as_str()))
}

/// The result `value` ([`is_mcp_result`]) describes, or what is wrong with it.
pub fn read_mcp_result(value: Value) -> Result<CallToolResult, String> {
    let Value::Object(mut object) = value else {
        return Err("a result must be an object".into());
    };
    let Some(Value::Array(blocks)) = object.remove("content") else {
        return Err("a result's 'content' must be an array of content blocks".into());
    };
    let content = blocks
        .into_iter()
        .enumerate()
        .map(|(at, block)| check_block(block).map_err(|why| format!("content[{at}]: {why}")))
        .collect::<Result<Vec<_>, _>>()?;
    let structured_content = match object.remove("structuredContent") {
        None | Some(Value::Null) => None,
        Some(structured @ Value::Object(_)) => Some(structured),
        Some(_) => return Err("'structuredContent' must be an object".into()),
    };
    let is_error = match object.remove("isError") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(is_error)) => is_error,
        Some(_) => return Err("'isError' must be true or false".into()),
    };
    let meta = match object.remove("_meta") {
        None | Some(Value::Null) => None,
        Some(Value::Object(meta)) => Some(meta),
        Some(_) => return Err("'_meta' must be an object".into()),
    };
    Ok(CallToolResult {
        content,
        structured_content,
        is_error,
        meta,
    })
}

/// The content block types and the fields each must have (strings). Other fields are the MCP
/// client's to read (it ignores what it does not know).
const BLOCKS: [(&str, &[&str]); 5] = [
    ("text", &["text"]),
    ("image", &["data", "mimeType"]),
    ("audio", &["data", "mimeType"]),
    ("resource_link", &["uri", "name"]),
    ("resource", &[]),
];

/// One content block, checked: `text`; `image` and `audio` with base64 `data` and a `mimeType`;
/// `resource_link` with `uri` and `name`; `resource` with `{uri, mimeType?, text | blob}`; each
/// with optional `annotations` and `_meta` objects.
pub fn check_block(block: Value) -> Result<Content, String> {
    let Value::Object(block) = block else {
        return Err("a content block must be an object".into());
    };
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some((_, required)) = BLOCKS.iter().find(|(known, _)| *known == kind) else {
        return Err(format!(
            "unknown content type '{kind}' (text, image, audio, resource_link or resource)"
        ));
    };
    let string = |key: &str| block.get(key).and_then(Value::as_str);
    if let Some(missing) = required.iter().find(|key| string(key).is_none()) {
        return Err(format!("a {kind} block needs '{missing}', a string"));
    }
    let objects = ["annotations", "_meta"];
    if let Some(key) = objects
        .iter()
        .find(|key| block.get(**key).is_some_and(|v| !v.is_object()))
    {
        return Err(format!("'{key}' must be an object"));
    }
    let media = |mime: Option<&str>| mime.is_some_and(|m| m.contains('/'));
    match kind {
        "image" | "audio" if !is_base64(string("data")) => {
            return Err("'data' is not base64".into())
        }
        "image" | "audio" if !media(string("mimeType")) => {
            return Err("'mimeType' must be a media type like image/png".into())
        }
        "resource" => {
            let resource = block.get("resource").and_then(Value::as_object);
            let field = |key| resource.and_then(|r| r.get(key)).and_then(Value::as_str);
            let valid = field("uri").is_some()
                && match (field("text"), field("blob")) {
                    (Some(_), None) => true,
                    (None, blob @ Some(_)) => is_base64(blob),
                    _ => false,
                };
            if !valid {
                return Err(
                    "a resource block needs 'resource': {uri, mimeType?, text | blob (base64)}"
                        .into(),
                );
            }
        }
        _ => {}
    }
    Ok(match (kind, block.len()) {
        ("text", 2) => Content::text(string("text").unwrap_or_default()),
        _ => Content::Block(block),
    })
}

/// Standard base64 (RFC 4648, padded or not): the characters and a length that decodes.
fn is_base64(data: Option<&str>) -> bool {
    let Some(data) = data else { return false };
    let body = data.trim_end_matches('=');
    let padding = data.len() - body.len();
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    padding <= 2
        && body.bytes().all(alphabet)
        && body.len() % 4 != 1
        && (padding == 0 || data.len().is_multiple_of(4))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_block_kind_reads_and_travels_unchanged() {
        let result = json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg", "mimeType": "audio/wav",
                 "annotations": {"audience": ["user"], "priority": 0.5}},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
                {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain",
                                                  "text": "inside"}},
                {"type": "resource", "resource": {"uri": "test://b", "blob": "AAEC"}},
                {"type": "text", "text": "with meta", "_meta": {"k": 1}}
            ],
            "structuredContent": {"ok": true},
            "_meta": {"trace": "x"}
        });
        assert!(is_mcp_result(&result));
        let read = read_mcp_result(result.clone()).unwrap();
        assert_eq!(read.content.len(), 7);
        assert!(matches!(read.content[0], Content::Text(_)));
        assert_eq!(
            serde_json::to_value(&read).unwrap()["content"],
            result["content"]
        );
        assert_eq!(read.text(), "hello");
        assert!(!read.is_error);
    }

    #[test]
    fn a_malformed_block_is_named() {
        let cases = [
            (
                json!({"type": "image", "data": "%%%", "mimeType": "image/png"}),
                "content[0]: 'data' is not base64",
            ),
            (
                json!({"type": "image", "data": "AAAA"}),
                "content[0]: a image block needs 'mimeType', a string",
            ),
            (
                json!({"type": "video", "data": "AAAA"}),
                "content[0]: unknown content type 'video'",
            ),
            (
                json!({"type": "resource", "resource": {"uri": "x", "text": "a", "blob": "AA"}}),
                "content[0]: a resource block needs 'resource'",
            ),
            (
                json!({"type": "text", "text": "a", "annotations": 3}),
                "content[0]: 'annotations' must be an object",
            ),
            (
                json!("plain"),
                "content[0]: a content block must be an object",
            ),
        ];
        for (block, expected) in cases {
            let why = read_mcp_result(json!({"content": [block]})).unwrap_err();
            assert!(why.starts_with(expected), "{why}");
        }
    }

    #[test]
    fn only_the_mcp_shape_is_a_result() {
        assert!(!is_mcp_result(&json!({"content": "text"})));
        assert!(!is_mcp_result(&json!({"content": [], "items": 3})));
        assert!(!is_mcp_result(&json!([{"type": "text", "text": "x"}])));
        assert!(is_mcp_result(&json!({"content": [], "isError": true})));
        let error = read_mcp_result(json!({"content": [], "isError": "yes"})).unwrap_err();
        assert_eq!(error, "'isError' must be true or false");
    }
}
