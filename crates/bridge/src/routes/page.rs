//! `GET /ws`: a page connects, proves it may, and becomes an MCP server for the runtime (SPEC §6, §9).
//!
//! Before the upgrade: the `Origin` check and the connection limit. Then the page's first frame,
//! `clienttools/connect` (the page token and, when resuming, the resume secret — never in the URL),
//! answered with the session id and secret, or refused and closed. Then per connection: a writer
//! task drains the session's bounded outgoing queue and pings the page; the reader loop routes the
//! page's answers to waiting calls and its notifications to the session, and closes a connection
//! that stays silent; one task runs the handshake (`initialize`, `notifications/initialized`,
//! `tools/list`) and then the coalesced `tools/list` refreshes.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use client_tools_core::connect::{self, ConnectParams};
use client_tools_core::protocol::{
    self, code, encode_error, encode_result, method, Implementation, InitializeParams,
    Message as Rpc, RequestId, RpcError, ToolsListResult, PROTOCOL_VERSION,
};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::bridge::Bridge;
use crate::limits::{
    CLOSING_WRITER_GRACE, MAX_CLOSE_REASON_BYTES, MAX_MESSAGE_BYTES, PAGE_HANDSHAKE_TIMEOUT,
    PAGE_READ_BUFFER_BYTES,
};
use crate::page::connection_queue::{self, Outgoing, OutgoingSender};
use crate::routes::auth::{page_origin_allowed, secrets_match};
use crate::sessions::page_session::PageSession;
use crate::sessions::table::{Claimed, ConnectionSlot};

/// Close codes (RFC 6455): policy violation (refused connect), going away (silent page).
const CLOSE_POLICY: u16 = 1008;
const CLOSE_IDLE: u16 = 1001;

type Sink = SplitSink<WebSocket, Message>;
type Stream = SplitStream<WebSocket>;

pub async fn upgrade(
    State(bridge): State<Bridge>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let origin = headers.get("origin").and_then(|o| o.to_str().ok());
    if !page_origin_allowed(origin, &bridge.config().allowed_origins) {
        let origin = origin.unwrap_or("(none)");
        return (
            StatusCode::FORBIDDEN,
            format!(
                "origin {origin} may not connect: start the bridge with --allowed-origin {origin}"
            ),
        )
            .into_response();
    }
    let Some(slot) = bridge.table().open_connection() else {
        let limit = bridge.config().limits.max_connections;
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the bridge has {limit} page connections open, its limit: try again later"),
        )
            .into_response();
    };
    upgrade
        .max_message_size(MAX_MESSAGE_BYTES)
        .max_frame_size(MAX_MESSAGE_BYTES)
        .read_buffer_size(PAGE_READ_BUFFER_BYTES)
        .on_upgrade(move |socket| serve_page(bridge, slot, socket))
}

async fn serve_page(bridge: Bridge, _slot: ConnectionSlot, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let Some(Claimed { session, answer }) = accept(&bridge, &mut sink, &mut stream).await else {
        return;
    };
    let limits = &bridge.config().limits;
    tracing::info!(session = %answer.session_id, resumed = answer.resumed, "page connected");
    let welcome = encode_result(&RequestId::String(connect::CONNECT_ID.into()), &answer);
    if sink.send(Message::Text(welcome.into())).await.is_err() {
        return;
    }
    let (outgoing_tx, outgoing_rx) =
        connection_queue::channel(limits.outgoing_queue_frames, limits.outgoing_queue_bytes);
    let kill = Arc::new(Notify::new());
    let generation = session.attach(outgoing_tx.clone(), kill.clone());
    if let Some(cluster) = bridge.cluster() {
        cluster.serve(session.clone(), generation);
    }
    let mut writer = tokio::spawn(write(
        sink,
        outgoing_rx,
        limits.ping_interval,
        limits.idle_timeout,
    ));
    let refresh = Arc::new(Notify::new());
    let handshake = tokio::spawn(handshake(session.clone(), refresh.clone()));

    let idle_timeout = limits.idle_timeout;
    let mut last_heard = Instant::now();
    let mut writer_ended = false;
    loop {
        let message = tokio::select! {
            message = stream.next() => message,
            _ = kill.notified() => None,
            // The page stopped reading (or the socket broke on the way out): the connection ends.
            _ = &mut writer => {
                writer_ended = true;
                None
            }
            _ = tokio::time::sleep_until(last_heard + idle_timeout) => {
                outgoing_tx.close(CLOSE_IDLE, format!("no frame or pong for {} s", idle_timeout.as_secs()));
                None
            }
        };
        let Some(Ok(message)) = message else { break };
        last_heard = Instant::now();
        match message {
            Message::Text(text) => handle_frame(&session, &outgoing_tx, &refresh, text.as_str()),
            Message::Binary(_) => {
                let error = RpcError::new(
                    code::INVALID_REQUEST,
                    "binary frames are not supported: send JSON-RPC as text",
                );
                let _ = outgoing_tx.try_send(encode_error(None, &error));
            }
            Message::Close(_) => break,
            Message::Ping(_) | Message::Pong(_) => {}
        }
    }
    handshake.abort();
    session.detach(generation);
    drop(outgoing_tx);
    // The writer ends by itself once the queue is closed (after sending a queued close frame);
    // give it a moment, then stop it: the socket, its queue and the connection slot go together.
    if !writer_ended
        && tokio::time::timeout(CLOSING_WRITER_GRACE, &mut writer)
            .await
            .is_err()
    {
        writer.abort();
        let _ = writer.await; // the socket is dropped before the connection slot is released
    }
    tracing::info!(session = %session.id(), "page disconnected");
}

