//! One call, from arrival to its single result (SPEC §5): admission by the core, the wait for a
//! late handler, the handler itself raced against its timeout and a runtime cancel, then the result
//! checks. Agent calls (from the transport) and page calls (`invoke`) both come through here.

use client_tools_core::WarningCode;
use std::rc::Rc;

use client_tools_core::call::{self, outcome, Admission, CallState, Confirmed, PreparedCall};
use client_tools_core::protocol::{CallToolParams, CallToolResult};
use client_tools_core::registry::ToolKind;
use futures::channel::oneshot;
use futures::future::{self, Either};
use futures::FutureExt;
use gloo_timers::future::TimeoutFuture;
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::confirmation::{self, Asked};
use crate::context::HandlerContext;
use crate::js::{self, PageClock};
use crate::page::{Page, RunningCall, Stop};
use crate::ui::result_form;
use crate::webmcp::form_call;

/// How often a call waiting for a late handler looks again (within the 2 s grace).
const HANDLER_POLL_MS: u32 = 25;

/// Who asked for the call: agents are subject to the allow-list, the page itself is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    Agent,
    Page,
}

/// A call as it arrives: its params for the core to check, and its arguments as JSON text for the
/// handler (`JSON.parse` of the text is the one conversion on the way in).
pub struct IncomingCall {
    pub params: CallToolParams,
    pub arguments_text: String,
}

impl IncomingCall {
    /// `text`: the arguments as they stood in the frame; without it they are serialized from
    /// `params` (no arguments: `{}`).
    pub fn new(params: CallToolParams, text: Option<&str>) -> Self {
        let arguments_text = match (text, &params.arguments) {
            (Some(text), _) => text.to_owned(),
            (None, Some(arguments)) => arguments.to_string(),
            (None, None) => "{}".to_owned(),
        };
        Self {
            params,
            arguments_text,
        }
    }
}

/// Runs one call to its end. `None` means the runtime cancelled it: no result is sent.
pub async fn run_call(
    page: Rc<Page>,
    call_id: String,
    call: IncomingCall,
    caller: Caller,
) -> Option<CallToolResult> {
    let IncomingCall {
        params,
        arguments_text,
    } = call;
    let (stop_tx, mut stop_rx) = oneshot::channel::<Stop>();
    let progress_token = params.meta_value("progressToken").cloned();
    page.running.borrow_mut().insert(
        call_id.clone(),
        RunningCall {
            stop: Some(stop_tx),
            progress_token,
            progress_base: 0.0,
            withdrawn: None,
        },
    );
    let result = admit_and_run(
        &page,
        &call_id,
        &params,
        arguments_text,
        caller,
        &mut stop_rx,
    )
    .await;
    let withdrawn = page
        .running
        .borrow_mut()
        .remove(&call_id)
        .and_then(|call| call.withdrawn);
    match (result, withdrawn) {
        // The page withdrew the call (its form was reset or removed): the agent still gets an end.
        (None, Some(reason)) => Some(outcome::withdrawn(&reason)),
        (result, _) => result,
    }
}

async fn admit_and_run(
    page: &Rc<Page>,
    call_id: &str,
    params: &CallToolParams,
    arguments_text: String,
    caller: Caller,
    stop_rx: &mut oneshot::Receiver<Stop>,
) -> Option<CallToolResult> {
    let allow: &[String] = match caller {
        Caller::Agent => &page.options.allow,
        Caller::Page => &[],
    };
    let waiting = CallState::waiting_for_handler(&PageClock);
    let prepared = loop {
        let tool = page.registry.borrow().get(&params.name);
        match call::admit_text(
            tool,
            params,
            &arguments_text,
            allow,
            waiting.expired(&PageClock),
        ) {
            Admission::Run(prepared) => break prepared,
            Admission::Reject(result) => return Some(result),
            Admission::ResultForm { output } => {
                return run_result_form(page, call_id, params, &arguments_text, output, stop_rx)
                    .await
            }
            Admission::WaitForHandler => {
                TimeoutFuture::new(HANDLER_POLL_MS).await;
                if let Ok(Some(_reason)) = stop_rx.try_recv() {
                    return None;
                }
            }
        }
    };
    run_prepared(page, call_id, prepared, arguments_text, stop_rx).await
}

