//! The JSON API of the demo console and scripts (SPEC §9), behind the same access control as `/mcp`:
//! `GET /api/sessions` and `POST /api/sessions/{id}/call {name, arguments, timeoutMs?, _meta?}`.
//! `_meta` is checked as on `/mcp` (crate::prepared_call): a refused key is an error result.
//!
//! A call answers `200` with the MCP result in every case the page is at fault or absent; only a
//! malformed request body is the client's `4xx` (axum's `Json` rejection: `400`/`415`/`422` with
//! the reason). The id `newest` names the most recently connected live page.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use client_tools_core::protocol::CallToolResult;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::bridge::Bridge;
use crate::page_session::SessionInfo;

pub async fn list_sessions(State(bridge): State<Bridge>) -> Json<Vec<SessionInfo>> {
    Json(bridge.session_infos())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallRequest {
    name: String,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(rename = "_meta", default)]
    meta: Option<Map<String, Value>>,
}

pub async fn call_tool(
    State(bridge): State<Bridge>,
    Path(id): Path<String>,
    request: Result<Json<CallRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Json(request) = match request {
        Ok(request) => request,
        Err(rejection) => {
            let message = format!(
                "{}: the body must be {{\"name\": string, \"arguments\"?: object, \"timeoutMs\"?: \
                 number, \"_meta\"?: object}}",
                rejection.body_text()
            );
            return (rejection.status(), message).into_response();
        }
    };
    let session = if id == "newest" {
        bridge.newest_session()
    } else {
        bridge.session(&id)
    };
    let Some(session) = session else {
        let message = if id == "newest" {
            "no page is connected to the bridge: open a page that uses client-tools".to_owned()
        } else {
            format!("no page session '{id}' on this bridge (it never connected, or expired)")
        };
        return (StatusCode::OK, Json(CallToolResult::error(message))).into_response();
    };
    let requested = request.timeout_ms.map(Duration::from_millis);
    let arguments = Value::Object(request.arguments.unwrap_or_default());
    let result = session
        .call_tool_meta(&request.name, arguments, request.meta.as_ref(), requested)
        .await;
    Json(result).into_response()
}
