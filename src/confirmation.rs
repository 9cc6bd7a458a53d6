//! Asking the user before a tool runs (SPEC §5, §7), through the page's `confirm` callback.
//!
//! The wait for a human is not handler time: it has its own bound (300 s), a runtime cancel ends it,
//! and every few seconds it sends `notifications/progress` so the runtime can extend its deadline.

use std::rc::Rc;

use client_tools_core::call::{
    apply_decision, ConfirmDecision, Confirmed, PreparedCall, HUMAN_WAIT_MAX_MS,
};
use client_tools_core::protocol::CallToolResult;
use futures::channel::oneshot;
use futures::future::{self, Either};
use gloo_timers::future::TimeoutFuture;
use wasm_bindgen::JsValue;

use crate::call_runner::call_function;
use crate::js;
use crate::page::{Page, Stop};

/// How often progress is reported while the user decides: well inside any runtime deadline (the
/// bridge waits at least its 2.5 s slack past the call's timeout), so each report extends it in time.
const PROGRESS_EVERY_MS: u32 = 1_000;

pub enum Asked {
    Decided(Confirmed),
    /// The runtime cancelled while the user was deciding.
    Cancelled(String),
}

pub async fn ask(
    page: &Rc<Page>,
    call_id: &str,
    prepared: &PreparedCall<js_sys::Function>,
    arguments_text: &str,
    stop_rx: &mut oneshot::Receiver<Stop>,
) -> Asked {
    let tool = &prepared.tool;
    let Some(confirm) = page.options.confirm.clone() else {
        return Asked::Decided(Confirmed::End(CallToolResult::error(format!(
            "tool '{}' requires confirmation, but this page offers no way to confirm: \
             pass a `confirm` option to ClientTools",
            tool.name
        ))));
    };
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
    let mut decision = Box::pin(call_function(&confirm, &args));
    let mut waited_ms: u64 = 0;
    loop {
        let tick = TimeoutFuture::new(PROGRESS_EVERY_MS);
        match future::select(&mut decision, future::select(tick, &mut *stop_rx)).await {
            Either::Left((Ok(value), _)) => return Asked::Decided(decide(prepared, &value)),
            Either::Left((Err(message), _)) => {
                return Asked::Decided(Confirmed::End(CallToolResult::error(format!(
                    "the confirmation failed: {message}"
                ))))
            }
            Either::Right((Either::Right((stop, _)), _)) => {
                return Asked::Cancelled(stop.map_or_else(|_| "cancelled".into(), Stop::reason))
            }
            Either::Right((Either::Left(_), _)) => {
                waited_ms += u64::from(PROGRESS_EVERY_MS);
                if waited_ms >= HUMAN_WAIT_MAX_MS {
                    return Asked::Decided(Confirmed::End(CallToolResult::error(format!(
                        "no confirmation from the user within {HUMAN_WAIT_MAX_MS} ms"
                    ))));
                }
                page.report_progress(
                    call_id,
                    Some(waited_ms as f64),
                    None,
                    Some("waiting for the user to confirm".into()),
                );
            }
        }
    }
}

fn decide(prepared: &PreparedCall<js_sys::Function>, value: &JsValue) -> Confirmed {
    let decision = js::to_json(value).and_then(ConfirmDecision::parse);
    match decision {
        Ok(decision) => apply_decision(prepared, decision),
        Err(why) => Confirmed::End(CallToolResult::error(why)),
    }
}
