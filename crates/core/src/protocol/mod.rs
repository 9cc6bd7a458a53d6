//! The wire protocol between a page and the agent runtime (SPEC §6).
//!
//! JSON-RPC 2.0 text frames speaking the Model Context Protocol (revision [`PROTOCOL_VERSION`]) with
//! the **page as the MCP server**. Both sides decode frames with [`decode`], which never panics and
//! never recurses without bound (serde_json stops at 128 levels), and answers malformed input with
//! the JSON-RPC error the peer should receive.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tape::DetachedTokens;

/// The MCP revision spoken between page and runtime.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
pub use crate::limits::{MAX_FRAME_BYTES, MAX_FRAME_DEPTH};

mod call_frame;
pub mod content;
#[cfg(feature = "runtime")]
mod page_answer;
pub mod trace_context;
pub(crate) mod wire_object;

pub use call_frame::encode_tool_call;
#[cfg(feature = "runtime")]
pub use page_answer::read_answer;
pub use trace_context::TraceContext;

/// `_meta` keys of the client-tools extensions.
pub mod meta {
    pub const ORIGINAL_NAME: &str = "clienttools/originalName";
    pub const KIND: &str = "clienttools/kind";
    pub const INPUT_SCHEMA: &str = "clienttools/inputSchema";
    pub const OUTPUT_SCHEMA: &str = "clienttools/outputSchema";
    pub const REQUIRE_CONFIRMATION: &str = "clienttools/requireConfirmation";
    pub const TIMEOUT_MS: &str = "clienttools/timeoutMs";
    pub const MODIFIED_INPUT: &str = "clienttools/modifiedInput";
    /// On a tool call's result: the tool's annotations say `untrustedContentHint: true` (its
    /// results hold content it does not vouch for). Only ever `true`: the page and the bridge set
    /// it over whatever a handler put there (SPEC §7).
    pub const UNTRUSTED: &str = "clienttools/untrusted";
    /// On a call for an agent-defined tool: what the page does when no handler answers it
    /// (`"form"`: the result form, SPEC §7).
    pub const FALLBACK: &str = "clienttools/fallback";
    /// Set only by the runtime (the bridge strips it from what agents send): the person at the agent
    /// already confirmed this call (`"agent"`), so the page does not ask again (SPEC §7).
    pub const CONFIRMED_BY: &str = "clienttools/confirmedBy";
    /// On a call for an agent-defined tool: its title and description, so the page's dialog and
    /// result form can say who asks (the page has no definition of its own for it).
    pub const TITLE: &str = "clienttools/title";
    pub const DESCRIPTION: &str = "clienttools/description";
    /// On a page's own request (`clienttools/input`) or log message: the call (its `tools/call` id)
    /// it belongs to.
    pub const CALL_ID: &str = "clienttools/callId";
    /// On `tools/call`: the least severe log level the agent wants (`logging/setLevel`); absent:
    /// every level.
    pub const LOG_LEVEL: &str = "clienttools/logLevel";
    /// On `notifications/cancelled` (`true`): the runtime asks for the call's answer after all —
    /// an error result saying it was cancelled, carrying the handler's partial value when there
    /// is one (`ctx.partial`) — the one exception to "no result after a cancel" (SPEC §5), asked
    /// for by the runtime itself.
    pub const ANSWER: &str = "clienttools/answer";
    /// On an agent's `tools/call` over a user's tabs (SPEC §13): the page session to run it on
    /// (read by the runtime, never sent to the page).
    pub const SESSION: &str = "clienttools/session";
    /// On a tool listed over a user's tabs: the page sessions offering it, most recently in front
    /// first.
    pub const SESSIONS: &str = "clienttools/sessions";
}

/// JSON-RPC method names used on the page connection.
pub mod method {
    pub const INITIALIZE: &str = "initialize";
    pub const INITIALIZED: &str = "notifications/initialized";
    pub const PING: &str = "ping";
    pub const TOOLS_LIST: &str = "tools/list";
    pub const TOOLS_CALL: &str = "tools/call";
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    pub const CANCELLED: &str = "notifications/cancelled";
    pub const PROGRESS: &str = "notifications/progress";
    /// A log message (`ctx.log`).
    pub const MESSAGE: &str = "notifications/message";
    /// The page's own request: a round of requests for the agent (`{inputRequests, _meta}`),
    /// answered with `{inputResponses}` (SPEC §6).
    pub const INPUT: &str = "clienttools/input";
    /// What a handler may ask the agent mid-call (SPEC §4, §6).
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    pub const ROOTS_LIST: &str = "roots/list";
    /// What the page serves besides tools (SPEC §11): requests the engine runs like calls, with
    /// the page's server (`pageServer` in `src/js.js`) as their handler.
    pub const SERVED: [&str; 8] = [
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
    ];
}

