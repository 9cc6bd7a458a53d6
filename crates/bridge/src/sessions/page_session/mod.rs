//! One page session, as the runtime sees it: the page's tools, its connection (when it has one),
//! and the calls waiting for its answers.
//!
//! A session outlives its connections: a page that reloads or reconnects gets the same
//! [`PageSession`] back. The rules for waiting requests are the [`RequestEngine`]'s; this module is
//! its driver (it performs the engine's outputs on the connection's queue and the callers'
//! channels, and does the waiting), and adds the allow-list and one trace span per tool call.
//!
//! Its parts: `connection` (the page's socket or a link to the node holding it; its answers and
//! relayed frames), `calls` (a call checked, sent, waited on and traced; its progress and log
//! messages), `rounds` (the page's requests to the agent for one of its calls), `served` (the
//! page's resources, prompts and completion: its lists, requests served like calls, resource
//! subscriptions).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use client_tools_core::limits::DEFAULT_TIMEOUT_MS;
use client_tools_core::protocol::{CallToolResult, ProgressParams, Tool};
use client_tools_core::registry::is_allowed;
use client_tools_core::tabs::TabActivity;
use tokio::sync::{mpsc, oneshot, watch, Notify};

use crate::calls::agent_tools::AgentTools;
use crate::calls::policy::Policy;
use crate::calls::policy_gate;
use crate::calls::request_engine::{Output, RequestEngine, Settled};
use crate::ids::random_hex;
use crate::limits::{Limits, RELAY_ROUTES_PER_PENDING, RESOURCE_UPDATES_BUFFER};
use crate::page::connection_queue::OutgoingSender;
use crate::page::relay_routes::RelayRoutes;
use crate::sessions::call_options::CallEvent;

mod calls;
mod connection;
mod rounds;
mod served;
#[cfg(test)]
mod served_tests;
#[cfg(test)]
mod tests;

pub(crate) use rounds::missing_capability_error;
pub(crate) use served::LIST_METHODS;
pub use served::{Offered, ServedOutcome};

/// Close code sent to a connection replaced by its page's newer one (RFC 6455 private range).
pub(crate) const CLOSE_REPLACED: u16 = 4000;

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
    /// The operator's policy answers a tool call instead of the page (a `limit` rule:
    /// crate::calls::policy).
    Answered(CallToolResult),
    /// The operator's policy answers a served request (a prompt, a resource, a completion)
    /// instead of the page: its JSON-RPC error.
    Failed(client_tools_core::protocol::RpcError),
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
    /// What the page reported of its visibility and focus (`clienttools/activity`; for a session
    /// linked to another node's page, what that node announced): which of a user's tabs a call
    /// goes to (client_tools_core::tabs).
    activity: TabActivity,
    /// What the page offers besides tools (its `initialize` capabilities) and its lists of
    /// resources, resource templates and prompts, as this node last read them (`served`).
    served: served::Lists,
    /// The resources agents are subscribed to on this page, with how many subscriptions each.
    subscribed: HashMap<String, usize>,
    /// The URIs whose first subscription the page is being asked about: later subscribers wait
    /// for its answer (`Some` once it came; the sender dropped: the asking ended unanswered).
    subscribing: HashMap<String, served::Subscribing>,
}

/// A caller waiting on a request: where its outcome and the page's progress go.
struct Waiter {
    settle: oneshot::Sender<Settled>,
    /// Dropped reports when it is full (progress is a hint: the next one supersedes it).
    observer: Option<mpsc::Sender<ProgressParams>>,
    /// The page's log messages and rounds for this call (a full channel drops a log message and
    /// refuses a round); `None`: rounds are refused as a capability the caller lacks.
    events: Option<mpsc::Sender<CallEvent>>,
    /// The `redact` rules the policy decided for this call (crate::calls::policy_gate::running): every
    /// log message, progress message and round passes them before it reaches `observer` or
    /// `events`, on every route.
    redact: Option<Arc<policy_gate::EventRedaction>>,
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
    /// The person the page serves: the `sub` of its signed page token (SPEC §13), fixed for the
    /// session's life (`None` without signed tokens). Agents scoped to another user never see it.
    user: Option<String>,
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
    /// The session table's: bumped with [`Self::changes`], for those waiting on any page.
    table_changes: Option<Arc<watch::Sender<u64>>>,
    allow: Vec<String>,
    /// The tools of `--tools FILE`, listed with the page's and described in their calls' `_meta`.
    agent_tools: Arc<AgentTools>,
    /// A call's timeout when nobody asks for another (the bridge's `--timeout-ms`).
    default_timeout: Duration,
    /// Tool arguments and results go to the trace (`debug`) only when the operator asked.
    log_payloads: bool,
    /// In a cluster: where the answers to relayed requests are sent.
    relay_replies: Option<Arc<dyn RelayReplies>>,
    /// The operator's guardrails (`--policy FILE`, crate::calls::policy), applied at this session's
    /// choke points: [`Self::prepare`], [`Self::call_tool`], [`Self::relay_to_page`].
    policy: Arc<Policy>,
    /// The page's `notifications/resources/updated` (their URIs), for the agents subscribed.
    resource_updates: tokio::sync::broadcast::Sender<String>,
}

