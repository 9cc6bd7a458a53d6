//! Asking a person what the engine wants to know (SPEC §5, §7): whether a call may run — the
//! built-in dialog ([`crate::ui::dialog`]), or the page's `confirm` callback instead — or the
//! result of an agent-defined tool that has no handler (the result form). The answer goes back to
//! the engine, which also keeps the time: how long a person may take, and progress meanwhile.

use std::rc::Rc;

use client_tools_core::call::ConfirmDecision;
use client_tools_core::form::initial_value;
use client_tools_core::page_engine::{Ask, CallHandle, Input};
use wasm_bindgen::JsValue;

use crate::js;
use crate::page::{take, Page};
use crate::ui::dialog::{self, Answer, Kind, Request};

pub fn ask(page: &Rc<Page>, call: CallHandle, call_id: &str, ask: Ask<js_sys::Function>) {
    let (request, confirming) = match ask {
        Ask::Confirm {
            tool,
            title,
            description,
            input,
            input_schema,
            offer_session,
        } => {
            if let Some(confirm) = page.options.confirm.clone() {
                let schema = input_schema
                    .as_ref()
                    .map_or(JsValue::UNDEFINED, |s| js::from_json(s.schema()));
                let request = js::object(&[
                    ("toolName", tool.name.as_str().into()),
                    ("originalName", tool.original_name.as_str().into()),
                    (
                        "description",
                        tool.description
                            .as_deref()
                            .map_or(JsValue::UNDEFINED, JsValue::from),
                    ),
                    ("callId", call_id.into()),
                    ("input", js::from_json_text(&input)),
                    ("inputSchema", schema),
                ]);
                return ask_callback(page, call, confirm, request);
            }
            let request = Request {
                kind: Kind::Confirm { offer_session },
                title,
                description,
                original_name: tool.original_name.clone(),
                value: serde_json::from_str(&input).unwrap_or_default(),
                schema: input_schema,
                context: None,
                strings: page.options.strings.clone(),
            };
            (request, true)
        }
        Ask::ResultForm {
            title,
            description,
            original_name,
            output,
            context,
        } => {
            let request = Request {
                kind: Kind::Result,
                title,
                description,
                original_name,
                value: initial_value(output.schema()),
                schema: Some(output),
                context,
                strings: page.options.strings.clone(),
            };
            (request, false)
        }
    };
    let (id, answer) = match dialog::ask(request) {
        Ok(asked) => asked,
        Err(why) => {
            return page.feed(Input::Decided {
                call,
                decision: Err(why),
                allow_for_session: false,
            })
        }
    };
    page.calls.borrow_mut().asked.push((call, id));
    let page = page.clone();
    wasm_bindgen_futures::spawn_local(async move {
        // Withdrawn (the call ended first): the engine needs nothing more.
        let Ok(answer) = answer.await else { return };
        take(&mut page.calls.borrow_mut().asked, call);
        let input = match (confirming, answer) {
            (false, Answer::Result(value)) => Input::ResultGiven {
                call,
                value: Some(value),
            },
            (false, _) => Input::ResultGiven { call, value: None },
            (true, Answer::Approve { allow_session }) => Input::Decided {
                call,
                decision: Ok(ConfirmDecision::Approve),
                allow_for_session: allow_session,
            },
            (true, answer) => Input::Decided {
                call,
                decision: match answer {
                    Answer::Modify(input) => Ok(ConfirmDecision::Modify { input }),
                    Answer::Reject(reason) => Ok(ConfirmDecision::Reject { reason }),
                    _ => Err("the dialog was closed".to_owned()),
                },
                allow_for_session: false,
            },
        };
        page.feed(input);
    });
}

/// The page's own `confirm(request)` decides.
fn ask_callback(
    page: &Rc<Page>,
    call: CallHandle,
    confirm: js_sys::Function,
    request: js_sys::Object,
) {
    let page = page.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let args = js_sys::Array::of1(&request);
        let decision = js::call_and_settle(&confirm, &args)
            .await
            .map_err(|message| format!("the confirmation failed: {message}"))
            .and_then(|value| js::to_json(&value).and_then(ConfirmDecision::parse));
        page.feed(Input::Decided {
            call,
            decision,
            allow_for_session: false,
        });
    });
}

/// The call ended while its person was asked: the dialog closes (or its request leaves the queue).
pub fn withdraw(page: &Page, call: CallHandle) {
    let shown = take(&mut page.calls.borrow_mut().asked, call);
    if let Some(id) = shown {
        dialog::withdraw(id);
    }
}
