//! The JSON API of the demo console and scripts (SPEC §9), behind the same access control as `/mcp`:
//! `GET /api/sessions` and `POST /api/sessions/{id}/call {name, arguments, timeoutMs?, _meta?,
//! capabilities?, inputResponses?, requestState?}`; a user's tabs (SPEC §13): `GET /api/users/
//! {sub}/sessions` and `POST /api/users/{sub}/call` (the same body; the tab is the one its
//! `_meta["clienttools/session"]` names, else the one offering the tool most recently in front).
//! An agent with a signed agent token reaches its own user's sessions only: any other answers as
//! unknown. `_meta` is checked as on `/mcp`
//! (crate::calls::prepared_call): a refused key is an error result.
//!
//! A caller that declares `capabilities` (`elicitation`, `sampling`, `roots`) answers the page's
//! rounds (SPEC §4 "Asking mid-call") as an MCP client of revision 2026-07-28 does: the call
//! answers `{"resultType": "input_required", "inputRequests", "requestState"}` and the caller calls
//! again with the same name and arguments, its `inputResponses` and that `requestState` — the same
//! rules as on `/mcp`, on any node of a cluster (crate::agent::rounds). A caller that declares
//! none has its rounds refused as a capability it lacks, as always.
//!
//! A caller that declares the tasks extension (`capabilities.extensions["io.modelcontextprotocol/
//! tasks"]`) gets long calls of tools that allow it as tasks, as on `/mcp` (crate::agent::tasks): the call
//! answers `{"resultType": "task", "taskId", "status", …}`, then `GET /api/sessions/{id}/tasks/
//! {task}` reads it (with `inputRequests`, `result` or `error` by its status), `POST …/tasks/
//! {task}/update {inputResponses}` answers what it waits on, `POST …/tasks/{task}/cancel` cancels
//! it. A task belongs to its page session: another session's id answers as an unknown task.
//!
//! A call answers `200` with the MCP result in every case the page is at fault or absent; only a
//! malformed request body is the client's `4xx` (axum's `Json` rejection: `400`/`415`/`422` with
//! the reason), and so is a refused retry (`400 {"error": {"code": -32602, "message"}}`: a
//! tampered, spent or expired `requestState`, one for another call, malformed answers). The id
//! `newest` names the most recently connected live page.

use std::time::Duration;

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use client_tools_core::protocol::{code, CallToolResult, ProgressParams};
use futures_util::future::BoxFuture;
use rmcp::model::{ClientCapabilities, InputResponses};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::agent::rounds::{
    self, arguments_digest, task_refusal, tool_digest, AgentSide, CallKey, Driven, Retry,
    RunningCall, STATE_DOMAIN,
};
use crate::agent::tasks::TaskOp;
use crate::bridge::Bridge;
use crate::sessions::call_options::describe_page_error;
use crate::sessions::call_options::CallOptions;
use crate::sessions::page_session::{PageSession, SessionInfo};
use crate::sessions::scope::AgentScope;

/// `GET /api/sessions`: the sessions the agent reaches (every one for the operator; a signed agent
/// token's user's only), each with its user.
pub async fn list_sessions(
    State(bridge): State<Bridge>,
    scope: Option<Extension<AgentScope>>,
) -> Json<Vec<SessionInfo>> {
    Json(bridge.session_infos_for(&scope_of(scope)))
}

/// `GET /api/users/{sub}/sessions`: that user's sessions (connected or not), when the agent reaches
/// the user; another user's answer as one with no sessions (nothing says the user exists).
pub async fn list_user_sessions(
    State(bridge): State<Bridge>,
    Path(user): Path<String>,
    scope: Option<Extension<AgentScope>>,
) -> Json<Vec<SessionInfo>> {
    let scope = scope_of(scope);
    let mut infos = Vec::new();
    if scope.reaches_user(Some(&user)) {
        infos = bridge.session_infos_for(&AgentScope::User(user));
    }
    Json(infos)
}

/// The scope the agent route's check decided (crate::routes::auth); a router an embedding runtime
/// mounts without that check reaches everyone, as before SPEC §13.
fn scope_of(scope: Option<Extension<AgentScope>>) -> AgentScope {
    scope.map_or(AgentScope::Everyone, |Extension(scope)| scope)
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
    /// What the caller can answer when the page asks (MCP client capabilities).
    #[serde(default)]
    capabilities: Option<ClientCapabilities>,
    /// Answers to a round's `inputRequests` (with `requestState`: of that round; without: for the
    /// call's first round).
    #[serde(default)]
    input_responses: Option<InputResponses>,
    /// The state an `input_required` answer gave, to resume its call.
    #[serde(default)]
    request_state: Option<String>,
}