/// JSON-RPC error codes.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// MCP: the request needs a capability the client did not declare (`data.requiredCapabilities`).
    pub const MISSING_CAPABILITY: i64 = -32021;
    /// No answer in time (an implementation-defined server error).
    pub const REQUEST_TIMEOUT: i64 = -32001;
}

/// A JSON-RPC request id: a number or a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(i64),
    String(String),
}

/// Read as an untagged enum would — a string, or an integer that fits an `i64` — without serde's
/// buffering of the value to try one variant after the other (its code is a few KB of the wasm
/// module, and this is every frame's id).
impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RequestIdVisitor)
    }
}

struct RequestIdVisitor;

impl serde::de::Visitor<'_> for RequestIdVisitor {
    type Value = RequestId;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string or an integer")
    }

    fn visit_i64<E>(self, n: i64) -> Result<RequestId, E> {
        Ok(RequestId::Number(n))
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<RequestId, E> {
        i64::try_from(n)
            .map(RequestId::Number)
            .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(n), &self))
    }

    fn visit_str<E>(self, text: &str) -> Result<RequestId, E> {
        Ok(RequestId::String(text.to_owned()))
    }
}

impl RequestId {
    /// An id as [`Deserialize`] reads it, from a node of the tape a frame was read into.
    pub fn from_tape(node: crate::tape::TapeNode<'_>) -> Option<Self> {
        match node.string() {
            Some(text) => Some(Self::String(text.into_owned())),
            None => node.integer().map(Self::Number),
        }
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// A decoded frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: RequestId,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Response {
        id: RequestId,
        result: Result<Value, RpcError>,
    },
}

/// Why a frame could not be decoded, and what to answer: the error response goes to `id`
/// (`None` → JSON-RPC `null`, when the id itself could not be read).
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    pub id: Option<RequestId>,
    pub error: RpcError,
    /// The frame was (or looked like) a response: it is never answered, or two peers that cannot
    /// read each other's errors would answer each other forever (SPEC §6).
    pub was_response: bool,
}

impl DecodeError {
    fn new(id: Option<RequestId>, code: i64, message: impl Into<String>) -> Self {
        Self {
            id,
            error: RpcError::new(code, message),
            was_response: false,
        }
    }

    fn response(mut self) -> Self {
        self.was_response = true;
        self
    }

    /// The error response frame to send back; `None` when the malformed frame was a response.
    pub fn to_frame(&self) -> Option<String> {
        (!self.was_response).then(|| encode_error(self.id.as_ref(), &self.error))
    }
}

/// Why a frame may not be sent: the receiving side would refuse it ([`decode`]'s limits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameLimit {
    /// Longer than [`MAX_FRAME_BYTES`]; the frame's length in bytes.
    TooLarge(usize),
    /// Nested deeper than [`MAX_FRAME_DEPTH`] (the JSON-RPC envelope counts).
    TooDeep,
}

impl std::fmt::Display for FrameLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameLimit::TooLarge(bytes) => write!(
                f,
                "the frame would be {bytes} bytes, over the limit of {MAX_FRAME_BYTES} bytes"
            ),
            FrameLimit::TooDeep => write!(
                f,
                "the frame would be nested more than {MAX_FRAME_DEPTH} levels deep \
                 (the JSON-RPC envelope included), over the limit"
            ),
        }
    }
}

/// Whether the other side's [`decode`] would accept `frame` (the same rules, applied before sending:
/// a side never sends a frame the other side would refuse).
pub fn check_outgoing(frame: &str) -> Result<(), FrameLimit> {
    if frame.len() > MAX_FRAME_BYTES {
        return Err(FrameLimit::TooLarge(frame.len()));
    }
    if nesting_depth(frame) >= MAX_FRAME_DEPTH {
        return Err(FrameLimit::TooDeep);
    }
    Ok(())
}

