//! A bare WebSocket client that plays a page towards the bridge, frame by frame: what a hostile
//! page (or a second tab) can send. It speaks the connect handshake (`clienttools/connect`) and
//! then whatever the test makes it say.

use std::time::Duration;

use client_tools_core::connect::{encode_connect, ConnectParams, ConnectResult};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

pub type ClientSocket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How long a test waits for a frame it expects.
const FRAME_WAIT: Duration = Duration::from_secs(15);

pub struct RawPage {
    pub socket: ClientSocket,
    pub session: ConnectResult,
}

/// What the bridge did with a connect.
#[derive(Debug)]
pub enum ConnectOutcome {
    Accepted(Box<RawPage>),
    /// The JSON-RPC error of the refusal (code, message).
    Refused(i64, String),
}

impl ConnectOutcome {
    pub fn accepted(self) -> RawPage {
        match self {
            ConnectOutcome::Accepted(page) => *page,
            ConnectOutcome::Refused(code, message) => panic!("refused ({code}): {message}"),
        }
    }
}

impl std::fmt::Debug for RawPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawPage({})", self.session.session_id)
    }
}

impl RawPage {
    /// Opens `ws_url` (no query: credentials travel in the first frame) and sends `params`.
    pub async fn connect(ws_url: &str, params: &ConnectParams) -> ConnectOutcome {
        let (mut socket, _) = tokio_tungstenite::connect_async(ws_url)
            .await
            .unwrap_or_else(|e| panic!("WebSocket upgrade at {ws_url}: {e}"));
        socket
            .send(Message::Text(encode_connect(params).into()))
            .await
            .unwrap();
        let answer = next_json(&mut socket).await.expect("a connect answer");
        if let Some(error) = answer.get("error") {
            return ConnectOutcome::Refused(
                error["code"].as_i64().unwrap_or_default(),
                error["message"].as_str().unwrap_or_default().to_owned(),
            );
        }
        let session = serde_json::from_value(answer["result"].clone())
            .unwrap_or_else(|e| panic!("a ConnectResult, not {answer}: {e}"));
        ConnectOutcome::Accepted(Box::new(RawPage { socket, session }))
    }

    /// Connects and answers `initialize` and the first `tools/list` with `tools`.
    pub async fn connect_with_tools(ws_url: &str, params: &ConnectParams, tools: Value) -> RawPage {
        let mut page = RawPage::connect(ws_url, params).await.accepted();
        page.answer_handshake(&tools).await;
        page
    }

    pub fn id(&self) -> &str {
        &self.session.session_id
    }

    /// Parameters that resume this page's session.
    pub fn resume(&self) -> ConnectParams {
        ConnectParams {
            token: None,
            resume_secret: Some(self.session.resume_secret.clone()),
        }
    }

    /// Answers `initialize`, then the `tools/list` that follows it.
    pub async fn answer_handshake(&mut self, tools: &Value) {
        loop {
            let frame = self.next_json().await.expect("the bridge's handshake");
            let result = match frame["method"].as_str() {
                Some("initialize") => {
                    json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"raw","version":"0"}})
                }
                Some("tools/list") => json!({ "tools": tools }),
                _ => continue,
            };
            self.reply(&frame, result).await;
            if frame["method"] == "tools/list" {
                return;
            }
        }
    }

    /// The next JSON text frame; `None` when the socket ends or nothing comes within 15 s.
    pub async fn next_json(&mut self) -> Option<Value> {
        next_json(&mut self.socket).await
    }

    /// The next frame that is a request or notification with this method.
    pub async fn next_method(&mut self, method: &str) -> Option<Value> {
        loop {
            let frame = self.next_json().await?;
            if frame["method"] == method {
                return Some(frame);
            }
        }
    }

    pub async fn send_json(&mut self, frame: &Value) {
        self.send_text(frame.to_string()).await;
    }

    pub async fn send_text(&mut self, text: String) {
        self.socket.send(Message::Text(text.into())).await.unwrap();
    }

    pub async fn reply(&mut self, request: &Value, result: Value) {
        let frame = json!({"jsonrpc":"2.0","id":request["id"],"result":result});
        self.send_json(&frame).await;
    }

    /// Sends a `ping` and returns every frame that arrives before its answer (frames on one
    /// connection keep their order: whatever the bridge answered earlier arrives first).
    pub async fn frames_before_pong(&mut self, ping_id: &str) -> Vec<Value> {
        self.send_json(&json!({"jsonrpc":"2.0","id":ping_id,"method":"ping"}))
            .await;
        let mut before = Vec::new();
        loop {
            let frame = self.next_json().await.expect("the answer to our ping");
            if frame["id"] == ping_id && frame.get("result").is_some() {
                return before;
            }
            before.push(frame);
        }
    }

    /// Reads until the bridge closes the socket; returns its close frame (code, reason).
    pub async fn closed_by_bridge(&mut self) -> Option<(u16, String)> {
        loop {
            let message = tokio::time::timeout(FRAME_WAIT, self.socket.next())
                .await
                .ok()?;
            match message {
                Some(Ok(Message::Close(frame))) => {
                    return Some(
                        frame.map_or((1005, String::new()), |CloseFrame { code, reason }| {
                            (code.into(), reason.to_string())
                        }),
                    )
                }
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return Some((1006, String::new())),
            }
        }
    }
}

/// The next JSON text frame of `socket` within 15 s.
pub async fn next_json<S>(socket: &mut S) -> Option<Value>
where
    S: StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        let message = tokio::time::timeout(FRAME_WAIT, socket.next())
            .await
            .ok()??;
        match message {
            Ok(Message::Text(text)) => return serde_json::from_str(text.as_str()).ok(),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => continue,
        }
    }
}
