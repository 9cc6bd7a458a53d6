//! One simulated page: a native WebSocket client driving the page engine that ships
//! (`client_tools_core::page_engine`, the same state machine the browser SDK drives) over the wire
//! protocol (SPEC §6): its first frame is `clienttools/connect` (the page token, if any), the bridge
//! answers with the session id it assigned, and then the page is the MCP server, with one tool,
//! `echo`, whose handler returns its arguments at once.
//!
//! No browser: what is measured is the bridge, so the page side does what the SDK's engine does and
//! nothing more.

use std::time::Instant;

use client_tools_core::connect::{self, encode_connect, ConnectParams, ConnectResult};
use client_tools_core::limits::DEFAULT_TIMEOUT_MS;
use client_tools_core::page_engine::{EngineConfig, HandlerOutcome, Input, Output, PageEngine};
use client_tools_core::protocol::{self, method, Message as Rpc};
use client_tools_core::registry::{Declaration, ToolKind};
use client_tools_core::time::Millis;
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
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
    engine: PageEngine<()>,
    started: Instant,
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
        let mut engine = PageEngine::new(EngineConfig::default(), DEFAULT_TIMEOUT_MS, Vec::new());
        let echo = Declaration {
            original_name: TOOL_NAME.into(),
            description: Some("Returns its arguments.".into()),
            parameters: Some(json!({ "type": "object" })),
            ..Declaration::default()
        };
        engine
            .registry_mut()
            .define(echo, ToolKind::Function, ())
            .map_err(|e| e.to_string())?;
        let mut page = Self {
            socket,
            session_id: connected.session_id,
            engine,
            started: Instant::now(),
        };
        page.handle(Input::SessionBegun { resumed: false }).await?;
        Ok(page)
    }

    /// The session id agents call this page by.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Answers the bridge until it has asked for the tools: after that the session is usable.
    pub async fn handshake(&mut self) -> Result<(), String> {
        loop {
            let Some(text) = read(&mut self.socket).await? else {
                continue;
            };
            let listed = matches!(
                protocol::decode(text.as_str()),
                Ok(Rpc::Request { method, .. }) if method == method::TOOLS_LIST
            );
            self.handle(Input::Frame(text.as_str())).await?;
            if listed {
                return Ok(());
            }
        }
    }

    /// Serves the bridge until the connection ends, and says why it ended. The benchmark closes
    /// pages by dropping them, so any end seen here is a failure.
    pub async fn serve(mut self) -> String {
        loop {
            let wake = self.engine.poll_timeout().map(|at| {
                let due = self.started + std::time::Duration::from_secs_f64(at.0.max(0.0) / 1e3);
                tokio::time::Instant::from_std(due)
            });
            let next = tokio::select! {
                read = read(&mut self.socket) => read,
                _ = sleep_until(wake) => {
                    if let Err(reason) = self.handle(Input::Timeout).await {
                        return reason;
                    }
                    continue;
                }
            };
            let handled = match next {
                Ok(Some(text)) => self.handle(Input::Frame(text.as_str())).await,
                Ok(None) => Ok(()),
                Err(reason) => Err(reason),
            };
            if let Err(reason) = handled {
                return reason;
            }
        }
    }

    fn now(&self) -> Millis {
        Millis(self.started.elapsed().as_secs_f64() * 1e3)
    }

    /// Feeds the engine, then performs what it asks: frames go to the bridge, and `echo`'s handler
    /// answers with its arguments at once.
    async fn handle(&mut self, input: Input<'_>) -> Result<(), String> {
        self.engine.handle(self.now(), input);
        while let Some(output) = self.engine.poll_output() {
            match output {
                Output::Send(frame) => self
                    .socket
                    .send(Message::text(frame))
                    .await
                    .map_err(|e| format!("writing to the bridge: {e}"))?,
                Output::RunHandler { call, input, .. } => {
                    let outcome = HandlerOutcome::Returned(input);
                    let now = self.now();
                    self.engine
                        .handle(now, Input::HandlerSettled { call, outcome });
                }
                // Nobody is asked, nothing is aborted or listened to on a simulated page.
                _ => {}
            }
        }
        Ok(())
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
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
    connect::read_answer(text).map_err(|failure| failure.message(None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use client_tools_core::connect::{code as connect_code, encode_refusal, CONNECT_ID};
    use client_tools_core::protocol::{encode_result, RequestId};

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