/// The user supplies the result (SPEC §7): the call has the events of a handler's run.
async fn run_result_form(
    page: &Rc<Page>,
    call_id: &str,
    params: &CallToolParams,
    arguments_text: &str,
    output: std::sync::Arc<client_tools_core::validate::CompiledSchema>,
    stop_rx: &mut oneshot::Receiver<Stop>,
) -> Option<CallToolResult> {
    let started = js::now_ms();
    let identity = [
        ("toolName", JsValue::from(params.name.as_str())),
        ("callId", JsValue::from(call_id)),
    ];
    page.events.emit("toolactivated", &js::object(&identity));
    let asked = result_form::ask(page, call_id, params, arguments_text, output, stop_rx);
    match asked.await {
        Ok(result) => Some(finish(page, &identity, started, result)),
        Err(reason) => {
            emit_cancel(page, &identity, &reason);
            None
        }
    }
}

/// How a handler's run (or a form tool's fill and submit) ended.
pub enum HandlerEnd {
    Returned(Result<JsValue, String>),
    TimedOut,
    Cancelled(String),
}

async fn run_prepared(
    page: &Rc<Page>,
    call_id: &str,
    prepared: PreparedCall<js_sys::Function>,
    arguments_text: String,
    stop_rx: &mut oneshot::Receiver<Stop>,
) -> Option<CallToolResult> {
    let tool = &prepared.tool;
    let started = js::now_ms();
    let identity = [
        ("toolName", JsValue::from(tool.name.as_str())),
        ("callId", JsValue::from(call_id)),
    ];
    page.events.emit("toolactivated", &js::object(&identity));

    let (arguments_text, modified_input) = if prepared.require_confirmation {
        match confirmation::ask(page, call_id, &prepared, &arguments_text, stop_rx).await {
            Asked::Cancelled(reason) => {
                emit_cancel(page, &identity, &reason);
                return None;
            }
            Asked::Decided(Confirmed::End(result)) => {
                return Some(finish(page, &identity, started, result))
            }
            Asked::Decided(Confirmed::Run { modified_input }) => match modified_input {
                Some(input) => (input.to_string(), Some(input)),
                None => (arguments_text, None),
            },
        }
    } else {
        (arguments_text, None)
    };

    // The handler's clock starts now, after any time spent waiting for the user.
    let mut state = CallState::running(&PageClock, prepared.timeout_ms);
    let mut context = None;
    let end = if tool.kind == ToolKind::Form {
        form_call::run(page, call_id, tool, &arguments_text, stop_rx).await
    } else {
        let handler_context = HandlerContext::new(page, call_id, &tool.name, &tool.original_name);
        let args = js_sys::Array::of2(
            &js::from_json_text(&arguments_text),
            &handler_context.object,
        );
        context = Some(handler_context);
        drop(arguments_text);
        let handler = call_function(&tool.handler, &args).fuse();
        let _deadline = page.deadlines.start(call_id, prepared.timeout_ms);
        let end = match future::select(Box::pin(handler), &mut *stop_rx).await {
            Either::Left((returned, _)) => HandlerEnd::Returned(returned),
            Either::Right((Ok(Stop::TimedOut), _)) => HandlerEnd::TimedOut,
            Either::Right((stop, _)) => {
                HandlerEnd::Cancelled(stop.map_or_else(|_| "cancelled".into(), Stop::reason))
            }
        };
        end
    };
    let abort = |reason: &str| {
        if let Some(context) = &context {
            context.abort(reason);
        }
    };

    let mut result = match end {
        HandlerEnd::Cancelled(reason) => {
            state.cancel();
            abort(&reason);
            emit_cancel(page, &identity, &reason);
            return None;
        }
        HandlerEnd::TimedOut => {
            let result = outcome::timed_out(prepared.timeout_ms);
            abort(result.text());
            emit_cancel(page, &identity, &Stop::TimedOut.reason());
            result
        }
        HandlerEnd::Returned(Err(message)) => outcome::handler_failed(&message),
        // Returning nothing is a success with a `null` result.
        HandlerEnd::Returned(Ok(value)) if value.is_undefined() => {
            call::complete_text("null", prepared.output.as_deref())
        }
        HandlerEnd::Returned(Ok(value)) => match js::to_json_text(&value) {
            Err(why) => outcome::not_serializable(&why),
            Ok(text) => {
                let result = call::complete_text(&text, prepared.output.as_deref());
                if result.is_error {
                    page.events
                        .warn(WarningCode::OutputInvalid, result.text(), Some(&tool.name));
                }
                result
            }
        },
    };
    if let Some(input) = modified_input {
        call::mark_modified(&mut result, input);
    }
    let result = state.finish(result)?;
    Some(finish(page, &identity, started, result))
}

