//! One page session, as the runtime sees it: the page's tools, its connection (when it has one),
//! and the calls waiting for its answers.
//!
//! A session outlives its connections: a page that reloads or reconnects gets the same
//! [`PageSession`] back. The rules for waiting requests are the [`RequestEngine`]'s; this file is
//! its driver (it performs the engine's outputs on the connection's queue and the callers'
//! channels, and does the waiting), and adds the allow-list and one trace span per tool call.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use client_tools_core::call::outcome;
use client_tools_core::limits::{ANSWER_SLACK_MS, DEFAULT_TIMEOUT_MS};
use client_tools_core::protocol::{
    self, encode_error, encode_notification, encode_request, encode_result, method, CallToolResult,
    DecodeError, Message, ProgressParams, RequestId, RpcError, Tool,
};
use client_tools_core::registry::is_allowed;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot, watch, Notify};

use crate::agent_tools::AgentTools;
use crate::call_options::{CallEnd, CallOptions, ToolCall};
use crate::connection_queue::OutgoingSender;
use crate::limits::{Limits, MAX_OPEN_ROUNDS_PER_SESSION, MAX_REQUESTS_PER_ROUND};
use crate::policy::{self, Policy};
use crate::prepared_call::{self, PreparedCall, RequestedTimeout};
use crate::relay_routes::RelayRoutes;
use crate::request_engine::{Answer, Output, Purpose, Request, RequestEngine, Settled};
pub use crate::request_engine::{RequestFailure, RECONNECT_GRACE};

/// Close code sent to a connection replaced by its page's newer one (RFC 6455 private range).
pub(crate) const CLOSE_REPLACED: u16 = 4000;

/// Extra time the runtime waits beyond a call's timeout (the core's `limits::ANSWER_SLACK_MS`, the
/// page's grace for late handlers plus the network), so the page's own, more precise, outcome
/// normally arrives first.
const ANSWER_SLACK: Duration = Duration::from_millis(ANSWER_SLACK_MS);

/// The live connection of a session (its requests' side is in the engine).
struct Connection {
    generation: u64,
    /// The bounded queue of frames to the page (its socket's writer, or a cluster link).
    outgoing: OutgoingSender,
    /// Stops the connection's reader: the connection ends (see [`PageSession::close_connection`]).
    kill: Arc<Notify>,
    /// When the page's socket was accepted (on the node that holds it, in a cluster).
    attached_at: SystemTime,
    via: Via,
}

/// Why a frame relayed from another cluster node did not go to the page.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RelayRefused {
    /// The page's socket is not on this node (any more).
    NotHere,
    /// The page's limits or queue refuse it (the reason).
    Refused(String),
    /// The operator's policy answers it instead of the page (a `limit` rule: crate::policy).
    Answered(CallToolResult),
}

/// Where the page's answers and progress on requests relayed to it through this bridge go back
/// (in a cluster: to the node that relayed them, which implements this). The session knows such a
/// request only by the opaque route its relayer gave ([`PageSession::relay_to_page`]).
pub(crate) trait RelayReplies: Send + Sync {
    /// Sends the page's `frame` back along `route`: its answer to relayed request `request`, or
    /// (`None`) a progress report.
    fn send_back(&self, route: String, request: Option<String>, frame: String);
}

/// What carries a session's frames to its page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Via {
    /// The page's WebSocket, on this bridge.
    Socket,
    /// Another node of the cluster, which holds the page's socket (crate::cluster).
    Node(String),
}

struct State {
    connection: Option<Connection>,
    engine: RequestEngine,
    /// The page's own `tools/list` (shared: a call copies the `Arc` out of the lock).
    tools: Arc<[Tool]>,
    generations: u64,
    /// The page has answered `tools/list` at least once (its handshake is done).
    tools_listed: bool,
    /// Requests other cluster nodes relayed to this session's page: where its answers go.
    routes: RelayRoutes,
    /// The callers waiting on the engine's requests, by request id.
    waiters: HashMap<String, Waiter>,
    /// The page's rounds (`clienttools/input`) not answered yet: the page's request id (its JSON)
    /// → the bridge's call id. Forgotten when answered or when the call ends.
    rounds: HashMap<String, String>,
    /// When the session's timer ([`run_timer`]) will wake next; `None`: it sleeps until told.
    armed: Option<Instant>,
    /// The timer task runs (it starts with the session's first request).
    timer_started: bool,
}

/// A caller waiting on a request: where its outcome and the page's progress go.
struct Waiter {
    settle: oneshot::Sender<Settled>,
    /// Dropped reports when it is full (progress is a hint: the next one supersedes it).
    observer: Option<mpsc::Sender<ProgressParams>>,
    /// The page's log messages and rounds for this call (a full channel drops a log message and
    /// refuses a round); `None`: rounds are refused as a capability the caller lacks.
    events: Option<mpsc::Sender<CallEvent>>,
    /// The `redact` rules the policy decided for this call (crate::policy::gate::running): every
    /// log message, progress message and round passes them before it reaches `observer` or
    /// `events`, on every route.
    redact: Option<Arc<policy::gate::EventRedaction>>,
}

/// Where a call's log messages and rounds go, and the `redact` rules they pass first.
type Events = (
    Option<mpsc::Sender<CallEvent>>,
    Option<Arc<policy::gate::EventRedaction>>,
);

/// A request nobody hears log messages or rounds of.
const NO_EVENTS: Events = (None, None);

/// What a page sends about one of its calls while it runs, besides progress (SPEC §4, §6): tied
/// to the call by `_meta["clienttools/callId"]`, the id of the bridge's `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub enum CallEvent {
    /// `notifications/message`: its params, `clienttools/callId` removed from their `_meta`.
    Log(Map<String, Value>),
    /// `clienttools/input`: a round of requests to the agent. Answer it once with
    /// [`PageSession::answer_round`].
    Input(InputRound),
}

/// One round of the page's requests to the agent (`clienttools/input`), already checked: each
/// entry of `requests` is `{method, params}` with a method among `elicitation/create`,
/// `sampling/createMessage` and `roots/list`, and `params` an object without the page's
/// `clienttools/` `_meta` keys.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRound {
    /// The page's request id (answer with it).
    pub id: RequestId,
    /// `inputRequests`: key (chosen by the page) → `{method, params}`.
    pub requests: Map<String, Value>,
    /// The page asks this round before its call becomes an MCP task (`_meta`
    /// `clienttools/beforeTask: true` on one of its requests): the agent answers it on its
    /// `tools/call` (crate::input_rounds), and the task starts after.
    pub before_task: bool,
}

/// A call's end as the page decided it: its result, or the JSON-RPC error the agent must get as
/// one (`-32021` with `requiredCapabilities`).
pub type CallOutcome = Result<CallToolResult, RpcError>;

/// Whether the page's error on a call is `-32021` (a capability the agent did not declare).
fn is_missing_capability(error: &RpcError) -> bool {
    error.code == protocol::code::MISSING_CAPABILITY
}

/// The text of an error result standing for the page's JSON-RPC error on a call (for callers
/// that take results only: `/api`, the Rust API).
pub fn describe_page_error(error: &RpcError) -> String {
    if is_missing_capability(error) {
        let required = error
            .data
            .as_ref()
            .and_then(|data| data.get("requiredCapabilities"))
            .map(Value::to_string)
            .unwrap_or_else(|| "{}".to_owned());
        return format!(
            "the tool needs a capability this caller does not offer ({required}): {}",
            error.message
        );
    }
    format!("the page refused the call: {}", error.message)
}

/// The MCP client capabilities the requests of a round need (`requiredCapabilities` of a
/// `-32021`): `{"elicitation": {"form"|"url": {}}, "sampling": {}, "roots": {}}` as they apply.
pub fn required_capabilities(requests: &Map<String, Value>) -> Value {
    let mut required = Map::new();
    for request in requests.values() {
        match request.get("method").and_then(Value::as_str) {
            Some(method::ELICITATION_CREATE) => {
                let mode = request
                    .pointer("/params/mode")
                    .and_then(Value::as_str)
                    .filter(|mode| *mode == "url")
                    .unwrap_or("form");
                let entry = required
                    .entry("elicitation")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(entry) = entry.as_object_mut() {
                    entry.insert(mode.to_owned(), Value::Object(Map::new()));
                }
            }
            Some(method::SAMPLING_CREATE_MESSAGE) => {
                required.insert("sampling".into(), Value::Object(Map::new()));
            }
            Some(method::ROOTS_LIST) => {
                required.insert("roots".into(), Value::Object(Map::new()));
            }
            _ => {}
        }
    }
    Value::Object(required)
}

