//! The browser's own agent (`exposeToBrowser`, SPEC §8): the page's tools are registered with
//! `document.modelContext` (or the deprecated `navigator.modelContext`) with
//! `registerTool({name, title, description, inputSchema, execute, annotations}, {signal})`, and
//! unregistered by aborting that signal. `execute` runs the same call pipeline as an agent's call.
//!
//! What is registered: defined tools (`function`), and form tools unless the browser implements
//! WebMCP itself (then it registers the forms on its own). Handlers of agent-defined tools have no
//! schema on the page, and tools the allow-list leaves out are not offered.

use client_tools_core::WarningCode;
use std::cell::RefCell;
use std::rc::{Rc, Weak};

use client_tools_core::protocol::CallToolParams;
use client_tools_core::registry::{self, ToolKind};
use serde_json::json;
use wasm_bindgen::prelude::*;

use crate::call_runner::{self, Caller, IncomingCall};
use crate::js;
use crate::page::{Page, Stop};

/// What this page registered with the browser, by tool name.
pub struct BrowserAgent {
    registered: RefCell<Vec<Registration>>,
    /// `stop(callId)`: what an `execute` signal's abort calls (one closure for every call).
    stop_call: Closure<dyn FnMut(JsValue)>,
}

struct Registration {
    name: String,
    /// The registered definition: a tool whose definition changed is registered again.
    definition: String,
    controller: JsValue,
}

impl BrowserAgent {
    pub fn new(page: Weak<Page>) -> Self {
        let stop_call = Closure::new(move |call_id: JsValue| {
            if let (Some(page), Some(call_id)) = (page.upgrade(), call_id.as_string()) {
                let why = Stop::Cancelled("the browser's agent aborted the call".into());
                call_runner::stop(&page, &call_id, why);
            }
        });
        Self {
            registered: RefCell::default(),
            stop_call,
        }
    }

    fn stop_call(&self) -> &js_sys::Function {
        self.stop_call.as_ref().unchecked_ref()
    }

    /// Brings the browser's registrations in step with the registry (after every tool change).
    pub fn sync(page: &Rc<Page>) {
        if !page.options.expose_to_browser {
            return;
        }
        let Some(model_context) = super::model_context() else {
            return;
        };
        let native_forms = super::browser_has_webmcp();
        let wanted: Vec<(String, String, JsValue)> = page
            .registry
            .borrow()
            .tools()
            .filter(|tool| match tool.kind {
                ToolKind::Function => true,
                ToolKind::Form => !native_forms,
                ToolKind::Handler => false,
            })
            .filter(|tool| registry::is_allowed(&page.options.allow, &tool.original_name))
            .map(|tool| {
                // The tool as `registerTool` takes it (`execute` is added in JavaScript).
                let mut definition = json!({
                    "name": tool.name,
                    "title": tool.original_name,
                    "inputSchema": tool.input_schema(),
                });
                if let Some(description) = &tool.description {
                    definition["description"] = description.as_str().into();
                }
                if let Some(annotations) = &tool.annotations {
                    definition["annotations"] = annotations.clone();
                }
                let text = definition.to_string();
                let object = js::from_json_text(&text);
                (tool.name.clone(), text, object)
            })
            .collect();

        let stale: Vec<Registration> = {
            let mut registered = page.browser_agent.registered.borrow_mut();
            let (kept, stale) = std::mem::take(&mut *registered).into_iter().partition(|r| {
                wanted
                    .iter()
                    .any(|(n, d, _)| *n == r.name && *d == r.definition)
            });
            *registered = kept;
            stale
        };
        for registration in stale {
            abort(&registration.controller);
        }
        for (name, definition, tool) in wanted {
            let known = page
                .browser_agent
                .registered
                .borrow()
                .iter()
                .any(|r| r.name == name);
            if known {
                continue;
            }
            let controller = register(page, &model_context, &name, &tool);
            page.browser_agent
                .registered
                .borrow_mut()
                .push(Registration {
                    name,
                    definition,
                    controller,
                });
        }
    }
}

impl Drop for BrowserAgent {
    /// A page's tools leave the browser's agent with it.
    fn drop(&mut self) {
        for registration in self.registered.get_mut().drain(..) {
            abort(&registration.controller);
        }
    }
}

fn register(page: &Rc<Page>, model_context: &JsValue, name: &str, tool: &JsValue) -> JsValue {
    let weak = Rc::downgrade(page);
    let tool_name = name.to_owned();
    let execute = Closure::<dyn Fn(JsValue, JsValue) -> js_sys::Promise>::new(
        move |input: JsValue, signal: JsValue| {
            execute(weak.clone(), tool_name.clone(), input, signal)
        },
    )
    .into_js_value();
    let weak = Rc::downgrade(page);
    let tool_name = name.to_owned();
    let on_error = Closure::once_into_js(move |error: JsValue| {
        if let Some(page) = weak.upgrade() {
            let message = format!(
                "the browser's modelContext did not register tool '{tool_name}': {}",
                js::error_message(&error)
            );
            page.events.warn(
                WarningCode::BrowserRegisterFailed,
                &message,
                Some(&tool_name),
            );
        }
    });
    super::register_with_browser(model_context, tool, &execute, &on_error)
}

/// The browser's agent calls a tool: the same pipeline as an agent's call. Resolves to the MCP
/// result (an error result too); rejects with an `AbortError` when the call was cancelled.
fn execute(page: Weak<Page>, name: String, input: JsValue, signal: JsValue) -> js_sys::Promise {
    wasm_bindgen_futures::future_to_promise(async move {
        let page = page
            .upgrade()
            .ok_or_else(|| JsValue::from_str("the page's ClientTools is gone"))?;
        let (arguments, text) = call_runner::arguments_from_js(&input)
            .map_err(|why| JsValue::from_str(&format!("input of '{name}' is not JSON: {why}")))?;
        let call_id = page.next_local_call_id();
        if super::aborted_or_watch(&signal, &call_id, page.browser_agent.stop_call()) {
            return Ok(JsValue::UNDEFINED);
        }
        let params = CallToolParams {
            name,
            arguments,
            meta: None,
        };
        let call = IncomingCall::new(params, text.as_deref());
        match call_runner::run_call(page, call_id, call, Caller::Agent).await {
            Some(result) => Ok(js::to_plain(&result)),
            // Cancelled: `registerWithBrowser`'s wrapper rejects with an `AbortError`.
            None => Ok(JsValue::UNDEFINED),
        }
    })
}

fn abort(controller: &JsValue) {
    let abort: js_sys::Function = js::get(controller, "abort").unchecked_into();
    let _ = abort.call0(controller);
}
