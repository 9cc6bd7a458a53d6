//! `/api` for the page as a whole MCP server (SPEC §11 "Resources, prompts, completion"), in JSON
//! for the demo console and scripts, behind the same access control as `/mcp`:
//!
//! - `GET /api/sessions/{id}/prompts`, `…/resources`, `…/resources/templates`: the page's lists
//!   as `prompts/list`, `resources/list` and `resources/templates/list` answer them (the allow-list
//!   and the operator's policy applied);
//! - `POST /api/sessions/{id}/prompts/get {name, arguments?}`, `POST …/resources/read {uri}`,
//!   `POST …/complete {ref, argument, context?}` — each body may add `timeoutMs?`, `_meta?`,
//!   `capabilities?`, `inputResponses?`, `requestState?`: driven as `/api` drives a tool call
//!   (crate::routes::api): a caller that declares `capabilities` answers the page's rounds as an
//!   MCP client of revision 2026-07-28 does (`{"resultType": "input_required", "inputRequests",
//!   "requestState"}`, then the same request again with `inputResponses` and that
//!   `requestState`); one that declares none has them refused as a capability it lacks.
//!
//! Answers: `200` with the MCP result (`resultType: "complete"`); a JSON-RPC error as `{"error":
//! {code, message, data?}}` — `400` when the request is at fault (`-32602`: an invalid URI, a
//! refused retry, a blocked or rate-limited request, a prompt's missing argument; `-32601`: the
//! page offers no such thing; `-32002`: no such resource), `200` when the page is (gone, silent,
//! answering nonsense: `-32603`), as a tool call answers `200` then. `newest` names the newest
//! live page, as for calls.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use client_tools_core::protocol::{code, meta, ProgressParams, RpcError};
use futures_util::future::BoxFuture;
use rmcp::model::{ClientCapabilities, InputResponses};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::agent::rounds::RunningCall;
use crate::agent::rounds::{
    self, arguments_digest, AgentSide, CallKey, Driven, Retry, STATE_DOMAIN,
};
use crate::bridge::Bridge;
use crate::calls::served::{method, ServedRequest, Subject};
use crate::sessions::page_session::PageSession;
use crate::sessions::scope::AgentScope;

/// The page session `id` names for this caller (`newest`: its newest live page), or the error.
#[allow(clippy::result_large_err)] // the answer is returned at once, never carried
fn session_of(
    bridge: &Bridge,
    scope: Option<Extension<AgentScope>>,
    id: &str,
) -> Result<Arc<PageSession>, Response> {
    let scope = scope.map_or(AgentScope::Everyone, |Extension(scope)| scope);
    let session = match id {
        "newest" => bridge.newest_session_for(&scope),
        id => bridge.session_for(&scope, id),
    };
    session.ok_or_else(|| {
        let message = match id {
            "newest" => {
                "no page is connected to the bridge: open a page that uses client-tools".to_owned()
            }
            id => format!("no page session '{id}' on this bridge (it never connected, or expired)"),
        };
        failed(RpcError::new(code::INVALID_PARAMS, message))
    })
}

/// A JSON-RPC error as `/api` answers it (see the module's rule for its status).
fn failed(error: RpcError) -> Response {
    let status = match error.code {
        code::INVALID_PARAMS | code::INVALID_REQUEST | code::METHOD_NOT_FOUND | -32002 => {
            StatusCode::BAD_REQUEST
        }
        _ => StatusCode::OK,
    };
    let mut body = json!({"code": error.code, "message": error.message});
    if let Some(data) = error.data {
        body["data"] = data;
    }
    (status, Json(json!({ "error": body }))).into_response()
}

async fn list(
    bridge: Bridge,
    scope: Option<Extension<AgentScope>>,
    id: String,
    list: &'static str,
    field: &str,
) -> Response {
    let session = match session_of(&bridge, scope, &id) {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    match session.list(list).await {
        Ok(entries) => Json(json!({ field: entries, "resultType": "complete" })).into_response(),
        Err(error) => failed(error),
    }
}

/// `GET /api/sessions/{id}/prompts`: `{"prompts": [...]}`.
pub async fn list_prompts(
    State(bridge): State<Bridge>,
    Path(id): Path<String>,
    scope: Option<Extension<AgentScope>>,
) -> Response {
    list(bridge, scope, id, method::PROMPTS_LIST, "prompts").await
}

/// `GET /api/sessions/{id}/resources`: `{"resources": [...]}`.
pub async fn list_resources(
    State(bridge): State<Bridge>,
    Path(id): Path<String>,
    scope: Option<Extension<AgentScope>>,
) -> Response {
    list(bridge, scope, id, method::RESOURCES_LIST, "resources").await
}

/// `GET /api/sessions/{id}/resources/templates`: `{"resourceTemplates": [...]}`.
pub async fn list_resource_templates(
    State(bridge): State<Bridge>,
    Path(id): Path<String>,
    scope: Option<Extension<AgentScope>>,
) -> Response {
    let templates = method::RESOURCE_TEMPLATES_LIST;
    list(bridge, scope, id, templates, "resourceTemplates").await
}

/// What every served request's body may add to what it asks.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Driving {
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(rename = "_meta", default)]
    meta: Option<Map<String, Value>>,
    #[serde(default)]
    capabilities: Option<ClientCapabilities>,
    #[serde(default)]
    input_responses: Option<InputResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