/// The `-32021` error answering a round whose `requests` need what the caller lacks.
pub fn missing_capability_error(requests: &Map<String, Value>) -> RpcError {
    let required = required_capabilities(requests);
    let mut error = RpcError::new(
        protocol::code::MISSING_CAPABILITY,
        format!("the agent did not declare the capabilities these requests need: {required}"),
    );
    error.data = Some(serde_json::json!({ "requiredCapabilities": required }));
    error
}

impl State {
    /// Performs what the engine decided: frames onto the connection's queue (a request's frame the
    /// queue refuses fails that request), outcomes and progress to the waiting callers.
    fn perform(&mut self) {
        while let Some(output) = self.engine.poll_output() {
            match output {
                Output::Send { frame, request } => {
                    let Some(connection) = &self.connection else {
                        continue; // the engine sends only while connected
                    };
                    let Err(full) = connection.outgoing.try_send(frame) else {
                        continue;
                    };
                    match request {
                        Some(id) => self.engine.unsent(&id, full.to_string()),
                        None => tracing::warn!(%full, "notification to the page dropped"),
                    }
                }
                Output::Settle { id, outcome } => {
                    if !self.rounds.is_empty() {
                        self.rounds.retain(|_, call| *call != id);
                    }
                    if let Some(waiter) = self.waiters.remove(&id) {
                        let _ = waiter.settle.send(outcome);
                    }
                }
                Output::Progress { id, report } => {
                    let observer = self.waiters.get(&id).and_then(|w| w.observer.as_ref());
                    if let Some(observer) = observer {
                        let _ = observer.try_send(report);
                    }
                }
            }
        }
    }

    /// Runs `step` on the engine and performs what it decided.
    fn drive<R>(&mut self, step: impl FnOnce(&mut RequestEngine) -> R) -> R {
        let result = step(&mut self.engine);
        self.perform();
        result
    }
}

pub struct PageSession {
    id: String,
    /// Shared with the session's timer task, which holds it weakly (it ends with the session).
    state: Arc<Mutex<State>>,
    /// Wakes the timer task: an earlier deadline than the one it sleeps until, or the session's end.
    timer: Arc<Notify>,
    /// Request ids are `<instance>-<n>`: unique across bridge restarts, so a page never mistakes a
    /// new call for one it already answered.
    instance: String,
    next_request: AtomicU64,
    progress_seen: AtomicU64,
    /// Bumped whenever the tool list or the connection changes (for waiters and MCP agents).
    changes: watch::Sender<u64>,
    allow: Vec<String>,
    /// The tools of `--tools FILE`, listed with the page's and described in their calls' `_meta`.
    agent_tools: Arc<AgentTools>,
    /// A call's timeout when nobody asks for another (the bridge's `--timeout-ms`).
    default_timeout: Duration,
    /// Tool arguments and results go to the trace (`debug`) only when the operator asked.
    log_payloads: bool,
    /// In a cluster: where the answers to relayed requests are sent.
    relay_replies: Option<Arc<dyn RelayReplies>>,
    /// The operator's guardrails (`--policy FILE`, crate::policy), applied at this session's
    /// choke points: [`Self::prepare`], [`Self::call_tool`], [`Self::relay_to_page`].
    policy: Arc<Policy>,
}

/// A session's public summary (`GET /api/sessions`).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub id: String,
    pub connected: bool,
    pub connected_at_ms: Option<u128>,
    pub tools: Vec<Tool>,
    /// In a cluster: the node holding the page's socket (its id), while it is connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

impl PageSession {
    pub(crate) fn new(id: String, allow: Vec<String>, limits: Limits, log_payloads: bool) -> Self {
        Self {
            id,
            state: Arc::new(Mutex::new(State {
                connection: None,
                engine: RequestEngine::new(limits.max_pending_per_session, now()),
                tools: Arc::from(Vec::new()),
                generations: 0,
                tools_listed: false,
                routes: RelayRoutes::new(limits.max_pending_per_session * RelayRoutes::PER_PENDING),
                waiters: HashMap::new(),
                rounds: HashMap::new(),
                armed: None,
                timer_started: false,
            })),
            timer: Arc::new(Notify::new()),
            instance: instance_id(),
            next_request: AtomicU64::new(1),
            progress_seen: AtomicU64::new(0),
            changes: watch::channel(0).0,
            allow,
            agent_tools: Arc::default(),
            default_timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            log_payloads,
            relay_replies: None,
            policy: Arc::default(),
        }
    }

    /// The operator's policy for this session's calls.
    pub(crate) fn with_policy(mut self, policy: Arc<Policy>) -> Self {
        self.policy = policy;
        self
    }

    /// In a cluster: relayed requests are answered through `relay_replies`.
    pub(crate) fn with_relay_replies(
        mut self,
        relay_replies: Option<Arc<dyn RelayReplies>>,
    ) -> Self {
        self.relay_replies = relay_replies;
        self
    }

