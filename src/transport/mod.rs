//! Connections to the agent runtime (SPEC §6): [`websocket`], or a channel the page supplies
//! ([`custom`]). At most one is live: attaching a page transport closes the socket, and
//! `disconnect()` ends either.

pub mod custom;
pub mod websocket;

use std::rc::Rc;

use client_tools_core::connection::ConnInput;

use crate::page::Page;

/// Ends the connection, whichever transport carries it; no reconnect follows.
pub fn disconnect(page: &Rc<Page>) {
    page.link.borrow_mut().custom = None;
    websocket::feed(page, ConnInput::Disconnect);
}
