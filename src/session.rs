//! What the page keeps of its session with the runtime (SPEC §6), in `sessionStorage`, so a reload
//! or a reconnect of the same tab resumes the same session.
//!
//! The runtime names the session: the page learns its id and resume secret from the answer to its
//! first frame (`client_tools_core::connect`) and sends the secret back when it connects again.
//! Neither ever travels in a URL.

use std::rc::Rc;

use client_tools_core::connect::ConnectResult;
use wasm_bindgen::prelude::*;

use crate::page::Page;

/// The session id the runtime gave (public: agents name the page by it).
const SESSION_ID_KEY: &str = "client-tools:session-id";
/// The secret that resumes the session (private to the page).
const RESUME_SECRET_KEY: &str = "client-tools:resume-secret";
/// The agent calls that were running when the page was unloaded, and whether each may run again
/// on the next page (SPEC §5 at most once, and §7's exception: `client_tools_core::ledger::keep`).
const RUNNING_CALLS_KEY: &str = "client-tools:running-calls";

fn storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.session_storage().ok().flatten())
}

/// The secret of the session an earlier page of this tab had, if any.
pub fn resume_secret() -> Option<String> {
    let secret = storage()?.get_item(RESUME_SECRET_KEY).ok().flatten()?;
    (!secret.is_empty()).then_some(secret)
}

/// Keeps the session the runtime answered with, for the next connect or page of this tab.
pub fn store(session: &ConnectResult) {
    if let Some(storage) = storage() {
        let _ = storage.set_item(SESSION_ID_KEY, &session.session_id);
        let _ = storage.set_item(RESUME_SECRET_KEY, &session.resume_secret);
    }
}

/// What the previous page of this session kept of its running calls (read once, then cleared):
/// the engine reads it defensively (`PageEngine::reloaded`), since any script of the origin can
/// write here.
pub fn take_kept_calls() -> Option<String> {
    let storage = storage()?;
    let kept = storage.get_item(RUNNING_CALLS_KEY).ok().flatten();
    let _ = storage.remove_item(RUNNING_CALLS_KEY);
    kept
}

/// On `pagehide` (reload, navigation, tab close) the running agent calls are kept, so the next page
/// of the session answers their re-sends without running them — or asks again, or runs once more,
/// those that may run again. The listener lives as long as the page (it holds only a weak
/// reference).
pub fn keep_running_calls_on_unload(page: &Rc<Page>) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let weak = Rc::downgrade(page);
    let listener = Closure::<dyn Fn()>::new(move || {
        let Some(page) = weak.upgrade() else { return };
        let kept = page.engine.borrow().kept_at_unload();
        if let Some(storage) = storage() {
            let _ = storage.set_item(RUNNING_CALLS_KEY, &kept);
        }
    });
    let _ = window.add_event_listener_with_callback("pagehide", listener.as_ref().unchecked_ref());
    listener.forget();
}