    /// The bridge's `--tools FILE` tools and default timeout for this session's calls.
    pub(crate) fn with_agent_tools(
        mut self,
        agent_tools: Arc<AgentTools>,
        default_timeout: Duration,
    ) -> Self {
        self.agent_tools = agent_tools;
        self.default_timeout = default_timeout;
        self
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether a page has ever connected to this session.
    pub fn has_connected(&self) -> bool {
        self.lock().engine.has_connected()
    }

    /// Whether the page finished its handshake once (connected *and* listed its tools).
    pub fn has_listed_tools(&self) -> bool {
        self.lock().tools_listed
    }

    pub fn is_connected(&self) -> bool {
        self.lock().connection.is_some()
    }

    /// When the live connection started; `None` while disconnected.
    pub fn connected_at(&self) -> Option<SystemTime> {
        self.lock().connection.as_ref().map(|c| c.attached_at)
    }

    /// How long the session has had no connection (since its creation if it never had one);
    /// `None` while connected. For expiry and for choosing which session to forget first.
    pub fn disconnected_for(&self, now: Instant) -> Option<Duration> {
        self.lock().engine.disconnected_for(now)
    }

    /// The tools an agent may see: the page's, merged with the bridge's `--tools FILE` tools
    /// (crate::agent_tools), the bridge allow-list applied.
    pub fn tools(&self) -> Vec<Tool> {
        let page_tools = self.lock().tools.clone();
        visible_tools(&self.allow, &self.agent_tools, &page_tools)
    }

    /// The page's own `tools/list`, as it answered it (what a cluster node publishes).
    pub(crate) fn page_tools(&self) -> Arc<[Tool]> {
        self.lock().tools.clone()
    }

    /// The `--tools FILE` tools of the bridge (for their titles in MCP listings).
    pub fn agent_tools(&self) -> &AgentTools {
        &self.agent_tools
    }

    /// Checks a call and decides what it carries (crate::prepared_call): which tool `name` means (a
    /// listed or an original name: the call goes under the listed one), the allow-list (by original
    /// name), the caller's `_meta` (`clienttools/confirmedBy` is refused), a `--tools` tool's
    /// schemas, policy and input, the timeout (`requested`: `/api`'s `timeoutMs` — else the
    /// `_meta`'s, the tool's or the bridge's), whether it needs confirmation. A refused call is the
    /// error result to answer with.
    pub fn prepare_call(
        &self,
        name: &str,
        arguments: Value,
        caller_meta: Option<&Map<String, Value>>,
        requested: Option<Duration>,
    ) -> Result<PreparedCall, CallToolResult> {
        let requested = requested.map(|timeout| RequestedTimeout {
            timeout,
            field: "timeoutMs",
        });
        self.prepare(name, arguments, caller_meta, requested)
    }

    fn prepare(
        &self,
        name: &str,
        arguments: Value,
        caller_meta: Option<&Map<String, Value>>,
        requested: Option<RequestedTimeout>,
    ) -> Result<PreparedCall, CallToolResult> {
        // Only the `Arc` is copied under the lock: schemas compile and arguments are checked
        // without holding it.
        let page_tools = self.lock().tools.clone();
        let context = prepared_call::Context {
            session: &self.id,
            allow: &self.allow,
            default_timeout: self.default_timeout,
            agent_tools: &self.agent_tools,
            page_tools: &page_tools,
        };
        let prepared = prepared_call::prepare(&context, name, arguments, caller_meta, requested)
            .and_then(|call| {
                policy::gate::prepared(
                    &self.policy,
                    call,
                    || self.next_request_id(),
                    self.log_payloads,
                )
            });
        prepared.inspect_err(|result| {
            tracing::info_span!("tool_call", session = %self.id, tool = ?name, outcome = "refused")
                .in_scope(|| tracing::info!(reason = %result.text(), "tool call refused"));
        })
    }

    pub fn info(&self) -> SessionInfo {
        let connected_at = self.connected_at();
        let connected_at_ms = connected_at.and_then(|t| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_millis())
        });
        SessionInfo {
            id: self.id.clone(),
            connected: connected_at.is_some(),
            connected_at_ms,
            tools: self.tools(),
            node: None,
        }
    }

    /// A receiver that changes whenever the tools or the connection change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Calls a tool of the page: the one way to call, for an embedding runtime and every route.
    /// A [`ToolCall::Named`] is checked first as [`Self::prepare_call`] checks it (with the
    /// options' timeout and `_meta`); a [`ToolCall::Prepared`] was checked then, and is checked
    /// again here: prepared by this session, its tool allowed now. Always ends: page errors,
    /// absence and silence are error results ([`CallEnd`]).
    pub async fn call_tool(
        &self,
        call: impl Into<ToolCall>,
        mut options: CallOptions<'_>,
    ) -> CallEnd {
        let call = match call.into() {
            ToolCall::Named { name, arguments } => {
                let requested = options.timeout.map(|timeout| RequestedTimeout {
                    timeout,
                    field: "timeout",
                });
                match self.prepare(&name, arguments, options.meta.as_ref(), requested) {
                    Ok(call) => call,
                    Err(refused) => return CallEnd::Result(refused),
                }
            }
            ToolCall::Prepared(call) => {
                if options.timeout.is_some() || options.meta.is_some() {
                    return CallEnd::Result(CallToolResult::error(
                        "a prepared call's timeout and _meta were decided by prepare_call: \
                         leave them unset in the options of call_tool",
                    ));
                }
                call
            }
        };
        let cancel = options.take_cancel();
        let (progress, events) = (options.progress, options.events);
        if let Err(refused) = self.may_run(&call) {
            tracing::info_span!("tool_call", session = %self.id, tool = ?call.name(), outcome = "refused")
                .in_scope(|| tracing::info!(reason = %refused.text(), "tool call refused"));
            return CallEnd::Result(refused);
        }
        let id = self.next_request_id();
        let linked = matches!(self.via(), Some(Via::Node(_)));
        let policed =
            policy::gate::running(&self.policy, &call, &id, linked, now(), self.log_payloads);
        let policed = match policed {
            Ok(policed) => policed,
            Err(refused) => return CallEnd::Result(refused),
        };
        let started = tokio::time::Instant::now();
        let name = call.name().to_owned();
        let redact = policed
            .as_ref()
            .and_then(policy::gate::Running::event_redaction);
        let (mut result, outcome) = self
            .run_tool_call(&id, call, cancel, progress, (events, redact))
            .await;
        match (&policed, &mut result) {
            (Some(policed), CallEnd::Result(result)) => policy::gate::answered(
                &self.policy,
                policed,
                &self.id,
                &id,
                result,
                self.log_payloads,
            ),
            (Some(policed), CallEnd::PageError(error)) => policy::gate::failed(policed, error),
            _ => {}
        }
        // The call's span is made once it is over, with every field known: nothing is recorded
        // into it afterwards, and the call's future is not entered and left at every poll (made
        // up front, recorded into and instrumenting the future, it cost 4.5 % of the CPU per call).
        let span = tracing::info_span!(
            "tool_call",
            session = %self.id,
            tool = ?name,
            call = %id,
            outcome,
            duration_ms = started.elapsed().as_millis() as u64,
        );
        span.in_scope(|| {
            if let (CallEnd::Result(result), true) = (&result, self.log_payloads) {
                let result = serde_json::to_string(result).unwrap_or_default();
                tracing::debug!(%result, "tool call result");
            }
            tracing::info!("tool call finished");
        });
        result
    }

    /// A tool call: how it ended, and its trace outcome.
    async fn run_tool_call(
        &self,
        id: &str,
        call: PreparedCall,
        cancel: impl Future<Output = String>,
        progress: Option<mpsc::Sender<ProgressParams>>,
        events: Events,
    ) -> (CallEnd, &'static str) {
        let (name, arguments, meta, timeout) = call.into_parts();
        let name = name.as_str();
        if self.log_payloads {
            // In a span like the call's (whose own span is made when it ends).
            tracing::info_span!("tool_call", session = %self.id, tool = ?name, call = %id)
                .in_scope(|| tracing::debug!(%arguments, "tool call arguments"));
        }
        let frame =
            protocol::encode_tool_call(id, name, &arguments, timeout.as_millis() as u64, &meta);
        let request = Request {
            id: id.to_owned(),
            frame,
            timeout: timeout + ANSWER_SLACK,
            purpose: Purpose::ToolCall,
        };
        let settled = self.send_and_wait(request, progress, events, cancel).await;
        match settled {
            Ok(Ok(result)) => match serde_json::from_str::<CallToolResult>(result.get()) {
                Ok(result) => {
                    let outcome = if result.is_error { "error" } else { "ok" };
                    (CallEnd::Result(result), outcome)
                }
                Err(error) => (
                    CallEnd::Result(CallToolResult::error(format!(
                        "the page sent a malformed tools/call result: {error}"
                    ))),
                    "error",
                ),
            },
            Ok(Err(error)) if is_missing_capability(&error) => {
                (CallEnd::PageError(error), "missing_capability")
            }
            Ok(Err(error)) => (
                CallEnd::Result(CallToolResult::error(format!(
                    "the page refused the call: {}",
                    error.message
                ))),
                "error",
            ),
            Err(RequestFailure::Cancelled) => (CallEnd::Cancelled, "cancelled"),
            Err(failure) => (
                CallEnd::Result(CallToolResult::error(failure.describe(&self.id, timeout))),
                failure.outcome(),
            ),
        }
    }

    /// The checks of [`Self::prepare_call`] that [`Self::call_tool`] makes again on a prepared call: the call was
    /// prepared by this session, and the allow-list allows its tool as the page lists it now.
    fn may_run(&self, call: &PreparedCall) -> Result<(), CallToolResult> {
        if call.session() != self.id {
            return Err(CallToolResult::error(format!(
                "this call was prepared for page session '{}', not '{}': prepare it on the \
                 session that runs it",
                call.session(),
                self.id
            )));
        }
        let page_tools = self.lock().tools.clone();
        let original = prepared_call::listed_original(call.name(), &self.agent_tools, &page_tools);
        if !is_allowed(&self.allow, &original) {
            return Err(outcome::not_allowed(call.name()));
        }
        Ok(())
    }

    /// A request of the bridge's own (`initialize`, `tools/list`) and the page's answer.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Answer, RequestFailure> {
        let id = self.next_request_id();
        let request = new_request(id, method, params, timeout, Purpose::Housekeeping);
        self.send_and_wait(request, None, NO_EVENTS, std::future::pending::<String>())
            .await
    }

    /// Whether the current connection answers a `ping` within `within`. No reconnect grace: a
    /// connection that drops meanwhile, or none at all, is a no; silence here does not make
    /// calls fail fast.
    pub(crate) async fn is_answering(&self, within: Duration) -> bool {
        let id = self.next_request_id();
        let request = new_request(
            id,
            method::PING,
            serde_json::json!({}),
            within,
            Purpose::Probe,
        );
        // Any answer, even an error, shows the page is there.
        self.send_and_wait(request, None, NO_EVENTS, std::future::pending::<String>())
            .await
            .is_ok()
    }

    fn next_request_id(&self) -> String {
        let n = self.next_request.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", self.instance)
    }

    /// Hands the request to the engine and waits for its outcome: the answer, a failure the engine
    /// decides when woken at its deadline, or `cancel` (the page is told; no answer then). The
    /// page's progress on it goes to `observer`.
    async fn send_and_wait(
        &self,
        request: Request,
        observer: Option<mpsc::Sender<ProgressParams>>,
        (events, redact): Events,
        cancel: impl Future<Output = String>,
    ) -> Settled {
        let id = request.id.clone();
        let (settle, mut settled) = oneshot::channel();
        let begun = {
            let mut state = self.lock();
            let begun = state.engine.begin(request, now());
            if begun.is_ok() {
                let waiter = Waiter {
                    settle,
                    observer,
                    events,
                    redact,
                };
                state.waiters.insert(id.clone(), waiter);
                state.perform();
                let wake = state.engine.wake_at(&id);
                self.arm(&mut state, wake);
            }
            begun
        };
        if let Err(failure) = begun {
            if failure == RequestFailure::Unresponsive {
                self.ping_page();
            }
            return Err(failure);
        }
        let _stop_if_dropped = CancelOnDrop {
            session: self,
            id: &id,
        };
        // The engine settles the request, at its deadline too (the session's timer wakes it).
        tokio::select! {
            biased;
            received = &mut settled => outcome_of(received),
            reason = cancel => {
                if self.cancel_request(&id, &reason) {
                    return Err(RequestFailure::Cancelled);
                }
                outcome_of(settled.await) // the outcome came first: it stands
            }
        }
    }

    /// The engine may want the time at `at` (a request begun, a disconnect's grace): wakes the
    /// session's timer when it sleeps until later (or starts it, with the first request). One timer
    /// per session, whatever the number of waiting requests (STYLE 13: one `poll_timeout`).
    fn arm(&self, state: &mut State, at: Option<Instant>) {
        let Some(at) = at else { return };
        if state.armed.is_some_and(|armed| armed <= at) {
            return;
        }
        state.armed = Some(at);
        if state.timer_started {
            self.timer.notify_one();
        } else {
            state.timer_started = true;
            tokio::spawn(run_timer(
                Arc::downgrade(&self.state),
                Arc::clone(&self.timer),
            ));
        }
    }

    /// The caller gave up on request `id` (the engine tells the page); `false` when it had settled.
    fn cancel_request(&self, id: &str, reason: &str) -> bool {
        let mut state = self.lock();
        state.waiters.remove(id);
        state.drive(|engine| engine.cancel(id, reason))
    }

    /// Fail-fast mode: ask the page whether it answers again, without making anyone wait (any
    /// answer ends fail-fast).
    fn ping_page(&self) {
        let id = RequestId::String(format!("{}-ping", self.instance));
        let frame = encode_request(&id, method::PING, &serde_json::json!({}));
        self.lock().drive(|engine| engine.notify(frame));
    }

    /// The page reported progress on a request: the runtime waits longer (up to the hard bound).
    pub(crate) fn progress(&self, mut progress: ProgressParams) {
        self.progress_seen.fetch_add(1, Ordering::Relaxed);
        if let Some(redact) = progress
            .progress_token
            .as_str()
            .and_then(|call| self.redaction_of(call))
        {
            redact.progress(&mut progress);
        }
        let mut state = self.lock();
        let Some(progress) = state.drive(|engine| engine.progress(progress, now())) else {
            return;
        };
        let token = progress.progress_token.as_str().unwrap_or_default();
        let Some(route) = state.routes.get(token) else {
            return;
        };
        drop(state);
        if let Some(replies) = &self.relay_replies {
            let frame = encode_notification(method::PROGRESS, &progress);
            replies.send_back(route, None, frame);
        }
    }

    /// The page's `clienttools/input` request `id` (a round of requests to the agent for one of
    /// its calls, SPEC §4 "Asking mid-call"): handed to the caller waiting on that call, who
    /// answers it with [`Self::answer_round`]. `Some(error)`: the page is to be answered with it
    /// now (malformed, a call nobody waits on, a bound, or — the caller takes no rounds — the
    /// capabilities it lacks).
    pub(crate) fn page_input(&self, id: RequestId, params: Value) -> Option<RpcError> {
        let (call, mut requests, before_task) = match read_round(params) {
            Ok(round) => round,
            Err(why) => return Some(RpcError::new(protocol::code::INVALID_PARAMS, why)),
        };
        if let Some(redact) = self.redaction_of(&call) {
            redact.round(&mut requests);
        }
        let key = round_key(&id);
        let mut state = self.lock();
        let Some(waiter) = state.waiters.get(&call) else {
            return Some(RpcError::new(
                protocol::code::INVALID_PARAMS,
                format!(
                    "no call '{}' of this bridge is waiting for the page (it ended, or was never \
                     made here)",
                    short_id(&call)
                ),
            ));
        };
        let Some(events) = waiter.events.clone() else {
            return Some(missing_capability_error(&requests));
        };
        if state.rounds.contains_key(&key) {
            return Some(RpcError::new(
                protocol::code::INVALID_REQUEST,
                "a round with this request id is already waiting",
            ));
        }
        if state.rounds.values().any(|open| *open == call) {
            return Some(RpcError::new(
                protocol::code::INVALID_REQUEST,
                "this call already has a round waiting for the agent: one round at a time",
            ));
        }
        if state.rounds.len() >= MAX_OPEN_ROUNDS_PER_SESSION {
            return Some(RpcError::new(
                protocol::code::INVALID_REQUEST,
                format!(
                    "too many rounds waiting for agents in this page session (limit \
                     {MAX_OPEN_ROUNDS_PER_SESSION})"
                ),
            ));
        }
        let round = InputRound {
            id: id.clone(),
            requests,
            before_task,
        };
        if events.try_send(CallEvent::Input(round)).is_err() {
            return Some(RpcError::new(
                protocol::code::INTERNAL_ERROR,
                "the agent's side of this call is not taking requests (it is busy or gone)",
            ));
        }
        state.rounds.insert(key, call);
        None
    }

    /// Answers the page's round `id` (its `{inputResponses}`, or a JSON-RPC error for the whole
    /// round), once: `false` when it is not waiting (answered, or its call ended).
    pub fn answer_round(&self, id: &RequestId, answer: Result<Value, RpcError>) -> bool {
        let mut state = self.lock();
        if state.rounds.remove(&round_key(id)).is_none() {
            return false;
        }
        let frame = match answer {
            Ok(result) => encode_result(id, &result),
            Err(error) => encode_error(Some(id), &error),
        };
        if let Err(limit) = protocol::check_outgoing(&frame) {
            let error = RpcError::new(
                protocol::code::INTERNAL_ERROR,
                format!("the agent's answers cannot be sent to the page: {limit}"),
            );
            let frame = encode_error(Some(id), &error);
            state.drive(|engine| engine.notify(frame));
            return true;
        }
        state.drive(|engine| engine.notify(frame));
        true
    }

    /// A frame the page sent about a call another cluster node relayed to it (a round, a log
    /// message: `frame`, with `params`) goes back to that node, whose caller waits on the call
    /// and answers the round (its answer comes back to the page through here like any frame of
    /// that node). `false` when the call is not one relayed here (then it is this node's, or
    /// nobody's).
    pub(crate) fn relay_call_event(&self, params: &Value, frame: &str) -> bool {
        let call = params
            .get("_meta")
            .and_then(|meta| meta.get(protocol::meta::CALL_ID))
            .and_then(Value::as_str);
        let Some(call) = call else {
            return false;
        };
        let route = {
            let state = self.lock();
            if state.waiters.contains_key(call) {
                return false;
            }
            state.routes.get(call)
        };
        match (route, &self.relay_replies) {
            (Some(route), Some(replies)) => {
                replies.send_back(route, None, frame.to_owned());
                true
            }
            _ => false,
        }
    }

    /// Answers a request the page sent (a round relayed from the node holding its socket) with
    /// `error`, through this session's connection.
    pub(crate) fn refuse_page_request(&self, id: &RequestId, error: &RpcError) {
        let frame = encode_error(Some(id), error);
        self.lock().drive(|engine| engine.notify(frame));
    }

    /// The page's `notifications/message` about one of its calls: to the caller waiting on it,
    /// if it takes them (dropped otherwise, or when its buffer is full).
    pub(crate) fn page_log(&self, params: Value) {
        let Value::Object(mut params) = params else {
            return;
        };
        let Some(call) = take_call_id(&mut params) else {
            return;
        };
        if !params.get("level").is_some_and(Value::is_string) || !params.contains_key("data") {
            return;
        }
        if let Some(redact) = self.redaction_of(&call) {
            redact.log(&mut params);
        }
        let state = self.lock();
        let events = state.waiters.get(&call).and_then(|w| w.events.as_ref());
        if let Some(events) = events {
            let _ = events.try_send(CallEvent::Log(params));
        }
    }

    /// The `redact` rules of the call waiting on request `id`, if the policy decided any: what the
    /// page sends about the call passes them before it is handed to the caller (applied outside
    /// the session's lock).
    fn redaction_of(&self, id: &str) -> Option<Arc<policy::gate::EventRedaction>> {
        if self.policy.is_empty() {
            return None;
        }
        self.lock().waiters.get(id)?.redact.clone()
    }

    /// Sends a notification to the page if it is connected (dropped if it is not reading).
    pub(crate) fn notify_page(&self, method: &str, params: &impl serde::Serialize) {
        let frame = encode_notification(method, params);
        self.lock().drive(|engine| engine.notify(frame));
    }

    /// A page connection starts: returns its generation (to tell stale connections apart). Calls
    /// still waiting from before are sent again on it, and fail-fast ends.
    pub(crate) fn attach(&self, outgoing: OutgoingSender, kill: Arc<Notify>) -> u64 {
        self.attach_via(outgoing, kill, Via::Socket, SystemTime::now())
    }

    /// [`Self::attach`] of a connection carried by `via`, whose page connected at `attached_at`.
    pub(crate) fn attach_via(
        &self,
        outgoing: OutgoingSender,
        kill: Arc<Notify>,
        via: Via,
        attached_at: SystemTime,
    ) -> u64 {
        let mut state = self.lock();
        let generation = Self::attach_locked(&mut state, outgoing, kill, via, attached_at);
        drop(state);
        self.changes.send_modify(|n| *n += 1);
        generation
    }

    /// Attaches under the caller's lock; the caller tells the watchers once it is released.
    fn attach_locked(
        state: &mut State,
        outgoing: OutgoingSender,
        kill: Arc<Notify>,
        via: Via,
        attached_at: SystemTime,
    ) -> u64 {
        state.routes.clear();
        // Never a silent swap: a connection still attached (two claims that raced) is told it was
        // replaced and stops, so no two live connections share one session.
        if let Some(previous) = state.connection.take() {
            previous.outgoing.close(
                CLOSE_REPLACED,
                "replaced by a newer connection of the same page session".to_owned(),
            );
            previous.kill.notify_one();
        }
        state.generations += 1;
        let generation = state.generations;
        state.connection = Some(Connection {
            generation,
            outgoing,
            kill,
            attached_at,
            via,
        });
        state.drive(RequestEngine::connected);
        generation
    }

    /// [`Self::attach_via`] for a link to another cluster node (crate::cluster): never in place of
    /// this node's own socket to the page (`None` then).
    pub(crate) fn attach_link(
        &self,
        outgoing: OutgoingSender,
        kill: Arc<Notify>,
        node: String,
        attached_at: SystemTime,
    ) -> Option<u64> {
        // Checked and attached under one lock: a socket attaching meanwhile wins.
        let mut state = self.lock();
        if state.connection.as_ref().map(|c| &c.via) == Some(&Via::Socket) {
            return None;
        }
        let generation =
            Self::attach_locked(&mut state, outgoing, kill, Via::Node(node), attached_at);
        drop(state);
        self.changes.send_modify(|n| *n += 1);
        Some(generation)
    }

    /// Closes the connection of `generation` (not a newer one) as [`Self::close_connection`] does.
    pub(crate) fn close_generation(&self, generation: u64, code: u16, reason: &str) {
        let state = self.lock();
        if let Some(connection) = state
            .connection
            .as_ref()
            .filter(|c| c.generation == generation)
        {
            connection.outgoing.close(code, reason.to_owned());
            connection.kill.notify_one();
        }
    }

    /// Ends a link to another cluster node (its forwarding stops), as when the session is
    /// forgotten here; a socket is left alone.
    pub(crate) fn drop_link(&self) {
        let state = self.lock();
        if let Some(connection) = state
            .connection
            .as_ref()
            .filter(|c| matches!(c.via, Via::Node(_)))
        {
            connection.kill.notify_one();
        }
    }

    /// Request `id` never reached the page (no cluster node holds its socket): it ends now,
    /// "not connected".
    pub(crate) fn not_delivered(&self, id: &str) {
        self.lock()
            .drive(|engine| engine.fail(id, RequestFailure::NotConnected));
    }

    /// The connection of `generation` ended: waiting calls get [`RECONNECT_GRACE`] to see it back.
    pub(crate) fn detach(&self, generation: u64) {
        let mut state = self.lock();
        if state.connection.as_ref().map(|c| c.generation) != Some(generation) {
            return; // a newer connection has taken over already
        }
        state.connection = None;
        state.routes.clear();
        state.drive(|engine| engine.disconnected(now()));
        let wake = state.engine.poll_timeout();
        self.arm(&mut state, wake);
        drop(state);
        self.changes.send_modify(|n| *n += 1);
    }

    /// Ends the current connection: its writer sends a WebSocket close frame (`code`, `reason`)
    /// after what is already queued, and its reader stops at once, so a page that does not answer
    /// the close (a frozen tab being replaced) does not hold the connection.
    pub(crate) fn close_connection(&self, code: u16, reason: &str) {
        let state = self.lock();
        if let Some(connection) = &state.connection {
            connection.outgoing.close(code, reason.to_owned());
            connection.kill.notify_one();
        }
    }

    /// An answer from the page: it is responsive again. An answer to a request another cluster
    /// node relayed goes back to that node.
    pub(crate) fn resolve(&self, id: &RequestId, answer: Answer) {
        let mut state = self.lock();
        let Some(answer) = state.drive(|engine| engine.answer(id, answer)) else {
            return;
        };
        let Some(route) = state.routes.take(&id.to_string()) else {
            return;
        };
        drop(state);
        let frame = match answer {
            Ok(result) => encode_result(id, &result),
            Err(error) => encode_error(Some(id), &error),
        };
        if let Some(replies) = &self.relay_replies {
            replies.send_back(route, Some(id.to_string()), frame);
        }
    }

    /// Hands the page's answers and progress reports to the requests they belong to: the one
    /// reading of a page's frame, whether it came on the page's own socket or relayed from the node
    /// that holds it. Anything else comes back decoded (or why it could not be) for the caller;
    /// `None` when it was delivered.
    pub(crate) fn deliver_answer(&self, text: &str) -> Option<Result<Message, DecodeError>> {
        if let Some((id, result)) = protocol::read_answer(text) {
            self.resolve(&id, Ok(result));
            return None;
        }
        match protocol::decode(text) {
            Ok(Message::Response { id, result }) => {
                let result = result.map(|value| {
                    serde_json::value::to_raw_value(&value).expect("a JSON value always prints")
                });
                self.resolve(&id, result);
                None
            }
            Ok(Message::Notification { method, params }) if method == method::PROGRESS => {
                if let Ok(progress) = serde_json::from_value(params) {
                    self.progress(progress);
                }
                None
            }
            other => Some(other),
        }
    }

    /// How this session's page is reached: `None` while it is not connected.
    pub(crate) fn via(&self) -> Option<Via> {
        self.lock().connection.as_ref().map(|c| c.via.clone())
    }

    /// The generation of the current connection, if any.
    pub(crate) fn generation(&self) -> Option<u64> {
        self.lock().connection.as_ref().map(|c| c.generation)
    }

    /// A frame another cluster node sends this session's page through this node (which holds its
    /// socket). A request (`request_id`) is remembered so its answer and progress go back to
    /// `reply`. Refused (with the reason) when the page's socket is not here, the frame breaks the
    /// page's limits, or its queue is full.
    pub(crate) fn relay_to_page(
        &self,
        frame: String,
        request_id: Option<String>,
        reply: &str,
    ) -> Result<(), RelayRefused> {
        if self.via() != Some(Via::Socket) {
            return Err(RelayRefused::NotHere);
        }
        protocol::check_outgoing(&frame).map_err(|limit| {
            RelayRefused::Refused(format!("the call cannot be sent to the page: {limit}"))
        })?;
        // Outside the session's lock: conditions may take their time budget.
        let tools = self.page_tools();
        policy::gate::relayed(
            &self.policy,
            &frame,
            &self.id,
            &self.agent_tools,
            &tools,
            now(),
        )
        .map_err(RelayRefused::Answered)?;
        let mut state = self.lock();
        if state.connection.as_ref().map(|c| &c.via) != Some(&Via::Socket) {
            return Err(RelayRefused::NotHere);
        }
        let connection = state.connection.as_ref().ok_or(RelayRefused::NotHere)?;
        connection
            .outgoing
            .try_send(frame)
            .map_err(|full| RelayRefused::Refused(full.to_string()))?;
        if let Some(id) = request_id {
            state.routes.insert(id, reply.to_owned());
        }
        Ok(())
    }

    /// Closes the page's connection from the bridge side, as a network failure would (the page
    /// reconnects by itself).
    #[cfg(any(test, feature = "testing"))]
    pub fn drop_connection(&self) {
        if let Some(connection) = &self.lock().connection {
            connection.kill.notify_one();
        }
    }

    /// Sends every waiting call again with its id, as a runtime does after a reconnect: the page
    /// must answer each once.
    #[cfg(any(test, feature = "testing"))]
    pub fn resend_pending(&self) {
        self.lock().drive(RequestEngine::resend_pending);
    }

    /// How many progress notifications the page has sent (all calls).
    pub fn progress_notifications(&self) -> u64 {
        self.progress_seen.load(Ordering::Relaxed)
    }

    /// Calls waiting for an answer.
    pub fn pending_calls(&self) -> usize {
        self.lock().engine.pending()
    }

    pub(crate) fn set_tools(&self, tools: Vec<Tool>) {
        let mut state = self.lock();
        state.tools = tools.into();
        state.tools_listed = true;
        drop(state);
        self.changes.send_modify(|n| *n += 1);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }
}

