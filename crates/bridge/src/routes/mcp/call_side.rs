//! An MCP request's side of a page call it drives (crate::agent::rounds::drive): progress, log
//! messages, rounds and the call's end, as MCP sends them to the agent.

#![allow(deprecated)]

use client_tools_core::protocol::{ProgressParams, RpcError};
use futures_util::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
    CreateTaskResult, ErrorCode, InputRequests, InputRequiredResult, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value};

use crate::agent::rounds::{AgentSide, Driven, Retry};
use crate::agent::task_book::Refusal;
use crate::sessions::call_options::CallOutcome;
use crate::sessions::page_session::PageSession;

use super::confirmation::ask_agent;
use super::{declares_tasks, is_handshake_era, to_mcp_result, McpAgent};

/// An MCP request's side of a page call it drives (crate::agent::rounds::drive): the agent's
/// declared capabilities, its progress token and log level, its cancellation, and on 2025-11-25
/// the requests of a round sent on the call's stream.
pub(super) struct McpSide<'a> {
    pub(super) context: &'a RequestContext<RoleServer>,
    /// Progress already reported on the call (while the person at the agent confirmed it).
    pub(super) waited: f64,
    /// The agent's log level: the page's log messages at or above it go to the agent; `None`:
    /// none go (2026-07-28 without `_meta` `io.modelcontextprotocol/logLevel`).
    pub(super) log: Option<LoggingLevel>,
    pub(super) handshake_era: bool,
}

impl AgentSide for McpSide<'_> {
    fn capabilities(&self) -> ClientCapabilities {
        self.context.client_capabilities().unwrap_or_default()
    }

    fn declares_tasks(&self) -> bool {
        declares_tasks(self.context)
    }

    fn progress(&self, update: ProgressParams) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let token = self.context.meta.get_progress_token();
            send_progress(self.context, token.as_ref(), update, self.waited).await
        })
    }

    fn log(&self, params: Map<String, Value>) -> BoxFuture<'_, ()> {
        Box::pin(forward_log(self.context, self.log, params))
    }

    fn cancelled(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.context.ct.cancelled())
    }

    fn ask(
        &self,
        requests: &Map<String, Value>,
    ) -> Option<BoxFuture<'static, Result<Value, RpcError>>> {
        self.handshake_era
            .then(|| Box::pin(ask_agent(self.context.peer.clone(), requests.clone())) as _)
    }
}

/// The agent's answer for where a driven call stands: its end ([`finish`]), the round's
/// `InputRequiredResult`, or `-32602` for a refused retry or malformed answers.
pub(super) fn answer(driven: Driven) -> Result<CallToolResponse, McpError> {
    match driven {
        Driven::Ended(outcome) => finish(outcome),
        Driven::InputRequired { requests, state } => {
            let requests: InputRequests = requests
                .into_iter()
                .filter_map(|(key, request)| Some((key, serde_json::from_value(request).ok()?)))
                .collect();
            Ok(InputRequiredResult::new(Some(requests), Some(state)).into())
        }
        Driven::Refused(why) => Err(McpError::invalid_params(why, None)),
        Driven::Task(task) => serde_json::from_value::<rmcp::model::Task>(task)
            .map(|task| CreateTaskResult::new(task).into())
            .map_err(|error| McpError::internal_error(format!("task: {error}"), None)),
    }
}

/// A refused task request as the agent's JSON-RPC error.
pub(super) fn task_error(refusal: Refusal) -> McpError {
    McpError::new(ErrorCode(refusal.code as i32), refusal.message, None)
}

impl McpAgent {
    /// The agent's log level for a call: 2025-11-25, the session's (`logging/setLevel`; every
    /// level when never set); 2026-07-28, the request's `_meta` `io.modelcontextprotocol/logLevel`
    /// (none without it).
    pub(super) fn log_threshold(
        &self,
        context: &RequestContext<RoleServer>,
        handshake_era: bool,
    ) -> Option<LoggingLevel> {
        if handshake_era {
            let level = *self.log_level.lock().unwrap_or_else(|p| p.into_inner());
            Some(level.unwrap_or(LoggingLevel::Debug))
        } else {
            context.meta.log_level()
        }
    }