/// The deepest nesting of arrays and objects in a JSON text (brackets inside strings ignored).
fn nesting_depth(json: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for byte in json.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Decodes one text frame; every failure says what was wrong.
pub fn decode(text: &str) -> Result<Message, DecodeError> {
    if text.len() > MAX_FRAME_BYTES {
        return Err(DecodeError::new(
            None,
            code::INVALID_REQUEST,
            format!(
                "frame of {} bytes is larger than the limit of {MAX_FRAME_BYTES} bytes",
                text.len()
            ),
        ));
    }
    let value: Value = serde_json::from_str(text).map_err(|error| {
        DecodeError::new(None, code::PARSE_ERROR, format!("parse error: {error}"))
    })?;
    decode_value(value)
}

/// A message without `method` that carries `result` or `error` is a response, however malformed.
fn looks_like_response(object: &Map<String, Value>) -> bool {
    !object.contains_key("method")
        && (object.contains_key("result") || object.contains_key("error"))
}

/// Classifies an already parsed JSON-RPC message.
pub fn decode_value(value: Value) -> Result<Message, DecodeError> {
    let Value::Object(mut object) = value else {
        return Err(DecodeError::new(
            None,
            code::INVALID_REQUEST,
            "invalid request: a JSON-RPC message must be an object (batches are not supported)",
        ));
    };
    let response = looks_like_response(&object);
    let mark = |error: DecodeError| if response { error.response() } else { error };
    let id = match object.remove("id") {
        None => None,
        Some(raw) => Some(serde_json::from_value::<RequestId>(raw).map_err(|_| {
            mark(DecodeError::new(
                None,
                code::INVALID_REQUEST,
                "invalid request: 'id' must be a string or an integer",
            ))
        })?),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(mark(DecodeError::new(
            id,
            code::INVALID_REQUEST,
            "invalid request: 'jsonrpc' must be \"2.0\"",
        )));
    }
    if let Some(method) = object.remove("method") {
        let Value::String(method) = method else {
            return Err(DecodeError::new(
                id,
                code::INVALID_REQUEST,
                "invalid request: 'method' must be a string",
            ));
        };
        let params = object.remove("params").unwrap_or(Value::Null);
        if !(params.is_object() || params.is_null()) {
            return Err(DecodeError::new(
                id,
                code::INVALID_REQUEST,
                "invalid request: 'params' must be an object",
            ));
        }
        return Ok(match id {
            Some(id) => Message::Request { id, method, params },
            None => Message::Notification { method, params },
        });
    }
    let Some(id) = id else {
        return Err(mark(DecodeError::new(
            None,
            code::INVALID_REQUEST,
            "invalid request: neither a request ('method') nor a response ('id')",
        )));
    };
    let result = match (object.remove("result"), object.remove("error")) {
        (Some(result), None) => Ok(result),
        (None, Some(error)) => Err(RpcError::from_value(error).map_err(|e| {
            DecodeError::new(
                None,
                code::INVALID_REQUEST,
                format!("invalid error object: {e}"),
            )
            .response()
        })?),
        (Some(_), Some(_)) => {
            return Err(DecodeError::new(
                None,
                code::INVALID_REQUEST,
                "invalid response: exactly one of 'result' and 'error' is required",
            )
            .response())
        }
        (None, None) => return Err(DecodeError::new(
            None,
            code::INVALID_REQUEST,
            "invalid request: neither a request ('method') nor a response ('result' or 'error')",
        )),
    };
    Ok(Message::Response { id, result })
}

pub fn encode_request(id: &RequestId, method: &str, params: &impl Serialize) -> String {
    envelope(Some(&to_json(id)), Some(method), "params", &to_json(params))
}

pub fn encode_notification(method: &str, params: &impl Serialize) -> String {
    envelope(None, Some(method), "params", &to_json(params))
}

/// A JSON-RPC message's text, written from its members' JSON text: `jsonrpc`, then `id` (absent:
/// a notification), `method`, and the `params`, `result` or `error` member. Every encoder above
/// and below writes through it; as [`encode_call_result`] does, it writes text instead of a
/// `json!` object: in the browser package (`preserve_order`) the text is the same byte for byte,
/// natively the members come in this order instead of sorted. The module is smaller so (issue 35:
/// the `json!` object, built in full for each params type, was ten copies of one function,
/// 4.6 KB before wasm-opt; 1.1 KB gzip of the package with the copies' `to_value`).
fn envelope(id: Option<&str>, method: Option<&str>, member: &str, value: &str) -> String {
    let id = id.map(|id| format!(r#","id":{id}"#)).unwrap_or_default();
    let method = method.map(|method| format!(r#","method":{}"#, to_json(&method)));
    let method = method.unwrap_or_default();
    format!(r#"{{"jsonrpc":"2.0"{id}{method},"{member}":{value}}}"#)
}

/// `value` as JSON text (a map with keys other than strings is a bug).
fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("a message's members serialize to JSON")
}

/// The answer to a request that asks nothing of either side's state — `ping` (an empty result) — or
/// that neither side serves (`-32601`, naming the method): one answer for the page and the bridge.
pub fn answer_plain_request(id: &RequestId, method: &str) -> String {
    if method == method::PING {
        return encode_result(id, &serde_json::json!({}));
    }
    let error = RpcError::new(
        code::METHOD_NOT_FOUND,
        format!("method not found: {method}"),
    );
    encode_error(Some(id), &error)
}

pub fn encode_result(id: &RequestId, result: &impl Serialize) -> String {
    envelope(Some(&to_json(id)), None, "result", &to_json(result))
}

/// [`encode_result`] of a call's result, written straight to text: `json!` first copies the result
/// into a `Value` (a fifth of a small call's cost on the page: BENCHMARKS.md, issue 25). In the
/// browser package, whose serde_json keeps members in order (`preserve_order`), the text is the
/// same byte for byte; natively the members come in declaration order instead of sorted.
pub fn encode_call_result(id: &RequestId, result: &CallToolResult) -> String {
    #[derive(Serialize)]
    struct Response<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        result: &'a CallToolResult,
    }
    let response = Response {
        jsonrpc: "2.0",
        id,
        result,
    };
    serde_json::to_string(&response).expect("a call result serializes (its map keys are strings)")
}

pub fn encode_error(id: Option<&RequestId>, error: &RpcError) -> String {
    envelope(Some(&to_json(&id)), None, "error", &to_json(error))
}

/// A tool as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// `{"taskSupport": "optional" | "required"}` (absent: `forbidden`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Value>,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl Tool {
    /// The page's original name (`_meta` `clienttools/originalName`), else the tool name.
    pub fn original_name(&self) -> &str {
        self.meta
            .as_ref()
            .and_then(|m| m.get(meta::ORIGINAL_NAME))
            .and_then(Value::as_str)
            .unwrap_or(&self.name)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsListResult {
    pub tools: Vec<Tool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolParams {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl CallToolParams {
    pub fn meta_value(&self, key: &str) -> Option<&Value> {
        self.meta.as_ref().and_then(|m| m.get(key))
    }
}

/// A well-formed `tools/call` request read without building its arguments: its id, its params
/// (`arguments: None`) and the arguments' text as it stands in the frame (`None`: absent or
/// `null`). The fast path of the page's hot frame, one pass of [`crate::tape`] over the text;
/// `None` sends the frame through [`decode`] (any frame that is not exactly this shape, or that
/// names a member twice or with escapes, or has an object of more than 32 members anywhere, whose
/// names the tape does not check for repeats), which reads it the same way with a `Value` for the
/// arguments, or reports what is wrong.
pub fn decode_call(frame: &str) -> Option<(RequestId, CallToolParams, Option<&str>)> {
    let (id, params, arguments) = decode_call_read(frame)?;
    Some((id, params, arguments.map(|(text, _)| text)))
}

/// A call's arguments as [`decode_call_read`] found them: their text in the frame, and its tokens.
pub type ReadArguments<'f> = (&'f str, DetachedTokens);

/// [`decode_call`], with the arguments' tokens as the frame's reader read them (validating the
/// arguments then needs no second pass over them).
pub fn decode_call_read(
    frame: &str,
) -> Option<(RequestId, CallToolParams, Option<ReadArguments<'_>>)> {
    if frame.len() > MAX_FRAME_BYTES {
        return None;
    }
    // One pass over the frame: the tape checks the whole text (nesting, escapes, numbers beyond
    // `f64`) as `decode` would and refuses repeated or escaped member names, which only the full
    // decoder reads as `JSON.parse` does. Members other than these four are ignored, as there.
    let tape = crate::tape::Tape::parse(frame).ok()?;
    let request = tape.root();
    fn text_of(node: Option<crate::tape::TapeNode<'_>>) -> Option<std::borrow::Cow<'_, str>> {
        node.and_then(|node| node.string())
    }
    if text_of(request.member("jsonrpc"))? != "2.0"
        || text_of(request.member("method"))? != method::TOOLS_CALL
    {
        return None;
    }
    let id = RequestId::from_tape(request.member("id")?)?;
    let params = request.member("params")?;
    let name = text_of(params.member("name"))?.into_owned();
    let meta = match params.member("_meta") {
        Some(meta) if !meta.is_json_null() => Some(serde_json::from_str(meta.json_text()).ok()?),
        _ => None,
    };
    let arguments = params
        .member("arguments")
        .filter(|arguments| !arguments.is_json_null())
        .map(|arguments| (&frame[arguments.json_span()], arguments.detach()));
    let params = CallToolParams {
        name,
        arguments: None,
        meta,
    };
    Some((id, params, arguments))
}

/// The `params.arguments` of a `tools/call` frame as they stand in its text, so the page can hand
/// them to a handler without serializing the decoded `Value` again. `frame` is one [`decode`]
/// accepted (valid JSON). `None` when absent or `null`, or when a key on the way is written twice or
/// with escapes (then only the decoded `Value` says which one counts).
///
/// A scan, not a parse: serde_json's `raw_value` feature would do it too, but costs the browser
/// package 4 KB gzip (it adds a path to every `Value` map it parses).
pub fn call_arguments_text(frame: &str) -> Option<&str> {
    let params = object_member(frame, "params")?;
    let arguments = object_member(params, "arguments")?;
    (arguments != "null").then_some(arguments)
}

/// The text of member `key` of `object`, a JSON object (valid JSON, whitespace around allowed).
fn object_member<'a>(object: &'a str, key: &str) -> Option<&'a str> {
    let bytes = object.as_bytes();
    let mut at = skip_whitespace(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    let mut found = None;
    loop {
        at = skip_whitespace(bytes, at + 1);
        if bytes.get(at) != Some(&b'"') {
            return found; // `}` (or `{}`): the end
        }
        let name_end = value_end(bytes, at)?;
        let name = bytes.get(at + 1..name_end - 1)?;
        if name.contains(&b'\\') {
            return None;
        }
        // Past the `:`.
        let value_start = skip_whitespace(bytes, skip_whitespace(bytes, name_end) + 1);
        at = value_end(bytes, value_start)?;
        if name == key.as_bytes() {
            if found.is_some() {
                return None;
            }
            found = object.get(value_start..at);
        }
        // At the `,` or `}`.
        at = skip_whitespace(bytes, at);
    }
}

fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// The index after the JSON value that starts at `start` (brackets inside strings ignored).
fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (offset, &byte) in bytes.get(start..)?.iter().enumerate() {
        let at = start + offset;
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' if depth == 0 => return Some(at + 1),
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth == 1 => return Some(at + 1),
            b']' | b'}' if depth > 1 => depth -= 1,
            b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => return Some(at),
            _ => {}
        }
    }
    (depth == 0 && !in_string).then_some(bytes.len())
}

/// A content block of a result (MCP): plain text, or any other block (image, audio, resource
/// link, embedded resource, or text with annotations) kept exactly as it was given once
/// [`content::check_block`] accepted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(TextContent),
    Block(Map<String, Value>),
}

/// `{"type": "text", "text": …}`, nothing else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextContent {
    #[serde(rename = "type")]
    kind: TextTag,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum TextTag {
    Text,
}

impl Content {
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(TextContent {
            kind: TextTag::Text,
            text: text.into(),
        })
    }

    /// The text of a text block (plain, or with annotations): its field in [`content::BLOCKS`].
    pub fn as_text(&self) -> Option<&str> {
        let text = &content::BLOCKS[0];
        match self {
            Content::Text(block) => Some(&block.text),
            Content::Block(block)
                if block.get("type").and_then(Value::as_str) == Some(text.kind) =>
            {
                block.get(text.text[0][0]).and_then(Value::as_str)
            }
            Content::Block(_) => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    pub content: Vec<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    #[serde(default)]
    pub is_error: bool,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl CallToolResult {
    /// A successful result (SPEC §4): a string becomes text content; an object becomes structured
    /// content plus its JSON text. Other JSON values (numbers, arrays, `null`) travel as their JSON
    /// text only, because MCP requires `structuredContent` to be an object.
    pub fn success(value: Value) -> Self {
        let (text, structured_content) = match value {
            Value::String(text) => (text, None),
            Value::Object(_) => (value.to_string(), Some(value)),
            other => (other.to_string(), None),
        };
        Self {
            content: vec![Content::text(text)],
            structured_content,
            is_error: false,
            meta: None,
        }
    }

    /// An error result carrying `message` as its text.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(message)],
            structured_content: None,
            is_error: true,
            meta: None,
        }
    }

    /// The text of the first text content block.
    pub fn text(&self) -> &str {
        self.content.iter().find_map(Content::as_text).unwrap_or("")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams {
    pub request_id: RequestId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams {
    pub progress_token: Value,
    pub progress: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ProgressParams {
    /// This report moved above `base`, the progress already reported on the call (while a person
    /// decided, SPEC §5): MCP progress must only increase, so the value and the total both go
    /// up by `base`. The one offset rule of a call's progress, for the page and the runtime.
    pub fn above(mut self, base: f64) -> Self {
        self.progress += base;
        self.total = self.total.map(|total| total + base);
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    pub protocol_version: String,
    #[serde(default)]
    pub capabilities: Value,
    pub client_info: Implementation,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub protocol_version: String,
    pub capabilities: Value,
    pub server_info: Implementation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The encoders' text: members in this order (as the browser package's `json!` wrote them),
    /// strings escaped, a missing id `null`.
    #[test]
    fn encoders_write_each_member_once_in_order() {
        let id = RequestId::String("b\"1".into());
        let params = ProgressParams {
            progress_token: json!(7),
            progress: 0.5,
            total: None,
            message: Some("é\n".into()),
        };
        assert_eq!(
            encode_request(&id, "tools/\"call", &json!({"a": [1, null]})),
            r#"{"jsonrpc":"2.0","id":"b\"1","method":"tools/\"call","params":{"a":[1,null]}}"#
        );
        assert_eq!(
            encode_notification(method::PROGRESS, &params),
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":0.5,"message":"é\n"}}"#
        );
        assert_eq!(
            encode_result(&RequestId::Number(-3), &json!({})),
            r#"{"jsonrpc":"2.0","id":-3,"result":{}}"#
        );
        assert_eq!(
            encode_error(None, &RpcError::new(code::PARSE_ERROR, "bad")),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#
        );
        for frame in [
            encode_request(&id, "m", &json!(null)),
            encode_notification("m", &params),
            encode_error(Some(&id), &RpcError::new(1, "x")),
        ] {
            assert!(decode(&frame).is_ok(), "{frame}");
        }
    }

    #[test]
    fn decodes_requests_notifications_and_responses() {
        let request = decode(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#).unwrap();
        assert_eq!(
            request,
            Message::Request {
                id: RequestId::Number(7),
                method: "tools/list".into(),
                params: Value::Null
            }
        );
        let note = decode(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(note, Message::Notification { .. }));
        let response = decode(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap();
        assert_eq!(
            response,
            Message::Response {
                id: RequestId::String("a".into()),
                result: Ok(json!({}))
            }
        );
    }

    #[test]
    fn malformed_frames_get_the_right_error_code() {
        assert_eq!(decode("{").unwrap_err().error.code, code::PARSE_ERROR);
        assert_eq!(decode("[]").unwrap_err().error.code, code::INVALID_REQUEST);
        let missing_version = decode(r#"{"id":1,"method":"x"}"#).unwrap_err();
        assert_eq!(missing_version.error.code, code::INVALID_REQUEST);
        assert_eq!(missing_version.id, Some(RequestId::Number(1)));
        assert_eq!(
            decode(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#)
                .unwrap_err()
                .error
                .code,
            code::INVALID_REQUEST
        );
        assert_eq!(
            decode(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#)
                .unwrap_err()
                .error
                .code,
            code::INVALID_REQUEST
        );
    }

    #[test]
    fn oversized_and_deeply_nested_frames_are_refused_without_overflow() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","method":"x","params":{{"s":"{}"}}}}"#,
            "a".repeat(MAX_FRAME_BYTES)
        );
        let error = decode(&big).unwrap_err();
        assert!(
            error.error.message.contains("larger than the limit"),
            "{}",
            error.error.message
        );
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(
            decode(&deep[..MAX_FRAME_BYTES.min(deep.len())])
                .unwrap_err()
                .error
                .code,
            code::PARSE_ERROR
        );
    }

    #[test]
    fn malformed_responses_are_never_answered() {
        for frame in [
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":"not an object"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"no id"}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
        ] {
            let error = decode(frame).unwrap_err();
            assert!(error.was_response, "{frame}");
            assert_eq!(error.to_frame(), None, "{frame}");
        }
        // What each side answers a request it cannot read is itself a response: never answered.
        for request in ["{", "[1]", r#"{"jsonrpc":"2.0","id":[],"method":"x"}"#] {
            let answer = decode(request)
                .unwrap_err()
                .to_frame()
                .expect("requests are answered");
            assert_eq!(decode(&answer).unwrap_err().to_frame(), None, "{answer}");
        }
    }

    #[test]
    fn outgoing_frames_are_checked_against_the_receivers_limits() {
        let nested = |levels: usize| {
            let arguments = format!("{}{}", "[".repeat(levels), "]".repeat(levels));
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"arguments":{arguments}}}}}"#
            )
        };
        // The deepest frame decode accepts passes the check; one level more fails both.
        let deepest_accepted = (1..200)
            .take_while(|&n| decode(&nested(n)).is_ok())
            .last()
            .unwrap();
        assert!(check_outgoing(&nested(deepest_accepted)).is_ok());
        assert_eq!(
            check_outgoing(&nested(deepest_accepted + 1)),
            Err(FrameLimit::TooDeep)
        );
        assert!(decode(&nested(deepest_accepted + 1)).is_err());
        // Brackets in strings do not count.
        assert!(check_outgoing(&format!(r#"{{"s":"{}\"["}}"#, "[".repeat(500))).is_ok());
        let big = format!(r#"{{"s":"{}"}}"#, "a".repeat(MAX_FRAME_BYTES));
        assert!(matches!(check_outgoing(&big), Err(FrameLimit::TooLarge(_))));
    }

    #[test]
    fn a_call_result_written_straight_is_the_result_json_writes() {
        let results = [
            CallToolResult::error("no"),
            serde_json::from_value::<CallToolResult>(serde_json::json!({
                "content": [{"type": "text", "text": "{\"b\":1,\"a\":[1.5,null]}"}],
                "structuredContent": {"b": 1, "a": [1.5, null]},
                "isError": false
            }))
            .unwrap(),
        ];
        for id in [RequestId::Number(-3), RequestId::String("x\"y".into())] {
            for result in &results {
                let straight: Value =
                    serde_json::from_str(&encode_call_result(&id, result)).unwrap();
                let via_json: Value = serde_json::from_str(&encode_result(&id, result)).unwrap();
                assert_eq!(straight, via_json);
            }
        }
    }

    #[test]
    fn an_id_read_from_the_tape_is_the_id_serde_reads() {
        let ids = [
            "0",
            "-0",
            "7",
            "-7",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "18446744073709551616",
            "1.0",
            "1e2",
            "-1.5",
            r#""a""#,
            r#""a\"b""#,
            r#""\u00e9""#,
            r#""""#,
            "null",
            "true",
            "[]",
            "{}",
        ];
        for id in ids {
            let tape = crate::tape::Tape::parse(id).unwrap();
            let serde = serde_json::from_str::<RequestId>(id).ok();
            assert_eq!(RequestId::from_tape(tape.root()), serde, "{id}");
        }
    }

    #[test]
    fn a_call_read_without_its_arguments_is_the_call_decode_reads() {
        let frames = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,{"b":"}"}]},"_meta":{"progressToken":3}}}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":7},"extra":1}"#,
            // Whitespace anywhere, escapes in values (not in member names), `_meta: null`.
            " { \"jsonrpc\" : \"2.0\" , \"id\" : \"a\\\"b\" , \"method\" : \"tools\\/call\" , \"params\" : { \"name\" : \"t\\u0041\" , \"_meta\" : null , \"arguments\" : { \"k\" : \"v\\n\" } } } ",
        ];
        for frame in frames {
            let (id, params, arguments) = decode_call(frame).expect(frame);
            let Ok(Message::Request {
                id: slow_id,
                method,
                params: slow,
            }) = decode(frame)
            else {
                panic!("{frame} is a request");
            };
            assert_eq!((id, method.as_str()), (slow_id, method::TOOLS_CALL));
            let slow: CallToolParams = serde_json::from_value(slow).unwrap();
            assert_eq!(
                (params.name, params.meta),
                (slow.name, slow.meta),
                "{frame}"
            );
            let arguments = arguments.map(|text| serde_json::from_str::<Value>(text).unwrap());
            assert_eq!(arguments, slow.arguments, "{frame}");
        }
        // Anything else takes the full path, which reads it or says what is wrong.
        for frame in [
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","name":"u"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"arguments":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":"\ud800"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1e400}}}"#,
            "not json",
        ] {
            assert!(decode_call(frame).is_none(), "{frame}");
            assert!(
                decode(frame).is_err() || !frame.contains("arguments\":{\"a"),
                "{frame}"
            );
        }
        // Nesting: up to what `decode` takes, and no further.
        let nested = |levels: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{}{}}}}}"#,
                "[".repeat(levels),
                "]".repeat(levels)
            )
        };
        for levels in [124, 125, 126, 127] {
            let frame = nested(levels);
            assert_eq!(
                decode_call(&frame).is_some(),
                decode(&frame).is_ok(),
                "{levels} levels"
            );
        }
    }

    #[test]
    fn call_arguments_are_found_in_the_frame_text() {
        let frame = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{},"arguments": {"a" : [1, 2.0]},"name":"t"}}"#;
        assert_eq!(call_arguments_text(frame), Some(r#"{"a" : [1, 2.0]}"#));
        let absent = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#;
        assert_eq!(call_arguments_text(absent), None);
        let null = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":null}}"#;
        assert_eq!(call_arguments_text(null), None);
        let twice = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{},"arguments":[]}}"#;
        assert_eq!(call_arguments_text(twice), None);
        let escaped =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"\u0061rguments":[]}}"#;
        assert_eq!(call_arguments_text(escaped), None);
        let tricky = r#"{"jsonrpc":"2.0","method":"x","params" : {"name":"t}\"{","arguments":["]\\",{"x":"}"}] ,"_meta":{}}, "id":1}"#;
        assert_eq!(call_arguments_text(tricky), Some(r#"["]\\",{"x":"}"}]"#));
        assert_eq!(
            call_arguments_text(r#"{"params":{"arguments":7}}"#),
            Some("7")
        );
        // Whatever it finds is what `decode` read.
        for frame in [frame, tricky] {
            let Message::Request { params, .. } = decode(frame).unwrap() else {
                panic!("{frame} is a request");
            };
            let found: Value = serde_json::from_str(call_arguments_text(frame).unwrap()).unwrap();
            assert_eq!(Some(&found), params.get("arguments"));
        }
    }

    #[test]
    fn results_follow_the_text_or_structured_rule() {
        let text = CallToolResult::success(json!("hello"));
        assert_eq!(text.text(), "hello");
        assert_eq!(text.structured_content, None);
        let structured = CallToolResult::success(json!({"a": 1}));
        assert_eq!(structured.text(), r#"{"a":1}"#);
        assert_eq!(structured.structured_content, Some(json!({"a": 1})));
        let array = CallToolResult::success(json!([1, 2]));
        assert_eq!(array.text(), "[1,2]");
        assert_eq!(array.structured_content, None);
        let wire = serde_json::to_value(CallToolResult::error("boom")).unwrap();
        assert_eq!(
            wire,
            json!({"content":[{"type":"text","text":"boom"}],"isError":true})
        );
    }

    #[test]
    fn progress_above_a_human_wait_keeps_increasing() {
        let report = |progress, total| ProgressParams {
            progress_token: json!("t"),
            progress,
            total,
            message: None,
        };
        assert_eq!(report(1.0, Some(4.0)).above(3.0), report(4.0, Some(7.0)));
        assert_eq!(report(0.5, None).above(3.0), report(3.5, None));
        assert_eq!(report(2.0, Some(2.0)).above(0.0), report(2.0, Some(2.0)));
    }
}
