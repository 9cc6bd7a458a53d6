//! `GET /ws`: a page connects, proves it may, and becomes an MCP server for the runtime (SPEC §6, §9).
//!
//! Before the upgrade: the `Origin` check and the connection limit. Then the page's first frame,
//! `clienttools/connect` (the page token and, when resuming, the resume secret — never in the URL),
//! answered with the session id and secret, or refused and closed. Then per connection: a writer
//! task drains the session's bounded outgoing queue and pings the page; the reader loop routes the
//! page's answers to waiting calls and its notifications to the session, and closes a connection
//! that stays silent; one task runs the handshake (`initialize`, `notifications/initialized`,
//! `tools/list`, and the page's resources and prompts as it offers them) and then the coalesced
//! refreshes its `list_changed` notifications ask.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use client_tools_core::connect::{
    self, ConnectParams, CLOSE_OTHER_USER, CLOSE_TOKEN_EXPIRED, TOKEN_REFRESH,
};
use client_tools_core::protocol::{
    self, code, encode_error, encode_result, method, Implementation, InitializeParams,
    Message as Rpc, RequestId, RpcError, ToolsListResult, PROTOCOL_VERSION,
};
use client_tools_core::tabs::{self, ActivityParams};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use crate::bridge::Bridge;
use crate::calls::served;
use crate::limits::{
    CLOSING_WRITER_GRACE, MAX_CLOSE_REASON_BYTES, MAX_MESSAGE_BYTES, PAGE_HANDSHAKE_TIMEOUT,
    PAGE_READ_BUFFER_BYTES, TOKEN_LEEWAY,
};
use crate::page::connection_queue::{self, Outgoing, OutgoingSender};
use crate::routes::auth::{credential_in_url, page_origin_allowed, secrets_match};
use crate::sessions::page_session::{PageSession, LIST_METHODS};
use crate::sessions::table::{Claimed, ConnectionSlot};
use crate::tokens::{Role, Verified};

/// Close codes (RFC 6455): policy violation (refused connect), going away (silent page). Those of
/// signed tokens (SPEC §13) are the core's (`connect::CLOSE_TOKEN_EXPIRED`, `CLOSE_OTHER_USER`).
const CLOSE_POLICY: u16 = 1008;
const CLOSE_IDLE: u16 = 1001;

type Sink = SplitSink<WebSocket, Message>;
type Stream = SplitStream<WebSocket>;