/// `POST …/prompts/get`'s body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptBody {
    name: String,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(rename = "_meta", default)]
    meta: Option<Map<String, Value>>,
    #[serde(default)]
    capabilities: Option<ClientCapabilities>,
    #[serde(default)]
    input_responses: Option<InputResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

/// `POST …/resources/read`'s body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadBody {
    uri: String,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(rename = "_meta", default)]
    meta: Option<Map<String, Value>>,
    #[serde(default)]
    capabilities: Option<ClientCapabilities>,
    #[serde(default)]
    input_responses: Option<InputResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

const DRIVING_FIELDS: &str = "\"timeoutMs\"?: number, \"_meta\"?: object, \"capabilities\"?: \
                              object, \"inputResponses\"?: object, \"requestState\"?: string";

type Body<T> = Result<Json<T>, axum::extract::rejection::JsonRejection>;

/// The request's body, or the answer to a malformed one (axum's rejection, with what it must be).
#[allow(clippy::result_large_err)] // the answer is returned at once, never carried
fn body<T>(body: Body<T>, shape: &str) -> Result<T, Response> {
    body.map(|Json(body)| body).map_err(|rejection| {
        let message = format!(
            "{}: the body must be {{{shape}, {DRIVING_FIELDS}}}",
            rejection.body_text()
        );
        (rejection.status(), message).into_response()
    })
}

/// `POST /api/sessions/{id}/prompts/get {name, arguments?, …}`.
pub async fn get_prompt(
    State(bridge): State<Bridge>,
    Path(id): Path<String>,
    scope: Option<Extension<AgentScope>>,
    request: Body<PromptBody>,
) -> Response {
    let request = match body(request, "\"name\": string, \"arguments\"?: object") {
        Ok(request) => request,
        Err(answer) => return answer,
    };
    let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
    let served = ServedRequest::get_prompt(&request.name, request.arguments);
    let driving = Driving {
        timeout_ms: request.timeout_ms,
        meta: request.meta,
        capabilities: request.capabilities,
        input_responses: request.input_responses,
        request_state: request.request_state,
    };
    serve(&bridge, scope, &id, served, arguments, driving).await
}

/// `POST /api/sessions/{id}/resources/read {uri, …}`.
pub async fn read_resource(
    State(bridge): State<Bridge>,
    Path(id): Path<String>,
    scope: Option<Extension<AgentScope>>,
    request: Body<ReadBody>,
) -> Response {
    let request = match body(request, "\"uri\": string") {
        Ok(request) => request,
        Err(answer) => return answer,
    };
    let served = match ServedRequest::read(&request.uri) {
        Ok(served) => served,
        Err(error) => return failed(error),
    };
    let arguments = json!({ "uri": request.uri });
    let driving = Driving {
        timeout_ms: request.timeout_ms,
        meta: request.meta,
        capabilities: request.capabilities,
        input_responses: request.input_responses,
        request_state: request.request_state,
    };
    serve(&bridge, scope, &id, served, arguments, driving).await
}

