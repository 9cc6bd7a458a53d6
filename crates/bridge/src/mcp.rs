//! The bridge as an MCP server for agents (SPEC §9): each MCP session is bound to one page session
//! and offers that page's tools. The official Rust SDK (`rmcp`) does the protocol — Streamable HTTP
//! on `/mcp` (revisions 2025-11-25 with the handshake and 2026-07-28 without, negotiated per client)
//! and stdio; this module only maps it onto [`PageSession`].

// Logging, sampling and roots are deprecated by SEP-2577 in rmcp, yet both revisions the bridge
// speaks have them, and pages use them (SPEC §4 "Asking mid-call").
#![allow(deprecated)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use client_tools_core::limits::HUMAN_WAIT_TICK_MS;
use client_tools_core::protocol::{self, ProgressParams, RpcError};
use futures_util::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CreateTaskResult, DetailedTask, DiscoverResult, ElicitResult, ErrorCode,
    GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams, InitializeResult,
    InputRequests, InputRequiredResult, ListPromptsRequestMethod, ListPromptsResult,
    ListResourceTemplatesRequestMethod, ListResourceTemplatesResult, ListResourcesRequestMethod,
    ListResourcesResult, ListToolsResult, LoggingLevel, LoggingMessageNotificationParam,
    MetaObject, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    PromptsCapability, ResourcesCapability, ServerCapabilities, ServerConfig, ServerNotification,
    ServerRequest, SetLevelRequestMethod, SetLevelRequestParams, SubscriptionFilter,
    TaskStatusNotification, TaskStatusNotificationParams, Tool, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::{Map, Value};

use crate::agent_confirmation::{self, Binding, Decision};
use crate::bridge::Bridge;
use crate::config::ConfirmVia;
use crate::input_rounds::{
    self, arguments_digest, task_refusal, tool_digest, AgentSide, CallKey, Driven, Retry,
    RunningCall, STATE_DOMAIN,
};
use crate::prepared_call::PreparedCall;
use crate::sessions::call_options::CallOutcome;
use crate::sessions::page_session::PageSession;
use crate::task_book::Refusal;
use crate::tasks::TaskOp;

/// How often an agent bound to no page yet looks for one (to announce its tools), and how often its
/// announcer checks that the agent is still there.
const UNBOUND_POLL: Duration = Duration::from_millis(500);
/// How long `tools/list` and `tools/call` wait for a first page to connect.
const FIRST_PAGE_WAIT: Duration = Duration::from_secs(10);
/// How often progress is reported while the person at the agent decides (the page's tick too).
const WAITING_PROGRESS: Duration = Duration::from_millis(HUMAN_WAIT_TICK_MS);

/// One agent's MCP session: which page session it is bound to.
#[derive(Clone)]
pub struct McpAgent {
    bridge: Bridge,
    /// The page session id, fixed on first use: `?session=<id>`, else the newest page then.
    bound: Arc<Mutex<Option<String>>>,
    /// The level the agent set with `logging/setLevel` (2025-11-25); `None`: every level.
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
    /// The tasks this MCP session's calls became (2025-11-25: their status notifications go to it).
    tasks: Arc<Mutex<HashSet<String>>>,
}

impl McpAgent {
    /// An agent bound to `session` (or, when `None`, to the newest page when it first needs one).
    pub fn new(bridge: Bridge, session: Option<String>) -> Self {
        Self {
            bridge,
            bound: Arc::new(Mutex::new(session)),
            log_level: Arc::default(),
            tasks: Arc::default(),
        }
    }

    /// The page session id of this agent; binds it on first use (to `?session=<id>`, else to the
    /// newest connected page). Never another session's page.
    fn bound_id(&self, context: Option<&RequestContext<RoleServer>>) -> Option<String> {
        let mut bound = self.bound.lock().unwrap_or_else(|p| p.into_inner());
        if bound.is_none() {
            *bound = context
                .and_then(requested_session)
                .or_else(|| self.bridge.newest_session().map(|s| s.id().to_owned()));
        }
        bound.clone()
    }

    /// The page session of this agent, if it is bound and the session exists.
    fn page(&self, context: Option<&RequestContext<RoleServer>>) -> Option<Arc<PageSession>> {
        self.bridge.session(&self.bound_id(context)?)
    }

