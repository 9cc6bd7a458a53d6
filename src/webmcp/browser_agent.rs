//! The browser's own agent (`exposeToBrowser`, SPEC §8): the page's tools are registered with
//! `document.modelContext` (or the deprecated `navigator.modelContext`) with
//! `registerTool({name, title, description, inputSchema, execute, annotations}, {signal})`, and
//! unregistered by aborting that signal. `execute` runs the same call pipeline as an agent's call.
//!
//! What is registered: defined tools (`function`), and form tools unless the browser implements
//! WebMCP itself (then it registers the forms on its own). Handlers of agent-defined tools have no
//! schema on the page, and tools the allow-list leaves out are not offered.

use client_tools_core::WarningCode;
use std::rc::{Rc, Weak};

use client_tools_core::page_engine::{CallHandle, Caller, Input};
use client_tools_core::registry::{self, ToolKind};
use serde_json::json;
use wasm_bindgen::prelude::*;

use crate::js;
use crate::page::Page;
use crate::webmcp_state::{BrowserAgent, Registration};

/// `stop(call)`, made once per page: an `execute` signal's abort cancels the call.
fn stop_call(page: &Rc<Page>) -> js_sys::Function {
    let mut stop_call = page.browser_agent.stop_call.borrow_mut();
    let closure = stop_call.get_or_insert_with(|| {
        let page = Rc::downgrade(page);
        Closure::new(move |call: JsValue| {
            if let (Some(page), Some(call)) = (page.upgrade(), call.as_f64()) {
                page.feed(Input::Cancel {
                    call: CallHandle(call as u64),
                    reason: "the browser's agent aborted the call".into(),
                });
            }
        })
    });
    closure.as_ref().unchecked_ref::<js_sys::Function>().clone()
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
        .engine
        .borrow()
        .registry()
        .tools()
        .filter(|tool| match tool.kind {
            ToolKind::Function => true,
            ToolKind::Form => !native_forms,
            // Handlers have no schema on the page; adopted tools are the browser's already.
            ToolKind::Handler | ToolKind::Browser => false,
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
        if super::signal_aborted(&signal) {
            return Ok(JsValue::UNDEFINED);
        }
        let stop = stop_call(&page);
        let watch = |call: CallHandle| super::watch_abort(&signal, call.0 as f64, &stop);
        let result = page.call(name, &input, Caller::Agent, watch).await;
        match result.map_err(|why| JsValue::from_str(&why))? {
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
