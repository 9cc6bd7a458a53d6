//! WebMCP (SPEC §8): declarative `<form toolname>` tools ([`forms`], each call run by
//! [`form_call`]) and the browser's own agent at `document.modelContext` ([`browser_agent`]).
//!
//! The DOM reading and writing is a small JavaScript module (`dom.js`): it is what this layer does
//! most, and there a few lines of JavaScript cost the package less than the same through `web-sys`.
//! What a control means is decided natively in `client_tools_core::form_tool`. What the page keeps
//! of these tools is [`crate::webmcp_state`] (the page holds it, and imports nothing of this folder).

pub mod adopted;
pub mod browser_agent;
pub mod form_call;
pub mod forms;

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use crate::page::Page;

/// Starts what the options ask for: the form tools (`forms`), adopting the browser's tools
/// (`adoptBrowserTools`).
pub fn start(page: &Rc<Page>) {
    if page.options.forms {
        crate::webmcp_state::FormTools::start(page);
    }
    if page.options.adopt_browser_tools {
        adopted::start(page);
    }
}

#[wasm_bindgen(module = "/src/webmcp/dom.js")]
extern "C" {
    /// The form's submittable controls as `form_tool::Control`s.
    #[wasm_bindgen(js_name = controlsOf)]
    fn controls_of(form: &JsValue) -> JsValue;
    /// Applies `form_tool::Assignment`s, firing `input` and `change`; returns the values a control
    /// dropped ("name: value, …").
    fn fill(form: &JsValue, assignments: &JsValue) -> Option<String>;
    /// `requestSubmit()` through the prototype (a control may be named like it).
    #[wasm_bindgen(js_name = requestSubmit, catch)]
    fn request_submit(form: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(js_name = submitButtonOf)]
    fn submit_button_of(form: &JsValue) -> Option<web_sys::Element>;
    #[wasm_bindgen(js_name = invalidReason)]
    fn invalid_reason(form: &JsValue) -> Option<String>;
    /// Adds `agentInvoked` and `respondWith` to a submit event; `done(response?)` once it is over.
    #[wasm_bindgen(js_name = agentSubmit)]
    fn agent_submit(event: &JsValue, done: &JsValue);
    /// A `MutationObserver` calling `callback` for the changes under `target` that can change a
    /// form tool.
    fn observe(target: &JsValue, callback: &js_sys::Function) -> JsValue;
    #[wasm_bindgen(js_name = touchesForms)]
    fn touches_forms(records: &JsValue) -> bool;
    /// `modelContext.registerTool(tool, {signal})`; returns the `AbortController` that unregisters.
    #[wasm_bindgen(js_name = registerWithBrowser)]
    fn register_with_browser(
        model_context: &JsValue,
        tool: &JsValue,
        execute: &JsValue,
        on_error: &JsValue,
    ) -> JsValue;
    /// Whether `signal` has aborted already.
    #[wasm_bindgen(js_name = signalAborted)]
    fn signal_aborted(signal: &JsValue) -> bool;
    /// `stop(call)` when `signal` aborts.
    #[wasm_bindgen(js_name = watchAbort)]
    fn watch_abort(signal: &JsValue, call: f64, stop: &js_sys::Function);
    /// `document.modelContext`, else the deprecated `navigator.modelContext` (Chromium), when
    /// present.
    #[wasm_bindgen(js_name = modelContext)]
    fn model_context() -> Option<js_sys::Object>;
    #[wasm_bindgen(js_name = browserHasWebMcp)]
    fn browser_has_webmcp() -> bool;
    /// `on_list(names, declarations as JSON text, handlers)` with what `model_context.getTools()`
    /// lists, now and at each `toolchange` (`on_list(null, why)`: the listing failed); `false`: it
    /// cannot list its tools.
    #[wasm_bindgen(js_name = watchBrowserTools)]
    fn watch_browser_tools(model_context: &JsValue, on_list: &js_sys::Function) -> bool;
    /// A form tool's registry handler: a function returning its form.
    #[wasm_bindgen(js_name = formHandle)]
    fn form_handle(form: &JsValue) -> js_sys::Function;
}