    /// The page, waiting up to [`FIRST_PAGE_WAIT`] for one to connect when there is none yet (an
    /// agent that launched the bridge with `--stdio` usually asks before the page is back). An id
    /// that names no session after the wait is an error, never a session made up for it.
    async fn page_or_wait(
        &self,
        context: Option<&RequestContext<RoleServer>>,
    ) -> Result<Arc<PageSession>, String> {
        let deadline = tokio::time::Instant::now() + FIRST_PAGE_WAIT;
        loop {
            if let Some(page) = self.page(context) {
                // Only a page that never came (or is still in its handshake, tools not listed yet)
                // is waited for: a gone page fails fast (SPEC §9).
                let gone = page.has_connected() && !page.is_connected();
                if page.has_listed_tools() || gone || tokio::time::Instant::now() >= deadline {
                    return Ok(page);
                }
            } else if tokio::time::Instant::now() >= deadline {
                return Err(match self.bound_id(context) {
                    Some(id) => format!(
                        "no page session '{id}' on this bridge (it never connected, or expired)"
                    ),
                    None => {
                        "no page is connected to the bridge: open a page that uses client-tools"
                            .to_owned()
                    }
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Tells `peer` whenever the page's tool list changes, for as long as the agent is connected
    /// (checked every [`UNBOUND_POLL`]: no task outlives its MCP session by more than that).
    async fn announce_changes(self, peer: Peer<RoleServer>) {
        // What the agent could have listed so far: nothing, if no page was there yet.
        let mut listed = self.page(None).map(|p| p.tools()).unwrap_or_default();
        let page = loop {
            if peer.is_transport_closed() {
                return;
            }
            match self.page(None) {
                Some(page) => break page,
                None => tokio::time::sleep(UNBOUND_POLL).await,
            }
        };
        let mut changes = page.subscribe();
        loop {
            let now = page.tools();
            if now != listed {
                listed = now;
                if peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                _ = tokio::time::sleep(UNBOUND_POLL) => {}
            }
            if peer.is_transport_closed() {
                return;
            }
        }
    }
}

impl McpAgent {
    /// 2025-11-25 (a session, a stream of its own): `notifications/tasks` for every change of the
    /// tasks this session's calls became on this node, for as long as the agent is connected.
    /// Revision 2026-07-28 would carry them on `subscriptions/listen`, which rmcp cannot filter by
    /// task yet: there agents poll `tasks/get`.
    async fn announce_tasks(self, peer: Peer<RoleServer>) {
        let mut changes = self.bridge.tasks().watch();
        loop {
            let change = tokio::select! {
                change = changes.recv() => change,
                _ = tokio::time::sleep(UNBOUND_POLL) => {
                    if peer.is_transport_closed() { return } else { continue }
                }
            };
            let (id, detailed) = match change {
                Ok(change) => change,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return,
            };
            let mine = self
                .tasks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&id);
            let Ok(task) = serde_json::from_value::<DetailedTask>(detailed) else {
                continue;
            };
            if mine {
                let params = TaskStatusNotificationParams::new(task);
                let notification = TaskStatusNotification::new(params);
                let sent = peer
                    .send_notification(ServerNotification::TaskStatusNotification(notification))
                    .await;
                if sent.is_err() {
                    return;
                }
            }
        }
    }
}

/// What the agent-side confirmation decided for a call (crate::agent_confirmation).
enum Confirmation {
    /// The call goes to the page (confirmed by the agent's person, or the page asks).
    Proceed,
    /// 2026-07-28: the client must ask its person and retry with the answer.
    Ask(InputRequiredResult),
    /// The call ends with this result.
    Refused(protocol::CallToolResult),
}

impl McpAgent {
    /// Asks the person at the agent to confirm `call` when the bridge runs with
    /// `--confirm-via agent`, the call needs confirmation, the client declared form elicitation,
    /// and the arguments fit in the question whole; otherwise the page asks (SPEC §7). On
    /// 2025-11-25 the bridge sends `elicitation/create` and waits (sending progress meanwhile when
    /// the call has a progress token), then prepares the call again and refuses it if what would
    /// be forwarded changed; on 2026-07-28 (no server-to-client requests) the call returns an
    /// `InputRequiredResult` and the client retries with the answer and the `requestState`, which
    /// is checked (it binds the forwarded `_meta`) and spent here.
    async fn confirm(
        &self,
        page: &PageSession,
        call: &mut PreparedCall,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        waited: &mut f64,
    ) -> Confirmation {
        let retried = request.request_state.is_some() || request.input_responses.is_some();
        let wanted = self.bridge.config().confirm_via == ConfirmVia::Agent
            && call.needs_confirmation()
            && can_elicit(context);
        let question = wanted.then(|| agent_confirmation::question(call)).flatten();
        if wanted && question.is_none() {
            tracing::info!(
                tool = call.name(),
                "arguments too long to show whole at the agent: the page confirms this call"
            );
        }
        let Some(question) = question else {
            // Answers given without a state feed the call's first round (SEP-2322).
            return match request.request_state.is_some() {
                true => Confirmation::Refused(protocol::CallToolResult::error(
                    "this call carries a requestState, but the bridge asked for no input for it",
                )),
                false => Confirmation::Proceed,
            };
        };
        let handshake_era = context
            .protocol_version()
            .is_none_or(|version| version.has_initialize());
        let forwarded = agent_confirmation::forwarded_digest(call);
        let decision = if handshake_era {
            if retried {
                return Confirmation::Refused(protocol::CallToolResult::error(
                    "requestState and inputResponses belong to protocol revision 2026-07-28; \
                     this session speaks an earlier one",
                ));
            }
            let asked = context.peer.create_elicitation_with_timeout(
                question,
                Some(Duration::from_millis(agent_confirmation::STATE_TTL_MS)),
            );
            let ticking = progress_while_waiting(context, waited);
            let answer = tokio::select! {
                answer = asked => answer,
                () = ticking => unreachable!("progress_while_waiting never ends"),
                () = context.ct.cancelled() => {
                    return Confirmation::Refused(protocol::CallToolResult::error("cancelled"));
                }
            };
            let decision = match answer {
                Ok(answer) => Decision::from_answer(&answer),
                Err(error) => {
                    return Confirmation::Refused(protocol::CallToolResult::error(format!(
                        "the agent's client did not answer the confirmation request: {error}"
                    )))
                }
            };
            if decision == Ok(Decision::Approve) {
                // The page may have redefined the tool while the person decided: what they
                // approved must be what goes.
                let arguments = call.arguments().clone();
                let again =
                    page.prepare_call(&request.name, arguments, Some(&context.meta.0 .0), None);
                match again {
                    Ok(again) if agent_confirmation::forwarded_digest(&again) == forwarded => {
                        *call = again
                    }
                    Ok(_) => {
                        return Confirmation::Refused(protocol::CallToolResult::error(format!(
                            "tool '{}' changed while the person at the agent decided (its \
                             schemas, policy or timeout): not run; call it again",
                            call.name()
                        )))
                    }
                    Err(refused) => return Confirmation::Refused(refused),
                }
            }
            decision
        } else {
            let mcp_session = mcp_session_id(context);
            let binding = Binding::of(call, &forwarded, page.id(), mcp_session.as_deref());
            let states = self.bridge.request_states();
            let now = unix_ms();
            let Some(state) = request.request_state.as_deref() else {
                if request.input_responses.is_some() {
                    return Confirmation::Refused(protocol::CallToolResult::error(
                        "inputResponses without requestState: send back the requestState the \
                         bridge issued with the question",
                    ));
                }
                let question = InputRequests::from([(
                    agent_confirmation::INPUT_KEY.to_owned(),
                    agent_confirmation::input_request(&question),
                )]);
                let state = states.issue(&binding, now);
                return Confirmation::Ask(InputRequiredResult::new(Some(question), Some(state)));
            };
            if let Err(refusal) = states.redeem(state, &binding, now) {
                return Confirmation::Refused(protocol::CallToolResult::error(refusal));
            }
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(agent_confirmation::INPUT_KEY));
            let Some(answer) = answer else {
                return Confirmation::Refused(protocol::CallToolResult::error(format!(
                    "the retried call carries no inputResponses['{}'] (the person's answer)",
                    agent_confirmation::INPUT_KEY
                )));
            };
            match serde_json::from_value::<ElicitResult>(answer.clone()) {
                Ok(answer) => Decision::from_answer(&answer),
                Err(error) => {
                    return Confirmation::Refused(protocol::CallToolResult::error(format!(
                        "inputResponses['{}'] is not an elicitation result: {error}",
                        agent_confirmation::INPUT_KEY
                    )))
                }
            }
        };
        let decision = match decision {
            Ok(decision) => decision,
            Err(error) => return Confirmation::Refused(protocol::CallToolResult::error(error)),
        };
        match decision.refusal() {
            Some(refusal) => Confirmation::Refused(refusal),
            None => {
                call.confirmed_by_agent();
                Confirmation::Proceed
            }
        }
    }

    /// The tools as MCP lists them: the session's (page and `--tools FILE`), with the file's titles.
    fn listed_tools(page: &PageSession) -> Vec<Tool> {
        page.tools()
            .iter()
            .filter_map(|tool| {
                let mut listed = to_mcp_tool(tool)?;
                if let Some(file) = page.agent_tools().get(&tool.name) {
                    if is_handler(tool) {
                        listed.title = file.title.clone();
                    }
                }
                Some(listed)
            })
            .collect()
    }
}

fn is_handler(tool: &protocol::Tool) -> bool {
    tool.meta
        .as_ref()
        .and_then(|m| m.get(protocol::meta::KIND))
        .and_then(Value::as_str)
        == Some("handler")
}

/// Whether the client declared form elicitation (in `initialize`, or on 2026-07-28 in the
/// request's `_meta`); a bare `elicitation: {}` means form.
fn can_elicit(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The `Mcp-Session-Id` of the HTTP request that carried this MCP message, if any.
fn mcp_session_id(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<http::request::Parts>()?;
    let value = parts.headers.get("mcp-session-id")?;
    value.to_str().ok().map(str::to_owned)
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `?session=<id>` of the HTTP request that carried this MCP message.
fn requested_session(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<http::request::Parts>()?;
    parts.uri.query()?.split('&').find_map(|pair| {
        let value = pair.strip_prefix("session=")?;
        (!value.is_empty()).then(|| value.to_owned())
    })
}

fn to_mcp_tool(tool: &protocol::Tool) -> Option<Tool> {
    serde_json::to_value(tool)
        .ok()
        .and_then(|value| serde_json::from_value(value).ok())
}

/// The agent's result, built field by field from the page's (no JSON round trip on each call).
fn to_mcp_result(result: protocol::CallToolResult) -> CallToolResult {
    let content = result.content.into_iter().map(to_mcp_block).collect();
    // `success` sets `resultType`, which revision 2026-07-28 requires (rmcp strips it again for
    // older peers).
    let mut converted = CallToolResult::success(content);
    converted.structured_content = result.structured_content;
    converted.is_error = Some(result.is_error);
    converted.meta = result.meta.map(MetaObject);
    converted
}

/// One content block as rmcp reads it: text as it is; any other block (image, audio, resource
/// link, embedded resource, annotated text), which the page checked (core `protocol::content`),
/// through its JSON. A block rmcp cannot read (a newer kind) becomes a text block saying so.
fn to_mcp_block(block: protocol::Content) -> ContentBlock {
    match block {
        protocol::Content::Text(text) => ContentBlock::text(text.text),
        protocol::Content::Block(block) => {
            let kind = block.get("type").cloned().unwrap_or(Value::Null);
            serde_json::from_value(Value::Object(block)).unwrap_or_else(|error| {
                ContentBlock::text(format!(
                    "the page sent a content block of type {kind} this bridge cannot read: {error}"
                ))
            })
        }
    }
}

impl ServerHandler for McpAgent {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "client-tools-bridge",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Tools of a web page open in the user's browser. They run in that page: results \
                 reflect what the user sees, and a closed tab ends them with an error result.",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let _ = self.page(Some(&context));
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        // Logging is a capability of the handshake revisions (2026-07-28 removed
        // `logging/setLevel`: log levels travel in each request's `_meta` there).
        result.capabilities.logging = Some(Default::default());
        Ok(result)
    }

    // Revision 2026-07-28 requires caching hints on every list (SEP-2549): pages offer no prompts
    // or resources, so there they are declared (without `listChanged` or `subscribe`) and listed
    // empty, with the hints rmcp fills in. The handshake revisions keep them undeclared (-32601).
    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        let mut result = DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        );
        result.capabilities.prompts = Some(PromptsCapability::default());
        result.capabilities.resources = Some(ResourcesCapability::default());
        Ok(result)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        match is_handshake_era(&context) {
            true => Err(McpError::method_not_found::<ListPromptsRequestMethod>()),
            false => Ok(ListPromptsResult::default()),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        match is_handshake_era(&context) {
            true => Err(McpError::method_not_found::<ListResourcesRequestMethod>()),
            false => Ok(ListResourcesResult::default()),
        }
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        match is_handshake_era(&context) {
            true => Err(McpError::method_not_found::<
                ListResourceTemplatesRequestMethod,
            >()),
            false => Ok(ListResourceTemplatesResult::default()),
        }
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if !is_handshake_era(&context) {
            return Err(McpError::method_not_found::<SetLevelRequestMethod>());
        }
        *self.log_level.lock().unwrap_or_else(|p| p.into_inner()) = Some(request.level);
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        tokio::spawn(self.clone().announce_changes(context.peer.clone()));
        let declared = context
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.supports_tasks());
        if declared {
            tokio::spawn(self.clone().announce_tasks(context.peer.clone()));
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let page = self
            .page_or_wait(Some(&context))
            .await
            .map_err(|message| McpError::invalid_params(message, None))?;
        Ok(ListToolsResult::with_all_items(Self::listed_tools(&page)))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let page = self.page(None)?;
        Self::listed_tools(&page)
            .into_iter()
            .find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let page = match self.page_or_wait(Some(&context)).await {
            Ok(page) => page,
            Err(text) => return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into()),
        };
        let round_state = request
            .request_state
            .as_deref()
            .filter(|state| state.starts_with(&format!("{STATE_DOMAIN}.")));
        if let Some(state) = round_state {
            return self.resume(&page, state, &request, &context).await;
        }
        if let Some(error) = task_refusal(&page, &request.name, declares_tasks(&context)) {
            return Err(McpError::new(
                ErrorCode(error.code as i32),
                error.message,
                error.data,
            ));
        }
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        // The agent's `_meta` is checked as on every route (crate::prepared_call).
        let prepared = page.prepare_call(&request.name, arguments, Some(&context.meta.0 .0), None);
        let mut call = match prepared {
            Ok(call) => call,
            Err(refused) => return Ok(to_mcp_result(refused).into()),
        };
        let mut waited = 0.0;
        match self
            .confirm(&page, &mut call, &request, &context, &mut waited)
            .await
        {
            Confirmation::Proceed => {}
            Confirmation::Ask(question) => return Ok(question.into()),
            Confirmation::Refused(result) => return Ok(to_mcp_result(result).into()),
        }
        let handshake_era = is_handshake_era(&context);
        let log = self.log_threshold(&context, handshake_era);
        if let Some(level) = log {
            call.set_log_level(level_name(level));
        }
        let key = CallKey {
            page_session: page.id().to_owned(),
            tool: request.name.to_string(),
            tool_digest: tool_digest(page.tools().iter().find(|t| t.name == call.name())),
            arguments: arguments_digest(&Value::Object(
                request.arguments.clone().unwrap_or_default(),
            )),
        };
        let running = RunningCall::start_checked(
            self.bridge.rounds(),
            page.clone(),
            call,
            declares_tasks(&context),
            self.bridge.config().limits.progress_buffer,
        );
        let running = match running {
            Ok(running) => running,
            Err(refused) => return Ok(to_mcp_result(refused).into()),
        };
        // Answers given without a state (2026-07-28) feed the first round; a confirmation's
        // answer (with its own state) is not one of them.
        let supplied = match handshake_era || request.request_state.is_some() {
            true => None,
            false => request.input_responses.clone(),
        };
        let side = McpSide {
            context: &context,
            waited,
            log,
            handshake_era,
        };
        let driven = input_rounds::drive(self.bridge.rounds(), running, &side, key, 0, supplied);
        self.answer_noting_task(driven.await)
    }

    // The tasks extension (crate::tasks): a task belongs to the page session the agent is bound
    // to, and is read from any node of a cluster. rmcp refuses these to agents that did not
    // declare the extension (`-32021`).
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let session = self.bound_id(Some(&context)).unwrap_or_default();
        let op = TaskOp::Get {
            task_id: request.task_id,
        };
        let task = self.bridge.task(op, &session).await.map_err(task_error)?;
        serde_json::from_value::<DetailedTask>(task)
            .map(GetTaskResult::new)
            .map_err(|error| McpError::internal_error(format!("task: {error}"), None))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let session = self.bound_id(Some(&context)).unwrap_or_default();
        let op = TaskOp::Update {
            task_id: request.task_id,
            input_responses: request.input_responses,
        };
        self.bridge.task(op, &session).await.map_err(task_error)?;
        Ok(())
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let session = self.bound_id(Some(&context)).unwrap_or_default();
        let op = TaskOp::Cancel {
            task_id: request.task_id,
        };
        self.bridge.task(op, &session).await.map_err(task_error)?;
        Ok(())
    }

    // Revision 2026-07-28 has no `initialize`: `tools/list_changed` travels on listen streams.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let Some(page) = self.page(None) else {
            context.cancelled().await;
            return Ok(());
        };
        let mut changes = page.subscribe();
        let mut listed = page.tools();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    let now = page.tools();
                    if now != listed {
                        listed = now;
                        if context.sink().notify_tool_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                }
            }
        }
    }
}

