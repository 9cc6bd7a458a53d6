//! What a page keeps of its WebMCP tools (SPEC §8), held by [`crate::page::Page`]: the state
//! alone, in a module of its own so that the page needs nothing of [`crate::webmcp`], which drives
//! the page (imports go one way: `webmcp` → `page` → this). [`crate::webmcp::forms`] and
//! [`crate::webmcp::browser_agent`] act on it.

use std::cell::RefCell;

use crate::oneshot;
use client_tools_core::page_engine::CallHandle;
use wasm_bindgen::prelude::*;

/// The `<form toolname>` tools of the document.
#[derive(Default)]
pub struct FormTools {
    pub(crate) tools: RefCell<Vec<FormTool>>,
    pub(crate) watching: RefCell<Option<Watching>>,
    /// The last scan's warnings: a rescan does not repeat one (a refused form stays refused).
    pub(crate) warned: RefCell<Vec<String>>,
}

pub(crate) struct FormTool {
    pub form: JsValue,
    pub original_name: String,
    pub name: String,
    /// Description and schema as last defined: a rescan redefines the tool only when they change.
    pub signature: String,
    pub call: Option<ActiveCall>,
}

/// The call filling a form.
pub(crate) struct ActiveCall {
    pub call: CallHandle,
    pub submitted: Option<oneshot::Sender<Submitted>>,
}

/// What the page did with the `submit` event of a form an agent filled.
pub struct Submitted {
    /// The promise the page gave `respondWith`.
    pub response: Option<js_sys::Promise>,
    /// The form's values as the event began (before the page's listeners could change them).
    pub values: serde_json::Value,
}

/// The observer and the window's capture listeners, for as long as the page lives.
pub(crate) struct Watching {
    pub observer: JsValue,
    pub on_mutations: Closure<dyn FnMut(JsValue)>,
    pub on_form_event: Closure<dyn FnMut(JsValue)>,
}

/// What this page registered with the browser's `modelContext`, by tool name, and what it adopted
/// from there (`adoptBrowserTools`).
#[derive(Default)]
pub struct BrowserAgent {
    pub(crate) registered: RefCell<Vec<Registration>>,
    pub(crate) adopted: RefCell<Vec<Adopted>>,
    /// The last listing's warnings: a listing does not repeat one.
    pub(crate) adopt_warned: RefCell<Vec<String>>,
    /// What the browser's listing calls at each `toolchange` (adopting), for as long as the page
    /// lives.
    pub(crate) on_list: RefCell<Option<OnList>>,
    /// `stop(call)`: what an `execute` signal's abort calls (one closure for every call), made at
    /// the first registration.
    pub(crate) stop_call: RefCell<Option<StopCall>>,
}

pub(crate) type StopCall = Closure<dyn FnMut(JsValue)>;

/// `on_list(names, declarations, handlers)`: the browser's tools, listed at a `toolchange` (or
/// `on_list(null, why)`: the listing failed).
pub(crate) type OnList = Closure<dyn Fn(JsValue, JsValue, JsValue)>;

pub(crate) struct Adopted {
    /// Its name in the registry, and in the browser; `None`: refused for what it is (its
    /// declaration does not read, or is too large), not tried again until it changes.
    pub name: Option<String>,
    pub browser_name: String,
    /// Its declaration as last adopted: a tool whose declaration changed is adopted again.
    pub declaration: String,
}

pub(crate) struct Registration {
    pub name: String,
    /// The registered definition: a tool whose definition changed is registered again.
    pub definition: String,
    pub controller: JsValue,
}
