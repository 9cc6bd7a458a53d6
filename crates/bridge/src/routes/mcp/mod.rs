//! The bridge as an MCP server for agents (SPEC §9): each MCP session is bound to one page session
//! and offers that page's tools. The official Rust SDK (`rmcp`) does the protocol — Streamable HTTP
//! on `/mcp` (revisions 2025-11-25 with the handshake and 2026-07-28 without, negotiated per client)
//! and stdio; this module only maps it onto [`PageSession`].

// Logging, sampling and roots are deprecated by SEP-2577 in rmcp, yet both revisions the bridge
// speaks have them, and pages use them (SPEC §4 "Asking mid-call").
#![allow(deprecated)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use client_tools_core::protocol::{self};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    DetailedTask, ErrorCode, GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, LoggingLevel, MetaObject, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, SetLevelRequestMethod, SetLevelRequestParams, SubscriptionFilter, Tool,
    UpdateTaskParams,
};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

use crate::agent::rounds::{
    self, arguments_digest, task_refusal, tool_digest, CallKey, RunningCall, STATE_DOMAIN,
};
use crate::agent::tasks::TaskOp;
use crate::bridge::Bridge;
use crate::calls::served::{method, ServedRequest};
use crate::sessions::page_session::PageSession;
use crate::sessions::scope::AgentScope;
use crate::sessions::user_tabs;

mod announce;
mod call_side;
mod confirmation;
mod http_request;
mod served;

use call_side::{level_name, task_error, McpSide};
use confirmation::Confirmation;
pub(crate) use http_request::with_request_seen;
use http_request::RequestSeen;
use served::Served;

/// What an MCP session is bound to, fixed on its first request.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Bound {
    /// One page session: `?session=<id>`, else the newest page then.
    Session(String),
    /// All the connected pages of one user (SPEC §13): `?user=SUB`, or an agent token signed for
    /// one person (its `sub`).
    User(String),
}

/// One agent's MCP session: whose pages it reaches, and which it is bound to.
#[derive(Clone)]
pub struct McpAgent {
    bridge: Bridge,
    /// Fixed on first use: `?session=<id>` or `?user=SUB`, else the agent's own user (a signed
    /// agent token), else the newest page then.
    bound: Arc<Mutex<Option<Bound>>>,
    /// Whose pages it reaches, fixed by its first request's credential (crate::routes::auth): a
    /// later request on the same MCP session with another credential is refused.
    scope: Arc<Mutex<Option<AgentScope>>>,
    /// The level the agent set with `logging/setLevel` (2025-11-25); `None`: every level.
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
    /// The tasks this MCP session's calls became (2025-11-25: their status notifications go to it).
    tasks: Arc<Mutex<HashSet<String>>>,
    /// Its resource subscriptions (2025-11-25, `resources/subscribe`).
    subscriptions: Arc<Mutex<served::Subscriptions>>,
}

impl McpAgent {
    /// An agent bound to `session` (or, when `None`, to the newest page when it first needs one).
    pub fn new(bridge: Bridge, session: Option<String>) -> Self {
        Self {
            bridge,
            bound: Arc::new(Mutex::new(session.map(Bound::Session))),
            scope: Arc::default(),
            log_level: Arc::default(),
            tasks: Arc::default(),
            subscriptions: Arc::default(),
        }
    }

    /// An agent over all the connected pages of `user` (SPEC §13; `--stdio --user SUB`).
    pub fn for_user(bridge: Bridge, user: String) -> Self {
        let agent = Self::new(bridge, None);
        *lock(&agent.bound) = Some(Bound::User(user));
        agent
    }

    /// Whose pages this agent reaches: its first request's credential (none, on stdio: the
    /// operator's process). `Err` for a request carrying another credential than the first.
    /// Without a request (`get_tool`, which rmcp asks before a call's first request reaches the
    /// agent on 2026-07-28) nothing is fixed: an agent is bound by its own requests only.
    fn scope(&self, context: Option<&RequestContext<RoleServer>>) -> Result<AgentScope, String> {
        let asked = context.and_then(request_scope);
        let mut fixed = lock(&self.scope);
        match (fixed.as_ref(), asked) {
            (None, _) if context.is_none() => Err("no request has bound this agent yet".to_owned()),
            (None, asked) => Ok(fixed.insert(asked.unwrap_or(AgentScope::Everyone)).clone()),
            (Some(fixed), Some(asked)) if *fixed != asked => Err(
                "this MCP session was opened with another agent credential: open your own"
                    .to_owned(),
            ),
            (Some(fixed), _) => Ok(fixed.clone()),
        }
    }