pub async fn upgrade(
    State(bridge): State<Bridge>,
    headers: HeaderMap,
    uri: Uri,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    // First: a credential in the URL is refused whatever else the request is.
    if let Some(refusal) = credential_in_url(&uri) {
        return refusal;
    }
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
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
    let Some((Claimed { session, answer }, signed)) = accept(&bridge, &mut sink, &mut stream).await
    else {
        return;
    };
    let limits = &bridge.config().limits;
    tracing::info!(session = %answer.session_id, user = session.user().unwrap_or(""), resumed = answer.resumed, "page connected");
    let mut answer = answer;
    answer.token_expires_in_ms = signed.as_ref().map(|s| expires_in_ms(s.expires_at_ms));
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
        session.clone(),
        sink,
        outgoing_rx,
        limits.ping_interval,
        limits.idle_timeout,
    ));
    let refresh = Arc::new(Refresh::default());
    let handshake = tokio::spawn(handshake(session.clone(), refresh.clone()));

    let idle_timeout = limits.idle_timeout;
    let mut last_heard = Instant::now();
    let mut writer_ended = false;
    // A signed token's expiry (SPEC §13): the page sends a fresh one before it (`clienttools/
    // token`); a connection whose token lapses unrefreshed ends.
    let (expiry_tx, mut expiry) = watch::channel(signed.as_ref().map(|s| s.expires_at_ms));
    let expiry_tx = Arc::new(expiry_tx);
    loop {
        let lapse = lapse_at(*expiry.borrow_and_update());
        let message = tokio::select! {
            message = stream.next() => message,
            _ = kill.notified() => None,
            _ = expiry.changed() => continue,
            () = sleep_until_some(lapse) => {
                tracing::info!(session = %session.id(), user = session.user().unwrap_or(""), "page token expired unrefreshed: connection closed");
                outgoing_tx.close(CLOSE_TOKEN_EXPIRED, "the page token expired and was not refreshed".to_owned());
                None
            }
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
            Message::Text(text) => {
                let asked = handle_frame(&session, &outgoing_tx, &refresh, text.as_str());
                if let Some((id, params)) = asked {
                    let token_refresh = TokenRefresh {
                        bridge: bridge.clone(),
                        session: session.clone(),
                        reply: outgoing_tx.clone(),
                        expiry: expiry_tx.clone(),
                    };
                    tokio::spawn(token_refresh.answer(id, params));
                }
            }
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
    tracing::info!(session = %session.id(), user = session.user().unwrap_or(""), "page disconnected");
}

/// Reads the page's `clienttools/connect` and resolves it to a session; refuses (and closes) a
/// missing or malformed first frame, a wrong page token, or a full bridge. With signed tokens
/// (SPEC §13), the session is the token's user's, and its verified claims come back too.
async fn accept(
    bridge: &Bridge,
    sink: &mut Sink,
    stream: &mut Stream,
) -> Option<(Claimed, Option<Verified>)> {
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
        Err(message) => (connect::code::BAD_HANDSHAKE, message),
        Ok(params) => match page_credential(bridge, &params).await {
            Err(message) => (connect::code::UNAUTHORIZED, message),
            Ok(signed) => {
                let user = signed.as_ref().map(|s| s.sub.as_str());
                match bridge.claim(&params, user).await {
                    Ok(claimed) => return Some((claimed, signed)),
                    Err(refused) => (connect::code::OVERLOADED, refused.to_string()),
                }
            }
        },
    };
    let (code, message) = refusal;
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
    None
}

/// The page's credential: the static `--page-token` (`Ok(None)`), or with signed tokens a page JWT
/// (`Ok(Some)`: its user and expiry). `Err`: why it was refused, as the page is told.
async fn page_credential(
    bridge: &Bridge,
    params: &ConnectParams,
) -> Result<Option<Verified>, String> {
    let config = bridge.config();
    if let Some(keys) = &config.token_keys {
        let Some(token) = params.token.as_deref() else {
            return Err(
                "missing page token: send the signed page token (role \"page\") your site's \
                 backend minted as `token` in clienttools/connect"
                    .to_owned(),
            );
        };
        return match keys
            .verify(token, Role::Page, crate::ids::now_unix_ms())
            .await
        {
            Ok(verified) => Ok(Some(verified)),
            Err(why) => {
                tracing::info!(reason = %why, "page token refused");
                Err(format!("page token refused: {why}"))
            }
        };
    }
    match &config.page_token {
        None => Ok(None),
        Some(expected) => match params.token.as_deref() {
            Some(token) if secrets_match(token, expected) => Ok(None),
            _ => Err(
                "missing or wrong page token (the bridge's --page-token, sent as `token` in \
                 clienttools/connect)"
                    .to_owned(),
            ),
        },
    }
}

/// A page's `clienttools/token` (SPEC §13): a fresh signed token for the open connection.
struct TokenRefresh {
    bridge: Bridge,
    session: Arc<PageSession>,
    reply: OutgoingSender,
    expiry: Arc<watch::Sender<Option<u64>>>,
}

