//! The WebSocket link to the agent runtime (SPEC §6), with gloo-net.
//!
//! One task owns the socket: it reads frames (handing them to [`crate::mcp_server`]) and writes what
//! the page queued with [`Page::send`]. When the socket drops without `disconnect()`, it reconnects
//! to the same session with capped exponential backoff and jitter; frames produced meanwhile wait in
//! the page's bounded backlog.

use std::rc::Rc;

use client_tools_core::protocol::{code, encode_error, RpcError};
use client_tools_core::CoreError;
use futures::channel::{mpsc, oneshot};
use futures::{FutureExt, SinkExt, StreamExt};
use gloo_net::websocket::{futures::WebSocket, Message, State};
use gloo_timers::future::TimeoutFuture;

use crate::mcp_server;
use crate::page::{ConnectionState, Page};

/// First reconnect delay; doubled after each failure up to [`MAX_BACKOFF_MS`].
const BASE_BACKOFF_MS: f64 = 250.0;
const MAX_BACKOFF_MS: f64 = 10_000.0;
/// How long opening a socket may take before it counts as failed.
const OPEN_TIMEOUT_MS: f64 = 10_000.0;

/// Opens the connection (resolves once the socket is open) and keeps it up until `disconnect`.
pub async fn connect(page: &Rc<Page>) -> Result<(), CoreError> {
    if page.link.borrow().custom.is_some() {
        return Err(CoreError::NotConnected(
            "a page transport is attached (attachTransport): call disconnect() before connect()"
                .into(),
        ));
    }
    if page.state.get() != ConnectionState::Disconnected {
        return Ok(()); // already connected, or on its way (the supervisor reconnects by itself)
    }
    let url = endpoint_url(page)?;
    page.set_state(ConnectionState::Connecting);
    match open(&url).await {
        // disconnect() or attachTransport() while the socket was opening: it is not wanted.
        Ok(socket) if page.state.get() != ConnectionState::Connecting => {
            let _ = socket.close(Some(1000), Some("disconnect"));
            Err(CoreError::NotConnected(
                "disconnect() or attachTransport() was called while connecting".into(),
            ))
        }
        Ok(socket) => {
            wasm_bindgen_futures::spawn_local(supervise(page.clone(), socket, url));
            Ok(())
        }
        Err(message) => {
            page.set_state(ConnectionState::Disconnected);
            Err(CoreError::ConnectionFailed {
                url: redact(&url),
                message,
            })
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

fn endpoint_url(page: &Page) -> Result<String, CoreError> {
    let Some(endpoint) = &page.options.endpoint else {
        return Err(CoreError::NotConnected(
            "no 'endpoint' option was given".into(),
        ));
    };
    let separator = if endpoint.contains('?') { '&' } else { '?' };
    let mut url = format!(
        "{endpoint}{separator}session={}",
        js_sys::encode_uri_component(&page.session_id)
    );
    if let Some(token) = &page.options.token {
        url.push_str(&format!("&token={}", js_sys::encode_uri_component(token)));
    }
    Ok(url)
}

/// The URL without its token, for error messages.
fn redact(url: &str) -> String {
    match url.find("&token=") {
        Some(at) => format!("{}&token=…", &url[..at]),
        None => url.to_owned(),
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
async fn supervise(page: Rc<Page>, first: WebSocket, url: String) {
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
        match reconnect(&page, &url).await {
            Some(next) => socket = next,
            None => return,
        }
    }
}

/// Retries with capped exponential backoff and jitter; `None` when `disconnect()` stops it.
async fn reconnect(page: &Page, url: &str) -> Option<WebSocket> {
    let mut attempt = 0i32;
    loop {
        let cap = (BASE_BACKOFF_MS * 2f64.powi(attempt)).min(MAX_BACKOFF_MS);
        let delay = cap / 2.0 + js_sys::Math::random() * cap / 2.0;
        TimeoutFuture::new(delay as u32).await;
        if page.state.get() != ConnectionState::Reconnecting {
            return None;
        }
        if let Ok(socket) = open(url).await {
            if page.state.get() != ConnectionState::Reconnecting {
                let _ = socket.close(Some(1000), Some("disconnect")); // disconnect() won the race
                return None;
            }
            return Some(socket);
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
            Event::Incoming(Some(Ok(Message::Text(text)))) => mcp_server::handle_frame(page, &text),
            Event::Incoming(Some(Ok(Message::Bytes(_)))) => page.send(encode_error(
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
