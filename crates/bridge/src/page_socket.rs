//! `GET /ws`: a page connects, proves it may (origin, token), and becomes an MCP server for the
//! runtime (SPEC §6, §9).
//!
//! Per connection: a writer task drains the session's outgoing queue; the reader loop routes the
//! page's answers to waiting calls and its notifications to the session; the handshake
//! (`initialize`, `notifications/initialized`, `tools/list`) runs beside them.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use client_tools_core::protocol::{
    self, code, encode_error, encode_result, method, Implementation, InitializeParams,
    Message as Rpc, RpcError, ToolsListResult, MAX_FRAME_BYTES, PROTOCOL_VERSION,
};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::{mpsc, Notify};

use crate::server::Bridge;
use crate::session::PageSession;

/// How long the page has to answer `initialize` and `tools/list`.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Per connection. tungstenite's default, 128 KiB, is allocated up front and zero-filled on every
/// read: it was 90 % of an idle session's memory (`client-tools-load`) and a tenth of the CPU
/// under call load. Frames are small; a large one still grows the buffer as needed.
const READ_BUFFER_BYTES: usize = 4 * 1024;

#[derive(Debug, Deserialize)]
pub struct ConnectQuery {
    session: Option<String>,
    token: Option<String>,
}

pub async fn upgrade(
    State(bridge): State<Bridge>,
    Query(query): Query<ConnectQuery>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let origin = headers.get("origin").and_then(|o| o.to_str().ok());
    if !bridge.origin_allowed(origin) {
        let origin = origin.unwrap_or("(none)");
        return (
            StatusCode::FORBIDDEN,
            format!(
                "origin {origin} may not connect: start the bridge with --allowed-origin {origin}"
            ),
        )
            .into_response();
    }
    if let Some(expected) = &bridge.config().token {
        if query.token.as_deref() != Some(expected.as_str()) {
            return (StatusCode::UNAUTHORIZED, "missing or wrong page token").into_response();
        }
    }
    let session_id = match query.session.filter(|s| valid_session_id(s)) {
        Some(id) => id,
        None => bridge.new_session_id(),
    };
    upgrade
        // Up to 4 MiB is read and answered with a clear JSON-RPC error above 1 MiB (protocol::decode);
        // beyond that the connection is closed rather than buffered.
        .max_message_size(4 * MAX_FRAME_BYTES)
        .max_frame_size(4 * MAX_FRAME_BYTES)
        .read_buffer_size(READ_BUFFER_BYTES)
        .on_upgrade(move |socket| serve_page(bridge, session_id, socket))
}

fn valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

async fn serve_page(bridge: Bridge, session_id: String, socket: WebSocket) {
    let session = bridge.session_or_create(&session_id);
    let (outgoing_tx, mut outgoing_rx) = mpsc::unbounded_channel::<String>();
    let kill = Arc::new(Notify::new());
    let generation = session.attach(outgoing_tx.clone(), kill.clone());
    let (mut sink, mut stream) = socket.split();

    let writer = tokio::spawn(async move {
        while let Some(frame) = outgoing_rx.recv().await {
            if sink.send(Message::Text(frame.into())).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let handshake = tokio::spawn(handshake(session.clone()));

    loop {
        let message = tokio::select! {
            message = stream.next() => message,
            _ = kill.notified() => None,
        };
        let Some(message) = message else { break };
        match message {
            Ok(Message::Text(text)) => handle_frame(&session, &outgoing_tx, text.as_str()),
            Ok(Message::Binary(_)) => {
                let error = RpcError::new(
                    code::INVALID_REQUEST,
                    "binary frames are not supported: send JSON-RPC as text",
                );
                let _ = outgoing_tx.send(encode_error(None, &error));
            }
            Ok(Message::Close(_)) | Err(_) => break,
            Ok(Message::Ping(_) | Message::Pong(_)) => {}
        }
    }
    handshake.abort();
    session.detach(generation);
    drop(outgoing_tx);
    writer.abort();
}

/// `initialize` → `notifications/initialized` → `tools/list`.
async fn handshake(session: Arc<PageSession>) {
    let params = InitializeParams {
        protocol_version: PROTOCOL_VERSION.into(),
        capabilities: json!({}),
        client_info: Implementation {
            name: "client-tools-bridge".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
    };
    let params = serde_json::to_value(params).unwrap_or_default();
    if !matches!(
        session
            .request(method::INITIALIZE, params, HANDSHAKE_TIMEOUT)
            .await,
        Ok(Ok(_))
    ) {
        return;
    }
    session.notify_page(method::INITIALIZED, &json!({}));
    refresh_tools(&session).await;
}

/// Asks the page for its tools again (after `notifications/tools/list_changed`).
pub async fn refresh_tools(session: &PageSession) {
    if let Ok(Ok(value)) = session
        .request(method::TOOLS_LIST, json!({}), HANDSHAKE_TIMEOUT)
        .await
    {
        if let Ok(list) = serde_json::from_value::<ToolsListResult>(value) {
            session.set_tools(list.tools);
        }
    }
}

fn handle_frame(session: &Arc<PageSession>, reply: &mpsc::UnboundedSender<String>, text: &str) {
    match protocol::decode(text) {
        Err(error) => {
            let _ = reply.send(error.to_frame());
        }
        Ok(Rpc::Response { id, result }) => session.resolve(&id, result),
        Ok(Rpc::Notification { method, .. }) if method == method::TOOLS_LIST_CHANGED => {
            let session = session.clone();
            tokio::spawn(async move { refresh_tools(&session).await });
        }
        Ok(Rpc::Notification { method, params }) if method == method::PROGRESS => {
            if let Ok(progress) = serde_json::from_value(params) {
                session.progress(progress);
            }
        }
        Ok(Rpc::Notification { .. }) => {}
        Ok(Rpc::Request { id, method, .. }) => {
            let frame = if method == method::PING {
                encode_result(&id, &json!({}))
            } else {
                let error = RpcError::new(
                    code::METHOD_NOT_FOUND,
                    format!("method not found: {method}"),
                );
                encode_error(Some(&id), &error)
            };
            let _ = reply.send(frame);
        }
    }
}
