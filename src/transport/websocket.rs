//! The WebSocket to the agent runtime (SPEC §6): a driver of the core's connection engine
//! (`client_tools_core::connection`), which decides when to open, what the first frame says,
//! when an attempt has failed and when to try again. Here a `WebSocket` is opened, written and
//! closed, and what it does is fed back.
//!
//! The socket opens at `endpoint` exactly as given: credentials and session ids never travel in the
//! URL. Until the runtime has answered the first frame, frames for it wait in the connection
//! engine; after, they go straight to the socket, and the runtime's frames to the page engine.

use std::rc::{Rc, Weak};

use crate::oneshot;
use client_tools_core::connect;
use client_tools_core::connection::{ConnInput, ConnOutput, ConnectionState};
use client_tools_core::page_api::event;
use client_tools_core::page_engine::Input;
use client_tools_core::protocol::encode_notification;
use client_tools_core::protocol::{code, encode_error, RpcError};
use client_tools_core::tabs::{self, ActivityParams};
use client_tools_core::{CoreError, WarningCode};
use wasm_bindgen::prelude::*;

use crate::page::{now, Page, Socket};

/// Opens the connection (resolves once the runtime accepted it) and keeps it up until `disconnect`.
pub async fn connect(page: &Rc<Page>) -> Result<(), CoreError> {
    let (settled, outcome) = oneshot::channel();
    page.link.borrow_mut().connecting.push(settled);
    feed(page, ConnInput::Connect);
    outcome
        .await
        .unwrap_or_else(|_| Err(CoreError::NotConnected("the page went away".into())))
}

/// Hands the connection engine one input, then performs what it asks.
pub fn feed(page: &Rc<Page>, input: ConnInput<'_>) {
    page.connection.borrow_mut().handle(now(), input);
    let next = || page.connection.borrow_mut().poll_output();
    while let Some(output) = next() {
        perform(page, output);
    }
    // While it is connected or trying to be, the page stays alive with no other reference to it
    // (a page's `new ClientTools(...)` in a module that keeps none: its socket, timer and calls
    // hold it weakly). `disconnect()` and a page transport let it go.
    let wanted = page.connection.borrow().wants_socket();
    page.link.borrow_mut().keepalive = wanted.then(|| page.clone());
    page.arm_timer();
}

fn perform(page: &Rc<Page>, output: ConnOutput) {
    match output {
        ConnOutput::Open => open(page),
        ConnOutput::Send(frame) => {
            let socket = page.link.borrow().socket.as_ref().map(|s| s.socket.clone());
            if socket.is_some_and(|socket| socket.send_with_str(&frame).is_err()) {
                drop_socket(page);
                feed(page, ConnInput::Closed);
            }
        }
        ConnOutput::Close { code, reason } => {
            if let Some(socket) = drop_socket(page) {
                let _ = socket.close_with_code_and_reason(code, reason);
            }
        }
        ConnOutput::State(state) => {
            let detail = crate::js::object(&[("state", state.as_str().into())]);
            page.events.emit(event::CONNECTION_CHANGE, &detail);
        }
        // A new session (`resumed: false`) owes nothing to an earlier one: the engine ends the
        // earlier session's calls.
        ConnOutput::Session(session) => {
            crate::session::store(&session);
            page.feed(Input::SessionBegun {
                resumed: session.resumed,
            });
            // Which of a user's tabs is in front (SPEC §13): now, and at every change.
            report_activity(page);
        }
        ConnOutput::FetchToken => fetch_token(page),
        ConnOutput::Settled(outcome) => {
            let waiting = std::mem::take(&mut page.link.borrow_mut().connecting);
            for settled in waiting {
                let _ = settled.send(outcome.clone());
            }
        }
        ConnOutput::Warn(message) => page.events.warn(WarningCode::ConnectFailed, &message, None),
    }
}

/// Calls the page's token function (SPEC §13) and feeds what it gave back: a non-empty string,
/// or why not (it threw, rejected, or gave something else).
fn fetch_token(page: &Rc<Page>) {
    let Some(function) = page.options.token_function.clone() else {
        return feed(page, ConnInput::Token(Err("no token function".into())));
    };
    let weak = Rc::downgrade(page);
    wasm_bindgen_futures::spawn_local(async move {
        let given = crate::js::call_and_settle(&function, &js_sys::Array::new()).await;
        let token = given.and_then(|value| match value.as_string() {
            Some(token) if !token.is_empty() => Ok(token),
            Some(_) => Err("it gave an empty string".to_owned()),
            None => Err(format!(
                "it gave {}, not a string",
                crate::js::js_type_name(&value)
            )),
        });
        if let Some(page) = weak.upgrade() {
            feed(&page, ConnInput::Token(token));
        }
    });
}