/// An `/api` caller's side of a page call: what it declared; progress and log messages are not
/// sent (the answer is one JSON document).
struct ApiSide(ClientCapabilities);

impl AgentSide for ApiSide {
    fn capabilities(&self) -> ClientCapabilities {
        self.0.clone()
    }

    fn progress(&self, _update: ProgressParams) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    fn log(&self, _params: Map<String, Value>) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    fn cancelled(&self) -> BoxFuture<'_, ()> {
        // A caller that goes away drops this request, and with it the page's call.
        Box::pin(std::future::pending())
    }
}

/// The answer for where a driven call stands.
fn respond(driven: Driven) -> Response {
    match driven {
        Driven::Ended(Some(Ok(result))) => Json(result).into_response(),
        Driven::Ended(Some(Err(error))) => {
            Json(CallToolResult::error(describe_page_error(&error))).into_response()
        }
        Driven::Ended(None) => Json(CallToolResult::error("cancelled")).into_response(),
        Driven::InputRequired { requests, state } => Json(json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": state,
        }))
        .into_response(),
        Driven::Refused(why) => refused(why),
        Driven::Task(mut task) => {
            task["resultType"] = "task".into();
            Json(task).into_response()
        }
    }
}

/// `400` with the JSON-RPC error `-32602` of a refused retry.
fn refused(why: String) -> Response {
    let body = json!({"error": {"code": code::INVALID_PARAMS, "message": why}});
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

type CallBody = Result<Json<CallRequest>, axum::extract::rejection::JsonRejection>;

/// The request's body, or the answer to a malformed one.
#[allow(clippy::result_large_err)] // the answer is returned at once, never carried
fn call_body(request: CallBody) -> Result<CallRequest, Response> {
    request.map(|Json(request)| request).map_err(|rejection| {
        let message = format!(
            "{}: the body must be {{\"name\": string, \"arguments\"?: object, \"timeoutMs\"?: \
             number, \"_meta\"?: object, \"capabilities\"?: object, \"inputResponses\"?: \
             object, \"requestState\"?: string}}",
            rejection.body_text()
        );
        (rejection.status(), message).into_response()
    })
}

/// `POST /api/sessions/{id}/call`: a call on page session `id` (`newest`: the newest live page the
/// agent reaches).
pub async fn call_tool(
    State(bridge): State<Bridge>,
    Path(id): Path<String>,
    scope: Option<Extension<AgentScope>>,
    request: CallBody,
) -> Response {
    let request = match call_body(request) {
        Ok(request) => request,
        Err(answer) => return answer,
    };
    let scope = scope_of(scope);
    let session = if id == "newest" {
        bridge.newest_session_for(&scope)
    } else {
        bridge.session_for(&scope, &id)
    };
    let Some(session) = session else {
        let message = if id == "newest" {
            "no page is connected to the bridge: open a page that uses client-tools".to_owned()
        } else {
            format!("no page session '{id}' on this bridge (it never connected, or expired)")
        };
        return (StatusCode::OK, Json(CallToolResult::error(message))).into_response();
    };
    call_on(&bridge, session, request).await
}

/// `POST /api/users/{sub}/call`: a call on one of the user's tabs (SPEC §13) — the one its
/// `_meta["clienttools/session"]` names, else the one offering the tool that was most recently in
/// front; a retry goes to the tab its round came from.
pub async fn call_user_tool(
    State(bridge): State<Bridge>,
    Path(user): Path<String>,
    scope: Option<Extension<AgentScope>>,
    request: CallBody,
) -> Response {
    let request = match call_body(request) {
        Ok(request) => request,
        Err(answer) => return answer,
    };
    let pages = match scope_of(scope).reaches_user(Some(&user)) {
        true => bridge.user_pages(&user),
        false => Vec::new(),
    };
    let state = request.request_state.as_deref();
    let chosen = rounds::user_tab(&pages, &request.name, state, request.meta.as_ref());
    match chosen {
        Ok(session) => call_on(&bridge, session, request).await,
        Err(message) => Json(CallToolResult::error(message)).into_response(),
    }
}

/// A call on `session`, as the body asks (rounds, tasks, a retry).
async fn call_on(bridge: &Bridge, session: Arc<PageSession>, request: CallRequest) -> Response {
    let capabilities = ApiSide(request.capabilities.unwrap_or_default());
    let declares_tasks = capabilities.0.supports_tasks();
    if let Some(error) = task_refusal(&session, &request.name, declares_tasks) {
        let body =
            json!({"error": {"code": error.code, "message": error.message, "data": error.data}});
        return (StatusCode::BAD_REQUEST, Json(body)).into_response();
    }
    if let Some(state) = request.request_state {
        if !state.starts_with(&format!("{STATE_DOMAIN}.")) {
            return refused(
                "requestState integrity check failed (not issued by this bridge, or altered)"
                    .to_owned(),
            );
        }
        let retry = Retry {
            state,
            page_session: session.id().to_owned(),
            tool: request.name,
            arguments: request.arguments.unwrap_or_default(),
            responses: request.input_responses.unwrap_or_default(),
        };
        return respond(bridge.resume_round(retry, &capabilities).await);
    }
    let requested = request.timeout_ms.map(Duration::from_millis);
    let mut arguments = request.arguments.unwrap_or_default();
    let answers_rounds = capabilities.0 != ClientCapabilities::default();
    let takes_no_rounds = !answers_rounds && request.input_responses.is_none();
    // The arguments are kept for the round's key only when rounds may follow.
    let call_arguments = if takes_no_rounds {
        std::mem::take(&mut arguments)
    } else {
        arguments.clone()
    };
    let call = session.prepare_call(
        &request.name,
        Value::Object(call_arguments),
        request.meta.as_ref(),
        requested,
    );
    let call = match call {
        Ok(call) => call,
        Err(refused) => return Json(refused).into_response(),
    };
    if takes_no_rounds {
        // Takes no rounds: each is refused as a capability the caller lacks.
        let result = session.call_tool(call, CallOptions::new()).await;
        return Json(result.into_result()).into_response();
    }
    let key = CallKey {
        page_session: session.id().to_owned(),
        tool: request.name.clone(),
        tool_digest: tool_digest(session.tools().iter().find(|t| t.name == call.name())),
        arguments: arguments_digest(&Value::Object(arguments)),
    };
    let rounds = bridge.rounds();
    let running = RunningCall::start_checked(
        rounds,
        session.clone(),
        call,
        declares_tasks,
        bridge.config().limits.progress_buffer,
    );
    let running = match running {
        Ok(running) => running,
        Err(refused) => return Json(refused).into_response(),
    };
    let supplied = request.input_responses;
    respond(rounds::drive(rounds, running, &capabilities, key, 0, supplied).await)
}

/// `POST /api/sessions/{id}/tasks/{task}/update`'s body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskUpdate {
    input_responses: InputResponses,
}

