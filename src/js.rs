//! Small conversions between JavaScript values and JSON, used everywhere at the boundary.
//!
//! JSON crosses the boundary as text (`JSON.stringify` / `JSON.parse`): one call each way, no
//! per-field conversion, and `JSON.parse` creates `__proto__` keys as plain own properties, so agent
//! input can never reach a page's prototypes.

use serde::Serialize;
use serde_json::Value;
use std::cell::RefCell;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen(module = "/src/js.js")]
extern "C" {
    /// A handler's `ctx` built in one call into JavaScript (its `AbortController`, the literal and
    /// `reportProgress` bound to the call's handle: each made from Rust would be a crossing of its
    /// own), with the call's W3C trace context (`undefined` when it has none). It cannot throw:
    /// every browser that runs this module has `AbortController`.
    #[wasm_bindgen(js_name = handlerContext)]
    pub fn handler_context(
        call_id: &str,
        call: f64,
        tool_name: &str,
        original_name: &str,
        report: &js_sys::Function,
        traceparent: Option<&str>,
        tracestate: Option<&str>,
    ) -> js_sys::Object;

    /// Aborts `ctx.signal` with an `Error` carrying `reason` (and a round it waits on).
    #[wasm_bindgen(js_name = abortHandlerContext)]
    pub fn abort_handler_context(ctx: &js_sys::Object, reason: &str);

    /// Settles the round `ctx` waits on with the agent's answer: `{Ok: {inputResponses}}`
    /// resolves it, `{Err: {code, message, data}}` rejects it.
    #[wasm_bindgen(js_name = settleRound)]
    pub fn settle_round(ctx: &js_sys::Object, answer: JsValue);

    /// The `requiredCapabilities` (JSON text) of a `CAPABILITY_MISSING` error a handler let
    /// propagate; `None` for anything else it threw.
    #[wasm_bindgen(js_name = requiredCapabilities)]
    pub fn required_capabilities(thrown: &JsValue) -> Option<String>;

    /// A `CustomEvent` on `document.modelContext`, else on `window` (nothing in a worker).
    #[wasm_bindgen(js_name = dispatchToolEvent)]
    pub fn dispatch_tool_event(event_type: &JsValue, detail: &js_sys::Object);

    /// `JSON.stringify` that refuses functions and symbols anywhere (plain `JSON.stringify` would
    /// silently drop them, and the agent would get less than the handler returned). A replacer
    /// that checks every key makes `JSON.stringify` several times slower, so a quick walk first
    /// looks for anything it could lose (a function, a symbol, a cycle, a `toJSON`), and only then
    /// is the checking replacer used.
    #[wasm_bindgen(js_name = jsonText, catch)]
    fn json_text(value: &JsValue) -> Result<JsValue, JsValue>;

    /// The message of whatever a handler threw: an `Error`'s message, a string, or a description.
    #[wasm_bindgen(js_name = errorMessage)]
    pub fn error_message(thrown: &JsValue) -> String;

    /// `typeof`, with `null` named.
    #[wasm_bindgen(js_name = typeName)]
    pub fn js_type_name(value: &JsValue) -> String;

    /// Calls `changed` at every `visibilitychange` of the document and `focus` / `blur` of the
    /// window (nothing outside a window).
    #[wasm_bindgen(js_name = watchActivity)]
    pub fn watch_activity(changed: &js_sys::Function);

    /// Now: 1 when `document.visibilityState === "visible"`, plus 2 when `document.hasFocus()`.
    #[wasm_bindgen(js_name = activityNow)]
    pub fn activity_now() -> u32;

    /// The dialog's module (`src/ui/ui.js`), imported the first time: a promise of the module.
    #[wasm_bindgen(js_name = loadUi)]
    pub fn load_ui() -> js_sys::Promise;

    /// Whether the user of `token` always allowed this declaration (its text) of tool `name`:
    /// `{found, offer: true, warning}`, or where approvals cannot be kept `{warning}` saying why
    /// (the first time; docs/api.md, "Always allow").
    #[wasm_bindgen(js_name = approvalFind)]
    pub fn approval_find(name: &str, declaration: &str, token: Option<&str>) -> JsValue;

    /// Keeps the approval of this declaration of tool `name` for the user of `token` (one that
    /// cannot be written is said on the console).
    #[wasm_bindgen(js_name = approvalKeep)]
    pub fn approval_keep(name: &str, declaration: &str, token: Option<&str>);

    /// `tools.approvals` (`list`, `revoke`) for the user of `token`; `known` false: not known yet.
    #[wasm_bindgen(js_name = approvalsApi)]
    pub fn approvals_api(token: Option<&str>, known: bool) -> JsValue;
}

/// A JS value as JSON text; the error says why it is not JSON (cycles, BigInt, functions, symbols).
pub fn to_json_text(value: &JsValue) -> Result<String, String> {
    let text = json_text(value).map_err(|e| error_message(&e))?;
    text.as_string()
        .ok_or_else(|| format!("a {} has no JSON form", js_type_name(value)))
}

/// A JS value as JSON; the error says why it is not JSON (cycles, BigInt, functions, symbols).
pub fn to_json(value: &JsValue) -> Result<Value, String> {
    serde_json::from_str(&to_json_text(value)?).map_err(|e| e.to_string())
}