    /// The agent's scope and binding; binds it on first use (to `?session=<id>` or `?user=SUB`,
    /// else to the agent's own user, else to the newest connected page). Never another user's
    /// page: every lookup below filters by the scope.
    fn bound(
        &self,
        context: Option<&RequestContext<RoleServer>>,
    ) -> Result<(AgentScope, Option<Bound>), String> {
        let scope = self.scope(context)?;
        let mut bound = lock(&self.bound);
        if bound.is_none() {
            *bound = context
                .and_then(requested_binding)
                .or_else(|| self.default_binding(&scope));
        }
        Ok((scope, bound.clone()))
    }

    /// What an agent of `scope` that names nothing is bound to: its own user's tabs (a signed agent
    /// token), else the newest connected page.
    fn default_binding(&self, scope: &AgentScope) -> Option<Bound> {
        match scope {
            AgentScope::User(user) => Some(Bound::User(user.clone())),
            AgentScope::Everyone => (self.bridge.newest_session())
                .map(|session| Bound::Session(session.id().to_owned())),
        }
    }

    /// The tools an agent of `scope` asking for `requested` would be listed now, without binding
    /// it; `None` when that is no page (another user's session answers as one that does not exist).
    fn tools_seen_by(&self, scope: &AgentScope, requested: Option<Bound>) -> Option<Vec<Tool>> {
        match requested.or_else(|| self.default_binding(scope))? {
            Bound::Session(id) => Some(Self::listed_tools(&*self.bridge.session_for(scope, &id)?)),
            Bound::User(user) => Some(match scope.reaches_user(Some(&user)) {
                true => Self::union_tools(&self.bridge.user_pages(&user)),
                false => Vec::new(),
            }),
        }
    }

    /// The page session id of an agent bound to one (`None` over a user's tabs, or unbound).
    fn bound_id(&self, context: Option<&RequestContext<RoleServer>>) -> Option<String> {
        match self.bound(context).ok()?.1? {
            Bound::Session(id) => Some(id),
            Bound::User(_) => None,
        }
    }

    /// The page session of an agent bound to one, if it exists and the agent reaches it.
    fn page(&self, context: Option<&RequestContext<RoleServer>>) -> Option<Arc<PageSession>> {
        match self.bound(context).ok()? {
            (scope, Some(Bound::Session(id))) => self.bridge.session_for(&scope, &id),
            _ => None,
        }
    }

    /// The connected pages of the user an agent over a user's tabs is bound to (`None`: bound to
    /// one session); none when its scope does not reach that user (`?user=` of another person).
    fn user_pages(
        &self,
        context: Option<&RequestContext<RoleServer>>,
    ) -> Option<Vec<Arc<PageSession>>> {
        match self.bound(context).ok()? {
            (scope, Some(Bound::User(user))) => Some(match scope.reaches_user(Some(&user)) {
                true => self.bridge.user_pages(&user),
                false => Vec::new(),
            }),
            _ => None,
        }
    }

    /// The page session ids a task request of this agent may name: its page's, or every session
    /// of its user on this node and every connected one elsewhere (a tab closed since keeps its
    /// tasks readable while its session lives).
    fn task_sessions(&self, context: &RequestContext<RoleServer>) -> Result<Vec<String>, McpError> {
        let (scope, bound) = self
            .bound(Some(context))
            .map_err(|why| McpError::invalid_request(why, None))?;
        Ok(match bound {
            Some(Bound::Session(id)) => match self.bridge.session_for(&scope, &id) {
                Some(_) => vec![id],
                None => vec![String::new()],
            },
            Some(Bound::User(user)) if scope.reaches_user(Some(&user)) => {
                let mut ids: Vec<String> = (self.bridge.user_pages(&user).iter())
                    .map(|page| page.id().to_owned())
                    .collect();
                for session in self.bridge.table().of_user(&user) {
                    if !ids.iter().any(|id| id == session.id()) {
                        ids.push(session.id().to_owned());
                    }
                }
                ids
            }
            _ => vec![String::new()],
        })
    }

