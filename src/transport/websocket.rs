//! The WebSocket link to the agent runtime (SPEC §6), with gloo-net.
//!
//! The socket opens at `endpoint` exactly as given: credentials and session ids never travel in the
//! URL. The page's first frame is `clienttools/connect` (`client_tools_core::connect`) with the page
//! token and, when resuming, the resume secret; the runtime answers with the session (or refuses
//! and closes), and only then does MCP start. One task owns the socket after that: it reads frames
//! (handing them to the page engine) and writes what the page queued with [`Page::transmit`]. When
//! the socket drops without `disconnect()`, it reconnects and resumes the session with capped
//! exponential backoff and jitter; frames produced meanwhile wait in the page's bounded backlog.

use client_tools_core::WarningCode;
use std::rc::Rc;

use client_tools_core::connect::{self, ConnectParams, ConnectResult, CONNECT_ID};
use client_tools_core::protocol::{self, code, encode_error, RequestId, RpcError};
use client_tools_core::CoreError;
use futures::channel::{mpsc, oneshot};
use futures::{FutureExt, SinkExt, StreamExt};
use gloo_net::websocket::{futures::WebSocket, Message, State};
use gloo_timers::future::TimeoutFuture;
use serde_json::Value;

use client_tools_core::page_engine::Input;

use crate::page::{ConnectionState, Page};

/// First reconnect delay; doubled after each failure up to [`MAX_BACKOFF_MS`].
const BASE_BACKOFF_MS: f64 = 250.0;
const MAX_BACKOFF_MS: f64 = 10_000.0;
/// How long opening a socket may take before it counts as failed; the runtime's answer to the
/// first frame has as long again.
const OPEN_TIMEOUT_MS: f64 = 10_000.0;

/// Opens the connection (resolves once the runtime accepted it) and keeps it up until `disconnect`.
pub async fn connect(page: &Rc<Page>) -> Result<(), CoreError> {
    if page.link.borrow().custom.is_some() {
        return Err(CoreError::NotConnected(
            "a page transport is attached (attachTransport): call disconnect() before connect()"
                .into(),
        ));
    }
    let Some(endpoint) = page.options.endpoint.clone() else {
        return Err(CoreError::NotConnected(
            "no 'endpoint' option was given".into(),
        ));
    };
    match page.state.get() {
        ConnectionState::Disconnected => {}
        // Another connect() (or `autoConnect`) is on its way: this one ends with it.
        ConnectionState::Connecting => return join_connecting(page, endpoint).await,
        // Connected, or the supervisor reconnects by itself.
        ConnectionState::Connected | ConnectionState::Reconnecting => return Ok(()),
    }
    page.set_state(ConnectionState::Connecting);
    match open_session(page, &endpoint).await {
        // disconnect() or attachTransport() while the socket was opening: it is not wanted.
        Ok((socket, _)) if page.state.get() != ConnectionState::Connecting => {
            let _ = socket.close(Some(1000), Some("disconnect"));
            Err(CoreError::NotConnected(
                "disconnect() or attachTransport() was called while connecting".into(),
            ))
        }
        Ok((socket, session)) => {
            page.begin_session(session);
            wasm_bindgen_futures::spawn_local(supervise(page.clone(), socket, endpoint));
            Ok(())
        }
        Err(failure) => {
            if page.state.get() == ConnectionState::Connecting {
                page.set_state(ConnectionState::Disconnected);
            }
            Err(CoreError::ConnectionFailed {
                url: endpoint,
                message: failure.message(page),
            })
        }
    }
}

/// Waits for the connection attempt in progress to end.
async fn join_connecting(page: &Page, endpoint: String) -> Result<(), CoreError> {
    loop {
        TimeoutFuture::new(10).await;
        match page.state.get() {
            ConnectionState::Connecting => {}
            ConnectionState::Connected | ConnectionState::Reconnecting => return Ok(()),
            ConnectionState::Disconnected => {
                return Err(CoreError::ConnectionFailed {
                    url: endpoint,
                    message: "the connection attempt this call joined failed (the first \
                              connect() call, or a 'connect_failed' warning, says why)"
                        .into(),
                })
            }
        }
    }
}

