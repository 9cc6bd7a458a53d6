//! How a page opens its connection (SPEC §6, §9): the first frame on the socket, before MCP starts.
//!
//! Credentials never travel in the URL (logs, HAR files, `Referer`): the page's first frame is a
//! JSON-RPC request [`CONNECT`] carrying the page token and, when resuming, the resume secret. The
//! runtime answers with the session id and the secret to keep (in `sessionStorage`), or with an
//! error ([`code::UNAUTHORIZED`], [`code::BAD_HANDSHAKE`]) and closes the socket. Only then does the
//! runtime start MCP (`initialize`).
//!
//! The session id is derived from the resume secret by the runtime (a hash): whoever holds the secret
//! owns the id, across reconnects and runtime restarts, and nobody can claim an id without it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::wire_object::{string, WireObject};
use crate::protocol::{self, encode_error, encode_request, Message, RequestId, RpcError};
use crate::tape::Tape;

/// The method of the page's first frame.
pub const CONNECT: &str = "clienttools/connect";
/// The request id the page uses for it.
pub const CONNECT_ID: &str = "clienttools-connect";
pub use crate::limits::CONNECT_TIMEOUT_MS;

/// Error codes of a refused connect (JSON-RPC implementation-defined range).
pub mod code {
    /// The page token is missing or wrong.
    pub const UNAUTHORIZED: i64 = -32001;
    /// The first frame was not a well-formed [`super::CONNECT`] request.
    pub const BAD_HANDSHAKE: i64 = -32002;
    /// The runtime is at one of its limits (its session table is full).
    pub const OVERLOADED: i64 = -32003;
}

/// `Debug` never shows the token or the secret (they must stay out of logs).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectParams {
    /// The page token (`--page-token` of the bridge), when the runtime requires one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The secret of the session to resume (from an earlier [`ConnectResult`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_secret: Option<String>,
}

/// `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectResult {
    /// The page session id agents name (public: listed to agents).
    pub session_id: String,
    /// The secret that resumes this session (private to the page: keep it out of URLs and logs).
    pub resume_secret: String,
    /// Whether an existing session was resumed (`false`: a new session; state the page kept for an
    /// earlier session, such as interrupted call ids, no longer applies).
    pub resumed: bool,
    /// With a signed page token (SPEC §13): the user it names (`sub`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// With a signed page token: how long it is valid from now, in ms (the page refreshes it
    /// before: [`refresh_after`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_expires_in_ms: Option<u64>,
}

/// Close code of a connection whose signed page token lapsed unrefreshed (RFC 6455's private
/// range): the page fetches a new token and reconnects at once.
pub const CLOSE_TOKEN_EXPIRED: u16 = 4001;
/// Close code of a connection whose refreshed token named another user.
pub const CLOSE_OTHER_USER: u16 = 4003;

/// The page's request for a fresh signed token on its open connection: `{token}` →
/// `{tokenExpiresInMs}`, or an error ([`code::UNAUTHORIZED`]).
pub const TOKEN_REFRESH: &str = "clienttools/token";
/// Its ids: `clienttools-token-<n>`.
const TOKEN_ID_PREFIX: &str = "clienttools-token-";
/// A refresh that failed (or got no answer) is tried again this much later.
pub const TOKEN_RETRY_MS: u64 = 10_000;
/// A token is refreshed at least this long before it expires (or at half its life, if shorter).
pub const TOKEN_REFRESH_MARGIN_MS: u64 = 30_000;

/// The id of the page's `clienttools/token` request number `n`.
fn token_request_id(n: u64) -> String {
    format!("{TOKEN_ID_PREFIX}{n}")
}

/// The page's `clienttools/token` request number `n`.
pub fn encode_token_refresh(n: u64, token: &str) -> String {
    let id = RequestId::String(token_request_id(n));
    encode_request(&id, TOKEN_REFRESH, &serde_json::json!({ "token": token }))
}

/// Whether a frame is the runtime's answer to the page's `clienttools/token` request number `n`
/// (from 1): a response (no `method`) whose `id` is exactly that request's. Decided on the parsed
/// frame, never on its text: an answer to another of the page's requests (an agent's answer to an
/// elicitation) may hold any text, this id's included.
pub fn is_token_answer(text: &str, n: u64) -> bool {
    // Most frames do not hold the id's prefix anywhere: they are spared the parse.
    if n == 0 || !text.contains(TOKEN_ID_PREFIX) {
        return false;
    }
    let Ok(tape) = Tape::parse(text) else {
        return false;
    };
    let frame = tape.root();
    let id = frame.member("id").and_then(|id| id.string());
    frame.member("method").is_none() && id.is_some_and(|id| id == token_request_id(n))
}

/// The fresh token's lifetime in ms, or the runtime's refusal (its message).
pub fn read_token_answer(text: &str) -> Result<u64, String> {
    let value: Value = serde_json::from_str(text).map_err(|_| "a malformed answer".to_owned())?;
    if let Some(message) = value["error"]["message"].as_str() {
        return Err(format!(
            "the bridge refused the refreshed page token: {message}"
        ));
    }
    value["result"]["tokenExpiresInMs"]
        .as_u64()
        .ok_or_else(|| "the bridge's answer to clienttools/token names no tokenExpiresInMs".into())
}

