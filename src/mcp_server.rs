//! The page as an MCP server (SPEC §6): answers the runtime's requests frame by frame.
//!
//! Transport-agnostic: the WebSocket hands each text frame to [`handle_frame`], and every answer
//! goes out through [`Page::send`]. A malformed frame gets its JSON-RPC error and nothing else
//! happens; the connection stays up. A response is never answered, however malformed (SPEC §6).

use std::rc::Rc;

use client_tools_core::ledger::Arrival;
use client_tools_core::protocol::{
    self, code, encode_error, encode_result, method, CallToolParams, CallToolResult,
    CancelledParams, Implementation, InitializeResult, Message, RequestId, RpcError,
    ToolsListResult, PROTOCOL_VERSION,
};
use serde_json::{json, Value};

use crate::call_runner::{self, Caller, IncomingCall};
use crate::outgoing::{self, Kind};
use crate::page::{Page, Stop};

pub fn handle_frame(page: &Rc<Page>, text: &str) {
    // The hot frame first, read without a `Value` for its arguments (they are validated and handed
    // to the handler as text); anything else through the full decoder.
    if let Some((id, params, arguments)) = protocol::decode_call(text) {
        return start_call(page, id, IncomingCall::new(params, arguments));
    }
    match protocol::decode(text) {
        Err(error) => {
            // `None` for a malformed response: answering it could start an error ping-pong.
            if let Some(answer) = error.to_frame() {
                page.send(answer);
            }
        }
        Ok(Message::Request { id, method, params }) => {
            handle_request(page, text, id, &method, params)
        }
        Ok(Message::Notification { method, params }) => handle_notification(page, &method, params),
        // The page sends no requests of its own, so there is nothing to match a response to.
        Ok(Message::Response { .. }) => {}
    }
}

fn handle_request(page: &Rc<Page>, frame: &str, id: RequestId, method: &str, params: Value) {
    match method {
        method::INITIALIZE => {
            let result = InitializeResult {
                protocol_version: PROTOCOL_VERSION.into(),
                capabilities: json!({ "tools": { "listChanged": true } }),
                server_info: Implementation {
                    name: "client-tools".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                },
                instructions: None,
            };
            page.send(encode_result(&id, &result));
        }
        method::PING => page.send(encode_result(&id, &json!({}))),
        method::TOOLS_LIST => {
            let tools = page.registry.borrow().to_mcp_tools(&page.options.allow);
            let result = ToolsListResult {
                tools,
                next_cursor: None,
            };
            page.send_as(encode_result(&id, &result), Kind::ToolsList { id: &id });
        }
        method::TOOLS_CALL => match serde_json::from_value::<CallToolParams>(params) {
            Err(error) => reply_error(
                page,
                &id,
                code::INVALID_PARAMS,
                format!("invalid tools/call params: {error}"),
            ),
            Ok(params) => {
                let call = IncomingCall::new(params, protocol::call_arguments_text(frame));
                start_call(page, id, call)
            }
        },
        other => reply_error(
            page,
            &id,
            code::METHOD_NOT_FOUND,
            format!("method not found: {other}"),
        ),
    }
}

fn start_call(page: &Rc<Page>, id: RequestId, call: IncomingCall) {
    let params = &call.params;
    let call_id = id.to_string();
    let arrival = page.ledger.borrow_mut().arrive(&call_id);
    match arrival {
        // Re-sent while it runs: it is answered once, when it ends.
        Arrival::Join => {}
        // Stored answers fit already (they passed `outgoing::call_answer`).
        Arrival::Resend(frame) => page.send(frame),
        Arrival::Interrupted => {
            let result = CallToolResult::error(format!(
                "the page was reloaded while call {call_id} was running; it was not run again"
            ));
            let frame = outgoing::call_answer(&page.events, &id, &params.name, &result);
            page.ledger.borrow_mut().finish(&call_id, frame.clone());
            page.send(frame);
        }
        Arrival::Run => {
            let page = page.clone();
            let epoch = page.session_epoch.get();
            let tool = params.name.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let result =
                    call_runner::run_call(page.clone(), call_id.clone(), call, Caller::Agent).await;
                // The call belonged to an earlier session (the runtime started a new one): its
                // id means nothing to the new session's runtime.
                if page.session_epoch.get() != epoch {
                    return;
                }
                // A cancelled call sends nothing now, but a re-send of it learns what happened.
                let cancelled = result.is_none();
                let result =
                    result.unwrap_or_else(|| CallToolResult::error("the call was cancelled"));
                let frame = outgoing::call_answer(&page.events, &id, &tool, &result);
                page.ledger.borrow_mut().finish(&call_id, frame.clone());
                if !cancelled {
                    page.send(frame);
                }
            });
        }
    }
}

fn handle_notification(page: &Rc<Page>, method: &str, params: Value) {
    if method == method::CANCELLED {
        if let Ok(cancelled) = serde_json::from_value::<CancelledParams>(params) {
            let reason = cancelled
                .reason
                .unwrap_or_else(|| "cancelled by the agent runtime".into());
            let call_id = cancelled.request_id.to_string();
            call_runner::stop(page, &call_id, Stop::Cancelled(reason));
        }
    }
    // `notifications/initialized` and unknown notifications need no answer.
}

fn reply_error(page: &Page, id: &RequestId, code: i64, message: String) {
    page.send(encode_error(Some(id), &RpcError::new(code, message)));
}
