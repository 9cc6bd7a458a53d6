//! Asking the user before a tool runs (SPEC §5, §7): the built-in dialog ([`crate::ui::dialog`]),
//! or the page's `confirm` callback instead when it gave one.
//!
//! The wait for a human is not handler time: it has its own bound (300 s), a runtime cancel ends it,
//! and every second it sends `notifications/progress` so the runtime can extend its deadline.

use std::future::Future;
use std::rc::Rc;

use client_tools_core::call::{
    apply_decision, ConfirmDecision, Confirmed, PreparedCall, HUMAN_WAIT_MAX_MS,
};
use client_tools_core::protocol::CallToolResult;
use futures::channel::oneshot;
use futures::future::{self, Either, LocalBoxFuture};
use futures::FutureExt;
use gloo_timers::future::TimeoutFuture;
use wasm_bindgen::JsValue;

use crate::call_runner::call_function;
use crate::js;
use crate::page::{Page, Stop};
use crate::ui::dialog::{self, Answer, Kind, Request};

/// How often progress is reported while the user decides: well inside any runtime deadline (the
/// bridge waits at least its 2.5 s slack past the call's timeout), so each report extends it in time.
const PROGRESS_EVERY_MS: u32 = 1_000;

pub enum Asked {
    Decided(Confirmed),
    /// The runtime cancelled while the user was deciding.
    Cancelled(String),
}

/// How a wait for a human ended.
pub enum Waited<T> {
    Done(T),
    /// The runtime cancelled the call (its reason).
    Cancelled(String),
    /// [`HUMAN_WAIT_MAX_MS`] passed.
    TimedOut,
}

/// Waits for `answer` (a human's), reporting progress every second, until the runtime cancels the
/// call or [`HUMAN_WAIT_MAX_MS`] passes.
pub async fn wait_for_human<T>(
    page: &Page,
    call_id: &str,
    answer: impl Future<Output = T>,
    stop_rx: &mut oneshot::Receiver<Stop>,
    waiting_for: &str,
) -> Waited<T> {
    let mut answer = Box::pin(answer);
    let mut waited_ms: u64 = 0;
    loop {
        let tick = TimeoutFuture::new(PROGRESS_EVERY_MS);
        match future::select(&mut answer, future::select(tick, &mut *stop_rx)).await {
            Either::Left((value, _)) => return Waited::Done(value),
            Either::Right((Either::Right((stop, _)), _)) => {
                return Waited::Cancelled(stop.map_or_else(|_| "cancelled".into(), Stop::reason))
            }
            Either::Right((Either::Left(_), _)) => {
                waited_ms += u64::from(PROGRESS_EVERY_MS);
                if waited_ms >= HUMAN_WAIT_MAX_MS {
                    return Waited::TimedOut;
                }
                page.report_waiting(call_id, waited_ms as f64, waiting_for);
            }
        }
    }
}

pub async fn ask(
    page: &Rc<Page>,
    call_id: &str,
    prepared: &PreparedCall<js_sys::Function>,
    arguments_text: &str,
    stop_rx: &mut oneshot::Receiver<Stop>,
) -> Asked {
    let tool = &prepared.tool;
    let own_policy = !prepared.confirmation_forced_by_call;
    if own_policy && page.allowed_for_session.borrow().contains(&tool.name) {
        return Asked::Decided(Confirmed::Run {
            modified_input: None,
        });
    }
    let mut shown = None;
    // The decision, and whether the user allowed the tool for the session.
    let decision: LocalBoxFuture<Result<(ConfirmDecision, bool), String>> =
        match page.options.confirm.clone() {
            Some(confirm) => {
                let input_schema = prepared
                    .input_schema()
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
                    ("input", js::from_json_text(arguments_text)),
                    ("inputSchema", input_schema),
                ]);
                let args = js_sys::Array::of1(&request);
                async move {
                    let value = call_function(&confirm, &args)
                        .await
                        .map_err(|message| format!("the confirmation failed: {message}"))?;
                    let decision = js::to_json(&value).and_then(ConfirmDecision::parse)?;
                    Ok((decision, false))
                }
                .boxed_local()
            }
            None => {
                let title = tool
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("title"))
                    .and_then(|t| t.as_str())
                    .or(prepared.call_title.as_deref())
                    .unwrap_or(&tool.original_name);
                let request = Request {
                    kind: Kind::Confirm {
                        offer_session: own_policy && page.options.allow_for_session,
                    },
                    title: title.to_owned(),
                    description: tool
                        .description
                        .clone()
                        .or_else(|| prepared.call_description.clone()),
                    original_name: tool.original_name.clone(),
                    value: serde_json::from_str(arguments_text).unwrap_or_default(),
                    schema: prepared.input_schema_shared(),
                    context: None,
                    strings: page.options.strings.clone(),
                };
                let (id, answer) = match dialog::ask(request) {
                    Ok(asked) => asked,
                    Err(why) => {
                        return Asked::Decided(Confirmed::End(CallToolResult::error(why)));
                    }
                };
                shown = Some(id);
                answer
                    .map(|answer| match answer {
                        Ok(Answer::Approve { allow_session }) => {
                            Ok((ConfirmDecision::Approve, allow_session))
                        }
                        Ok(Answer::Modify(input)) => Ok((ConfirmDecision::Modify { input }, false)),
                        Ok(Answer::Reject(reason)) => {
                            Ok((ConfirmDecision::Reject { reason }, false))
                        }
                        _ => Err("the dialog was closed".to_owned()),
                    })
                    .boxed_local()
            }
        };
    let waited = wait_for_human(
        page,
        call_id,
        decision,
        stop_rx,
        "waiting for the user to confirm",
    )
    .await;
    if !matches!(waited, Waited::Done(_)) {
        if let Some(id) = shown {
            dialog::withdraw(id);
        }
    }
    let (decision, allow_session) = match waited {
        Waited::Done(Ok(decided)) => decided,
        Waited::Done(Err(why)) => {
            return Asked::Decided(Confirmed::End(CallToolResult::error(why)))
        }
        Waited::Cancelled(reason) => return Asked::Cancelled(reason),
        Waited::TimedOut => {
            return Asked::Decided(Confirmed::End(CallToolResult::error(format!(
                "no confirmation from the user within {HUMAN_WAIT_MAX_MS} ms"
            ))))
        }
    };
    if allow_session && !page.allowed_for_session.borrow().contains(&tool.name) {
        page.allowed_for_session
            .borrow_mut()
            .push(tool.name.clone());
    }
    Asked::Decided(apply_decision(prepared, decision))
}