/// When to refresh a token valid for `expires_in_ms`: at four fifths of its life, but at least
/// [`TOKEN_REFRESH_MARGIN_MS`] before it expires — never before half its life, nor sooner than
/// [`TOKEN_REFRESH_MIN_MS`] (a backend handing out tokens about to expire is not asked in a loop;
/// the runtime's leeway covers the rest).
pub fn refresh_after(expires_in_ms: u64) -> Option<u64> {
    let four_fifths = expires_in_ms / 5 * 4;
    let early = expires_in_ms.saturating_sub(TOKEN_REFRESH_MARGIN_MS);
    Some(
        four_fifths
            .min(early)
            .max(expires_in_ms / 2)
            .max(TOKEN_REFRESH_MIN_MS),
    )
}

/// The soonest a token is refreshed after the last one came.
pub const TOKEN_REFRESH_MIN_MS: u64 = 1_000;

impl std::fmt::Debug for ConnectParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectParams")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field(
                "resume_secret",
                &self.resume_secret.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl ConnectResult {
    /// The `result` of the runtime's answer, read by hand (`protocol::wire_object`).
    pub fn from_value(result: Value) -> Result<Self, String> {
        let mut result = WireObject::new(result, "the connect result")?;
        Ok(Self {
            session_id: result.required("sessionId", "a string", string)?,
            resume_secret: result.required("resumeSecret", "a string", string)?,
            resumed: result.required("resumed", "a boolean", |resumed| resumed.as_bool())?,
            user: result.optional("user", "a string", string)?,
            token_expires_in_ms: result.optional("tokenExpiresInMs", "a number", |v| v.as_u64())?,
        })
    }
}

impl std::fmt::Debug for ConnectResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectResult")
            .field("session_id", &self.session_id)
            .field("resume_secret", &"<redacted>")
            .field("resumed", &self.resumed)
            .field("user", &self.user)
            .field("token_expires_in_ms", &self.token_expires_in_ms)
            .finish()
    }
}

/// The page's first frame.
pub fn encode_connect(params: &ConnectParams) -> String {
    encode_request(&RequestId::String(CONNECT_ID.into()), CONNECT, params)
}

/// The runtime's refusal of a connect.
pub fn encode_refusal(code: i64, message: impl Into<String>) -> String {
    encode_error(
        Some(&RequestId::String(CONNECT_ID.into())),
        &RpcError::new(code, message),
    )
}

/// Why the runtime's answer to the connect frame gave no session.
#[derive(Debug, Clone, PartialEq)]
pub enum ConnectFailure {
    /// The runtime refused (its error; it closes the socket next).
    Refused(RpcError),
    /// The answer was not one a client-tools runtime gives (the message says what was wrong).
    Unexpected(String),
}

/// Reads the runtime's first frame, the answer to [`CONNECT`]. Whatever it is, it is a response:
/// never answered.
pub fn read_answer(text: &str) -> Result<ConnectResult, ConnectFailure> {
    let unexpected = || {
        ConnectFailure::Unexpected(
            "the runtime's first frame was not the answer to 'clienttools/connect' \
             (is it a client-tools bridge of this version?)"
                .into(),
        )
    };
    let (id, result) = match protocol::decode(text) {
        Ok(Message::Response { id, result }) => (Some(id), result),
        // A refusal sent before the runtime could read the request has a `null` id (read from the
        // parsed value: a struct deserializer from text would cost kilobytes of wasm).
        _ => {
            let value = serde_json::from_str::<Value>(text).map_err(|_| unexpected())?;
            let refusal = value.get("error").filter(|_| value["id"].is_null());
            match refusal.and_then(|error| error["message"].as_str()) {
                Some(message) => {
                    let code = refusal.and_then(|error| error["code"].as_i64());
                    (None, Err(RpcError::new(code.unwrap_or_default(), message)))
                }
                None => return Err(unexpected()),
            }
        }
    };
    if id.is_some_and(|id| id != RequestId::String(CONNECT_ID.into())) {
        return Err(unexpected());
    }
    match result {
        Err(error) => Err(ConnectFailure::Refused(error)),
        Ok(value) => ConnectResult::from_value(value).map_err(|e| {
            ConnectFailure::Unexpected(format!(
                "the runtime's answer to the connect frame is malformed: {e}"
            ))
        }),
    }
}

impl ConnectFailure {
    /// What the page is told; never `token`, even if the runtime echoed it.
    pub fn message(&self, token: Option<&str>) -> String {
        let message = match self {
            ConnectFailure::Unexpected(message) => message.clone(),
            ConnectFailure::Refused(error) => {
                format!("the bridge refused the connection: {}", error.message)
            }
        };
        redact(message, token)
    }
}

/// `message` without `token` in it (a runtime may echo what it was sent).
pub fn redact(message: String, token: Option<&str>) -> String {
    match token {
        Some(token) if !token.is_empty() && message.contains(token) => message.replace(token, "…"),
        _ => message,
    }
}