/// `GET /api/sessions/{id}/tasks/{task}`: the task as `tasks/get` answers it.
pub async fn get_task(
    State(bridge): State<Bridge>,
    Path((id, task_id)): Path<(String, String)>,
    scope: Option<Extension<AgentScope>>,
) -> Response {
    task(&bridge, &scope_of(scope), &id, TaskOp::Get { task_id }).await
}

/// `POST /api/sessions/{id}/tasks/{task}/update {inputResponses}`: answers for the round the task
/// waits on (as `tasks/update`).
pub async fn update_task(
    State(bridge): State<Bridge>,
    Path((id, task_id)): Path<(String, String)>,
    scope: Option<Extension<AgentScope>>,
    body: Result<Json<TaskUpdate>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Json(body) = match body {
        Ok(body) => body,
        Err(rejection) => {
            let message = format!(
                "{}: the body must be {{\"inputResponses\": object}}",
                rejection.body_text()
            );
            return (rejection.status(), message).into_response();
        }
    };
    let op = TaskOp::Update {
        task_id,
        input_responses: body.input_responses,
    };
    task(&bridge, &scope_of(scope), &id, op).await
}

/// `POST /api/sessions/{id}/tasks/{task}/cancel` (as `tasks/cancel`).
pub async fn cancel_task(
    State(bridge): State<Bridge>,
    Path((id, task_id)): Path<(String, String)>,
    scope: Option<Extension<AgentScope>>,
) -> Response {
    task(&bridge, &scope_of(scope), &id, TaskOp::Cancel { task_id }).await
}

/// A task request of a caller bound to page session `id` (`newest`: the newest live page it
/// reaches), on whichever node keeps the task: `200` with the MCP result, `400` with the JSON-RPC
/// error. A session the caller does not reach has no tasks it can name (unknown task).
async fn task(bridge: &Bridge, scope: &AgentScope, id: &str, op: TaskOp) -> Response {
    let session = match id {
        "newest" => bridge.newest_session_for(scope).map(|s| s.id().to_owned()),
        id => bridge.session_for(scope, id).map(|s| s.id().to_owned()),
    };
    match bridge.task(op, &session.unwrap_or_default()).await {
        Ok(mut result) => {
            result["resultType"] = "complete".into();
            Json(result).into_response()
        }
        Err(refusal) => {
            let body = json!({"error": {"code": refusal.code, "message": refusal.message}});
            (StatusCode::BAD_REQUEST, Json(body)).into_response()
        }
    }
}
