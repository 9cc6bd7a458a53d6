//! Every `<form toolname>` of the document is a tool of kind `form` (SPEC §8): found at start,
//! and kept in step with the DOM by a `MutationObserver` — a form added is defined, one whose
//! controls or description change is redefined, one removed or renamed is unregistered and its
//! call in flight is cancelled (the agent gets an error result).
//!
//! The registry keeps, as a form tool's handler, a function that returns its form
//! ([`super::form_handle`]); [`super::form_call`] runs the calls.

use client_tools_core::WarningCode;
use std::rc::{Rc, Weak};

use crate::oneshot;
use client_tools_core::form_tool::{self, Control};
use client_tools_core::page_engine::{CallHandle, Input};
use client_tools_core::registry::{Declaration, ToolKind, Warning};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::js;
use crate::page::Page;
use crate::webmcp_state::{ActiveCall, FormTool, FormTools, Submitted, Watching};

/// The attribute that marks a form an agent is filling (the stand-in for `:tool-form-active`).
pub const FORM_ACTIVE: &str = "data-tool-form-active";
/// The attribute on the submit button while the user is asked to submit (`:tool-submit-active`).
pub const SUBMIT_ACTIVE: &str = "data-tool-submit-active";

/// The form events a call listens for, on the window in the capture phase.
const FORM_EVENTS: [&str; 2] = ["submit", "reset"];

impl Drop for Watching {
    fn drop(&mut self) {
        let disconnect: js_sys::Function = js::get(&self.observer, "disconnect").unchecked_into();
        let _ = disconnect.call0(&self.observer);
        if let Some(window) = web_sys::window() {
            let listener = self.on_form_event.as_ref().unchecked_ref();
            for event in FORM_EVENTS {
                let _ = window.remove_event_listener_with_callback_and_bool(event, listener, true);
            }
        }
        let _ = &self.on_mutations;
    }
}

/// The controls of `form`, as the core reads them.
pub fn controls(form: &JsValue) -> Vec<Control> {
    let list = js::to_json(&super::controls_of(form)).unwrap_or_default();
    Control::list_from_json(&list)
}

impl FormTools {
    /// Defines the document's form tools and watches for changes (`forms: true`).
    pub fn start(page: &Rc<Page>) {
        let Some(window) = web_sys::window() else {
            return;
        };
        let Some(document) = window.document() else {
            return;
        };
        let weak = Rc::downgrade(page);
        let on_mutations = listener(&weak, |page, records| {
            if super::touches_forms(&records) {
                rescan(&page);
            }
        });
        let observer = super::observe(&document.into(), on_mutations.as_ref().unchecked_ref());
        // Capture on the window: before any listener of the page sees the event.
        let on_form_event = listener(&weak, |page, event| {
            match js::get(&event, "type").as_string().as_deref() {
                Some("submit") => page.forms.submitting(&event),
                _ => page.forms.reset(&page, &event),
            }
        });
        for event in FORM_EVENTS {
            let listener = on_form_event.as_ref().unchecked_ref();
            let _ = window.add_event_listener_with_callback_and_bool(event, listener, true);
        }
        page.forms.watching.replace(Some(Watching {
            observer,
            on_mutations,
            on_form_event,
        }));
        // In the constructor no `warning` listener exists yet: this scan's warnings reach the
        // console only (docs/webmcp.md).
        rescan(page);
    }

    /// Marks the form busy with `call`; the error says why it cannot be (to follow "the form of
    /// tool 'x'").
    pub fn begin(
        &self,
        form: &JsValue,
        call: CallHandle,
    ) -> Result<oneshot::Receiver<Submitted>, &'static str> {
        let mut tools = self.tools.borrow_mut();
        let Some(tool) = tools.iter_mut().find(|t| &t.form == form) else {
            return Err("is no longer in the page");
        };
        if tool.call.is_some() {
            return Err("is busy with another call");
        }
        let (sender, receiver) = oneshot::channel();
        tool.call = Some(ActiveCall {
            call,
            submitted: Some(sender),
        });
        Ok(receiver)
    }

    /// The call ended: the form is free again.
    pub fn end(&self, call: CallHandle) {
        for tool in self.tools.borrow_mut().iter_mut() {
            if tool.call.as_ref().is_some_and(|c| c.call == call) {
                tool.call = None;
            }
        }
    }

    /// A `submit` event: when its form is being filled by a call, the event gets `agentInvoked` and
    /// `respondWith`, and the call hears what the page did once the event is over.
    fn submitting(&self, event: &JsValue) {
        let form = js::get(event, "target");
        let sender = self
            .tools
            .borrow_mut()
            .iter_mut()
            .find(|t| t.form == form)
            .and_then(|t| t.call.as_mut())
            .and_then(|c| c.submitted.take());
        let Some(sender) = sender else {
            return;
        };
        let values = form_tool::submitted_values(&controls(&form));
        let done = Closure::once_into_js(move |response: JsValue| {
            let response = response.dyn_into::<js_sys::Promise>().ok();
            let _ = sender.send(Submitted { response, values });
        });
        super::agent_submit(event, &done);
    }

    /// A form reset cancels the call filling it (SPEC §8) — until it is submitted: a page that
    /// resets its form after answering does not take its answer back.
    fn reset(&self, page: &Rc<Page>, event: &JsValue) {
        let form = js::get(event, "target");
        let call = self
            .tools
            .borrow()
            .iter()
            .find(|t| t.form == form)
            .and_then(|t| t.call.as_ref())
            .filter(|c| c.submitted.is_some())
            .map(|c| c.call);
        if let Some(call) = call {
            let reason = "the form was reset".into();
            page.feed(Input::Withdraw { call, reason });
        }
    }
}