/// First reconnect delay; doubled after each failure up to [`MAX_BACKOFF_MS`].
pub const BASE_BACKOFF_MS: f64 = 250.0;
/// The longest wait between two reconnect attempts (before jitter).
pub const MAX_BACKOFF_MS: f64 = 10_000.0;
/// The failed attempts the backoff counts at most (its exponent): far past [`MAX_BACKOFF_MS`], so
/// the count never grows without bound.
pub const MAX_BACKOFF_ATTEMPTS: u32 = 16;

/// The wait before reconnect attempt `attempt` (from 0): capped exponential backoff with jitter,
/// between half the cap and the cap (`random` in `0..1`, so pages that lost one runtime together
/// do not return together).
pub fn reconnect_delay_ms(attempt: u32, random: f64) -> f64 {
    let cap =
        (BASE_BACKOFF_MS * 2f64.powi(attempt.min(MAX_BACKOFF_ATTEMPTS) as i32)).min(MAX_BACKOFF_MS);
    cap / 2.0 + random.clamp(0.0, 1.0) * cap / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::decode;

    #[test]
    fn the_connect_result_reads_as_the_derived_reader_did() {
        for value in [
            serde_json::json!({"sessionId": "s", "resumeSecret": "x", "resumed": false}),
            serde_json::json!({"sessionId": "s", "resumeSecret": "x", "resumed": true, "z": 1}),
            serde_json::json!({"sessionId": "s", "resumeSecret": "x"}),
            serde_json::json!({"sessionId": "s", "resumeSecret": 1, "resumed": true}),
            serde_json::json!({"sessionId": null, "resumeSecret": "x", "resumed": true}),
            serde_json::json!({"sessionId": "s", "resumeSecret": "x", "resumed": "yes"}),
            serde_json::json!([]),
        ] {
            let derived = serde_json::from_value::<ConnectResult>(value.clone()).ok();
            assert_eq!(
                ConnectResult::from_value(value.clone()).ok(),
                derived,
                "{value}"
            );
        }
        // An array of the members in order: the derive took it; an answer is an object (wire_object).
        let array = serde_json::json!(["s", "x", true]);
        assert!(ConnectResult::from_value(array).is_err());
    }

    #[test]
    fn the_answer_is_a_session_a_refusal_or_unexpected() {
        let ok = r#"{"jsonrpc":"2.0","id":"clienttools-connect","result":
            {"sessionId":"s1","resumeSecret":"x","resumed":true}}"#;
        assert_eq!(read_answer(ok).unwrap().session_id, "s1");
        let refused = encode_refusal(code::UNAUTHORIZED, "wrong token t0k");
        let failure = read_answer(&refused).unwrap_err();
        assert!(matches!(&failure, ConnectFailure::Refused(e) if e.code == code::UNAUTHORIZED));
        assert_eq!(
            failure.message(Some("t0k")),
            "the bridge refused the connection: wrong token …"
        );
        let early = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32002,"message":"bad"}}"#;
        assert!(matches!(
            read_answer(early),
            Err(ConnectFailure::Refused(_))
        ));
        for unexpected in [
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","method":"ping","id":2}"#,
            r#"{"jsonrpc":"2.0","id":"clienttools-connect","result":{"sessionId":1}}"#,
            "not json",
        ] {
            assert!(
                matches!(read_answer(unexpected), Err(ConnectFailure::Unexpected(_))),
                "{unexpected}"
            );
        }
    }

    #[test]
    fn reconnects_back_off_with_jitter_up_to_a_cap() {
        assert_eq!(reconnect_delay_ms(0, 0.0), 125.0);
        assert_eq!(reconnect_delay_ms(0, 1.0), 250.0);
        assert_eq!(reconnect_delay_ms(3, 0.5), 1_500.0);
        assert_eq!(reconnect_delay_ms(40, 1.0), MAX_BACKOFF_MS);
        assert_eq!(reconnect_delay_ms(40, 0.0), MAX_BACKOFF_MS / 2.0);
    }

    #[test]
    fn the_connect_frame_is_a_request_with_camel_case_params() {
        let frame = encode_connect(&ConnectParams {
            token: Some("t".into()),
            resume_secret: Some("s".into()),
        });
        let Ok(Message::Request { id, method, params }) = decode(&frame) else {
            panic!("{frame}");
        };
        assert_eq!(id, RequestId::String(CONNECT_ID.into()));
        assert_eq!(method, CONNECT);
        assert_eq!(params, serde_json::json!({"token":"t","resumeSecret":"s"}));
        let shown = format!(
            "{:?}",
            ConnectParams {
                token: Some("t0k".into()),
                resume_secret: Some("s3c".into())
            }
        );
        assert!(!shown.contains("t0k") && !shown.contains("s3c"), "{shown}");
        let refused = encode_refusal(code::UNAUTHORIZED, "no");
        assert!(matches!(
            decode(&refused),
            Ok(Message::Response { result: Err(_), .. })
        ));
    }
}