    /// A task request on whichever of the agent's sessions keeps the task (over a user's tabs,
    /// each is asked until one knows it; the others answer "unknown").
    async fn task_op(
        &self,
        op: TaskOp,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, McpError> {
        let sessions = self.task_sessions(context)?;
        let mut last = None;
        for session in sessions {
            match self.bridge.task(op.clone(), &session).await {
                Ok(answer) => return Ok(answer),
                Err(refusal) => last = Some(refusal),
            }
        }
        Err(last.map_or_else(
            || McpError::invalid_params("unknown task", None),
            task_error,
        ))
    }

    /// The page, waiting up to `Limits::first_page_wait` for one to connect when there is none yet (an
    /// agent that launched the bridge with `--stdio` usually asks before the page is back). An id
    /// that names no session after the wait is an error, never a session made up for it.
    async fn page_or_wait(
        &self,
        context: Option<&RequestContext<RoleServer>>,
    ) -> Result<Arc<PageSession>, String> {
        let deadline = tokio::time::Instant::now() + self.bridge.config().limits.first_page_wait;
        // Subscribed before the first look: no change between a look and the wait is missed.
        let mut changes = self.bridge.watch_pages();
        loop {
            if let Some(page) = self.page(context) {
                // Only a page that never came (or is still in its handshake, tools not listed yet)
                // is waited for: a gone page fails fast (SPEC §9).
                let gone = page.has_connected() && !page.is_connected();
                if page.has_listed_tools() || gone || tokio::time::Instant::now() >= deadline {
                    return Ok(page);
                }
            } else if tokio::time::Instant::now() >= deadline {
                self.bound(context)?;
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
            wait_for_change(&mut changes, deadline).await;
        }
    }

    /// Over a user's tabs: the user's connected pages, waiting up to `Limits::first_page_wait` for one
    /// that listed its tools when there is none yet (none after the wait: an empty list, not an
    /// error — a person with no tab open is no fault).
    async fn user_pages_or_wait(
        &self,
        context: Option<&RequestContext<RoleServer>>,
    ) -> Vec<Arc<PageSession>> {
        let deadline = tokio::time::Instant::now() + self.bridge.config().limits.first_page_wait;
        let mut changes = self.bridge.watch_pages();
        loop {
            let pages = self.user_pages(context).unwrap_or_default();
            let ready = pages.iter().any(|page| page.has_listed_tools());
            if ready || tokio::time::Instant::now() >= deadline {
                return pages;
            }
            wait_for_change(&mut changes, deadline).await;
        }
    }

    /// The page a `tools/call` runs on: the bound one, or over a user's tabs the one the call
    /// names or the one in front that offers the tool (a retry: the tab its round came from).
    async fn call_target(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        state: Option<&str>,
    ) -> Result<Arc<PageSession>, String> {
        if !matches!(self.bound(Some(context))?.1, Some(Bound::User(_))) {
            return self.page_or_wait(Some(context)).await;
        }
        let pages = self.user_pages_or_wait(Some(context)).await;
        rounds::user_tab(&pages, &request.name, state, Some(&context.meta.0))
    }

    /// The tools the agent lists: its page's, or the union of its user's tabs'.
    async fn tools_or_wait(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Vec<Tool>, String> {
        match self.bound(Some(context))?.1 {
            Some(Bound::User(_)) => {
                let pages = self.user_pages_or_wait(Some(context)).await;
                Ok(Self::union_tools(&pages))
            }
            _ => Ok(Self::listed_tools(
                &*self.page_or_wait(Some(context)).await?,
            )),
        }
    }

    /// The tools listed now, without waiting (for `list_changed`).
    fn tools_now(&self) -> Option<Vec<Tool>> {
        if let Some(pages) = self.user_pages(None) {
            return Some(Self::union_tools(&pages));
        }
        self.page(None).map(|page| Self::listed_tools(&page))
    }

    /// Over a user's tabs: the union, each tool with the tabs offering it in its `_meta`.
    fn union_tools(pages: &[Arc<PageSession>]) -> Vec<Tool> {
        let titles = pages.first().cloned();
        user_tabs::union(pages)
            .iter()
            .filter_map(|listed| {
                let mut tool = to_mcp_tool(&listed.tool)?;
                if let (Some(page), true) = (&titles, is_handler(&listed.tool)) {
                    if let Some(file) = page.agent_tools().get(&listed.tool.name) {
                        tool.title = file.title.clone();
                    }
                }
                tool.meta = Some(MetaObject(user_tabs::listed_meta(listed)));
                Some(tool)
            })
            .collect()
    }
}

/// Waits for a page session change (on any node) or the deadline.
async fn wait_for_change(
    changes: &mut tokio::sync::watch::Receiver<u64>,
    deadline: tokio::time::Instant,
) {
    tokio::select! {
        changed = changes.changed() => {
            if changed.is_err() {
                tokio::time::sleep_until(deadline).await;
            }
        }
        () = tokio::time::sleep_until(deadline) => {}
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The scope the agent route's check put on the HTTP request that carried this MCP message.
fn request_scope(context: &RequestContext<RoleServer>) -> Option<AgentScope> {
    let parts = context.extensions.get::<http::request::Parts>()?;
    parts.extensions.get::<AgentScope>().cloned()
}

impl McpAgent {
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

/// The `Mcp-Session-Id` of the HTTP request that carried this MCP message, if any.
fn mcp_session_id(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<http::request::Parts>()?;
    let value = parts.headers.get("mcp-session-id")?;
    value.to_str().ok().map(str::to_owned)
}

/// `?session=<id>` or `?user=SUB` of the HTTP request that carried this MCP message.
fn requested_binding(context: &RequestContext<RoleServer>) -> Option<Bound> {
    let parts = context.extensions.get::<http::request::Parts>()?;
    http_request::binding_in(&parts.uri)
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
        // Declared as the page declares them (SPEC §11): the agent may initialize before any page
        // is there; a page that offers no prompts or resources lists none.
        let capabilities = ServerCapabilities::builder()
            .enable_completions()
            .enable_prompts()
            .enable_resources()
            .enable_tools()
            .enable_prompts_list_changed()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
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
        self.bound(Some(&context))
            .map_err(|why| McpError::invalid_request(why, None))?;
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        // Logging is a capability of the handshake revisions (2026-07-28 removed
        // `logging/setLevel`: log levels travel in each request's `_meta` there).
        result.capabilities.logging = Some(Default::default());
        Ok(result)
    }

    // Revision 2026-07-28: `server/discover` declares what `initialize` does (get_info); rmcp
    // fills in the caching hints (SEP-2549) of every list.

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let prompts = self.served_list(method::PROMPTS_LIST, &context).await?;
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let resources = self.served_list(method::RESOURCES_LIST, &context).await?;
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let templates = (self.served_list(method::RESOURCE_TEMPLATES_LIST, &context)).await?;
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let read = ServedRequest::read(&request.uri).map_err(served::to_mcp_error)?;
        let arguments = serde_json::json!({ "uri": request.uri });
        let state = request.request_state.as_deref();
        let served = self
            .serve::<ReadResourceResult>(read, arguments, state, request.input_responses, &context)
            .await?;
        Ok(match served {
            // Revision 2026-07-28 requires `resultType` (rmcp strips it for older peers).
            Served::Complete(mut result) => {
                result.result_type = Some(rmcp::model::ResultType::COMPLETE);
                result.into()
            }
            Served::InputRequired(round) => round.into(),
        })
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let arguments = served::prompt_arguments(&request.arguments);
        let get = ServedRequest::get_prompt(&request.name, request.arguments.clone());
        let state = request.request_state.as_deref();
        let served = self
            .serve::<GetPromptResult>(get, arguments, state, request.input_responses, &context)
            .await?;
        Ok(match served {
            Served::Complete(mut result) => {
                result.result_type = Some(rmcp::model::ResultType::COMPLETE);
                result.into()
            }
            Served::InputRequired(round) => round.into(),
        })
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let params = serde_json::to_value(&request)
            .ok()
            .and_then(|params| params.as_object().cloned())
            .unwrap_or_default();
        let complete = ServedRequest::complete(params).map_err(served::to_mcp_error)?;
        let arguments = Value::Object(complete.params().clone());
        match self
            .serve::<CompleteResult>(complete, arguments, None, None, &context)
            .await?
        {
            Served::Complete(mut result) => {
                result.result_type = Some(rmcp::model::ResultType::COMPLETE);
                Ok(result)
            }
            Served::InputRequired(_) => Err(McpError::internal_error(
                "completion/complete has no input_required",
                None,
            )),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribe_uri(&request.uri, &context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.unsubscribe_uri(&request.uri).await;
        Ok(())
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
        let tools = self
            .tools_or_wait(&context)
            .await
            .map_err(|message| McpError::invalid_params(message, None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    // rmcp asks this (to check a request's standard headers against the tool's schema) before the
    // request reaches the agent, of an agent no request has bound: it looks, without binding, at
    // what the HTTP request being handled reaches and asks for (http_request) — never at a page
    // of another user. Outside an HTTP request (stdio) an unbound agent knows no tool yet.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let tools = match self.tools_now() {
            Some(tools) => tools,
            None if lock(&self.scope).is_none() => {
                let seen = RequestSeen::current()?;
                self.tools_seen_by(&seen.scope, seen.binding)?
            }
            None => return None,
        };
        tools.into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let round_state = request
            .request_state
            .as_deref()
            .filter(|state| state.starts_with(&format!("{STATE_DOMAIN}.")));
        let page = match self.call_target(&request, &context, round_state).await {
            Ok(page) => page,
            Err(text) => return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into()),
        };
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
        // The agent's `_meta` is checked as on every route (crate::calls::prepared_call).
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
        let driven = rounds::drive(self.bridge.rounds(), running, &side, key, 0, supplied);
        self.answer_noting_task(driven.await)
    }

    // The tasks extension (crate::agent::tasks): a task belongs to the page session the agent is bound
    // to, and is read from any node of a cluster. rmcp refuses these to agents that did not
    // declare the extension (`-32021`).
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let op = TaskOp::Get {
            task_id: request.task_id,
        };
        let task = self.task_op(op, &context).await?;
        serde_json::from_value::<DetailedTask>(task)
            .map(GetTaskResult::new)
            .map_err(|error| McpError::internal_error(format!("task: {error}"), None))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let op = TaskOp::Update {
            task_id: request.task_id,
            input_responses: request.input_responses,
        };
        self.task_op(op, &context).await?;
        Ok(())
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let op = TaskOp::Cancel {
            task_id: request.task_id,
        };
        self.task_op(op, &context).await?;
        Ok(())
    }

    // Revision 2026-07-28 has no `initialize`: `list_changed` notifications and resource updates
    // travel on listen streams. A stream subscribes to at most MAX_SUBSCRIPTIONS_PER_AGENT
    // resources: the acknowledgment names those it accepted (the first ones asked), decided
    // before it is sent: not a URI the policy blocks, the allow-list leaves out, or whose page
    // offers no subscriptions (only the page's own refusal comes later: docs/api.md).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.subscription_filter(requested, None)
    }

    fn accepted_subscription_filter_in(
        &self,
        requested: &SubscriptionFilter,
        context: &RequestContext<RoleServer>,
    ) -> Option<SubscriptionFilter> {
        self.subscription_filter(requested, Some(context))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        // Bound by this request (2026-07-28 has an agent per request): its query and credential.
        self.bound(Some(context.request_context()))
            .map_err(|why| McpError::invalid_request(why, None))?;
        // Over a user's tabs any page's change may change the union; else the bound page's.
        let mut changes = match (self.user_pages(None), self.page(None)) {
            (Some(_), _) => self.bridge.watch_pages(),
            (None, Some(page)) => page.subscribe(),
            (None, None) => {
                context.cancelled().await;
                return Ok(());
            }
        };
        let accepted = context.accepted().clone();
        let wants = |on: Option<bool>| on.unwrap_or(false);
        let uris = accepted.resource_subscriptions.clone().unwrap_or_default();
        let subscribed = self
            .subscribe_stream(&uris, context.request_context())
            .await;
        let (updates_tx, mut updates) = tokio::sync::mpsc::channel::<String>(16);
        let forwarders: Vec<_> = (subscribed.iter())
            .map(|(page, uris)| {
                let (page, uris, tx) = (page.clone(), uris.clone(), updates_tx.clone());
                tokio::spawn(async move {
                    let mut heard = page.resource_updates();
                    loop {
                        match heard.recv().await {
                            Ok(uri) if uris.contains(&uri) => {
                                if tx.send(uri).await.is_err() {
                                    return;
                                }
                            }
                            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                            Err(_) => return,
                        }
                    }
                })
            })
            .collect();
        drop(updates_tx);
        let mut listed = self.tools_now();
        let mut served = self.served_lists_now();
        let outcome = loop {
            tokio::select! {
                _ = context.cancelled() => break Ok(()),
                Some(uri) = updates.recv() => {
                    if context.sink().notify_resource_updated(uri).await.is_err() {
                        break Ok(());
                    }
                }
                changed = changes.changed() => {
                    if changed.is_err() {
                        break Ok(());
                    }
                    let now = self.tools_now();
                    if now != listed {
                        listed = now;
                        let tools = wants(accepted.tools_list_changed);
                        if tools && context.sink().notify_tool_list_changed().await.is_err() {
                            break Ok(());
                        }
                    }
                    let now = self.served_lists_now();
                    let prompts = wants(accepted.prompts_list_changed) && now.0 != served.0;
                    if prompts && context.sink().notify_prompt_list_changed().await.is_err() {
                        break Ok(());
                    }
                    let resources = wants(accepted.resources_list_changed) && now.1 != served.1;
                    if resources && context.sink().notify_resource_list_changed().await.is_err() {
                        break Ok(());
                    }
                    served = now;
                }
            }
        };
        for forwarder in forwarders {
            forwarder.abort();
        }
        for (page, uris) in subscribed {
            for uri in uris {
                page.unsubscribe_resource(&uri).await;
            }
        }
        outcome
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

#[cfg(test)]
mod tests {
    use rmcp::model::ResultType;
    use serde_json::json;

    use super::call_side::{finish, level_rank};
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
