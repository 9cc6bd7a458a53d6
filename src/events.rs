//! Page-facing events (SPEC §4): `on(type, fn)` listeners, plus the DOM events WebMCP pages listen to.
//!
//! Listeners are copied out before any is called, so a listener may subscribe, unsubscribe or call
//! back into the SDK while an event is being delivered. A throwing listener is reported on the
//! console and does not stop the others (or the call that emitted the event).

use std::cell::RefCell;

use client_tools_core::page_api::{event, Listeners, DOM_EVENTS};
use client_tools_core::WarningCode;

use wasm_bindgen::JsValue;

use crate::js;

/// The page's listeners (the bookkeeping is the core's `Listeners`).
#[derive(Default)]
pub struct EventHub {
    pub listeners: RefCell<Listeners<js_sys::Function>>,
}

impl EventHub {
    /// Whether emitting `event_type` would reach anyone, so hot paths can skip building the detail.
    pub fn wants(&self, event_type: &str) -> bool {
        self.listeners.borrow().wants(event_type)
    }

    /// Delivers `detail` to every listener of `event_type`, then to the DOM where that applies.
    pub fn emit(&self, event_type: &'static str, detail: &js_sys::Object) {
        let targets = self.listeners.borrow().of(event_type);
        let type_name = js::key(event_type);
        let _ = js_sys::Reflect::set(detail, &js::key("type"), &type_name);
        for listener in targets {
            if let Err(thrown) = listener.call1(&JsValue::NULL, detail) {
                web_sys::console::error_2(
                    &format!("client-tools: a '{event_type}' listener threw:").into(),
                    &thrown,
                );
            }
        }
        // On `document.modelContext` when it exists, else on `window` (SPEC §4), in one call
        // into JavaScript (a call is on the hot path of every tool call).
        if DOM_EVENTS.contains(&event_type) {
            js::dispatch_tool_event(&type_name, detail);
        }
    }

    /// A `warning` event (SPEC §3): also logged, since a page may not listen.
    pub fn warn(&self, code: WarningCode, message: &str, tool_name: Option<&str>) {
        web_sys::console::warn_1(&format!("client-tools: {message}").into());
        let detail = js::object(&[
            ("code", code.as_str().into()),
            ("message", message.into()),
            (
                "toolName",
                tool_name.map_or(JsValue::UNDEFINED, JsValue::from),
            ),
        ]);
        self.emit(event::WARNING, &detail);
    }
}