impl TokenRefresh {
    /// Verifies it and answers: the new expiry, or why not (the connection keeps its old expiry).
    /// A token of another user ends the connection: a session never changes hands.
    async fn answer(self, id: RequestId, params: serde_json::Value) {
        let token = params.get("token").and_then(|t| t.as_str());
        let verified = match (&self.bridge.config().token_keys, token) {
            (None, _) => Err("this bridge verifies no signed tokens".to_owned()),
            (Some(_), None) => Err("clienttools/token needs {\"token\": string}".to_owned()),
            (Some(keys), Some(token)) => keys
                .verify(token, Role::Page, crate::ids::now_unix_ms())
                .await
                .map_err(|why| format!("page token refused: {why}")),
        };
        let answer = match verified {
            Ok(verified) if Some(verified.sub.as_str()) != self.session.user() => {
                tracing::info!(session = %self.session.id(), user = self.session.user().unwrap_or(""), "refreshed page token names another user: connection closed");
                let why = "the refreshed page token names another user";
                send_reply(
                    &self.session,
                    &self.reply,
                    encode_error(Some(&id), &RpcError::new(connect::code::UNAUTHORIZED, why)),
                );
                self.reply.close(CLOSE_OTHER_USER, why.to_owned());
                return;
            }
            Ok(verified) => {
                self.expiry.send_replace(Some(verified.expires_at_ms));
                let expires_in_ms = expires_in_ms(verified.expires_at_ms);
                encode_result(&id, &json!({ "tokenExpiresInMs": expires_in_ms }))
            }
            Err(why) => {
                tracing::info!(session = %self.session.id(), user = self.session.user().unwrap_or(""), reason = %why, "page token refresh refused");
                encode_error(Some(&id), &RpcError::new(connect::code::UNAUTHORIZED, why))
            }
        };
        send_reply(&self.session, &self.reply, answer);
    }
}

/// When a token expiring at `expires_at_ms` (unix ms) lapses, on tokio's clock: its expiry plus the
/// leeway verification allows ([`TOKEN_LEEWAY`]), so a token accepted at connect is not cut short.
fn lapse_at(expires_at_ms: Option<u64>) -> Option<Instant> {
    let lapses_at_ms = expires_at_ms? + TOKEN_LEEWAY.as_millis() as u64;
    let left = lapses_at_ms.saturating_sub(crate::ids::now_unix_ms());
    Some(Instant::now() + Duration::from_millis(left))
}

/// How long from now a token expiring at `expires_at_ms` (unix ms) is valid.
fn expires_in_ms(expires_at_ms: u64) -> u64 {
    expires_at_ms.saturating_sub(crate::ids::now_unix_ms())
}

/// Sleeps until `at`; forever when `None`.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
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
    session: Arc<PageSession>,
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
                tracing::info!(
                    session = %session.id(),
                    user = session.user().unwrap_or(""),
                    "page connection closed: it has not read for {idle_timeout:?}"
                );
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

/// Which of the page's lists its `list_changed` notifications asked to read again, and the wake-up
/// of the task that reads them (many notifications while one refresh runs cause one more).
#[derive(Default)]
pub(crate) struct Refresh {
    wake: Notify,
    tools: AtomicBool,
    resources: AtomicBool,
    prompts: AtomicBool,
}

impl Refresh {
    fn ask(&self, list: &AtomicBool) {
        list.store(true, Ordering::Relaxed);
        self.wake.notify_one();
    }
}

/// `initialize` → `notifications/initialized` → `tools/list` (and, as the page's capabilities
/// offer them, `resources/list`, `resources/templates/list`, `prompts/list`, and the resource
/// subscriptions its agents hold); then a refresh of each list its `list_changed` notifications
/// name, coalesced.
async fn handshake(session: Arc<PageSession>, refresh: Arc<Refresh>) {
    let params = InitializeParams {
        protocol_version: PROTOCOL_VERSION.into(),
        capabilities: json!({}),
        client_info: Implementation {
            name: "client-tools-bridge".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
    };
    let params = serde_json::to_value(params).unwrap_or_default();
    let Ok(Ok(initialized)) = session
        .request(method::INITIALIZE, params, PAGE_HANDSHAKE_TIMEOUT)
        .await
    else {
        return;
    };
    let initialized: serde_json::Value =
        serde_json::from_str(initialized.get()).unwrap_or_default();
    let capabilities = initialized.get("capabilities").cloned().unwrap_or_default();
    session.set_offered(&capabilities);
    session.notify_page(method::INITIALIZED, &json!({}));
    refresh_tools(&session).await;
    refresh_served(&session, &LIST_METHODS).await;
    session.resubscribe().await;
    loop {
        refresh.wake.notified().await;
        if refresh.tools.swap(false, Ordering::Relaxed) {
            refresh_tools(&session).await;
        }
        if refresh.resources.swap(false, Ordering::Relaxed) {
            refresh_served(&session, &LIST_METHODS[..2]).await;
        }
        if refresh.prompts.swap(false, Ordering::Relaxed) {
            refresh_served(&session, &LIST_METHODS[2..]).await;
        }
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
                tracing::warn!(session = %session.id(), user = session.user().unwrap_or(""), ?error, "malformed tools/list answer")
            }
        }
    }
}

