//! A transport the page supplies (SPEC §6 over any channel): frames for the runtime go to a
//! JavaScript function, and the runtime's frames come back through `receiveFrame`. For runtimes
//! reached by `postMessage`, an extension port or a socket the page already owns — and for measuring
//! the SDK itself without a network in the way (`cargo xtask bench`).

use std::rc::Rc;

use client_tools_core::CoreError;

use crate::mcp_server;
use crate::page::{ConnectionState, Page};
use crate::transport::websocket;

/// Routes every frame to `send` from now on (closing a WebSocket connection first) and sends the
/// frames kept while disconnected.
pub fn attach(page: &Rc<Page>, send: js_sys::Function) {
    websocket::disconnect(page);
    let backlog = {
        let mut link = page.link.borrow_mut();
        link.custom = Some(send);
        std::mem::take(&mut link.backlog)
    };
    page.set_state(ConnectionState::Connected);
    for frame in backlog {
        page.send(frame);
    }
}

/// Hands one frame from the runtime to the page's MCP server.
pub fn receive(page: &Rc<Page>, frame: &str) -> Result<(), CoreError> {
    if page.link.borrow().custom.is_none() {
        return Err(CoreError::NotConnected(
            "receiveFrame needs a transport: call attachTransport(send) first".into(),
        ));
    }
    mcp_server::handle_frame(page, frame);
    Ok(())
}
