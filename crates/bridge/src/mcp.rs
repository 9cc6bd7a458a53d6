//! The bridge as an MCP server for agents (SPEC §9): each MCP session is bound to one page session
//! and offers that page's tools. The official Rust SDK (`rmcp`) does the protocol — Streamable HTTP
//! on `/mcp` (revisions 2025-11-25 with the handshake and 2026-07-28 without, negotiated per client)
//! and stdio; this module only maps it onto [`PageSession`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use client_tools_core::limits::HUMAN_WAIT_TICK_MS;
use client_tools_core::protocol::{self, ProgressParams};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitResult,
    Implementation, InitializeRequestParams, InitializeResult, InputRequests, InputRequiredResult,
    ListToolsResult, MetaObject, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::agent_confirmation::{self, Binding, Decision};
use crate::bridge::Bridge;
use crate::config::ConfirmVia;
use crate::page_session::PageSession;
use crate::prepared_call::PreparedCall;

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
}

impl McpAgent {
    /// An agent bound to `session` (or, when `None`, to the newest page when it first needs one).
    pub fn new(bridge: Bridge, session: Option<String>) -> Self {
        Self {
            bridge,
            bound: Arc::new(Mutex::new(session)),
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
            return match retried {
                true => Confirmation::Refused(protocol::CallToolResult::error(
                    "this call carries requestState or inputResponses, but the bridge asked for \
                     no input for it",
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
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        tokio::spawn(self.clone().announce_changes(context.peer.clone()));
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
        let cancelled = context.ct.clone();
        let cancel = async move {
            cancelled.cancelled().await;
            "cancelled by the agent".to_owned()
        };
        let (progress_tx, progress_rx) = mpsc::channel(self.bridge.config().limits.progress_buffer);
        let forwarder = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            tokio::spawn(forward_progress(peer, token, progress_rx, waited))
        });
        let result = page.call_prepared(call, cancel, Some(progress_tx)).await;
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        // A cancelled call has no result (rmcp drops the response of a cancelled request).
        let result = result.unwrap_or_else(|| protocol::CallToolResult::error("cancelled"));
        Ok(to_mcp_result(result).into())
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

/// Relays the page's progress on one call to the agent, under the agent's progress token.
/// `after`: the progress already sent while the person at the agent decided; the page's values
/// (and total) are reported above it, so the values the agent sees keep increasing.
async fn forward_progress(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    mut progress: mpsc::Receiver<ProgressParams>,
    after: f64,
) {
    while let Some(update) = progress.recv().await {
        let update = update.above(after);
        let mut param = ProgressNotificationParam::new(token.clone(), update.progress);
        if let Some(total) = update.total {
            param = param.with_total(total);
        }
        if let Some(message) = update.message {
            param = param.with_message(message);
        }
        if peer.notify_progress(param).await.is_err() {
            return;
        }
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
}
