//! The JSON API of the demo console and scripts (SPEC §9):
//! `GET /api/sessions` and `POST /api/sessions/{id}/call {name, arguments, timeoutMs?}`.
//!
//! A call answers `200` with the MCP result in every case the page is at fault or absent; only a
//! malformed request body is the client's `4xx`. The id `newest` names the newest session.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::Json;
use client_tools_core::protocol::CallToolResult;
use serde::Deserialize;
use serde_json::Value;

use crate::config::clamp_timeout;
use crate::server::Bridge;
use crate::session::SessionInfo;

pub async fn list_sessions(State(bridge): State<Bridge>) -> Json<Vec<SessionInfo>> {
    Json(bridge.sessions().iter().map(|s| s.info()).collect())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallRequest {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

pub async fn call_tool(
    State(bridge): State<Bridge>,
    Path(id): Path<String>,
    Json(request): Json<CallRequest>,
) -> Json<CallToolResult> {
    let session = if id == "newest" {
        bridge.newest_session()
    } else {
        bridge.session(&id)
    };
    let Some(session) = session else {
        return Json(CallToolResult::error(format!(
            "no page session '{id}': no page with this session id has connected to this bridge"
        )));
    };
    let timeout = clamp_timeout(
        request.timeout_ms.map(Duration::from_millis),
        bridge.config().timeout,
    );
    let arguments = request
        .arguments
        .unwrap_or_else(|| Value::Object(Default::default()));
    Json(session.call_tool(&request.name, arguments, timeout).await)
}