/// Tells the runtime whether the page is visible and focused (`clienttools/activity`), while it
/// is connected by its socket; the first call also starts watching for changes.
fn report_activity(page: &Rc<Page>) {
    if !page.link.borrow().watching_activity {
        page.link.borrow_mut().watching_activity = true;
        let weak = Rc::downgrade(page);
        // Holds the page weakly: it ends with the page (one closure per instance, kept by the
        // listeners of the document and window).
        let on_change = Closure::<dyn FnMut()>::new(move || {
            if let Some(page) = weak.upgrade() {
                report_activity(&page);
            }
        });
        crate::js::watch_activity(on_change.as_ref().unchecked_ref());
        on_change.forget();
    }
    let connected = page.connection.borrow().state() == ConnectionState::Connected;
    let socket = page.link.borrow().socket.as_ref().map(|s| s.socket.clone());
    if let (true, Some(socket)) = (connected, socket) {
        let now = crate::js::activity_now();
        let params = ActivityParams {
            visible: now & 1 != 0,
            focused: now & 2 != 0,
        };
        let _ = socket.send_with_str(&encode_notification(tabs::ACTIVITY, &params));
    }
}

/// A new socket to the endpoint, its events fed back (the earlier socket, if any, is gone).
fn open(page: &Rc<Page>) {
    drop_socket(page);
    let Some(endpoint) = page.options.endpoint.clone() else {
        return;
    };
    let socket = match web_sys::WebSocket::new(&endpoint) {
        Ok(socket) => socket,
        // Refused by the browser (a policy, a malformed address): a failed attempt.
        Err(_) => return feed(page, ConnInput::Closed),
    };
    let weak = Rc::downgrade(page);
    let on_open = handler(&weak, |page, _| feed(&page, ConnInput::Opened));
    let on_message = handler(&weak, |page, event| {
        let data = crate::js::get(&event, "data");
        let Some(text) = data.as_string() else {
            let error = RpcError::new(
                code::INVALID_REQUEST,
                "binary frames are not supported: send JSON-RPC as text",
            );
            return page.transmit(encode_error(None, &error));
        };
        let handshake = page.connection.borrow().awaits_answer();
        let token_answer = !handshake && page.connection.borrow().is_token_answer(&text);
        if handshake {
            feed(&page, ConnInput::Answer(&text));
        } else if token_answer {
            feed(&page, ConnInput::TokenAnswer(&text));
        } else {
            page.feed(Input::Frame(&text));
        }
    });
    let on_closed = handler(&weak, |page, event| {
        drop_socket(&page);
        // The runtime ended the connection because the signed token lapsed: a fresh one, now.
        let code = crate::js::get(&event, "code").as_f64();
        if code == Some(f64::from(connect::CLOSE_TOKEN_EXPIRED)) {
            feed(&page, ConnInput::TokenLapsed);
        } else {
            feed(&page, ConnInput::Closed);
        }
    });
    let handlers = [on_open, on_message, on_closed];
    listen(&socket, &handlers, true);
    page.link.borrow_mut().socket = Some(Socket { socket, handlers });
}

/// The socket's events and their handlers: `open`, `message`, then `close` and `error` alike.
/// Listeners, not `on…` properties: a page's own `WebSocket` stand-in may dispatch events only.
fn listen(socket: &web_sys::WebSocket, handlers: &[Closure<dyn FnMut(JsValue)>; 3], add: bool) {
    let events = [("open", 0), ("message", 1), ("close", 2), ("error", 2)];
    for (event, handler) in events {
        let handler = handlers[handler].as_ref().unchecked_ref();
        let _ = if add {
            socket.add_event_listener_with_callback(event, handler)
        } else {
            socket.remove_event_listener_with_callback(event, handler)
        };
    }
}

/// Forgets the current socket, its handlers removed first (nothing more is fed from it).
fn drop_socket(page: &Page) -> Option<web_sys::WebSocket> {
    let Socket { socket, handlers } = page.link.borrow_mut().socket.take()?;
    listen(&socket, &handlers, false);
    Some(socket)
}

/// A socket event handler that holds the page weakly.
fn handler(
    page: &Weak<Page>,
    act: impl Fn(Rc<Page>, JsValue) + 'static,
) -> Closure<dyn FnMut(JsValue)> {
    let page = page.clone();
    Closure::new(move |event: JsValue| {
        if let Some(page) = page.upgrade() {
            act(page, event);
        }
    })
}
