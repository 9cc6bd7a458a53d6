//! A transport the page supplies (SPEC §6 over any channel): frames for the runtime go to a
//! JavaScript function, and the runtime's frames come back through `receiveFrame`. For runtimes
//! reached by `postMessage`, an extension port or a socket the page already owns — and for measuring
//! the SDK itself without a network in the way (`cargo xtask bench`).

use std::rc::Rc;

use client_tools_core::connection::ConnInput;
use client_tools_core::page_engine::Input;
use client_tools_core::CoreError;

use crate::page::Page;
use crate::transport::websocket;

/// Routes every frame to `send` from now on, closing a WebSocket connection first. Frames kept for
/// the WebSocket's runtime are dropped: they answer requests this channel's runtime never sent.
/// `send` is called synchronously and its return value is ignored (an async `send` must handle its
/// own failures).
pub fn attach(page: &Rc<Page>, send: js_sys::Function) {
    page.link.borrow_mut().custom = Some(send);
    websocket::feed(page, ConnInput::Attach);
}

/// Hands one frame from the runtime to the page engine.
pub fn receive(page: &Rc<Page>, frame: &str) -> Result<(), CoreError> {
    if page.link.borrow().custom.is_none() {
        return Err(CoreError::NotConnected(
            "receiveFrame needs a transport: call attachTransport(send) first".into(),
        ));
    }
    page.feed(Input::Frame(frame));
    Ok(())
}
