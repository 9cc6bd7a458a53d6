//! One simulated page: a native WebSocket client that plays the page's part of the wire protocol
//! (SPEC §6): its first frame is `clienttools/connect` (the page token, if any), the bridge answers
//! with the session id it assigned, and then the page is the MCP server, with one tool, `echo`,
//! that returns its arguments.
//!
//! No browser and no SDK: what is measured is the bridge, so the page side does as little as a
//! correct MCP server can.

use client_tools_core::connect::{encode_connect, ConnectParams, ConnectResult, CONNECT_ID};
use client_tools_core::protocol::{
    self, code, encode_error, encode_result, method, CallToolParams, CallToolResult,
    Implementation, InitializeResult, Message as Rpc, RequestId, RpcError, Tool, ToolsListResult,
    PROTOCOL_VERSION,
};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_tungstenite::{connect_async_with_config, MaybeTlsStream, WebSocketStream};

/// The page's only tool.
pub const TOOL_NAME: &str = "echo";
/// tungstenite's default read buffer is 128 KiB per connection, allocated up front and zero-filled
/// on every read: with 10 000 pages that is 1.3 GB and much of the CPU of this process, which
/// shares the machine with the bridge it measures. Frames here are small.
const READ_BUFFER_BYTES: usize = 4 * 1024;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub struct SimulatedPage {
    socket: Socket,
    /// The session id the bridge assigned in its answer to `clienttools/connect`.
    session_id: String,
}

impl SimulatedPage {
    /// Opens the page's connection, with TCP_NODELAY as browsers do (small frames, latency counts),
    /// and connects as a new session: the `clienttools/connect` frame with `page_token`, then the
    /// bridge's answer, which names the session.
    pub async fn connect(url: &str, page_token: Option<&str>) -> Result<Self, String> {
        let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER_BYTES);
        let (mut socket, _) = connect_async_with_config(url, Some(config), true)
            .await
            .map_err(|e| format!("connecting to {url}: {e}"))?;
        let params = ConnectParams {
            token: page_token.map(str::to_owned),
            resume_secret: None,
        };
        socket
            .send(Message::text(encode_connect(&params)))
            .await
            .map_err(|e| format!("sending clienttools/connect: {e}"))?;
        let connected = loop {
            if let Some(text) = read(&mut socket).await? {
                break connect_answer(text.as_str())?;
            }
        };
        Ok(Self {
            socket,
            session_id: connected.session_id,
        })
    }

    /// The session id agents call this page by.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Answers the bridge until it has asked for the tools: after that the session is usable.
    pub async fn handshake(&mut self) -> Result<(), String> {
        loop {
            if self.answer_next().await?.as_deref() == Some(method::TOOLS_LIST) {
                return Ok(());
            }
        }
    }

    /// Serves the bridge until the connection ends, and says why it ended. The benchmark closes
    /// pages by dropping them, so any end seen here is a failure.
    pub async fn serve(mut self) -> String {
        loop {
            if let Err(reason) = self.answer_next().await {
                return reason;
            }
        }
    }

    /// Reads one frame and answers it if it is a request; returns the method answered.
    async fn answer_next(&mut self) -> Result<Option<String>, String> {
        let Some(text) = read(&mut self.socket).await? else {
            return Ok(None);
        };
        let (id, method, params) = match protocol::decode(text.as_str()) {
            Ok(Rpc::Request { id, method, params }) => (id, method, params),
            // Notifications need no answer; the page sends no requests, so expects no responses.
            Ok(Rpc::Notification { .. } | Rpc::Response { .. }) => return Ok(None),
            Err(error) => {
                return Err(format!(
                    "the bridge sent an undecodable frame: {}",
                    error.error.message
                ))
            }
        };
        let frame = answer(&id, &method, params);
        self.socket
            .send(Message::text(frame))
            .await
            .map_err(|e| format!("writing to the bridge: {e}"))?;
        Ok(Some(method))
    }
}

/// The next frame's text; `None` for a control frame (tungstenite answers pings itself).
async fn read(socket: &mut Socket) -> Result<Option<Utf8Bytes>, String> {
    let message = socket
        .next()
        .await
        .ok_or("the bridge closed the connection")?
        .map_err(|e| format!("reading from the bridge: {e}"))?;
    match message {
        Message::Text(text) => Ok(Some(text)),
        Message::Close(frame) => Err(format!("the bridge closed the connection: {frame:?}")),
        Message::Binary(_) => Err("the bridge sent a binary frame".into()),
        Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => Ok(None),
    }
}

/// The bridge's answer to `clienttools/connect`, its first frame: the session, or why it refused.
fn connect_answer(text: &str) -> Result<ConnectResult, String> {
    match protocol::decode(text) {
        Ok(Rpc::Response { id, result }) if id == RequestId::String(CONNECT_ID.into()) => {
            let result = result.map_err(|error| {
                format!(
                    "the bridge refused clienttools/connect: {} ({})",
                    error.message, error.code
                )
            })?;
            serde_json::from_value(result)
                .map_err(|e| format!("malformed answer to clienttools/connect: {e}"))
        }
        _ => Err(format!(
            "the bridge's first frame is not the answer to clienttools/connect: {text}"
        )),
    }
}

/// The response frame to one request of the bridge.
fn answer(id: &RequestId, requested: &str, params: Value) -> String {
    match requested {
        method::INITIALIZE => encode_result(
            id,
            &InitializeResult {
                protocol_version: PROTOCOL_VERSION.into(),
                capabilities: json!({ "tools": { "listChanged": true } }),
                server_info: Implementation {
                    name: "client-tools-load".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                },
                instructions: None,
            },
        ),
        method::TOOLS_LIST => encode_result(
            id,
            &ToolsListResult {
                tools: vec![echo_tool()],
                next_cursor: None,
            },
        ),
        method::TOOLS_CALL => encode_result(id, &call(params)),
        method::PING => encode_result(id, &json!({})),
        other => encode_error(
            Some(id),
            &RpcError::new(code::METHOD_NOT_FOUND, format!("method not found: {other}")),
        ),
    }
}

fn echo_tool() -> Tool {
    Tool {
        name: TOOL_NAME.into(),
        description: Some("Returns its arguments.".into()),
        input_schema: json!({ "type": "object" }),
        output_schema: None,
        annotations: None,
        meta: None,
    }
}

/// `echo` returns its arguments: as JSON text content and, for an object, as structured content.
fn call(params: Value) -> CallToolResult {
    match serde_json::from_value::<CallToolParams>(params) {
        Ok(call) if call.name == TOOL_NAME => {
            CallToolResult::success(call.arguments.unwrap_or_else(|| json!({})))
        }
        Ok(call) => CallToolResult::error(format!("no tool '{}' on this page", call.name)),
        Err(error) => CallToolResult::error(format!("malformed tools/call params: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use client_tools_core::connect::{code as connect_code, encode_refusal};

    #[test]
    fn the_connect_answer_names_the_session_or_says_why_not() {
        let accepted = encode_result(
            &RequestId::String(CONNECT_ID.into()),
            &json!({ "sessionId": "s1", "resumeSecret": "secret", "resumed": false }),
        );
        assert_eq!(
            connect_answer(&accepted).map(|c| c.session_id),
            Ok("s1".into())
        );
        let refused = encode_refusal(connect_code::UNAUTHORIZED, "wrong page token");
        assert!(connect_answer(&refused).is_err_and(|e| e.contains("wrong page token")));
        let early = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        assert!(connect_answer(early).is_err());
    }
}