/// Asks the running socket, if any, to close for good (no reconnect); the state is the caller's.
pub fn close(page: &Page) {
    let close = page.link.borrow_mut().close.take();
    if let Some(close) = close {
        let _ = close.send(());
    }
}

/// Why a connection attempt failed.
enum Failure {
    /// The socket did not open, or closed (or fell silent) before the runtime answered.
    Network(String),
    /// The runtime answered the first frame with an error (`connect::code`), then closed.
    Refused(RpcError),
}

impl Failure {
    /// What the page is told; never the token, even if the runtime echoed it.
    fn message(&self, page: &Page) -> String {
        let message = match self {
            Failure::Network(message) => message.clone(),
            Failure::Refused(error) => {
                format!("the bridge refused the connection: {}", error.message)
            }
        };
        match page.options.token.as_deref() {
            Some(token) if !token.is_empty() && message.contains(token) => {
                message.replace(token, "…")
            }
            _ => message,
        }
    }
}

/// Opens a socket at `endpoint` and runs the connect handshake on it: the first frame carries the
/// page token and the resume secret, and the runtime's first frame answers it.
async fn open_session(page: &Page, endpoint: &str) -> Result<(WebSocket, ConnectResult), Failure> {
    let mut socket = open(endpoint).await.map_err(Failure::Network)?;
    let first = connect::encode_connect(&ConnectParams {
        token: page.options.token.clone(),
        resume_secret: page.resume_secret.borrow().clone(),
    });
    if socket.send(Message::Text(first)).await.is_err() {
        return Err(Failure::Network(
            "the connection closed before the first frame was sent".into(),
        ));
    }
    let answer = futures::select! {
        incoming = socket.next().fuse() => incoming,
        _ = TimeoutFuture::new(OPEN_TIMEOUT_MS as u32).fuse() => {
            let _ = socket.close(Some(1000), Some("no answer"));
            return Err(Failure::Network(format!(
                "the runtime did not answer the connect frame within {OPEN_TIMEOUT_MS} ms"
            )));
        }
    };
    let text = match answer {
        Some(Ok(Message::Text(text))) => text,
        Some(Ok(Message::Bytes(_))) => {
            let _ = socket.close(Some(1002), Some("unexpected binary frame"));
            return Err(Failure::Network(
                "the runtime answered the connect frame with a binary frame".into(),
            ));
        }
        Some(Err(_)) | None => {
            return Err(Failure::Network(
                "the connection closed before the runtime answered the connect frame".into(),
            ))
        }
    };
    match read_answer(&text) {
        Ok(session) => Ok((socket, session)),
        Err(failure) => {
            let _ = socket.close(Some(1000), Some("connect refused"));
            Err(failure)
        }
    }
}

/// The runtime's answer to the connect frame. Whatever it is, it is a response: never answered.
fn read_answer(text: &str) -> Result<ConnectResult, Failure> {
    let unexpected = || {
        Failure::Network(
            "the runtime's first frame was not the answer to 'clienttools/connect' \
             (is it a client-tools bridge of this version?)"
                .into(),
        )
    };
    let (id, result) = match protocol::decode(text) {
        Ok(protocol::Message::Response { id, result }) => (Some(id), result),
        // A refusal sent before the runtime could read the request has a `null` id (read from
        // the parsed value: a struct deserializer from text would cost kilobytes of wasm).
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
        Err(error) => Err(Failure::Refused(error)),
        Ok(value) => serde_json::from_value(value).map_err(|e| {
            Failure::Network(format!(
                "the runtime's answer to the connect frame is malformed: {e}"
            ))
        }),
    }
}

async fn open(url: &str) -> Result<WebSocket, String> {
    let socket = WebSocket::open(url).map_err(|e| e.to_string())?;
    let started = crate::js::now_ms();
    loop {
        match socket.state() {
            State::Open => return Ok(socket),
            State::Closing | State::Closed => {
                return Err("the connection was refused or closed".into())
            }
            State::Connecting if crate::js::now_ms() - started > OPEN_TIMEOUT_MS => {
                return Err(format!("no answer within {OPEN_TIMEOUT_MS} ms"))
            }
            State::Connecting => TimeoutFuture::new(5).await,
        }
    }
}

enum SocketEnd {
    /// `disconnect()` was called.
    Closed,
    /// The network, the runtime or the browser ended it.
    Dropped,
}