/// An MCP request's side of a page call it drives (crate::input_rounds::drive): the agent's
/// declared capabilities, its progress token and log level, its cancellation, and on 2025-11-25
/// the requests of a round sent on the call's stream.
struct McpSide<'a> {
    context: &'a RequestContext<RoleServer>,
    /// Progress already reported on the call (while the person at the agent confirmed it).
    waited: f64,
    /// The agent's log level: the page's log messages at or above it go to the agent; `None`:
    /// none go (2026-07-28 without `_meta` `io.modelcontextprotocol/logLevel`).
    log: Option<LoggingLevel>,
    handshake_era: bool,
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
fn answer(driven: Driven) -> Result<CallToolResponse, McpError> {
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
fn task_error(refusal: Refusal) -> McpError {
    McpError::new(ErrorCode(refusal.code as i32), refusal.message, None)
}

impl McpAgent {
    /// The agent's log level for a call: 2025-11-25, the session's (`logging/setLevel`; every
    /// level when never set); 2026-07-28, the request's `_meta` `io.modelcontextprotocol/logLevel`
    /// (none without it).
    fn log_threshold(
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
    async fn resume(
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
    fn answer_noting_task(&self, driven: Driven) -> Result<CallToolResponse, McpError> {
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

/// Whether the agent declared the tasks extension for this request: in its `_meta` (2026-07-28,
/// read where it lies, nothing parsed), else in `initialize`.
fn declares_tasks(context: &RequestContext<RoleServer>) -> bool {
    let in_meta = context
        .meta
        .0
        .get("io.modelcontextprotocol/clientCapabilities")
        .map(|capabilities| {
            capabilities
                .get("extensions")
                .and_then(|extensions| extensions.get(rmcp::model::TASKS_EXTENSION_ID))
                .is_some()
        });
    in_meta.unwrap_or_else(|| {
        context
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.supports_tasks())
    })
}

/// Whether the request is on a handshake revision (2025-11-25 and before).
fn is_handshake_era(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_none_or(|version| version.has_initialize())
}

/// The agent's answer for a call that ended: its result, or the page's `-32021` as an MCP error
/// with the same `data` (rmcp answers it with HTTP 400 on a stateless request).
fn finish(outcome: Option<CallOutcome>) -> Result<CallToolResponse, McpError> {
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

fn progress_param(
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
async fn send_progress(
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
fn level_rank(level: LoggingLevel) -> usize {
    client_tools_core::page_engine::log_severity(level_name(level)).unwrap_or(0)
}

fn level_name(level: LoggingLevel) -> &'static str {
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
async fn forward_log(
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

/// 2025-11-25: a round's requests to the agent, concurrently, as requests on the call's stream
/// (rmcp relates a request sent while a call is handled to it); `{inputResponses}` for the page,
/// or an error naming the request the agent failed. Bounded by the human wait (300 s).
async fn ask_agent(
    peer: Peer<RoleServer>,
    requests: Map<String, Value>,
) -> Result<Value, RpcError> {
    let asks = requests.into_iter().map(|(key, request)| {
        let peer = peer.clone();
        async move {
            let failed = |why: String| {
                RpcError::new(
                    protocol::code::INTERNAL_ERROR,
                    format!("inputRequests['{key}']: {why}"),
                )
            };
            let request: ServerRequest = serde_json::from_value(request)
                .map_err(|e| failed(format!("not a request the bridge can send: {e}")))?;
            let limit = Duration::from_millis(client_tools_core::limits::HUMAN_WAIT_MAX_MS);
            let answer = tokio::time::timeout(limit, peer.send_request(request))
                .await
                .map_err(|_| failed("the agent did not answer in time".into()))?
                .map_err(|e| match e {
                    rmcp::ServiceError::McpError(e) => {
                        let mut error = RpcError::new(
                            i64::from(e.code.0),
                            format!(
                                "inputRequests['{key}']: the agent answered with an error: {}",
                                e.message
                            ),
                        );
                        error.data = e.data;
                        error
                    }
                    other => failed(format!("the agent's client failed: {other}")),
                })?;
            let answer = serde_json::to_value(answer).map_err(|e| failed(e.to_string()))?;
            Ok::<_, RpcError>((key, answer))
        }
    });
    let answers = futures_util::future::try_join_all(asks).await?;
    let responses: Map<String, Value> = answers.into_iter().collect();
    Ok(serde_json::json!({ "inputResponses": responses }))
}

/// While the person at the agent decides (2025-11-25): `notifications/progress` every
/// [`WAITING_PROGRESS`] under the call's progress token, if it has one, so the client extends its
/// deadline (SPEC §5). Never ends (the caller stops polling it); `waited` is the last progress sent.
async fn progress_while_waiting(context: &RequestContext<RoleServer>, waited: &mut f64) {
    let Some(token) = context.meta.get_progress_token() else {
        return std::future::pending().await;
    };
    let mut ticks = tokio::time::interval_at(
        tokio::time::Instant::now() + WAITING_PROGRESS,
        WAITING_PROGRESS,
    );
    loop {
        ticks.tick().await;
        *waited += 1.0;
        let param = ProgressNotificationParam::new(token.clone(), *waited)
            .with_message("waiting for the person at the agent to confirm the call");
        // A client that stopped reading does not stop the wait: its answer (or the timeout) does.
        let _ = context.peer.notify_progress(param).await;
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ResultType;
    use serde_json::json;

    use super::*;

    /// Built directly, the agent's result is the one rmcp reads from the page's result's JSON.
    #[test]
    fn results_convert_as_their_json_reads() {
        let mut with_meta = protocol::CallToolResult::success(json!({"tasks": [1, 2]}));
        with_meta.meta = json!({"clienttools/modifiedInput": {"id": 3}})
            .as_object()
            .cloned();
        let mut null_structured = protocol::CallToolResult::success(json!("done"));
        null_structured.structured_content = Some(Value::Null);
        for result in [
            protocol::CallToolResult::success(json!("plain text")),
            protocol::CallToolResult::success(json!([1, "two"])),
            protocol::CallToolResult::error("boom"),
            with_meta,
            null_structured,
        ] {
            let json = serde_json::to_value(&result).unwrap();
            let mut read: CallToolResult = serde_json::from_value(json).unwrap();
            read.result_type = Some(ResultType::COMPLETE);
            assert_eq!(to_mcp_result(result.clone()), read, "{result:?}");
        }
    }

    /// Every kind of content block reaches the agent as the page gave it.
    #[test]
    fn content_blocks_of_every_kind_pass_through() {
        let blocks = json!([
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRiYAAAA=", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "test://x", "name": "x"},
            {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "t"}},
            {"type": "text", "text": "noted", "annotations": {"priority": 0.5}},
        ]);
        let page: protocol::CallToolResult =
            serde_json::from_value(json!({"content": blocks.clone()})).unwrap();
        let agent = serde_json::to_value(to_mcp_result(page)).unwrap();
        assert_eq!(agent["content"], blocks);
    }

    #[test]
    fn the_page_missing_capability_becomes_the_agents_error_with_its_data() {
        let mut error = protocol::RpcError::new(-32021, "Missing required client capability");
        error.data = Some(json!({"requiredCapabilities": {"sampling": {}}}));
        let Err(agent) = finish(Some(Err(error))) else {
            panic!("an error")
        };
        assert_eq!(agent.code.0, -32021);
        assert_eq!(
            agent.data,
            Some(json!({"requiredCapabilities": {"sampling": {}}}))
        );
    }

    #[test]
    fn log_levels_filter_by_rfc5424_severity() {
        assert!(level_rank(LoggingLevel::Info) >= level_rank(LoggingLevel::Debug));
        assert!(level_rank(LoggingLevel::Debug) < level_rank(LoggingLevel::Info));
        assert!(level_rank(LoggingLevel::Emergency) > level_rank(LoggingLevel::Alert));
        for level in [
            LoggingLevel::Debug,
            LoggingLevel::Warning,
            LoggingLevel::Emergency,
        ] {
            assert_eq!(json!(level), json!(level_name(level)));
        }
    }
}
