//! Asking a person what the engine wants to know (SPEC §5, §7): whether a call may run — the
//! built-in dialog ([`crate::ui`]), or the page's `confirm` callback instead — or the
//! result of an agent-defined tool that has no handler (the result form). The answer goes back to
//! the engine, which also keeps the time: how long a person may take, and progress meanwhile.
//!
//! Where the engine offers "always allow" (the `allowAlways` option), an approval the page kept
//! for this declaration and user answers without the dialog, and one the person gives is kept
//! (`localStorage`, read and written synchronously by `js.js`: docs/api.md, "Always allow").

use std::rc::Rc;

use client_tools_core::call::ConfirmDecision;
use client_tools_core::page_engine::{Answer, CallHandle, Input, Question, QuestionKind};
use client_tools_core::WarningCode;

use crate::js;
use crate::page::{take, Page};
use crate::ui;
use wasm_bindgen::JsValue;

pub fn ask(page: &Rc<Page>, call: CallHandle, call_id: &str, mut question: Question) {
    let confirming = matches!(question.kind, QuestionKind::Confirm { .. });
    if let (true, Some(confirm)) = (confirming, page.options.confirm.clone()) {
        let request = js::to_plain(&question.confirm_request(call_id));
        return ask_callback(page, call, confirm, request);
    }
    let offered = match approved_before(page, &mut question) {
        Kept::Found => {
            let answer = Answer::Approve {
                allow_session: false,
                allow_always: false,
            };
            return page.feed(Input::Answered { call, answer });
        }
        Kept::NotFound(offered) => offered,
    };
    let (id, answer) = ui::ask(question, &page.options.strings);
    page.calls.borrow_mut().asked.push((call, id));
    let page = page.clone();
    wasm_bindgen_futures::spawn_local(async move {
        // Withdrawn (the call ended first): the engine needs nothing more.
        let Ok(answer) = answer.await else { return };
        take(&mut page.calls.borrow_mut().asked, call);
        if matches!(
            answer,
            Answer::Approve {
                allow_always: true,
                ..
            }
        ) {
            // What this call was asked about, with the user of that moment: never another
            // call's (every `ClientTools` numbers its calls from 1, and they share the dialog).
            if let Some(Offered {
                name,
                declaration,
                token,
            }) = &offered
            {
                js::approval_keep(name, declaration, token.as_deref());
            }
        }
        page.feed(Input::Answered { call, answer });
    });
}

/// What a call's person is offered to always allow: the tool's original name, its declaration
/// text and the page's token when it was asked (whose approval it is).
struct Offered {
    name: String,
    declaration: String,
    token: Option<String>,
}

enum Kept {
    /// An approval kept for this declaration and user answers the call.
    Found,
    /// The person is asked; what an "always allow" would keep, where it is offered.
    NotFound(Option<Offered>),
}

/// "Always allow" (the `allowAlways` option), where the engine offers it: whether an approval
/// kept for this declaration and user answers the call. Where approvals cannot be kept (or whose
/// page it is is not known yet) the question stops offering it.
fn approved_before(page: &Page, question: &mut Question) -> Kept {
    let mut offered = None;
    let found = match (question.declaration.take(), approval_user(page)) {
        (Some(declaration), Some(token)) => {
            let name = &question.original_name;
            let found = js::approval_find(name, &declaration, token.as_deref());
            offered = Some(Offered {
                name: name.clone(),
                declaration,
                token,
            });
            found
        }
        _ => JsValue::UNDEFINED,
    };
    // A warning: about what was kept, or (not offered) why approvals cannot be kept here.
    let offer = js::get(&found, "offer").is_truthy();
    if let Some(why) = js::get(&found, "warning").as_string() {
        let (code, tool) = match offer {
            true => (WarningCode::StoredDataIgnored, Some(&*question.tool_name)),
            false => (WarningCode::AlwaysAllowUnavailable, None),
        };
        page.events.warn(code, &why, tool);
    }
    if let (false, QuestionKind::Confirm { offer_always, .. }) = (offer, &mut question.kind) {
        *offer_always = false;
    }
    if js::get(&found, "found").is_truthy() {
        return Kept::Found;
    }
    Kept::NotFound(offered.filter(|_| offer))
}

/// Whose approvals these are: the page's token (a JWT's `sub` names the user), `Some(None)`
/// without one; `None` while not known (a token function that gave none yet).
pub fn approval_user(page: &Page) -> Option<Option<String>> {
    let token = page.connection.borrow().token().map(str::to_owned);
    (token.is_some() || page.options.token_function.is_none()).then_some(token)
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
        ui::withdraw(id);
    }
}