impl Drop for PageSession {
    /// The timer task sees the session gone and ends.
    fn drop(&mut self) {
        self.timer.notify_one();
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // A panic while holding the lock leaves plain data behind; keep serving.
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The session's one timer: sleeps until the engine's [`RequestEngine::poll_timeout`] (or until
/// [`PageSession::arm`] wakes it with an earlier time), then hands the engine the time. It ends
/// with the session.
async fn run_timer(state: Weak<Mutex<State>>, wake: Arc<Notify>) {
    loop {
        let next = {
            let Some(state) = state.upgrade() else { return };
            let mut state = lock(&state);
            state.armed = state.engine.poll_timeout();
            state.armed
        };
        let Some(at) = next else {
            wake.notified().await;
            continue;
        };
        tokio::select! {
            () = tokio::time::sleep_until(at.into()) => {
                let Some(state) = state.upgrade() else { return };
                lock(&state).drive(|engine| engine.handle_timeout(now()));
            }
            () = wake.notified() => {}
        }
    }
}

/// The tools an agent may see of a page that lists `page_tools`: merged with the bridge's
/// `--tools FILE` tools, the bridge allow-list applied (by original name).
pub(crate) fn visible_tools(
    allow: &[String],
    agent_tools: &AgentTools,
    page_tools: &[Tool],
) -> Vec<Tool> {
    let visible = |tool: &Tool| is_allowed(allow, tool.original_name());
    if agent_tools.is_empty() {
        return page_tools.iter().filter(|t| visible(t)).cloned().collect();
    }
    let mut merged = agent_tools.merge(page_tools);
    merged.retain(visible);
    merged
}

/// The key of a page's request id among the open rounds: its JSON (`1` and `"1"` are two).
fn round_key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// At most 64 characters of an id the page sent, for an error message.
fn short_id(id: &str) -> String {
    id.chars().take(64).collect()
}

/// Removes `_meta["clienttools/callId"]` (a string) from `params` and returns it; an `_meta` left
/// empty goes too.
fn take_call_id(params: &mut Map<String, Value>) -> Option<String> {
    let meta = params.get_mut("_meta")?.as_object_mut()?;
    let call = meta.remove(protocol::meta::CALL_ID)?;
    if meta.is_empty() {
        params.remove("_meta");
    }
    match call {
        Value::String(call) => Some(call),
        _ => None,
    }
}

/// Reads the params of a `clienttools/input` request: the call it is for and its
/// `inputRequests`, each checked (`{method, params}`; a known method; `params` an object, the
/// page's `clienttools/` `_meta` keys removed). An error says what is wrong.
fn read_round(params: Value) -> Result<(String, Map<String, Value>, bool), String> {
    let Value::Object(mut params) = params else {
        return Err("clienttools/input params must be an object".into());
    };
    let call = take_call_id(&mut params)
        .ok_or("clienttools/input needs _meta['clienttools/callId'], a string")?;
    let Some(Value::Object(requests)) = params.remove("inputRequests") else {
        return Err("clienttools/input needs 'inputRequests', an object".into());
    };
    if requests.is_empty() {
        return Err("'inputRequests' is empty".into());
    }
    if requests.len() > MAX_REQUESTS_PER_ROUND {
        return Err(format!(
            "'inputRequests' has {} requests: at most {MAX_REQUESTS_PER_ROUND} in one round",
            requests.len()
        ));
    }
    let mut checked = Map::new();
    let mut before_task = false;
    for (key, request) in requests {
        let Value::Object(mut request) = request else {
            return Err(format!("inputRequests['{key}'] must be an object"));
        };
        let method = match request.get("method").and_then(Value::as_str) {
            Some(
                method @ (method::ELICITATION_CREATE
                | method::SAMPLING_CREATE_MESSAGE
                | method::ROOTS_LIST),
            ) => method.to_owned(),
            _ => {
                return Err(format!(
                    "inputRequests['{key}'].method must be elicitation/create, \
                     sampling/createMessage or roots/list"
                ))
            }
        };
        let mut params = match request.remove("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(params)) => params,
            Some(_) => return Err(format!("inputRequests['{key}'].params must be an object")),
        };
        if let Some(Value::Object(meta)) = params.get_mut("_meta") {
            before_task |= meta.get(protocol::meta::BEFORE_TASK) == Some(&Value::Bool(true));
            meta.retain(|name, _| !name.starts_with("clienttools/"));
            if meta.is_empty() {
                params.remove("_meta");
            }
        }
        let request = serde_json::json!({"method": method, "params": params});
        checked.insert(key, request);
    }
    Ok((call, checked, before_task))
}

/// A caller that stops waiting (its future dropped: an agent gone, an HTTP client disconnected)
/// cancels its request, so nothing waits on the page's answer forever. A no-op once settled.
struct CancelOnDrop<'a> {
    session: &'a PageSession,
    id: &'a str,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        self.session
            .cancel_request(self.id, "the runtime stopped waiting");
    }
}

/// What a request's channel delivered. The engine settles every request it gives up on; a closed
/// channel means the session itself is gone.
fn outcome_of(received: Result<Settled, oneshot::error::RecvError>) -> Settled {
    received.unwrap_or(Err(RequestFailure::Disconnected))
}

/// The request `id`; `_meta.progressToken` is the id, so the page's progress reports name the
/// request they extend.
fn new_request(
    id: String,
    method: &str,
    mut params: Value,
    timeout: Duration,
    purpose: Purpose,
) -> Request {
    if let Some(object) = params.as_object_mut() {
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("progressToken".into(), id.clone().into());
        }
    }
    let frame = encode_request(&RequestId::String(id.clone()), method, &params);
    Request {
        id,
        frame,
        timeout,
        purpose,
    }
}