/// A listener that holds the page weakly (the page's own closures must not keep it alive).
fn listener(
    page: &Weak<Page>,
    act: impl Fn(Rc<Page>, JsValue) + 'static,
) -> Closure<dyn FnMut(JsValue)> {
    let page = page.clone();
    Closure::new(move |value: JsValue| {
        if let Some(page) = page.upgrade() {
            act(page, value);
        }
    })
}

/// Brings the form tools in step with the document.
pub fn rescan(page: &Rc<Page>) {
    let found = document_forms();
    let mut warnings = Vec::new();
    let mut withdrawn = Vec::new();
    let mut changed = false;

    // Each known form tool: kept while its form is there under its name; gone (unregistered, its
    // call not yet submitted withdrawn) when the form was removed or renamed; forgotten without
    // touching the registry when the page itself replaced (`defineFunction` of the name) or
    // unregistered it (a form still in the document is then defined again below, unless its name
    // is taken). A call already submitted ends with what the page answered.
    let known_tools = std::mem::take(&mut *page.forms.tools.borrow_mut());
    for tool in known_tools {
        if !owns(page, &tool) {
            continue;
        }
        if found
            .iter()
            .any(|(f, n)| *f == tool.form && *n == tool.original_name)
        {
            page.forms.tools.borrow_mut().push(tool);
            continue;
        }
        page.engine
            .borrow_mut()
            .registry_mut()
            .unregister(&tool.name);
        changed = true;
        if let Some(call) = tool.call.filter(|c| c.submitted.is_some()) {
            let why = if found.iter().any(|(f, _)| *f == tool.form) {
                "the form's toolname changed"
            } else {
                "the form was removed"
            };
            withdrawn.push((call.call, why));
        }
    }

    for (form, original_name) in found {
        let description = attribute(&form, "tooldescription").filter(|d| !d.trim().is_empty());
        let schema = form_tool::input_schema(&controls(&form));
        let signature = format!("{}\n{schema}", description.as_deref().unwrap_or_default());
        let known = page
            .forms
            .tools
            .borrow()
            .iter()
            .position(|t| t.form == form);
        if known.is_some_and(|i| page.forms.tools.borrow()[i].signature == signature) {
            continue;
        }
        if known.is_none() {
            let taken = page.engine.borrow().registry().get(&original_name);
            if let Some(tool) = taken {
                let whose = if tool.kind == ToolKind::Form {
                    "another form"
                } else {
                    "a defined tool"
                };
                let warning = Warning {
                    code: WarningCode::FormToolNameTaken,
                    message: format!(
                        "<form toolname=\"{original_name}\"> is not a tool: {whose} has that name"
                    ),
                    tool_name: Some(tool.name.clone()),
                };
                warnings.push(warning);
                continue;
            }
        }
        let declaration = Declaration {
            original_name: original_name.clone(),
            description,
            parameters: Some(schema),
            ..Declaration::default()
        };
        let handler = super::form_handle(&form);
        let defined =
            page.engine
                .borrow_mut()
                .registry_mut()
                .define(declaration, ToolKind::Form, handler);
        match defined {
            Ok((name, defined_warnings)) => {
                changed = true;
                // A redefinition replaces the form's own earlier tool: nothing to warn about.
                let kept = defined_warnings
                    .into_iter()
                    .filter(|w| w.code != WarningCode::ToolReplaced);
                warnings.extend(kept);
                let mut tools = page.forms.tools.borrow_mut();
                match known {
                    Some(i) => tools[i].signature = signature,
                    None => tools.push(FormTool {
                        form,
                        original_name,
                        name,
                        signature,
                        call: None,
                    }),
                }
            }
            Err(error) => warnings.push(Warning {
                code: WarningCode::FormToolInvalid,
                message: format!("<form toolname=\"{original_name}\"> is not a tool: {error}"),
                tool_name: None,
            }),
        }
    }

    for (call, why) in withdrawn {
        page.feed(Input::Withdraw {
            call,
            reason: why.into(),
        });
    }
    let messages: Vec<String> = warnings.iter().map(|w| w.message.clone()).collect();
    let before = page.forms.warned.replace(messages);
    warnings.retain(|w| !before.contains(&w.message));
    page.engine.borrow_mut().report(warnings);
    page.drain();
    if changed {
        page.feed(Input::ToolsChanged);
    }
}

/// Whether the registry still holds `tool` as this form's tool (the page may have defined a
/// function of that name, or unregistered it).
fn owns(page: &Page, tool: &FormTool) -> bool {
    let held = page.engine.borrow().registry().get(&tool.name);
    held.is_some_and(|t| t.kind == ToolKind::Form && t.original_name == tool.original_name)
}

/// `<form toolname>`s of the document in document order, with their tool names (trimmed; a form
/// whose `toolname` is blank is not a tool).
fn document_forms() -> Vec<(JsValue, String)> {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return Vec::new();
    };
    let Ok(list) = document.query_selector_all("form[toolname]") else {
        return Vec::new();
    };
    (0..list.length())
        .filter_map(|i| list.get(i))
        .filter_map(|form| {
            let form: JsValue = form.into();
            let name = attribute(&form, "toolname")?.trim().to_owned();
            (!name.is_empty()).then_some((form, name))
        })
        .collect()
}

fn attribute(element: &JsValue, name: &str) -> Option<String> {
    element
        .unchecked_ref::<web_sys::Element>()
        .get_attribute(name)
}