/// Runs sockets for one `connect()` until `disconnect()`: reconnects after drops.
async fn supervise(page: Rc<Page>, first: WebSocket, endpoint: String) {
    let mut socket = first;
    loop {
        let (outgoing_tx, outgoing_rx) = mpsc::unbounded();
        let (close_tx, close_rx) = oneshot::channel();
        let backlog = {
            let mut link = page.link.borrow_mut();
            link.outgoing = Some(outgoing_tx.clone());
            link.close = Some(close_tx);
            std::mem::take(&mut link.backlog)
        };
        for frame in backlog {
            let _ = outgoing_tx.unbounded_send(frame);
        }
        page.set_state(ConnectionState::Connected);
        let end = pump(&page, socket, outgoing_rx, close_rx).await;
        page.link.borrow_mut().outgoing = None;
        // Closed by disconnect(), or replaced by a page transport: no reconnect.
        if matches!(end, SocketEnd::Closed) || page.link.borrow().custom.is_some() {
            return;
        }
        page.set_state(ConnectionState::Reconnecting);
        match reconnect(&page, &endpoint).await {
            Some(next) => socket = next,
            None => return,
        }
    }
}

/// Retries (resuming the session) with capped exponential backoff and jitter, also while the
/// runtime refuses; `None` when `disconnect()` stops it.
async fn reconnect(page: &Rc<Page>, endpoint: &str) -> Option<WebSocket> {
    let mut attempt = 0i32;
    let mut last_refusal = None;
    loop {
        let cap = (BASE_BACKOFF_MS * 2f64.powi(attempt)).min(MAX_BACKOFF_MS);
        let delay = cap / 2.0 + js_sys::Math::random() * cap / 2.0;
        TimeoutFuture::new(delay as u32).await;
        if page.state.get() != ConnectionState::Reconnecting {
            return None;
        }
        match open_session(page, endpoint).await {
            Ok((socket, _)) if page.state.get() != ConnectionState::Reconnecting => {
                let _ = socket.close(Some(1000), Some("disconnect")); // disconnect() won the race
                return None;
            }
            Ok((socket, session)) => {
                page.begin_session(session);
                return Some(socket);
            }
            // A refusal is worth telling the page (once per reason): unlike a network failure, it
            // will not pass by itself while the runtime is down.
            Err(failure @ Failure::Refused(_)) => {
                let message = failure.message(page);
                if last_refusal.as_ref() != Some(&message) {
                    page.events.warn(WarningCode::ConnectFailed, &message, None);
                    last_refusal = Some(message);
                }
            }
            Err(Failure::Network(_)) => {}
        }
        attempt = (attempt + 1).min(16);
    }
}

async fn pump(
    page: &Rc<Page>,
    mut socket: WebSocket,
    mut outgoing: mpsc::UnboundedReceiver<String>,
    close: oneshot::Receiver<()>,
) -> SocketEnd {
    let mut close = close.fuse();
    loop {
        enum Event {
            Incoming(Option<Result<Message, gloo_net::websocket::WebSocketError>>),
            Outgoing(Option<String>),
            Close,
        }
        let event = futures::select! {
            incoming = socket.next().fuse() => Event::Incoming(incoming),
            frame = outgoing.next() => Event::Outgoing(frame),
            _ = close => Event::Close,
        };
        match event {
            Event::Incoming(Some(Ok(Message::Text(text)))) => page.feed(Input::Frame(&text)),
            Event::Incoming(Some(Ok(Message::Bytes(_)))) => page.transmit(encode_error(
                None,
                &RpcError::new(
                    code::INVALID_REQUEST,
                    "binary frames are not supported: send JSON-RPC as text",
                ),
            )),
            Event::Incoming(Some(Err(_)) | None) => return SocketEnd::Dropped,
            Event::Outgoing(Some(frame)) => {
                if socket.send(Message::Text(frame)).await.is_err() {
                    return SocketEnd::Dropped;
                }
            }
            Event::Outgoing(None) => return SocketEnd::Dropped,
            Event::Close => {
                let _ = socket.close(Some(1000), Some("disconnect"));
                return SocketEnd::Closed;
            }
        }
    }
}