/// Tokio's clock (the same as the system's, except in tests that pause time).
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// A short random id for this bridge process.
fn instance_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    format!("{:012x}", hasher.finish() & 0xffff_ffff_ffff)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use client_tools_core::protocol::{decode, Message};
    use futures_util::FutureExt;
    use serde_json::json;
    use tokio::time::sleep;

    use super::*;
    use crate::connection_queue::Outgoing;
    use crate::fake_page::{session, FakePage};

    const TIMEOUT: Duration = Duration::from_secs(1);

    #[tokio::test(start_paused = true)]
    async fn the_bridge_allow_list_filters_tools_and_refuses_calls_by_original_name() {
        let session = Arc::new(PageSession::new(
            "s1".into(),
            vec!["Secret Tool".into(), "echo".into()],
            Limits::default(),
            false,
        ));
        let mut page = FakePage::connect(&session);
        let tools = json!([
            {"name": "secret_tool", "inputSchema": {}, "_meta": {"clienttools/originalName": "Secret Tool"}},
            {"name": "delete_all", "inputSchema": {}},
        ]);
        session.set_tools(serde_json::from_value(tools).unwrap());
        let listed: Vec<String> = session.tools().into_iter().map(|t| t.name).collect();
        assert_eq!(listed, ["secret_tool"]);

        for name in ["delete_all", "not_listed"] {
            let refused = session
                .call_tool((name, json!({})), CallOptions::new().timeout(TIMEOUT))
                .await
                .into_result();
            assert_eq!(refused.text(), format!("tool '{name}' is not allowed"));
        }
        assert!(page.has_nothing_queued());
        // Allowed by original name, or by name while the page has not listed it.
        for name in ["secret_tool", "echo"] {
            let call = {
                let session = session.clone();
                tokio::spawn(async move {
                    session
                        .call_tool((name, json!({})), CallOptions::new().timeout(TIMEOUT))
                        .await
                        .into_result()
                })
            };
            let (id, params) = page.request(method::TOOLS_CALL).await;
            assert_eq!(params["name"], name);
            page.answer_call(&id, "allowed");
            assert_eq!(call.await.unwrap().text(), "allowed");
        }
    }

    /// Defect: running a prepared call trusted it (the allow-list was checked in `prepare_call`
    /// only), so the Rust API could run a call prepared elsewhere or no longer allowed.
    #[tokio::test(start_paused = true)]
    async fn a_prepared_call_is_checked_again_when_it_runs() {
        let allowed = Arc::new(PageSession::new(
            "s1".into(),
            vec!["Echo".into()],
            Limits::default(),
            false,
        ));
        let other = Arc::new(PageSession::new(
            "s2".into(),
            Vec::new(),
            Limits::default(),
            false,
        ));
        let mut page = FakePage::connect(&allowed);
        let _other_page = FakePage::connect(&other);
        let listed = |original: &str| {
            serde_json::from_value::<Vec<Tool>>(json!([{"name": "echo", "inputSchema": {},
                "_meta": {"clienttools/originalName": original}}]))
            .unwrap()
        };
        allowed.set_tools(listed("Echo"));
        // By either name: allowed (the allow-list matches the original name), sent as `echo`.
        for name in ["Echo", "echo"] {
            let call = allowed.prepare_call(name, json!({}), None, None).unwrap();
            assert_eq!(call.name(), "echo");
            assert_eq!(call.original_name(), "Echo");
        }
        let elsewhere = allowed.prepare_call("echo", json!({}), None, None).unwrap();
        let refused = other
            .call_tool(elsewhere, CallOptions::new())
            .await
            .into_result();
        assert!(
            refused.is_error
                && refused
                    .text()
                    .contains("prepared for page session 's1', not 's2'"),
            "{}",
            refused.text()
        );
        // The page redefines `echo` as another tool the allow-list does not allow.
        let stale = allowed.prepare_call("echo", json!({}), None, None).unwrap();
        allowed.set_tools(listed("Echo Everything"));
        let refused = allowed
            .call_tool(stale, CallOptions::new())
            .await
            .into_result();
        assert_eq!(refused.text(), "tool 'echo' is not allowed");
        // A prepared call's timeout and `_meta` were decided by prepare_call: options setting
        // them again are refused, not ignored.
        allowed.set_tools(listed("Echo"));
        let prepared = allowed.prepare_call("echo", json!({}), None, None).unwrap();
        let options = CallOptions::new().timeout(Duration::from_secs(1));
        let refused = allowed.call_tool(prepared, options).await.into_result();
        assert!(
            refused.is_error && refused.text().contains("decided by prepare_call"),
            "{}",
            refused.text()
        );
        assert!(page.has_nothing_queued());
    }

    #[tokio::test(start_paused = true)]
    async fn the_rust_api_timeout_follows_the_rule_of_every_route() {
        let session = session();
        let _page = FakePage::connect(&session);
        let zero = session
            .call_tool(
                ("echo", json!({})),
                CallOptions::new().timeout(Duration::ZERO),
            )
            .await
            .into_result();
        assert_eq!(
            zero.text(),
            "timeout must be a positive number of milliseconds, not 0"
        );
        let long = session
            .call_tool(
                ("echo", json!({})),
                CallOptions::new().timeout(Duration::from_secs(301)),
            )
            .await
            .into_result();
        assert_eq!(
            long.text(),
            "timeout 301000 ms is above the maximum of 300000 ms"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn connection_facts_for_expiry_and_the_newest_session() {
        let session = session();
        sleep(Duration::from_secs(3)).await;
        assert!(!session.has_connected() && !session.is_connected());
        assert_eq!(session.connected_at(), None);
        // Never connected: disconnected since it was created.
        assert_eq!(
            session.disconnected_for(now()),
            Some(Duration::from_secs(3))
        );

        let before = SystemTime::now();
        let page = FakePage::connect(&session);
        assert!(session.has_connected() && session.is_connected());
        assert!(session.connected_at().is_some_and(|at| at >= before));
        assert_eq!(session.disconnected_for(now()), None);
        assert!(session.info().connected && session.info().connected_at_ms.is_some());

        page.disconnect();
        sleep(Duration::from_secs(7)).await;
        assert!(session.has_connected() && !session.is_connected());
        assert_eq!(session.connected_at(), None);
        assert_eq!(
            session.disconnected_for(now()),
            Some(Duration::from_secs(7))
        );
        assert!(!session.info().connected);
    }

    #[tokio::test(start_paused = true)]
    async fn a_replaced_connection_is_closed_and_ending_late_does_not_disconnect_the_session() {
        let session = session();
        let mut old = FakePage::connect(&session);
        let mut new = FakePage::connect(&session);
        // Two connections never share a session: the older one is told, and its reader stops.
        assert!(old.kill.notified().now_or_never().is_some());
        assert!(matches!(
            old.queue.recv().await,
            Some(Outgoing::Close { code: 4000, .. })
        ));
        old.disconnect();
        assert!(session.is_connected());
        let call = {
            let session = session.clone();
            tokio::spawn(async move {
                session
                    .call_tool(("echo", json!({})), CallOptions::new().timeout(TIMEOUT))
                    .await
                    .into_result()
            })
        };
        let (id, _) = new.request(method::TOOLS_CALL).await;
        new.answer_call(&id, "on the new connection");
        assert_eq!(call.await.unwrap().text(), "on the new connection");
    }

    #[tokio::test(start_paused = true)]
    async fn an_explicit_close_gets_through_a_full_queue_and_stops_the_reader() {
        let session = session();
        let mut page = FakePage::connect_bounded(&session, 1, 1 << 20);
        session.notify_page(method::INITIALIZED, &json!({}));
        session.close_connection(4000, "replaced");
        assert!(page.kill.notified().now_or_never().is_some());
        page.notification(method::INITIALIZED).await;
        assert_eq!(
            page.queue.recv().await,
            Some(Outgoing::Close {
                code: 4000,
                reason: "replaced".into()
            })
        );
    }

    #[tokio::test(start_paused = true)]
    async fn fault_injection_drops_the_connection_and_resends_a_waiting_call_with_its_id() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let call = {
            let session = session.clone();
            tokio::spawn(async move {
                session
                    .call_tool(("echo", json!({})), CallOptions::new().timeout(TIMEOUT))
                    .await
                    .into_result()
            })
        };
        let first = page.frame().await;
        session.resend_pending();
        assert_eq!(page.frame().await, first);
        let Ok(Message::Request { id, .. }) = decode(&first) else {
            panic!("{first}")
        };
        page.answer_call(&id, "once");
        assert_eq!(call.await.unwrap().text(), "once");

        session.drop_connection();
        assert!(page.kill.notified().now_or_never().is_some());
    }

    /// A prepared call through `call_tool`, its events on a channel.
    fn spawn_mcp_call(
        session: &Arc<PageSession>,
    ) -> (
        tokio::task::JoinHandle<Option<CallOutcome>>,
        mpsc::Receiver<CallEvent>,
    ) {
        let (events_tx, events) = mpsc::channel(8);
        let call = session.prepare_call("ask", json!({}), None, None).unwrap();
        let session = session.clone();
        let task = tokio::spawn(async move {
            session
                .call_tool(call, CallOptions::new().events(events_tx))
                .await
                .into_outcome()
        });
        (task, events)
    }

    fn round(call: &RequestId, requests: Value) -> Value {
        json!({"inputRequests": requests, "_meta": {"clienttools/callId": call.to_string()}})
    }

    fn elicit(message: &str) -> Value {
        json!({"method": "elicitation/create", "params": {"message": message,
            "requestedSchema": {"type": "object", "properties": {}}, "_meta": {"clienttools/inputKey": "k"}}})
    }

    #[tokio::test(start_paused = true)]
    async fn a_round_goes_to_its_call_and_its_answer_back_to_the_page_once() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let (call, mut events) = spawn_mcp_call(&session);
        let (call_id, _) = page.request(method::TOOLS_CALL).await;
        let round_id = RequestId::String("clienttools-input-1".into());
        let asked = session.page_input(
            round_id.clone(),
            round(&call_id, json!({"name": elicit("Name?")})),
        );
        assert_eq!(asked, None);
        let Some(CallEvent::Input(got)) = events.recv().await else {
            panic!("no round")
        };
        assert_eq!(got.id, round_id);
        // The page's own `_meta` keys never reach the agent.
        assert_eq!(
            got.requests["name"],
            json!({"method": "elicitation/create", "params": {"message": "Name?",
                "requestedSchema": {"type": "object", "properties": {}}}})
        );
        // One round at a time per call; the same request id twice is refused.
        let again = session.page_input(
            RequestId::Number(9),
            round(&call_id, json!({"x": elicit("?")})),
        );
        assert!(again.unwrap().message.contains("one round at a time"));
        let answer =
            json!({"inputResponses": {"name": {"action": "accept", "content": {"n": "A"}}}});
        assert!(session.answer_round(&round_id, Ok(answer.clone())));
        assert!(
            !session.answer_round(&round_id, Ok(answer.clone())),
            "answered once"
        );
        let frame = page.frame().await;
        let Ok(Message::Response {
            id,
            result: Ok(result),
        }) = decode(&frame)
        else {
            panic!("{frame}")
        };
        assert_eq!((id, result), (round_id, answer));
        // Logs of the call reach its caller without the page's call id.
        session.page_log(json!({"level": "info", "data": "hi",
            "_meta": {"clienttools/callId": call_id.to_string()}}));
        assert_eq!(
            events.recv().await,
            Some(CallEvent::Log(
                json!({"level": "info", "data": "hi"})
                    .as_object()
                    .unwrap()
                    .clone()
            ))
        );
        page.answer_call(&call_id, "done");
        assert_eq!(call.await.unwrap().unwrap().unwrap().text(), "done");
        // The call is over: a round for it now is refused.
        let late = session.page_input(
            RequestId::Number(10),
            round(&call_id, json!({"x": elicit("?")})),
        );
        assert!(late.unwrap().message.contains("is waiting"));
    }

    #[tokio::test(start_paused = true)]
    async fn hostile_rounds_are_refused_with_a_clear_error() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let (_call, _events) = spawn_mcp_call(&session);
        let (call_id, _) = page.request(method::TOOLS_CALL).await;
        let refused = |params: Value| session.page_input(RequestId::Number(1), params).unwrap();
        let unknown = RequestId::String("someone-else".into());
        assert!(refused(round(&unknown, json!({"a": elicit("?")})))
            .message
            .contains("no call 'someone-else'"));
        assert!(refused(json!({"inputRequests": {"a": elicit("?")}}))
            .message
            .contains("callId"));
        assert!(refused(round(&call_id, json!({})))
            .message
            .contains("empty"));
        assert!(refused(round(
            &call_id,
            json!({"a": {"method": "tools/call", "params": {}}})
        ))
        .message
        .contains("method must be"));
        assert!(refused(round(
            &call_id,
            json!({"a": {"method": "roots/list", "params": 3}})
        ))
        .message
        .contains("params must be an object"));
        let many: Map<String, Value> = (0..=MAX_REQUESTS_PER_ROUND)
            .map(|n| (format!("k{n}"), elicit("?")))
            .collect();
        let error = refused(round(&call_id, Value::Object(many)));
        assert_eq!(error.code, protocol::code::INVALID_PARAMS);
        assert!(error.message.contains("at most 16"), "{}", error.message);
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_that_takes_no_rounds_refuses_them_as_missing_capabilities() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let call = {
            let session = session.clone();
            tokio::spawn(async move {
                session
                    .call_tool(("ask", json!({})), CallOptions::new().timeout(TIMEOUT))
                    .await
                    .into_result()
            })
        };
        let (call_id, _) = page.request(method::TOOLS_CALL).await;
        let requests = json!({"a": {"method": "sampling/createMessage", "params": {}},
            "b": {"method": "roots/list"}, "c": elicit("?")});
        let error = session
            .page_input(RequestId::Number(1), round(&call_id, requests))
            .unwrap();
        assert_eq!(error.code, -32021);
        assert_eq!(
            error.data,
            Some(
                json!({"requiredCapabilities": {"sampling": {}, "roots": {}, "elicitation": {"form": {}}}})
            )
        );
        // The handler let it propagate: the page fails the call with -32021; this caller gets a
        // clear error result.
        let mut failed = RpcError::new(-32021, "Missing required client capability");
        failed.data = error.data.clone();
        session.resolve(&call_id, Err(failed));
        let result = call.await.unwrap();
        assert!(result.is_error);
        assert!(
            result
                .text()
                .contains("needs a capability this caller does not offer"),
            "{}",
            result.text()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_missing_capability_error_of_the_page_reaches_an_mcp_caller_as_an_error() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let (call, _events) = spawn_mcp_call(&session);
        let (call_id, _) = page.request(method::TOOLS_CALL).await;
        let mut failed = RpcError::new(-32021, "Missing required client capability");
        failed.data = Some(json!({"requiredCapabilities": {"sampling": {}}}));
        session.resolve(&call_id, Err(failed.clone()));
        assert_eq!(call.await.unwrap(), Some(Err(failed)));
        // Other errors of the page stay error results.
        let (call, _events) = spawn_mcp_call(&session);
        let (call_id, _) = page.request(method::TOOLS_CALL).await;
        session.resolve(&call_id, Err(RpcError::new(-32602, "bad")));
        let result = call.await.unwrap().unwrap().unwrap();
        assert_eq!(result.text(), "the page refused the call: bad");
    }

    #[tokio::test(start_paused = true)]
    async fn open_rounds_are_bounded_per_session() {
        let session = session();
        let mut page = FakePage::connect(&session);
        let mut calls = Vec::new();
        for n in 0..=MAX_OPEN_ROUNDS_PER_SESSION {
            let (task, events) = spawn_mcp_call(&session);
            let (call_id, _) = page.request(method::TOOLS_CALL).await;
            let asked = session.page_input(
                RequestId::Number(n as i64),
                round(&call_id, json!({"a": elicit("?")})),
            );
            if n < MAX_OPEN_ROUNDS_PER_SESSION {
                assert_eq!(asked, None);
            } else {
                assert!(asked.unwrap().message.contains("too many rounds"));
            }
            calls.push((task, events));
        }
    }

    /// The trace of one call: what `tracing` wrote while `log_payloads` was as given.
    async fn trace_of_one_call(log_payloads: bool) -> String {
        #[derive(Clone, Default)]
        struct Captured(Arc<Mutex<Vec<u8>>>);
        impl Write for Captured {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .finish();
        // With a single dispatcher registered, `tracing` asks only the current thread's: a test on
        // another thread meeting a callsite first would disable it for this one too. A second one,
        // alive for good, makes every callsite ask this thread's subscriber.
        static SECOND: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
        SECOND.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
        let _trace = tracing::subscriber::set_default(subscriber);

        let session = Arc::new(PageSession::new(
            "s1".into(),
            Vec::new(),
            Limits::default(),
            log_payloads,
        ));
        let mut page = FakePage::connect(&session);
        let call = {
            let session = session.clone();
            let arguments = json!({"password": "hunter2"});
            tokio::spawn(async move {
                session
                    .call_tool(("login", arguments), CallOptions::new().timeout(TIMEOUT))
                    .await
                    .into_result()
            })
        };
        let (id, _) = page.request(method::TOOLS_CALL).await;
        sleep(Duration::from_millis(40)).await;
        page.answer_call(&id, "the account balance");
        assert!(!call.await.unwrap().is_error);
        let trace = captured.0.lock().unwrap().clone();
        String::from_utf8(trace).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn one_span_per_call_with_its_outcome_and_no_payloads_unless_asked() {
        let trace = trace_of_one_call(false).await;
        let finished: Vec<&str> = trace
            .lines()
            .filter(|line| line.contains("tool call finished"))
            .collect();
        assert_eq!(finished.len(), 1, "{trace}");
        for field in [
            "tool_call{",
            "session=s1",
            "tool=\"login\"",
            "call=",
            "outcome=\"ok\"",
            "duration_ms=40",
        ] {
            assert!(finished[0].contains(field), "{field} in {trace}");
        }
        assert!(
            !trace.contains("hunter2") && !trace.contains("balance"),
            "{trace}"
        );

        let trace = trace_of_one_call(true).await;
        assert!(
            trace.contains("hunter2") && trace.contains("the account balance"),
            "{trace}"
        );
    }
}