/// Reads the page's `clienttools/connect` and resolves it to a session; refuses (and closes) a
/// missing or malformed first frame, a wrong page token, or a full bridge.
async fn accept(bridge: &Bridge, sink: &mut Sink, stream: &mut Stream) -> Option<Claimed> {
    let timeout = bridge.config().limits.connect_timeout;
    let first = tokio::time::timeout(timeout, first_text(stream)).await;
    let params = match first {
        Err(_) => Err(format!(
            "no clienttools/connect frame within {} ms",
            timeout.as_millis()
        )),
        Ok(None) => return None,
        Ok(Some(text)) => parse_connect(&text),
    };
    let refusal = match params {
        Err(message) => Some((connect::code::BAD_HANDSHAKE, message)),
        Ok(params) if !page_token_ok(bridge, &params) => Some((
            connect::code::UNAUTHORIZED,
            "missing or wrong page token (the bridge's --page-token, sent as `token` in \
             clienttools/connect)"
                .to_owned(),
        )),
        Ok(params) => match bridge.claim(&params).await {
            Ok(claimed) => return Some(claimed),
            Err(refused) => Some((connect::code::OVERLOADED, refused.to_string())),
        },
    };
    if let Some((code, message)) = refusal {
        tracing::info!(code, ?message, "page connect refused");
        let _ = sink
            .send(Message::Text(
                connect::encode_refusal(code, &message).into(),
            ))
            .await;
        let _ = sink
            .send(Message::Close(Some(CloseFrame {
                code: CLOSE_POLICY,
                reason: Utf8Bytes::from(truncate_reason(&message)),
            })))
            .await;
    }
    None
}

/// The first text frame (pings and pongs skipped); `None` when the socket ends first.
async fn first_text(stream: &mut Stream) -> Option<String> {
    while let Some(Ok(message)) = stream.next().await {
        match message {
            Message::Text(text) => return Some(text.as_str().to_owned()),
            Message::Ping(_) | Message::Pong(_) => continue,
            Message::Binary(_) => return Some(String::new()),
            Message::Close(_) => return None,
        }
    }
    None
}

fn parse_connect(text: &str) -> Result<ConnectParams, String> {
    let expected = "the first frame must be the clienttools/connect request";
    match protocol::decode(text) {
        Ok(Rpc::Request { method, params, .. }) if method == connect::CONNECT => {
            let params = if params.is_null() { json!({}) } else { params };
            serde_json::from_value(params)
                .map_err(|error| format!("invalid clienttools/connect params: {error}"))
        }
        Ok(_) => Err(expected.to_owned()),
        Err(error) => Err(format!("{expected}: {}", error.error.message)),
    }
}

fn page_token_ok(bridge: &Bridge, params: &ConnectParams) -> bool {
    match &bridge.config().page_token {
        None => true,
        Some(expected) => params
            .token
            .as_deref()
            .is_some_and(|token| secrets_match(token, expected)),
    }
}

/// A close reason cut to [`MAX_CLOSE_REASON_BYTES`], at a character boundary.
fn truncate_reason(message: &str) -> String {
    let mut end = message.len().min(MAX_CLOSE_REASON_BYTES);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message[..end].to_owned()
}

