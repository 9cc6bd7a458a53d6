//! The page as an MCP server (SPEC §6): answers the runtime's requests frame by frame.
//!
//! Transport-agnostic: the WebSocket hands each text frame to [`handle_frame`], and every answer
//! goes out through [`Page::send`]. A malformed frame gets its JSON-RPC error and nothing else
//! happens; the connection stays up.

use std::rc::Rc;

use client_tools_core::protocol::{
    self, code, encode_error, encode_result, method, CallToolParams, CancelledParams,
    Implementation, InitializeResult, Message, RequestId, RpcError, ToolsListResult,
    PROTOCOL_VERSION,
};
use serde_json::{json, Value};

use crate::call_runner::{self, Caller};
use crate::page::Page;

pub fn handle_frame(page: &Rc<Page>, text: &str) {
    match protocol::decode(text) {
        Err(error) => page.send(error.to_frame()),
        Ok(Message::Request { id, method, params }) => handle_request(page, id, &method, params),
        Ok(Message::Notification { method, params }) => handle_notification(page, &method, params),
        // The page sends no requests of its own, so there is nothing to match a response to.
        Ok(Message::Response { .. }) => {}
    }
}

fn handle_request(page: &Rc<Page>, id: RequestId, method: &str, params: Value) {
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
            page.send(encode_result(&id, &result));
        }
        method::TOOLS_CALL => match serde_json::from_value::<CallToolParams>(params) {
            Err(error) => reply_error(
                page,
                &id,
                code::INVALID_PARAMS,
                format!("invalid tools/call params: {error}"),
            ),
            Ok(params) => start_call(page, id, params),
        },
        other => reply_error(
            page,
            &id,
            code::METHOD_NOT_FOUND,
            format!("method not found: {other}"),
        ),
    }
}

fn start_call(page: &Rc<Page>, id: RequestId, params: CallToolParams) {
    let call_id = id.to_string();
    if page.running.borrow().contains_key(&call_id) {
        // The same call re-sent while it runs: it is answered once, when it ends.
        return;
    }
    let page = page.clone();
    wasm_bindgen_futures::spawn_local(async move {
        if let Some(result) =
            call_runner::run_call(page.clone(), call_id, params, Caller::Agent).await
        {
            page.send(encode_result(&id, &result));
        }
    });
}

fn handle_notification(page: &Rc<Page>, method: &str, params: Value) {
    if method == method::CANCELLED {
        if let Ok(cancelled) = serde_json::from_value::<CancelledParams>(params) {
            let reason = cancelled
                .reason
                .unwrap_or_else(|| "cancelled by the agent runtime".into());
            call_runner::cancel(page, &cancelled.request_id.to_string(), &reason);
        }
    }
    // `notifications/initialized` and unknown notifications need no answer.
}

fn reply_error(page: &Page, id: &RequestId, code: i64, message: String) {
    page.send(encode_error(Some(id), &RpcError::new(code, message)));
}
