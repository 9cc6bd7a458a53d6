//! Asking a person what the engine wants to know (SPEC §5, §7): whether a call may run — the
//! built-in dialog ([`crate::ui::dialog`]), or the page's `confirm` callback instead — or the
//! result of an agent-defined tool that has no handler (the result form). The answer goes back to
//! the engine, which also keeps the time: how long a person may take, and progress meanwhile.

use std::rc::Rc;

use client_tools_core::call::ConfirmDecision;
use client_tools_core::page_engine::{Answer, CallHandle, Input, Question, QuestionKind};

use crate::js;
use crate::page::{take, Page};
use crate::ui::dialog::{self, Request};
use wasm_bindgen::JsValue;

pub fn ask(page: &Rc<Page>, call: CallHandle, call_id: &str, question: Question) {
    let confirming = matches!(question.kind, QuestionKind::Confirm { .. });
    if let (true, Some(confirm)) = (confirming, page.options.confirm.clone()) {
        let request = js::to_plain(&question.confirm_request(call_id));
        return ask_callback(page, call, confirm, request);
    }
    let strings = page.options.strings.clone();
    let (id, answer) = match dialog::ask(Request { question, strings }) {
        Ok(asked) => asked,
        Err(why) => {
            return page.feed(Input::Answered {
                call,
                answer: Answer::Failed(why),
            })
        }
    };
    page.calls.borrow_mut().asked.push((call, id));
    let page = page.clone();
    wasm_bindgen_futures::spawn_local(async move {
        // Withdrawn (the call ended first): the engine needs nothing more.
        let Ok(answer) = answer.await else { return };
        take(&mut page.calls.borrow_mut().asked, call);
        page.feed(Input::Answered { call, answer });
    });
}

/// The page's own `confirm(request)` decides.
fn ask_callback(page: &Rc<Page>, call: CallHandle, confirm: js_sys::Function, request: JsValue) {
    let page = page.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let args = js_sys::Array::of1(&request);
        let decision = js::call_and_settle(&confirm, &args)
            .await
            .map_err(|message| format!("the confirmation failed: {message}"))
            .and_then(|value| js::to_json(&value).and_then(ConfirmDecision::parse));
        let answer = decision.map_or_else(Answer::Failed, Answer::from);
        page.feed(Input::Answered { call, answer });
    });
}

/// The call ended while its person was asked: the dialog closes (or its request leaves the queue).
pub fn withdraw(page: &Page, call: CallHandle) {
    let shown = take(&mut page.calls.borrow_mut().asked, call);
    if let Some(id) = shown {
        dialog::withdraw(id);
    }
}