/// Sends what the session queues, and a ping every `ping_interval`; a queued close ends it, and so
/// does a page that takes `idle_timeout` to take what is queued (it is not reading).
async fn write(
    mut sink: Sink,
    mut outgoing: connection_queue::OutgoingReceiver,
    ping_interval: Duration,
    idle_timeout: Duration,
) {
    let mut ping = tokio::time::interval_at(Instant::now() + ping_interval, ping_interval);
    loop {
        let sent = tokio::select! {
            next = outgoing.recv() => match next {
                Some(first) => {
                    let queued = send_queued(&mut sink, &mut outgoing, first);
                    tokio::time::timeout(idle_timeout, queued).await
                }
                None => break,
            },
            _ = ping.tick() => {
                let ping = sink.send(Message::Ping(Default::default()));
                tokio::time::timeout(idle_timeout, ping).await.map(|sent| sent.map(|()| true))
            }
        };
        match sent {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) | Ok(Err(_)) => return,
            Err(_) => {
                tracing::info!("page connection closed: it has not read for {idle_timeout:?}");
                return;
            }
        }
    }
    let _ = tokio::time::timeout(idle_timeout, sink.close()).await;
}

/// Writes `first` and everything queued behind it, then flushes once: with many calls in flight
/// on one page, frames share a system call instead of taking one each. `false` once a queued
/// close is sent (the connection ends).
async fn send_queued(
    sink: &mut Sink,
    outgoing: &mut connection_queue::OutgoingReceiver,
    first: Outgoing,
) -> Result<bool, axum::Error> {
    let mut next = Some(first);
    while let Some(item) = next {
        match item {
            Outgoing::Frame(frame) => sink.feed(Message::Text(frame.into())).await?,
            Outgoing::Close { code, reason } => {
                let reason = Utf8Bytes::from(truncate_reason(&reason));
                sink.send(Message::Close(Some(CloseFrame { code, reason })))
                    .await?;
                return Ok(false);
            }
        }
        next = outgoing.try_recv();
    }
    sink.flush().await?;
    Ok(true)
}

/// `initialize` → `notifications/initialized` → `tools/list`; then one `tools/list` per wake-up of
/// `refresh` (the page's `list_changed` notifications, coalesced: many while one refresh runs
/// cause one more, not many).
async fn handshake(session: Arc<PageSession>, refresh: Arc<Notify>) {
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
            .request(method::INITIALIZE, params, PAGE_HANDSHAKE_TIMEOUT)
            .await,
        Ok(Ok(_))
    ) {
        return;
    }
    session.notify_page(method::INITIALIZED, &json!({}));
    loop {
        refresh_tools(&session).await;
        refresh.notified().await;
    }
}

/// Asks the page for its tools again.
async fn refresh_tools(session: &PageSession) {
    if let Ok(Ok(result)) = session
        .request(method::TOOLS_LIST, json!({}), PAGE_HANDSHAKE_TIMEOUT)
        .await
    {
        match serde_json::from_str::<ToolsListResult>(result.get()) {
            Ok(list) => session.set_tools(list.tools),
            Err(error) => {
                tracing::warn!(session = %session.id(), ?error, "malformed tools/list answer")
            }
        }
    }
}

/// One frame from the page. Errors are answered only for requests (never for a response).
pub(crate) fn handle_frame(
    session: &Arc<PageSession>,
    reply: &OutgoingSender,
    refresh: &Notify,
    text: &str,
) {
    let message = match session.deliver_answer(text) {
        None => return,
        Some(Err(error)) => {
            if let Some(answer) = error.to_frame() {
                send_reply(reply, answer);
            }
            return;
        }
        Some(Ok(message)) => message,
    };
    match message {
        Rpc::Notification { method, .. } if method == method::TOOLS_LIST_CHANGED => {
            refresh.notify_one();
        }
        Rpc::Notification { method, params } if method == method::MESSAGE => {
            if !session.relay_call_event(&params, text) {
                session.page_log(params);
            }
        }
        Rpc::Response { .. } | Rpc::Notification { .. } => {}
        Rpc::Request { id, method, params } if method == method::INPUT => {
            if session.relay_call_event(&params, text) {
                return;
            }
            if let Some(error) = session.page_input(id.clone(), params) {
                send_reply(reply, encode_error(Some(&id), &error));
            }
        }
        Rpc::Request { id, method, .. } => {
            send_reply(reply, protocol::answer_plain_request(&id, &method));
        }
    }
}

/// Answers the page, unless the answer would break its limits (a huge id or method name echoed
/// back): the bridge never sends what the page would refuse.
fn send_reply(reply: &OutgoingSender, frame: String) {
    match protocol::check_outgoing(&frame) {
        Ok(()) => {
            let _ = reply.try_send(frame);
        }
        Err(limit) => tracing::info!(%limit, "answer to the page not sent"),
    }
}