/// A session's public summary (`GET /api/sessions`).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub id: String,
    pub connected: bool,
    pub connected_at_ms: Option<u128>,
    pub tools: Vec<Tool>,
    /// The person the page serves (its signed token's `sub`), when the bridge verifies tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// In a cluster: the node holding the page's socket (its id), while it is connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

impl PageSession {
    pub(crate) fn new(id: String, allow: Vec<String>, limits: Limits, log_payloads: bool) -> Self {
        Self {
            id,
            user: None,
            state: Arc::new(Mutex::new(State {
                connection: None,
                engine: RequestEngine::new(limits.max_pending_per_session, now()),
                tools: Arc::from(Vec::new()),
                generations: 0,
                tools_listed: false,
                routes: RelayRoutes::new(limits.max_pending_per_session * RELAY_ROUTES_PER_PENDING),
                waiters: HashMap::new(),
                rounds: HashMap::new(),
                armed: None,
                timer_started: false,
                activity: TabActivity::default(),
                served: served::Lists::default(),
                subscribed: HashMap::new(),
                subscribing: HashMap::new(),
            })),
            timer: Arc::new(Notify::new()),
            instance: random_hex(6),
            next_request: AtomicU64::new(1),
            progress_seen: AtomicU64::new(0),
            changes: watch::channel(0).0,
            table_changes: None,
            allow,
            agent_tools: Arc::default(),
            default_timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            log_payloads,
            relay_replies: None,
            policy: Arc::default(),
            resource_updates: tokio::sync::broadcast::channel(RESOURCE_UPDATES_BUFFER).0,
        }
    }

    /// The person the page serves (crate::sessions::table makes a user's sessions with it).
    pub(crate) fn with_user(mut self, user: Option<String>) -> Self {
        self.user = user;
        self
    }

    /// Its tools or connection changing also bumps `table_changes` (crate::sessions::table).
    pub(crate) fn with_table_changes(mut self, table_changes: Arc<watch::Sender<u64>>) -> Self {
        self.table_changes = Some(table_changes);
        self
    }

    /// The tools or the connection changed: tells the session's watchers and the table's.
    fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
        if let Some(table_changes) = &self.table_changes {
            table_changes.send_modify(|n| *n += 1);
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

    /// The person the page serves (its signed token's `sub`); `None` without signed tokens.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// What the page last reported of its visibility and focus, and when it connected.
    pub fn activity(&self) -> TabActivity {
        self.lock().activity
    }

    /// The page's `clienttools/activity` report.
    pub(crate) fn report_activity(&self, visible: bool, focused: bool) {
        let now = crate::ids::unix_ms(SystemTime::now());
        self.lock().activity.report(visible, focused, now);
        self.changed();
    }

    /// The activity another node announced for its page (crate::cluster).
    pub(crate) fn set_activity(&self, activity: TabActivity) {
        let mut state = self.lock();
        let changed = state.activity != activity;
        state.activity = activity;
        drop(state);
        if changed {
            self.changed();
        }
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
    /// (crate::calls::agent_tools), the bridge allow-list applied.
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
            user: self.user.clone(),
            node: None,
        }
    }

    /// A receiver that changes whenever the tools or the connection change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The `redact` rules of the call waiting on request `id`, if the policy decided any: what the
    /// page sends about the call passes them before it is handed to the caller (applied outside
    /// the session's lock).
    fn redaction_of(&self, id: &str) -> Option<Arc<policy_gate::EventRedaction>> {
        if self.policy.is_empty() {
            return None;
        }
        self.lock().waiters.get(id)?.redact.clone()
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
        self.changed();
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

/// Tokio's clock (the same as the system's, except in tests that pause time).
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}