/// `POST /api/sessions/{id}/complete {ref, argument, context?, …}`.
pub async fn complete(
    State(bridge): State<Bridge>,
    Path(id): Path<String>,
    scope: Option<Extension<AgentScope>>,
    request: Body<Map<String, Value>>,
) -> Response {
    let shape = "\"ref\": {\"type\": \"ref/prompt\", \"name\"} | {\"type\": \"ref/resource\", \
                 \"uri\"}, \"argument\": {\"name\", \"value\"}, \"context\"?: object";
    let mut params = match body(request, shape) {
        Ok(params) => params,
        Err(answer) => return answer,
    };
    // The driving fields are the bridge's; the rest is the completion's params.
    let mut driving = Map::new();
    for field in [
        "timeoutMs",
        "_meta",
        "capabilities",
        "inputResponses",
        "requestState",
    ] {
        if let Some(value) = params.remove(field) {
            driving.insert(field.into(), value);
        }
    }
    let driving: Driving = match serde_json::from_value(Value::Object(driving)) {
        Ok(driving) => driving,
        Err(error) => {
            let message = format!("{error}: the body must be {{{shape}, {DRIVING_FIELDS}}}");
            return (StatusCode::UNPROCESSABLE_ENTITY, message).into_response();
        }
    };
    if let Some(unknown) = params
        .keys()
        .find(|key| !matches!(key.as_str(), "ref" | "argument" | "context"))
    {
        let message =
            format!("unknown field `{unknown}`: the body must be {{{shape}, {DRIVING_FIELDS}}}");
        return (StatusCode::UNPROCESSABLE_ENTITY, message).into_response();
    }
    let served = match ServedRequest::complete(params) {
        Ok(served) => served,
        Err(error) => return failed(error),
    };
    let arguments = Value::Object(served.params().clone());
    serve(&bridge, scope, &id, served, arguments, driving).await
}

/// An `/api` caller's side of a served request: what it declared; progress and log messages are
/// not sent (the answer is one JSON document).
struct ApiSide(ClientCapabilities);

impl AgentSide for ApiSide {
    fn capabilities(&self) -> ClientCapabilities {
        self.0.clone()
    }

    fn declares_tasks(&self) -> bool {
        false
    }

    fn progress(&self, _update: ProgressParams) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    fn log(&self, _params: Map<String, Value>) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    fn cancelled(&self) -> BoxFuture<'_, ()> {
        // A caller that goes away drops this request, and with it the page's.
        Box::pin(std::future::pending())
    }
}

/// Drives `request` on page session `id` (what the caller asked — `arguments` binds its rounds'
/// states — with `driving`'s timeout, `_meta`, capabilities and retry) to its answer.
async fn serve(
    bridge: &Bridge,
    scope: Option<Extension<AgentScope>>,
    id: &str,
    request: ServedRequest,
    arguments: Value,
    driving: Driving,
) -> Response {
    let session = match session_of(bridge, scope, id) {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let name = match request.subject() {
        Subject::Prompt(name) | Subject::Resource(name) => name.clone(),
        Subject::List => String::new(),
    };
    let tool = format!("{} {name}", request.method());
    let side = ApiSide(driving.capabilities.unwrap_or_default());
    if let Some(state) = driving.request_state {
        if !state.starts_with(&format!("{STATE_DOMAIN}.")) {
            return failed(RpcError::new(
                code::INVALID_PARAMS,
                "requestState integrity check failed (not issued by this bridge, or altered)",
            ));
        }
        let retry = Retry {
            state,
            page_session: session.id().to_owned(),
            tool,
            arguments: arguments.as_object().cloned().unwrap_or_default(),
            responses: driving.input_responses.unwrap_or_default(),
        };
        return respond(bridge.resume_served(retry, &side).await);
    }
    let mut meta = driving.meta.unwrap_or_default();
    if let Some(ms) = driving.timeout_ms {
        // `timeoutMs` of the body, as `_meta`'s is read (its bound checked there).
        meta.insert(meta::TIMEOUT_MS.into(), ms.into());
    }
    let progress_buffer = bridge.config().limits.progress_buffer;
    let running = RunningCall::serve(session.clone(), request, Some(meta), progress_buffer);
    let key = CallKey {
        page_session: session.id().to_owned(),
        tool_digest: arguments_digest(&Value::String(tool.clone())),
        tool,
        arguments: arguments_digest(&arguments),
    };
    let supplied = driving.input_responses;
    respond(rounds::drive(bridge.rounds(), running, &side, key, 0, supplied).await)
}

/// The answer for where a served request stands.
fn respond(driven: Driven<Value>) -> Response {
    match driven {
        Driven::Ended(Some(Ok(mut answer))) => {
            answer["resultType"] = "complete".into();
            Json(answer).into_response()
        }
        Driven::Ended(Some(Err(error))) => failed(error),
        Driven::Ended(None) => failed(RpcError::new(code::INTERNAL_ERROR, "cancelled")),
        Driven::InputRequired { requests, state } => Json(json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": state,
        }))
        .into_response(),
        Driven::Refused(why) => failed(RpcError::new(code::INVALID_PARAMS, why)),
        Driven::Task(_) => failed(RpcError::new(
            code::INTERNAL_ERROR,
            "a served request never becomes a task",
        )),
    }
}