/// Asks the page for those of its other lists (`methods`) that it offers.
async fn refresh_served(session: &PageSession, methods: &[&'static str]) {
    let Some(offered) = session.offered() else {
        return;
    };
    for &list in methods {
        let offers = match list {
            served::method::PROMPTS_LIST => offered.prompts,
            _ => offered.resources,
        };
        if !offers {
            continue;
        }
        match session.fetch_list(list).await {
            Ok(entries) => session.set_listed(list, entries.to_vec()),
            Err(error) => {
                tracing::warn!(session = %session.id(), user = session.user().unwrap_or(""), method = list, error = %error.message, "page list not read")
            }
        }
    }
}

/// One frame from the page. Errors are answered only for requests (never for a response).
/// A `clienttools/token` request comes back (its id and params): its answer needs an `await`.
pub(crate) fn handle_frame(
    session: &Arc<PageSession>,
    reply: &OutgoingSender,
    refresh: &Refresh,
    text: &str,
) -> Option<(RequestId, serde_json::Value)> {
    let message = match session.deliver_answer(text) {
        None => return None,
        Some(Err(error)) => {
            if let Some(answer) = error.to_frame() {
                send_reply(session, reply, answer);
            }
            return None;
        }
        Some(Ok(message)) => message,
    };
    match message {
        Rpc::Notification { method, .. } if method == method::TOOLS_LIST_CHANGED => {
            refresh.ask(&refresh.tools);
        }
        Rpc::Notification { method, .. } if method == served::method::RESOURCES_LIST_CHANGED => {
            refresh.ask(&refresh.resources);
        }
        Rpc::Notification { method, .. } if method == served::method::PROMPTS_LIST_CHANGED => {
            refresh.ask(&refresh.prompts);
        }
        Rpc::Notification { method, params } if method == served::method::RESOURCES_UPDATED => {
            if let Some(uri) = params.get("uri").and_then(serde_json::Value::as_str) {
                session.resource_updated(uri.to_owned());
            }
        }
        Rpc::Notification { method, params } if method == tabs::ACTIVITY => {
            match serde_json::from_value::<ActivityParams>(params) {
                Ok(activity) => session.report_activity(activity.visible, activity.focused),
                Err(error) => {
                    tracing::info!(session = %session.id(), user = session.user().unwrap_or(""), %error, "malformed clienttools/activity")
                }
            }
        }
        Rpc::Request { id, method, params } if method == TOKEN_REFRESH => {
            return Some((id, params));
        }
        Rpc::Notification { method, params } if method == method::MESSAGE => {
            if !session.relay_call_event(&params, text) {
                session.page_log(params);
            }
        }
        Rpc::Response { .. } | Rpc::Notification { .. } => {}
        Rpc::Request { id, method, params } if method == method::INPUT => {
            if session.relay_call_event(&params, text) {
                return None;
            }
            if let Some(error) = session.page_input(id.clone(), params) {
                send_reply(session, reply, encode_error(Some(&id), &error));
            }
        }
        Rpc::Request { id, method, .. } => {
            send_reply(session, reply, protocol::answer_plain_request(&id, &method));
        }
    }
    None
}

/// Answers the page, unless the answer would break its limits (a huge id or method name echoed
/// back): the bridge never sends what the page would refuse.
fn send_reply(session: &PageSession, reply: &OutgoingSender, frame: String) {
    match protocol::check_outgoing(&frame) {
        Ok(()) => {
            let _ = reply.try_send(frame);
        }
        Err(limit) => tracing::info!(
            session = %session.id(),
            user = session.user().unwrap_or(""),
            %limit,
            "answer to the page not sent"
        ),
    }
}
