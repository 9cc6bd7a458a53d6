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

use crate::protocol::{encode_error, encode_request, RequestId, RpcError};

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
}

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

impl std::fmt::Debug for ConnectResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectResult")
            .field("session_id", &self.session_id)
            .field("resume_secret", &"<redacted>")
            .field("resumed", &self.resumed)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{decode, Message};

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
