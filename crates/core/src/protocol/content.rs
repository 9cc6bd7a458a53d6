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

/// A content block kind and where its strings are, by what they carry: the one table the reader
/// ([`check_block`]), [`Content::as_text`](super::Content::as_text) and the bridge's guardrails
/// (which redact every string an agent reads, [`visit_text_mut`]) read. A field is a path from
/// the block (`["resource", "text"]`).
#[derive(Debug)]
pub struct BlockKind {
    /// The block's `type`.
    pub kind: &'static str,
    /// Fields the block must have, strings.
    pub required: &'static [&'static str],
    /// Fields that carry the block's text (what an agent reads as its content).
    pub text: &'static [&'static [&'static str]],
    /// Fields that carry binary data (standard base64): checked as such, never read as text.
    pub binary: &'static [&'static [&'static str]],
}

/// The content block kinds MCP defines. Other fields of a block are the MCP client's to read (it
/// ignores what it does not know).
pub const BLOCKS: [BlockKind; 5] = [
    BlockKind {
        kind: "text",
        required: &["text"],
        text: &[&["text"]],
        binary: &[],
    },
    BlockKind {
        kind: "image",
        required: &["data", "mimeType"],
        text: &[],
        binary: &[&["data"]],
    },
    BlockKind {
        kind: "audio",
        required: &["data", "mimeType"],
        text: &[],
        binary: &[&["data"]],
    },
    BlockKind {
        kind: "resource_link",
        required: &["uri", "name"],
        text: &[&["name"], &["title"], &["description"]],
        binary: &[],
    },
    BlockKind {
        kind: "resource",
        required: &[],
        text: &[&["resource", "text"]],
        binary: &[&["resource", "blob"]],
    },
];

/// The kind of `type` `kind` in [`BLOCKS`].
pub fn block_kind(kind: &str) -> Option<&'static BlockKind> {
    BLOCKS.iter().find(|known| known.kind == kind)
}

/// The value at `path` in `block`.
fn field<'a>(block: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (last, parents) = path.split_last()?;
    let mut object = block;
    for key in parents {
        object = object.get(*key)?.as_object()?;
    }
    object.get(*last)
}

/// Hands `visit` every string of `block` an agent may read as text: all but its `type` and the
/// binary fields of its kind ([`BLOCKS`]), however deep (`annotations`, `_meta` included; object
/// keys too, [`visit_strings`]). A binary field that is not base64 is text (a page may write
/// anything there: fail closed), and a block of a kind the table does not know has every string
/// visited, its `type` too: what it carries is unknown, so it is all text. Returns the sum of what
/// `visit` returned.
pub fn visit_text_mut(
    block: &mut Map<String, Value>,
    visit: &mut dyn FnMut(&mut String) -> usize,
) -> usize {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .and_then(block_kind);
    match kind {
        Some(kind) => {
            let mut skip: Vec<&[&str]> = Vec::new();
            for path in kind.binary {
                let data = field(block, path).and_then(Value::as_str);
                if data.is_some_and(|data| is_base64(Some(data))) {
                    skip.push(path);
                }
            }
            skip.push(&["type"]);
            visit_object_except(block, &skip, visit)
        }
        None => block.values_mut().map(|v| visit_strings(v, visit)).sum(),
    }
}

fn visit_object_except(
    object: &mut Map<String, Value>,
    skip: &[&[&str]],
    visit: &mut dyn FnMut(&mut String) -> usize,
) -> usize {
    let mut count = 0;
    for (key, value) in object.iter_mut() {
        let below: Vec<&[&str]> = skip
            .iter()
            .filter(|path| path.first() == Some(&key.as_str()))
            .map(|path| &path[1..])
            .collect();
        if below.iter().any(|rest| rest.is_empty()) {
            continue;
        }
        count += match value {
            Value::Object(inner) if !below.is_empty() => visit_object_except(inner, &below, visit),
            other => visit_strings(other, visit),
        };
    }
    count + visit_keys(object, visit)
}

/// Hands `visit` every string inside `value`, however deep: values and object keys (a key an
/// agent reads is as much text as a value; a key `visit` changes is renamed, its value kept).
pub fn visit_strings(value: &mut Value, visit: &mut dyn FnMut(&mut String) -> usize) -> usize {
    match value {
        Value::String(text) => visit(text),
        Value::Array(items) => items.iter_mut().map(|v| visit_strings(v, visit)).sum(),
        Value::Object(object) => {
            let values: usize = object.values_mut().map(|v| visit_strings(v, visit)).sum();
            values + visit_keys(object, visit)
        }
        _ => 0,
    }
}

