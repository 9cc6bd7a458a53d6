//! What the page engine asks for, done in the browser: frames go to the transport, handlers run
//! with their `ctx`, people are asked ([`crate::ask`]), forms filled
//! ([`crate::webmcp::form_call`]), events reach the page. Every decision was the engine's; this
//! module only performs it and feeds back what happened ([`Page::feed`]).

use std::rc::Rc;

use client_tools_core::page_api::event;
use client_tools_core::page_engine::{CallEvent, CallHandle, Event, Output};
use client_tools_core::protocol::TraceContext;
use client_tools_core::registry::{RegisteredTool, ToolKind};
use std::sync::Arc;

use crate::js;
use crate::page::{take, Page, Running};
use crate::webmcp::{browser_agent, form_call};

/// Performs one output of the engine (the page's [`crate::page::Perform`]).
pub fn perform(page: &Rc<Page>, output: Output<js_sys::Function>) {
    match output {
        Output::Send(frame) => page.transmit(frame),
        Output::RunHandler {
            call,
            call_id,
            tool,
            input,
            trace,
        } => match tool.kind {
            ToolKind::Form => form_call::run(page, call, &tool, &input),
            _ => run_handler(page, call, &call_id, &tool, &input, trace),
        },
        Output::AskPerson {
            call,
            call_id,
            question,
        } => crate::ask::ask(page, call, &call_id, question),
        Output::WithdrawAsk { call } => crate::ask::withdraw(page, call),
        Output::Abort { call, reason } => {
            // A form's wait for its submit ends as its sender drops, here.
            let running = take(&mut page.calls.borrow_mut().running, call);
            if let Some(Running::Handler(ctx)) = running {
                js::abort_handler_context(&ctx, &reason);
            }
        }
        Output::AgentAnswered { call, answer } => {
            let ctx = page.calls.borrow().handler_ctx(call);
            if let Some(ctx) = ctx {
                // `{Ok: {inputResponses}}` or `{Err: {code, message, data}}`.
                js::settle_round(&ctx, js::to_plain(&answer));
            }
        }
        Output::Settled { call, result } => {
            if let Some(waiting) = take(&mut page.calls.borrow_mut().waiting, call) {
                let _ = waiting.send(result);
            }
        }
        Output::Emit(event) => emit(page, event),
    }
}

/// Calls the handler with `(input, ctx)`; a returned promise is awaited. Whatever happens, the
/// engine hears how it ended (once: after a timeout or cancel it ignores a late end). `trace`: the
/// call's W3C trace context, checked by the engine (`ctx.traceparent`, `ctx.tracestate`).
fn run_handler(
    page: &Rc<Page>,
    call: CallHandle,
    call_id: &str,
    tool: &Arc<RegisteredTool<js_sys::Function>>,
    input: &str,
    trace: Option<TraceContext>,
) {
    let ctx = js::handler_context(
        call_id,
        call.0 as f64,
        &tool.name,
        &tool.original_name,
        page.from_ctx_fn(),
        trace.as_ref().map(|trace| trace.traceparent.as_str()),
        trace.as_ref().and_then(|trace| trace.tracestate.as_deref()),
    );
    page.calls
        .borrow_mut()
        .running
        .push((call, Running::Handler(ctx.clone())));
    let args = js_sys::Array::of2(&js::from_json_text(input), &ctx);
    match js::call_function(&tool.handler, &args) {
        js::Called::Returned(value) => page.settle(call, Ok(value)),
        js::Called::Threw(thrown) => page.settle(call, Err(thrown)),
        js::Called::Promise(promise) => {
            let page = page.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let settled = js::settle(promise).await;
                page.settle(call, settled);
            });
        }
    }
}

fn emit(page: &Rc<Page>, event: Event) {
    let (event_type, detail) = match event {
        Event::Call {
            tool_name,
            call_id,
            what,
        } => {
            let mut detail = vec![("toolName", tool_name.into()), ("callId", call_id.into())];
            let event_type = match what {
                CallEvent::Queued { position } => {
                    detail.push(("position", (position as f64).into()));
                    event::TOOL_QUEUED
                }
                CallEvent::Activated => event::TOOL_ACTIVATED,
                CallEvent::Cancelled { reason, partial } => {
                    detail.push(("reason", reason.into()));
                    if let Some(partial) = partial {
                        detail.push(("partial", js::from_json_text(&partial.to_string())));
                    }
                    event::TOOL_CANCEL
                }
                // `toolresult` is the one event nobody may want: its detail is not even built.
                CallEvent::Finished { .. } if !page.events.wants(event::TOOL_RESULT) => return,
                CallEvent::Finished {
                    is_error,
                    duration_ms,
                } => {
                    detail.extend([
                        ("isError", is_error.into()),
                        ("durationMs", duration_ms.into()),
                    ]);
                    event::TOOL_RESULT
                }
            };
            (event_type, js::object(&detail))
        }
        Event::ToolsChanged => {
            browser_agent::sync(page);
            (event::TOOLS_CHANGED, js_sys::Object::new())
        }
        Event::Warning {
            code,
            message,
            tool_name,
        } => return page.events.warn(code, &message, tool_name.as_deref()),
    };
    page.events.emit(event_type, &detail);
}