/// Reports the result to the page (`toolresult`) and hands it on.
fn finish(
    page: &Page,
    identity: &[(&str, JsValue); 2],
    started: f64,
    result: CallToolResult,
) -> CallToolResult {
    if !page.events.wants("toolresult") {
        return result;
    }
    let detail = js::object(&[
        identity[0].clone(),
        identity[1].clone(),
        ("isError", result.is_error.into()),
        ("durationMs", (js::now_ms() - started).into()),
    ]);
    page.events.emit("toolresult", &detail);
    result
}

fn emit_cancel(page: &Page, identity: &[(&str, JsValue); 2], reason: &str) {
    let detail = js::object(&[
        identity[0].clone(),
        identity[1].clone(),
        ("reason", reason.into()),
    ]);
    page.events.emit("toolcancel", &detail);
}

/// Calls page code (a handler, a `confirm` callback); a throw or a rejection becomes its message.
/// A returned thenable is awaited.
pub async fn call_function(
    function: &js_sys::Function,
    args: &js_sys::Array,
) -> Result<JsValue, String> {
    let returned = function
        .apply(&JsValue::UNDEFINED, args)
        .map_err(|thrown| js::error_message(&thrown))?;
    if !is_thenable(&returned) {
        return Ok(returned);
    }
    let promise = js_sys::Promise::resolve(&returned);
    JsFuture::from(promise)
        .await
        .map_err(|thrown| js::error_message(&thrown))
}

fn is_thenable(value: &JsValue) -> bool {
    value.is_instance_of::<js_sys::Promise>()
        || (value.is_object() && js::get(value, "then").is_function())
}

/// Reads `arguments` given by page code (`invoke`) as JSON, kept with their text; `undefined` means
/// no arguments.
pub fn arguments_from_js(input: &JsValue) -> Result<(Option<Value>, Option<String>), String> {
    if input.is_undefined() {
        return Ok((None, None));
    }
    let text = js::to_json_text(input)?;
    let value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    Ok((Some(value), Some(text)))
}

/// The page cancels a running call (its form was reset or removed): unlike a runtime cancel, the
/// agent gets an error result naming `reason`.
pub fn withdraw(page: &Page, call_id: &str, reason: &str) {
    if let Some(call) = page.running.borrow_mut().get_mut(call_id) {
        if call.stop.is_some() {
            call.withdrawn = Some(reason.to_owned());
        }
    }
    stop(page, call_id, Stop::Cancelled(reason.to_owned()));
}

/// Stops a running call (a runtime cancel, a timeout); only the first stop counts.
pub fn stop(page: &Page, call_id: &str, why: Stop) {
    let sender = page
        .running
        .borrow_mut()
        .get_mut(call_id)
        .and_then(|call| call.stop.take());
    if let Some(sender) = sender {
        let _ = sender.send(why);
    }
}
