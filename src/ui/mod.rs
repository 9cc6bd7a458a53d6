//! The SDK's own user interface (SPEC §7): the confirmation dialog and the result form, built by one
//! schema-form renderer, in a shadow root the page's CSS cannot reach — and not in the module every
//! page loads at `init`. The dialog and the forms are one JavaScript module, `src/ui/ui.js`, which
//! `src/js.js` `loadUi` imports (a file of the package, no `eval`) when a call first needs a person;
//! why a JavaScript module rather than a second wasm module: docs/building.md, *The dialog, loaded on
//! first use*.
//!
//! Here stays what the Rust side decides: the words ([`strings`], the `strings` option), which field
//! each schema becomes (the core's `schema_field::plan`), whether an edited value is valid (the
//! core's `CompiledSchema`, asked by the dialog through `validate`) and what an answer means for
//! the engine. A module that cannot be loaded (offline, a 404) ends the call with one error result
//! naming it.

pub mod strings;

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use client_tools_core::page_engine::{Answer, Question, QuestionKind};
use client_tools_core::schema_field;
use client_tools_core::validate::CompiledSchema;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::js;
use crate::oneshot;
use strings::Strings;

#[wasm_bindgen]
extern "C" {
    /// `src/ui/ui.js` once imported.
    #[derive(Clone)]
    pub type UiModule;

    /// Shows a request (now, or after those already waiting); throws when the page has no body.
    #[wasm_bindgen(method, catch)]
    fn ask(
        this: &UiModule,
        id: u32,
        request: JsValue,
        validate: &js_sys::Function,
        answer: &js_sys::Function,
    ) -> Result<(), JsValue>;

    /// Takes a request away unanswered.
    #[wasm_bindgen(method)]
    fn withdraw(this: &UiModule, id: u32);
}

/// A request shown (or about to be): what its answer is checked against, and where it goes.
struct Pending {
    id: u32,
    /// The value the form was shown with (an edit that changes nothing is an approval).
    value: Value,
    schema: Option<Arc<CompiledSchema>>,
    reply: oneshot::Sender<Answer>,
}

/// The dialog's two ways back into Rust, made once: the dialog lives as long as the page.
struct Callbacks {
    validate: Closure<dyn Fn(u32, String) -> JsValue>,
    answer: Closure<dyn Fn(u32, String)>,
}

thread_local! {
    static PENDING: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
    static MODULE: RefCell<Option<UiModule>> = const { RefCell::new(None) };
    static CALLBACKS: Callbacks = Callbacks {
        validate: Closure::new(validate),
        answer: Closure::new(answered),
    };
    static NEXT_REQUEST: Cell<u32> = const { Cell::new(0) };
}

fn take(id: u32) -> Option<Pending> {
    PENDING.with_borrow_mut(|pending| {
        let index = pending.iter().position(|p| p.id == id)?;
        Some(pending.remove(index))
    })
}

/// What the dialog is asked to show, as JSON (`src/ui/ui.js` says what each key is).
fn request(question: &Question, strings: &Strings) -> Value {
    let plan = question
        .schema
        .as_deref()
        .map_or_else(|| json!({"t": "json"}), |s| schema_field::plan(s.schema()));
    let mut request = json!({
        "kind": "result",
        "title": question.title,
        "description": question.description,
        "originalName": question.original_name,
        "context": question.context,
        "value": question.value,
        "plan": plan,
        "strings": strings.table(),
    });
    if let QuestionKind::Confirm {
        offer_session,
        offer_always,
    } = question.kind
    {
        request["kind"] = "confirm".into();
        request["offerSession"] = offer_session.into();
        request["offerAlways"] = offer_always.into();
    }
    request
}

/// Asks the person `question` in the dialog — loading the dialog first, the first time. The id
/// withdraws it ([`withdraw`]); the receiver gets the answer ([`Answer::Failed`] when the dialog
/// could not be loaded or shown).
pub fn ask(question: Question, strings: &Strings) -> (u32, oneshot::Receiver<Answer>) {
    let (reply, answer) = oneshot::channel();
    let id = NEXT_REQUEST.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    let request = request(&question, strings).to_string();
    PENDING.with_borrow_mut(|pending| {
        pending.push(Pending {
            id,
            value: question.value,
            schema: question.schema,
            reply,
        })
    });
    wasm_bindgen_futures::spawn_local(async move {
        let shown = match JsFuture::from(js::load_ui()).await {
            Ok(module) => {
                let module: UiModule = module.unchecked_into();
                MODULE.with_borrow_mut(|m| *m = Some(module.clone()));
                // Withdrawn while the module loaded: nothing to show.
                let waiting = PENDING.with_borrow(|p| p.iter().any(|p| p.id == id));
                if !waiting {
                    return;
                }
                let request = js::from_json_text(&request);
                CALLBACKS
                    .with(|c| {
                        module.ask(
                            id,
                            request,
                            c.validate.as_ref().unchecked_ref(),
                            c.answer.as_ref().unchecked_ref(),
                        )
                    })
                    .map_err(|e| js::error_message(&e))
            }
            Err(e) => Err(format!(
                "the dialog (client-tools' src/ui/ui.js) could not be loaded: {}",
                js::error_message(&e)
            )),
        };
        if let Err(why) = shown {
            if let Some(pending) = take(id) {
                let _ = pending.reply.send(Answer::Failed(why));
            }
        }
    });
    (id, answer)
}

/// Takes a request away unanswered (the runtime cancelled the call, or the wait ran out).
pub fn withdraw(id: u32) {
    if take(id).is_some() {
        if let Some(module) = MODULE.with_borrow(Clone::clone) {
            module.withdraw(id);
        }
    }
}

/// The dialog's `validate(id, json)`: the schema's errors on an edited value or a result, as
/// `[[pointer, message], …]`.
fn validate(id: u32, text: String) -> JsValue {
    let schema = PENDING.with_borrow(|p| p.iter().find(|p| p.id == id)?.schema.clone());
    let errors = match (schema, serde_json::from_str::<Value>(&text)) {
        (Some(schema), Ok(value)) => schema.field_errors(&value),
        (None, Ok(_)) => Vec::new(),
        (_, Err(error)) => vec![(String::new(), error.to_string())],
    };
    js::to_plain(&errors)
}

/// The dialog's `answer(id, json)`: the person's answer, to the engine.
fn answered(id: u32, text: String) {
    let Some(pending) = take(id) else { return };
    let answer: Value = serde_json::from_str(&text).unwrap_or_default();
    let approve = |flags: &Value| Answer::Approve {
        allow_session: flags["allowSession"] == true,
        allow_always: flags["allowAlways"] == true,
    };
    let answer = if answer == "cancelled" {
        Answer::Cancelled
    } else if let Some(reason) = answer.get("reject") {
        Answer::Reject(reason.as_str().map(str::to_owned))
    } else if let Some(result) = answer.get("result") {
        Answer::Result(result.clone())
    } else {
        match (answer.get("approve"), answer.get("value")) {
            // An edit that changed nothing is an approval of the proposed input.
            (Some(_), Some(value)) if *value != pending.value => Answer::Modify(value.clone()),
            (Some(flags), _) => approve(flags),
            _ => Answer::Failed(format!("the dialog answered {text}")),
        }
    };
    let _ = pending.reply.send(answer);
}