    /// 2026-07-28: the agent's retry of a suspended call, with the round's `requestState` and its
    /// `inputResponses`, on whichever node keeps the call. Refusals are `-32602`.
    pub(super) async fn resume(
        &self,
        page: &PageSession,
        state: &str,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if is_handshake_era(context) {
            return Err(McpError::invalid_params(
                "requestState belongs to protocol revision 2026-07-28; this session speaks an \
                 earlier one",
                None,
            ));
        }
        let retry = Retry {
            state: state.to_owned(),
            page_session: page.id().to_owned(),
            tool: request.name.to_string(),
            arguments: request.arguments.clone().unwrap_or_default(),
            responses: request.input_responses.clone().unwrap_or_default(),
        };
        let side = McpSide {
            context,
            waited: 0.0,
            log: context.meta.log_level(),
            handshake_era: false,
        };
        self.answer_noting_task(self.bridge.resume_round(retry, &side).await)
    }

    /// [`answer`], remembering a task the call became (its status notifications, 2025-11-25).
    pub(super) fn answer_noting_task(&self, driven: Driven) -> Result<CallToolResponse, McpError> {
        if let Driven::Task(task) = &driven {
            if let Some(id) = task.get("taskId").and_then(Value::as_str) {
                let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
                tasks.retain(|known| self.bridge.tasks().knows(known));
                tasks.insert(id.to_owned());
            }
        }
        answer(driven)
    }
}

/// The agent's answer for a call that ended: its result, or the page's `-32021` as an MCP error
/// with the same `data` (rmcp answers it with HTTP 400 on a stateless request).
pub(super) fn finish(outcome: Option<CallOutcome>) -> Result<CallToolResponse, McpError> {
    match outcome {
        Some(Ok(result)) => Ok(to_mcp_result(result).into()),
        Some(Err(error)) => Err(McpError::new(
            ErrorCode(error.code as i32),
            error.message,
            error.data,
        )),
        None => Ok(CallToolResult::error(vec![ContentBlock::text("cancelled")]).into()),
    }
}

pub(super) fn progress_param(
    token: &ProgressToken,
    update: ProgressParams,
    after: f64,
) -> ProgressNotificationParam {
    let update = update.above(after);
    let mut param = ProgressNotificationParam::new(token.clone(), update.progress);
    if let Some(total) = update.total {
        param = param.with_total(total);
    }
    if let Some(message) = update.message {
        param = param.with_message(message);
    }
    param
}

/// Sends the page's progress `update` to the agent under its progress token (none: dropped), as
/// a notification related to the call's request: on its stream.
pub(super) async fn send_progress(
    context: &RequestContext<RoleServer>,
    token: Option<&ProgressToken>,
    update: ProgressParams,
    after: f64,
) {
    if let Some(token) = token {
        let _ = context
            .peer
            .notify_progress(progress_param(token, update, after))
            .await;
    }
}

/// RFC 5424 severity, lowest first.
/// Severity, least first: the core's one order of levels (page and bridge filter alike).
pub(super) fn level_rank(level: LoggingLevel) -> usize {
    client_tools_core::page_engine::log_severity(level_name(level)).unwrap_or(0)
}

pub(super) fn level_name(level: LoggingLevel) -> &'static str {
    match level {
        LoggingLevel::Debug => "debug",
        LoggingLevel::Info => "info",
        LoggingLevel::Notice => "notice",
        LoggingLevel::Warning => "warning",
        LoggingLevel::Error => "error",
        LoggingLevel::Critical => "critical",
        LoggingLevel::Alert => "alert",
        LoggingLevel::Emergency => "emergency",
    }
}

/// Sends the page's log message (its `clienttools/callId` already removed) to the agent when its
/// level is at or above `threshold`; dropped otherwise, or when it does not read as one.
pub(super) async fn forward_log(
    context: &RequestContext<RoleServer>,
    threshold: Option<LoggingLevel>,
    params: Map<String, Value>,
) {
    let Some(threshold) = threshold else {
        return;
    };
    let Ok(param) =
        serde_json::from_value::<LoggingMessageNotificationParam>(Value::Object(params))
    else {
        return;
    };
    if level_rank(param.level) >= level_rank(threshold) {
        let _ = context.peer.notify_logging_message(param).await;
    }
}
