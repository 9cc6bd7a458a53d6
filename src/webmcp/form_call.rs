//! One call of a form tool (SPEC §8): fill the form (firing `input` / `change`), mark it
//! `data-tool-form-active`, then submit it (`toolautosubmit`) or mark its submit button
//! `data-tool-submit-active` and wait for the user. The result is what the page passes to the
//! submit event's `respondWith`, else the values the form submitted.
//!
//! Waiting for the user to submit is human time: the engine is told ([`Input::WaitingForPerson`])
//! and keeps its bound and progress; the handler timeout starts when the form is submitted. With
//! `toolautosubmit` the whole call runs against the timeout. When the engine ends the call first
//! (timeout, cancel, withdrawal), its `Abort` stops the wait here.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;

use crate::oneshot;
use client_tools_core::form_tool;
use client_tools_core::page_engine::{CallHandle, Input};
use client_tools_core::registry::RegisteredTool;
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

use super::forms::{self, FORM_ACTIVE, SUBMIT_ACTIVE};
use crate::js;
use crate::page::{Page, Running};
use crate::webmcp_state::Submitted;

/// Starts the call; it reports its end to the engine (unless the engine stopped it).
pub fn run(
    page: &Rc<Page>,
    call: CallHandle,
    tool: &RegisteredTool<js_sys::Function>,
    input: &str,
) {
    let form = tool.handler.call0(&JsValue::UNDEFINED).unwrap_or_default();
    let submitted = match page.forms.begin(&form, call) {
        Ok(submitted) => submitted,
        Err(why) => {
            let why = format!("the form of tool '{}' {why}", tool.name);
            return page.settle(call, Err(why.into()));
        }
    };
    let (stop, stopped) = oneshot::channel();
    page.calls
        .borrow_mut()
        .running
        .push((call, Running::Form(stop)));
    let element: web_sys::Element = form.clone().unchecked_into();
    let _ = element.set_attribute(FORM_ACTIVE, "");
    let autosubmit = element.has_attribute("toolautosubmit");
    let page = page.clone();
    let input = input.to_owned();
    wasm_bindgen_futures::spawn_local(async move {
        let mut stopped = stopped;
        let end = fill_and_submit(
            &page,
            call,
            &form,
            &input,
            autosubmit,
            submitted,
            &mut stopped,
        );
        let end = end.await;
        let _ = element.remove_attribute(FORM_ACTIVE);
        page.forms.end(call);
        if let Some(end) = end {
            page.settle(call, end);
        }
    });
}

/// How the call ended; `None` when the engine stopped it.
async fn fill_and_submit(
    page: &Rc<Page>,
    call: CallHandle,
    form: &JsValue,
    input: &str,
    autosubmit: bool,
    submitted: oneshot::Receiver<Submitted>,
    stopped: &mut oneshot::Receiver<()>,
) -> Option<Result<JsValue, JsValue>> {
    let input: Value = serde_json::from_str(input).unwrap_or_default();
    let assignments = form_tool::assignments(&forms::controls(form), &input);
    if let Some(dropped) = super::fill(form, &js::to_plain(&assignments)) {
        let why = format!("the form did not take these values: {dropped}");
        return Some(Err(why.into()));
    }
    let submitted = if autosubmit {
        if let Some(why) = super::invalid_reason(form) {
            return Some(Err(format!("the form cannot be submitted: {why}").into()));
        }
        if let Err(thrown) = super::request_submit(form) {
            return Some(Err(thrown));
        }
        match unless_stopped(submitted, stopped).await {
            Some(submitted) => submitted,
            None => return None,
        }
    } else {
        let button = super::submit_button_of(form);
        if let Some(button) = &button {
            let _ = button.set_attribute(SUBMIT_ACTIVE, "");
        }
        page.feed(Input::WaitingForPerson { call });
        let waited = unless_stopped(submitted, stopped).await;
        if let Some(button) = &button {
            let _ = button.remove_attribute(SUBMIT_ACTIVE);
        }
        match waited {
            Some(submitted) => {
                page.feed(Input::PersonDone { call });
                submitted
            }
            None => return None,
        }
    };
    // No submit: the form's tool went (removed, renamed), and the engine withdrew the call.
    let Ok(Submitted { response, values }) = submitted else {
        return None;
    };
    match response {
        Some(promise) => unless_stopped(Box::pin(js::settle(promise)), stopped).await,
        // No `respondWith`: the values the form submitted (read before the page's listeners ran)
        // are the result, sent before a navigation can start.
        None => Some(Ok(js::to_plain(&values))),
    }
}

/// `work`'s output, or `None` once the engine stopped the call (`stopped` fired, or its sender went).
async fn unless_stopped<F: Future + Unpin>(
    mut work: F,
    stopped: &mut oneshot::Receiver<()>,
) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        if let Poll::Ready(output) = Pin::new(&mut work).poll(cx) {
            return Poll::Ready(Some(output));
        }
        Pin::new(&mut *stopped).poll(cx).map(|_| None)
    })
    .await
}
