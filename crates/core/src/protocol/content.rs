//! Results a handler shapes itself (SPEC §4 "MCP results"): a plain object whose keys are among
//! `content`, `structuredContent`, `isError` and `_meta`, with `content` an array of MCP content
//! blocks, is sent as it is — what the MCP TypeScript SDK's and MCP-B's handlers return — once every
//! block is checked here. A malformed block is an error result naming it (`content[2]: …`): the
//! agent never gets a block its client cannot read.

use serde_json::{Map, Value};

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
        Some(other) => {
            return Err(format!(
                "'structuredContent' must be an object, not {}",
                crate::validate::json_type_name(&other)
            ))
        }
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

/// One content block, checked: `text`; `image` and `audio` with base64 `data` and a `mimeType`;
/// `resource_link` with `uri` and `name`; `resource` with `{uri, mimeType?, text | blob}`; each
/// with optional `annotations` and `_meta`.
pub fn check_block(block: Value) -> Result<Content, String> {
    let Value::Object(block) = block else {
        return Err(format!(
            "a content block must be an object, not {}",
            crate::validate::json_type_name(&block)
        ));
    };
    let kind = string(&block, "type")?;
    let mut known = vec!["type", "annotations", "_meta"];
    match kind {
        "text" => {
            string(&block, "text")?;
            known.push("text");
        }
        "image" | "audio" => {
            base64(string(&block, "data")?).map_err(|why| format!("'data' {why}"))?;
            mime_type(&block)?;
            known.extend(["data", "mimeType"]);
        }
        "resource_link" => {
            string(&block, "uri")?;
            string(&block, "name")?;
            for optional in ["title", "description", "mimeType"] {
                optional_string(&block, optional)?;
            }
            if block.get("size").is_some_and(|size| !size.is_u64()) {
                return Err("'size' must be a whole number of bytes".into());
            }
            known.extend([
                "uri",
                "name",
                "title",
                "description",
                "mimeType",
                "size",
                "icons",
            ]);
        }
        "resource" => {
            let Some(Value::Object(resource)) = block.get("resource") else {
                return Err("a resource block needs 'resource', an object".into());
            };
            string(resource, "uri").map_err(|why| format!("resource: {why}"))?;
            optional_string(resource, "mimeType").map_err(|why| format!("resource: {why}"))?;
            match (resource.get("text"), resource.get("blob")) {
                (Some(Value::String(_)), None) => {}
                (None, Some(Value::String(blob))) => {
                    base64(blob).map_err(|why| format!("resource: 'blob' {why}"))?
                }
                _ => return Err("resource: needs 'text' or 'blob' (a string), not both".into()),
            }
            known.push("resource");
        }
        other => {
            return Err(format!(
                "unknown content type '{other}' (text, image, audio, resource_link or resource)"
            ))
        }
    }
    if let Some(annotations) = block.get("annotations") {
        check_annotations(annotations).map_err(|why| format!("annotations: {why}"))?;
    }
    if block.get("_meta").is_some_and(|meta| !meta.is_object()) {
        return Err("'_meta' must be an object".into());
    }
    if let Some(unknown) = block.keys().find(|key| !known.contains(&key.as_str())) {
        return Err(format!("a {kind} block has no field '{unknown}'"));
    }
    let plain_text = kind == "text" && block.len() == 2;
    Ok(match plain_text {
        true => Content::text(string(&block, "text")?),
        false => Content::Block(block),
    })
}

fn check_annotations(annotations: &Value) -> Result<(), String> {
    let Value::Object(annotations) = annotations else {
        return Err("must be an object".into());
    };
    if let Some(audience) = annotations.get("audience") {
        let roles = audience.as_array().ok_or("'audience' must be an array")?;
        if !roles
            .iter()
            .all(|role| matches!(role.as_str(), Some("user" | "assistant")))
        {
            return Err("'audience' holds \"user\" and \"assistant\" only".into());
        }
    }
    if let Some(priority) = annotations.get("priority") {
        let valid = priority.as_f64().is_some_and(|p| (0.0..=1.0).contains(&p));
        if !valid {
            return Err("'priority' must be a number from 0 to 1".into());
        }
    }
    optional_string(annotations, "lastModified")
}

fn string<'a>(object: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    match object.get(key) {
        Some(Value::String(value)) => Ok(value),
        Some(other) => Err(format!(
            "'{key}' must be a string, not {}",
            crate::validate::json_type_name(other)
        )),
        None => Err(format!("needs '{key}' (a string)")),
    }
}

fn optional_string(object: &Map<String, Value>, key: &str) -> Result<(), String> {
    match object.get(key) {
        None | Some(Value::String(_)) => Ok(()),
        Some(_) => Err(format!("'{key}' must be a string")),
    }
}

fn mime_type(block: &Map<String, Value>) -> Result<(), String> {
    let mime = string(block, "mimeType")?;
    if mime.contains('/') && !mime.trim().is_empty() {
        Ok(())
    } else {
        Err(format!(
            "'mimeType' must be a media type like image/png, not '{mime}'"
        ))
    }
}

/// Standard base64 (RFC 4648, padded or not): the characters and a length that decodes.
fn base64(data: &str) -> Result<(), String> {
    let body = data.trim_end_matches('=');
    let padding = data.len() - body.len();
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    if padding > 2 || !body.bytes().all(alphabet) || body.len() % 4 == 1 {
        return Err("is not base64".into());
    }
    if padding > 0 && !data.len().is_multiple_of(4) {
        return Err("is not base64 (its padding)".into());
    }
    Ok(())
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
                "content[0]: needs 'mimeType' (a string)",
            ),
            (
                json!({"type": "video", "data": "AAAA"}),
                "content[0]: unknown content type 'video'",
            ),
            (
                json!({"type": "resource", "resource": {"uri": "x", "text": "a", "blob": "AA"}}),
                "content[0]: resource: needs 'text' or 'blob'",
            ),
            (
                json!({"type": "text", "text": "a", "annotations": {"priority": 3}}),
                "content[0]: annotations: 'priority'",
            ),
            (
                json!({"type": "text", "text": "a", "colour": "red"}),
                "content[0]: a text block has no field 'colour'",
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
