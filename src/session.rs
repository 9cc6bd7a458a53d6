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
/// Agent call ids that were running when the page was unloaded (SPEC §5: at most once per id).
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

/// The call ids the previous page of this session left running (read once, then cleared).
pub fn take_interrupted_calls() -> Vec<String> {
    let Some(storage) = storage() else {
        return Vec::new();
    };
    let stored = storage.get_item(RUNNING_CALLS_KEY).ok().flatten();
    let _ = storage.remove_item(RUNNING_CALLS_KEY);
    stored
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// On `pagehide` (reload, navigation, tab close) the ids of running agent calls are kept, so the
/// next page of the session answers their re-sends without running them. The listener lives as
/// long as the page (it holds only a weak reference).
pub fn keep_running_calls_on_unload(page: &Rc<Page>) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let weak = Rc::downgrade(page);
    let listener = Closure::<dyn Fn()>::new(move || {
        let Some(page) = weak.upgrade() else { return };
        let ids = page.engine.borrow().running_agent_calls();
        if let (Some(storage), Ok(text)) = (storage(), serde_json::to_string(&ids)) {
            let _ = storage.set_item(RUNNING_CALLS_KEY, &text);
        }
    });
    let _ = window.add_event_listener_with_callback("pagehide", listener.as_ref().unchecked_ref());
    listener.forget();
}
