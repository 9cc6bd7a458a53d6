//! One call of a form tool (SPEC §8): fill the form (firing `input` / `change`), mark it
//! `data-tool-form-active`, then submit it (`toolautosubmit`) or mark its submit button
//! `data-tool-submit-active` and wait for the user. The result is what the page passes to the
//! submit event's `respondWith`, else the values the form submitted.
//!
//! Waiting for the user to submit is human time: it has its own bound (300 s) with progress, and the
//! handler timeout starts when the form is submitted. With `toolautosubmit` the whole call runs
//! against the timeout.

use std::rc::Rc;

use client_tools_core::form_tool;
use client_tools_core::registry::RegisteredTool;
use futures::channel::oneshot;
use futures::future::{self, Either};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::forms::{self, Submitted, FORM_ACTIVE, SUBMIT_ACTIVE};
use crate::call_runner::HandlerEnd;
use crate::confirmation::{wait_for_human, Waited};
use crate::js;
use crate::page::{Page, Stop};

pub async fn run(
    page: &Rc<Page>,
    call_id: &str,
    tool: &RegisteredTool<js_sys::Function>,
    arguments_text: &str,
    stop_rx: &mut oneshot::Receiver<Stop>,
) -> HandlerEnd {
    let form = tool.handler.call0(&JsValue::UNDEFINED).unwrap_or_default();
    let submitted = match page.forms.begin(&form, call_id) {
        Ok(submitted) => submitted,
        Err(why) => {
            return HandlerEnd::Returned(Err(format!("the form of tool '{}' {why}", tool.name)))
        }
    };
    let element: &web_sys::Element = form.unchecked_ref();
    let _ = element.set_attribute(FORM_ACTIVE, "");
    let end = fill_and_submit(
        page,
        call_id,
        tool,
        &form,
        arguments_text,
        submitted,
        stop_rx,
    )
    .await;
    let _ = element.remove_attribute(FORM_ACTIVE);
    page.forms.end(call_id);
    end
}

async fn fill_and_submit(
    page: &Page,
    call_id: &str,
    tool: &RegisteredTool<js_sys::Function>,
    form: &JsValue,
    arguments_text: &str,
    submitted: oneshot::Receiver<Submitted>,
    stop_rx: &mut oneshot::Receiver<Stop>,
) -> HandlerEnd {
    let input: Value = serde_json::from_str(arguments_text).unwrap_or_default();
    let assignments = form_tool::assignments(&forms::controls(form), &input);
    if let Some(dropped) = super::fill(form, &js::to_plain(&assignments)) {
        return HandlerEnd::Returned(Err(format!(
            "the form did not take these values: {dropped}"
        )));
    }

    let autosubmit = form
        .unchecked_ref::<web_sys::Element>()
        .has_attribute("toolautosubmit");
    let mut deadline = None;
    let submitted = if autosubmit {
        deadline = Some(page.deadlines.start(call_id, tool.timeout_ms));
        if let Some(why) = super::invalid_reason(form) {
            return HandlerEnd::Returned(Err(format!("the form cannot be submitted: {why}")));
        }
        if let Err(thrown) = super::request_submit(form) {
            return HandlerEnd::Returned(Err(js::error_message(&thrown)));
        }
        match future::select(submitted, &mut *stop_rx).await {
            Either::Left((submitted, _)) => submitted,
            Either::Right((stop, _)) => return stopped(stop),
        }
    } else {
        let button = super::submit_button_of(form);
        if let Some(button) = &button {
            let _ = button.set_attribute(SUBMIT_ACTIVE, "");
        }
        let waited = wait_for_human(
            page,
            call_id,
            submitted,
            stop_rx,
            "the user to submit the form",
        )
        .await;
        if let Some(button) = &button {
            let _ = button.remove_attribute(SUBMIT_ACTIVE);
        }
        match waited {
            Waited::Done(submitted) => submitted,
            Waited::Cancelled(reason) => return HandlerEnd::Cancelled(reason),
            Waited::TimedOut => {
                return HandlerEnd::Returned(Err(
                    "the user did not submit the form in time".to_owned()
                ))
            }
        }
    };
    let Ok(Submitted { response, values }) = submitted else {
        // The form's tool went (removed, renamed): the stop that says why is already queued.
        return match stop_rx.try_recv() {
            Ok(Some(stop)) => stopped(Ok(stop)),
            _ => HandlerEnd::Returned(Err("the form was not submitted".to_owned())),
        };
    };
    let _deadline = deadline.unwrap_or_else(|| page.deadlines.start(call_id, tool.timeout_ms));
    match response {
        Some(promise) => match future::select(JsFuture::from(promise), &mut *stop_rx).await {
            Either::Left((returned, _)) => {
                HandlerEnd::Returned(returned.map_err(|thrown| js::error_message(&thrown)))
            }
            Either::Right((stop, _)) => stopped(stop),
        },
        // No `respondWith`: the values the form submitted (read before the page's listeners ran)
        // are the result, sent before a navigation can start.
        None => HandlerEnd::Returned(Ok(js::from_json(&values))),
    }
}

fn stopped(stop: Result<Stop, oneshot::Canceled>) -> HandlerEnd {
    match stop {
        Ok(Stop::TimedOut) => HandlerEnd::TimedOut,
        other => HandlerEnd::Cancelled(other.map_or_else(|_| "cancelled".into(), Stop::reason)),
    }
}