/// Hands `visit` each key of `object`; a key it changes is renamed (when two keys become one,
/// the last value stays).
fn visit_keys(
    object: &mut Map<String, Value>,
    visit: &mut dyn FnMut(&mut String) -> usize,
) -> usize {
    let mut count = 0;
    let mut renamed = Vec::new();
    for key in object.keys() {
        let mut new_key = key.clone();
        let changed = visit(&mut new_key);
        if changed > 0 {
            count += changed;
            renamed.push((key.clone(), new_key));
        }
    }
    for (old, new) in renamed {
        if let Some(value) = object.remove(&old) {
            object.insert(new, value);
        }
    }
    count
}

/// One content block, checked: `text`; `image` and `audio` with base64 `data` and a `mimeType`;
/// `resource_link` with `uri` and `name`; `resource` with `{uri, mimeType?, text | blob}`; each
/// with optional `annotations` and `_meta` objects. What each kind needs is [`BLOCKS`]'.
pub fn check_block(block: Value) -> Result<Content, String> {
    let Value::Object(block) = block else {
        return Err("a content block must be an object".into());
    };
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(known) = block_kind(kind) else {
        return Err(format!(
            "unknown content type '{kind}' (text, image, audio, resource_link or resource)"
        ));
    };
    let string = |key: &str| block.get(key).and_then(Value::as_str);
    if let Some(missing) = known.required.iter().find(|key| string(key).is_none()) {
        return Err(format!("a {kind} block needs '{missing}', a string"));
    }
    let objects = ["annotations", "_meta"];
    if let Some(key) = objects
        .iter()
        .find(|key| block.get(**key).is_some_and(|v| !v.is_object()))
    {
        return Err(format!("'{key}' must be an object"));
    }
    // Every binary field there (a string) is base64.
    let text_at = |path: &&[&str]| field(&block, path).and_then(Value::as_str);
    let binary_ok = known
        .binary
        .iter()
        .all(|path| text_at(path).is_none_or(|data| is_base64(Some(data))));
    let media = |mime: Option<&str>| mime.is_some_and(|m| m.contains('/'));
    match kind {
        "image" | "audio" if !binary_ok => return Err("'data' is not base64".into()),
        "image" | "audio" if !media(string("mimeType")) => {
            return Err("'mimeType' must be a media type like image/png".into())
        }
        "resource" => {
            // `resource.text` or `resource.blob`, not both.
            let has = |paths: &[&[&str]]| paths.iter().any(|path| text_at(path).is_some());
            let valid = text_at(&&["resource", "uri"][..]).is_some()
                && has(known.text) != has(known.binary)
                && binary_ok;
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

    /// Every string of a block but its `type` and base64 binary fields is text, keys included; a
    /// binary field that is not base64 is text; of a kind the table does not know, every string.
    #[test]
    fn the_table_says_which_strings_are_text() {
        assert_eq!(
            BLOCKS[0].kind, "text",
            "Content::as_text reads the first row"
        );
        // Marks every string it is handed that starts with `p` (as a redaction would replace it).
        let mark = &mut |text: &mut String| {
            if !text.starts_with('p') {
                return 0;
            }
            text.insert(0, '!');
            1
        };
        let mut visited = |block: Value| {
            let Value::Object(mut block) = block else {
                unreachable!()
            };
            let count = visit_text_mut(&mut block, mark);
            (count, Value::Object(block))
        };
        let (count, image) = visited(json!({"type": "image", "data": "cGlp", "mimeType": "png",
            "annotations": {"audience": ["pa"]}, "_meta": {"pk": "pn"}}));
        assert_eq!(count, 4, "{image}");
        assert_eq!(image["data"], "cGlp", "base64 is binary: left alone");
        assert_eq!(image["type"], "image");
        assert_eq!(image["mimeType"], "!png");
        assert_eq!(image["annotations"]["audience"], json!(["!pa"]));
        assert_eq!(image["_meta"], json!({"!pk": "!pn"}), "keys are text too");
        let (count, image) = visited(json!({"type": "image", "data": "pii@example.com",
            "mimeType": "image/png"}));
        assert_eq!(count, 1, "{image}");
        assert_eq!(image["data"], "!pii@example.com", "not base64: text");
        let (count, resource) = visited(json!({"type": "resource",
            "resource": {"uri": "pu", "blob": "AAEC", "text": "pt"}}));
        assert_eq!(count, 2, "{resource}");
        assert_eq!(
            resource["resource"],
            json!({"uri": "!pu", "blob": "AAEC", "text": "!pt"})
        );
        let (count, unknown) = visited(json!({"type": "pvideo", "data": "pdata",
            "transcript": {"lines": ["pa", 1]}}));
        assert_eq!(count, 3, "{unknown}");
        assert_eq!(unknown["type"], "!pvideo");
        assert_eq!(
            unknown["data"], "!pdata",
            "an unknown kind has no binary fields"
        );
        assert_eq!(unknown["transcript"]["lines"], json!(["!pa", 1]));
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