/// The JSON text of a plain object (no functions left in it), for the core to read: numbers
/// that JSON cannot hold (`NaN`, `Infinity`) are refused by name rather than read as `null`.
pub fn plain_json_text(object: &JsValue) -> Result<String, String> {
    for key in keys(object) {
        if let Some(n) = get_named(object, &key).as_f64().filter(|n| !n.is_finite()) {
            return Err(format!("'{key}' must be a finite number, got {n}"));
        }
    }
    to_json_text(object)
}

/// The own enumerable keys of an object.
pub fn keys(object: &JsValue) -> Vec<String> {
    let keys = js_sys::Object::keys(object.unchecked_ref::<js_sys::Object>());
    keys.iter().filter_map(|k| k.as_string()).collect()
}

/// Parses JSON text known to be valid (from serde_json, `JSON.stringify`, or a frame `decode`
/// accepted) into a JS value.
pub fn from_json_text(text: &str) -> JsValue {
    js_sys::JSON::parse(text).unwrap_or(JsValue::NULL)
}

/// Any serializable Rust value as a plain JS object (objects, not `Map`s).
pub fn to_plain<T: Serialize>(value: &T) -> JsValue {
    match serde_json::to_string(value) {
        Ok(text) => from_json_text(&text),
        Err(_) => JsValue::NULL,
    }
}

thread_local! {
    /// The property names and event types the SDK uses on every call, as JavaScript strings.
    static KEYS: RefCell<Vec<(&'static str, JsValue)>> = const { RefCell::new(Vec::new()) };
}

/// `name` as a JavaScript string, made once: the names are a small fixed set, and each would
/// otherwise be decoded again on every call. (wasm-bindgen's `enable-interning` did this with a
/// hash map consulted for every string crossing into JavaScript: 2 KB gzip of the module.)
pub fn key(name: &'static str) -> JsValue {
    KEYS.with_borrow_mut(|keys| {
        if let Some((_, value)) = keys.iter().find(|(known, _)| *known == name) {
            return value.clone();
        }
        let value = JsValue::from_str(name);
        keys.push((name, value.clone()));
        value
    })
}

/// Builds a plain object from key/value pairs (event details, handler context).
pub fn object(entries: &[(&'static str, JsValue)]) -> js_sys::Object {
    let object = js_sys::Object::new();
    for (name, value) in entries {
        let _ = js_sys::Reflect::set(&object, &key(name), value);
    }
    object
}

/// `object[key]`, `undefined` when absent or when `object` is not an object.
pub fn get(object: &JsValue, name: &'static str) -> JsValue {
    js_sys::Reflect::get(object, &key(name)).unwrap_or(JsValue::UNDEFINED)
}

/// [`get`] for a name that is not one of the SDK's own (a page's keys): not kept.
pub fn get_named(object: &JsValue, name: &str) -> JsValue {
    js_sys::Reflect::get(object, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
}

thread_local! {
    /// Looked up once: every call reads the clock several times, and each lookup of `window` and
    /// `performance` would cross into JavaScript again.
    static PERFORMANCE: Option<web_sys::Performance> =
        web_sys::window().and_then(|w| w.performance());
    static WINDOW: Option<web_sys::Window> = web_sys::window();
}

/// Milliseconds from `performance.now()` (monotonic), else `Date.now()`.
pub fn now_ms() -> f64 {
    PERFORMANCE
        .with(|p| p.as_ref().map(web_sys::Performance::now))
        .unwrap_or_else(js_sys::Date::now)
}

/// The page's `window` (none in a worker), looked up once.
pub fn window() -> Option<web_sys::Window> {
    WINDOW.with(Clone::clone)
}

/// What calling page code gave back.
pub enum Called {
    Returned(JsValue),
    Threw(JsValue),
    /// It returned a thenable: [`settle`] it.
    Promise(js_sys::Promise),
}

/// Calls page code (a handler, a `confirm` callback) with no borrow held by the caller.
pub fn call_function(function: &js_sys::Function, args: &js_sys::Array) -> Called {
    match function.apply(&JsValue::UNDEFINED, args) {
        Err(thrown) => Called::Threw(thrown),
        Ok(value) if is_thenable(&value) => Called::Promise(js_sys::Promise::resolve(&value)),
        Ok(value) => Called::Returned(value),
    }
}

/// A promise's value, or what it rejected with.
pub async fn settle(promise: js_sys::Promise) -> Result<JsValue, JsValue> {
    wasm_bindgen_futures::JsFuture::from(promise).await
}

/// [`call_function`], awaited.
pub async fn call_and_settle(
    function: &js_sys::Function,
    args: &js_sys::Array,
) -> Result<JsValue, String> {
    match call_function(function, args) {
        Called::Returned(value) => Ok(value),
        Called::Threw(thrown) => Err(error_message(&thrown)),
        Called::Promise(promise) => settle(promise).await.map_err(|e| error_message(&e)),
    }
}

fn is_thenable(value: &JsValue) -> bool {
    value.is_instance_of::<js_sys::Promise>()
        || (value.is_object() && get(value, "then").is_function())
}

/// The JSON text of the input page code gives a call (`invoke`, the browser's agent); `undefined`
/// means no arguments.
pub fn input_text(input: &JsValue) -> Result<Option<String>, String> {
    (!input.is_undefined())
        .then(|| to_json_text(input))
        .transpose()
}
