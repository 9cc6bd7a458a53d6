//! One page session, as the runtime sees it: the page's tools, its connection (when it has one),
//! and the calls waiting for its answers.
//!
//! A session outlives its connections: a page that reloads or reconnects with the same id (kept in
//! its `sessionStorage`) gets the same [`PageSession`] back.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use client_tools_core::call::{outcome, HUMAN_WAIT_MAX_MS};
use client_tools_core::protocol::{
    encode_notification, encode_request, meta, method, CallToolParams, CallToolResult,
    CancelledParams, ProgressParams, RequestId, RpcError, Tool,
};
use client_tools_core::registry::is_allowed;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot, watch, Notify};

/// Extra time the runtime waits beyond a call's timeout: the page's 2 s grace for late handlers
/// plus the network, so the page's own, more precise, outcome normally arrives first.
const ANSWER_SLACK: Duration = Duration::from_millis(2_500);
/// How long a call whose page disconnected waits for the page to come back (a reload, a network
/// blip) before it fails. When the page reconnects, the call is sent again with the same id.
pub const RECONNECT_GRACE: Duration = Duration::from_secs(5);

type Answer = Result<Value, RpcError>;

/// The live connection of a session.
struct Connection {
    generation: u64,
    outgoing: mpsc::UnboundedSender<String>,
    /// Ends the connection from the bridge side.
    kill: Arc<Notify>,
}

/// A request waiting for the page's answer.
struct Pending {
    /// The exact frame, sent again after a reconnect (same id: the page runs it at most once).
    frame: String,
    answer: oneshot::Sender<Answer>,
    /// When the runtime stops waiting; progress from the page pushes it back.
    deadline: Instant,
    /// Progress never extends the wait beyond this.
    hard_deadline: Instant,
    timeout: Duration,
    disconnected_at: Option<Instant>,
    /// Where the page's progress on this request goes (an MCP agent's progress token).
    observer: Option<mpsc::UnboundedSender<ProgressParams>>,
}

#[derive(Default)]
struct State {
    connection: Option<Connection>,
    tools: Vec<Tool>,
    pending: HashMap<String, Pending>,
    generations: u64,
    connected_at: Option<SystemTime>,
    /// The page has answered `tools/list` at least once (its handshake is done).
    tools_listed: bool,
    /// A call got no answer in time: further calls fail at once until the page answers again.
    unresponsive: bool,
    /// When the last connection dropped; within [`RECONNECT_GRACE`] new calls wait for it.
    disconnected_at: Option<Instant>,
}

pub struct PageSession {
    id: String,
    state: Mutex<State>,
    /// Request ids are `<instance>-<n>`: unique across bridge restarts, so a page never mistakes a
    /// new call for one it already answered.
    instance: String,
    next_request: AtomicI64,
    progress_seen: AtomicU64,
    /// Bumped whenever the tool list or the connection changes (for waiters and MCP agents).
    changes: watch::Sender<u64>,
    allow: Vec<String>,
}

/// A session's public summary (`GET /api/sessions`).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub id: String,
    pub connected: bool,
    pub connected_at_ms: Option<u128>,
    pub tools: Vec<Tool>,
}

impl PageSession {
    pub(crate) fn new(id: String, allow: Vec<String>) -> Self {
        Self {
            id,
            state: Mutex::new(State::default()),
            instance: instance_id(),
            next_request: AtomicI64::new(1),
            progress_seen: AtomicU64::new(0),
            changes: watch::channel(0).0,
            allow,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether a page has ever connected to this session.
    pub fn has_connected(&self) -> bool {
        self.lock().connected_at.is_some()
    }

    /// Whether the page finished its handshake once (connected *and* listed its tools).
    pub fn has_listed_tools(&self) -> bool {
        self.lock().tools_listed
    }

    pub fn is_connected(&self) -> bool {
        self.lock().connection.is_some()
    }

    /// The page's tools an agent may see (the bridge allow-list applied).
    pub fn tools(&self) -> Vec<Tool> {
        let state = self.lock();
        state
            .tools
            .iter()
            .filter(|tool| is_allowed(&self.allow, tool.original_name()))
            .cloned()
            .collect()
    }

    pub fn info(&self) -> SessionInfo {
        let connected_at_ms = self.lock().connected_at.and_then(|t| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_millis())
        });
        SessionInfo {
            id: self.id.clone(),
            connected: self.is_connected(),
            connected_at_ms,
            tools: self.tools(),
        }
    }

    /// A receiver that changes whenever the tools or the connection change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Calls a tool of the page. Always a result: page errors, absence and silence are error results.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
    ) -> CallToolResult {
        let never = std::future::pending::<String>();
        self.call_tool_until(name, arguments, timeout, never)
            .await
            .unwrap_or_else(|| CallToolResult::error("cancelled"))
    }

    /// Like [`Self::call_tool`], but when `cancel` completes first (with a reason) the page is sent
    /// `notifications/cancelled` (its handler's `ctx.signal` aborts) and there is no result: `None`.
    pub async fn call_tool_until(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
        cancel: impl Future<Output = String>,
    ) -> Option<CallToolResult> {
        self.call_tool_observed(name, arguments, timeout, cancel, None)
            .await
    }

    /// [`Self::call_tool_until`] that also forwards the page's progress reports to `progress`.
    pub async fn call_tool_observed(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
        cancel: impl Future<Output = String>,
        progress: Option<mpsc::UnboundedSender<ProgressParams>>,
    ) -> Option<CallToolResult> {
        if let Some(tool) = self.lock().tools.iter().find(|t| t.name == name) {
            if !is_allowed(&self.allow, tool.original_name()) {
                return Some(outcome::not_allowed(name));
            }
        } else if !self.allow.is_empty() && !is_allowed(&self.allow, name) {
            return Some(outcome::not_allowed(name));
        }
        if self.lock().unresponsive {
            self.probe();
            return Some(CallToolResult::error(
                RequestFailure::Unresponsive.describe(&self.id, timeout),
            ));
        }
        let mut extensions = Map::new();
        extensions.insert(meta::TIMEOUT_MS.into(), (timeout.as_millis() as u64).into());
        let params = CallToolParams {
            name: name.to_owned(),
            arguments: Some(arguments),
            meta: Some(extensions),
        };
        let params = serde_json::to_value(params).unwrap_or_default();
        let answer = self
            .request_until(
                method::TOOLS_CALL,
                params,
                timeout + ANSWER_SLACK,
                cancel,
                progress,
            )
            .await;
        Some(match answer {
            Ok(Ok(value)) => serde_json::from_value(value).unwrap_or_else(|error| {
                CallToolResult::error(format!(
                    "the page sent a malformed tools/call result: {error}"
                ))
            }),
            Ok(Err(error)) => {
                CallToolResult::error(format!("the page refused the call: {}", error.message))
            }
            Err(RequestFailure::Cancelled) => return None,
            Err(failure) => CallToolResult::error(failure.describe(&self.id, timeout)),
        })
    }

    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Answer, RequestFailure> {
        self.request_until(
            method,
            params,
            timeout,
            std::future::pending::<String>(),
            None,
        )
        .await
    }

    /// Sends a request to the page and waits for its answer, through reconnects, extending the wait
    /// while the page reports progress (`_meta.progressToken` is the request id).
    async fn request_until(
        &self,
        method: &str,
        mut params: Value,
        timeout: Duration,
        cancel: impl Future<Output = String>,
        observer: Option<mpsc::UnboundedSender<ProgressParams>>,
    ) -> Result<Answer, RequestFailure> {
        let id = format!(
            "{}-{}",
            self.instance,
            self.next_request.fetch_add(1, Ordering::Relaxed)
        );
        if let Some(object) = params.as_object_mut() {
            let meta = object
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("progressToken".into(), id.clone().into());
            }
        }
        let frame = encode_request(&RequestId::String(id.clone()), method, &params);
        let (answer_tx, mut answer_rx) = oneshot::channel();
        let now = Instant::now();
        {
            let mut state = self.lock();
            let disconnected_at = match &state.connection {
                Some(connection) => {
                    if connection.outgoing.send(frame.clone()).is_err() {
                        return Err(RequestFailure::NotConnected);
                    }
                    None
                }
                // Dropped a moment ago: wait for the reconnect, the frame goes out on `attach`.
                None => match state.disconnected_at {
                    Some(at) if now < at + RECONNECT_GRACE => Some(at),
                    _ => return Err(RequestFailure::NotConnected),
                },
            };
            let pending = Pending {
                frame,
                answer: answer_tx,
                deadline: now + timeout,
                hard_deadline: now + timeout + Duration::from_millis(HUMAN_WAIT_MAX_MS),
                timeout,
                disconnected_at,
                observer,
            };
            state.pending.insert(id.clone(), pending);
        }
        let mut changes = self.changes.subscribe();
        let mut cancel = std::pin::pin!(cancel);
        loop {
            let wake = match self.lock().pending.get(&id) {
                Some(p) => p.deadline.min(
                    p.disconnected_at
                        .map_or(p.deadline, |at| at + RECONNECT_GRACE),
                ),
                None => now, // answered (or failed) while we were not looking: read the channel
            };
            tokio::select! {
                answer = &mut answer_rx => {
                    return answer.map_err(|_| RequestFailure::Disconnected);
                }
                _ = tokio::time::sleep_until(wake.into()) => {}
                _ = changes.changed() => continue,
                reason = &mut cancel => {
                    self.lock().pending.remove(&id);
                    self.notify_page(
                        method::CANCELLED,
                        &CancelledParams { request_id: RequestId::String(id), reason: Some(reason) },
                    );
                    return Err(RequestFailure::Cancelled);
                }
            }
            let failure = {
                let mut state = self.lock();
                let Some(pending) = state.pending.get(&id) else {
                    continue;
                };
                let now = Instant::now();
                if pending
                    .disconnected_at
                    .is_some_and(|at| now >= at + RECONNECT_GRACE)
                {
                    Some(RequestFailure::Disconnected)
                } else if now >= pending.deadline {
                    state.unresponsive = state.connection.is_some();
                    Some(RequestFailure::TimedOut)
                } else {
                    None
                }
            };
            if let Some(failure) = failure {
                self.lock().pending.remove(&id);
                if failure == RequestFailure::TimedOut {
                    let reason = "the runtime stopped waiting (timeout)";
                    self.notify_page(
                        method::CANCELLED,
                        &CancelledParams {
                            request_id: RequestId::String(id),
                            reason: Some(reason.into()),
                        },
                    );
                }
                return Err(failure);
            }
        }
    }

    /// The page reported progress on a request: the runtime waits longer (up to the hard bound).
    pub(crate) fn progress(&self, progress: ProgressParams) {
        self.progress_seen.fetch_add(1, Ordering::Relaxed);
        let Some(token) = progress.progress_token.as_str() else {
            return;
        };
        if let Some(pending) = self.lock().pending.get_mut(token) {
            pending.deadline = (Instant::now() + pending.timeout).min(pending.hard_deadline);
            if let Some(observer) = &pending.observer {
                let _ = observer.send(progress);
            }
        }
    }

    /// Fail-fast mode: ask the page whether it answers again, without making anyone wait.
    fn probe(&self) {
        let Some(outgoing) = self.lock().connection.as_ref().map(|c| c.outgoing.clone()) else {
            return;
        };
        let id = RequestId::String(format!("{}-ping", self.instance));
        let _ = outgoing.send(encode_request(&id, method::PING, &serde_json::json!({})));
    }

    /// Sends a notification to the page if it is connected.
    pub(crate) fn notify_page(&self, method: &str, params: &impl serde::Serialize) {
        if let Some(connection) = &self.lock().connection {
            let _ = connection
                .outgoing
                .send(encode_notification(method, params));
        }
    }

    /// A page connection starts: returns its generation (to tell stale connections apart). Calls
    /// still waiting from before are sent again on it.
    pub(crate) fn attach(&self, outgoing: mpsc::UnboundedSender<String>, kill: Arc<Notify>) -> u64 {
        let mut state = self.lock();
        state.generations += 1;
        let generation = state.generations;
        for pending in state.pending.values_mut() {
            pending.disconnected_at = None;
            let _ = outgoing.send(pending.frame.clone());
        }
        state.connection = Some(Connection {
            generation,
            outgoing,
            kill,
        });
        state.connected_at = Some(SystemTime::now());
        state.unresponsive = false;
        drop(state);
        self.changes.send_modify(|n| *n += 1);
        generation
    }

    /// The connection of `generation` ended: waiting calls get [`RECONNECT_GRACE`] to see it back.
    pub(crate) fn detach(&self, generation: u64) {
        let mut state = self.lock();
        if state.connection.as_ref().map(|c| c.generation) != Some(generation) {
            return; // a newer connection has taken over already
        }
        state.connection = None;
        let now = Instant::now();
        state.disconnected_at = Some(now);
        for pending in state.pending.values_mut() {
            pending.disconnected_at.get_or_insert(now);
        }
        drop(state);
        self.changes.send_modify(|n| *n += 1);
    }

    /// An answer from the page: it is responsive again.
    pub(crate) fn resolve(&self, id: &RequestId, answer: Answer) {
        let mut state = self.lock();
        state.unresponsive = false;
        if let Some(pending) = state.pending.remove(&id.to_string()) {
            let _ = pending.answer.send(answer);
        }
    }

    /// Closes the page's connection from the bridge side, as a network failure would (the page
    /// reconnects by itself): for fault-injection tests and operators.
    pub fn drop_connection(&self) {
        if let Some(connection) = &self.lock().connection {
            connection.kill.notify_one();
        }
    }

    /// Sends every waiting call again with its id, as a runtime does after a reconnect: the page
    /// must answer each once (for fault-injection tests).
    pub fn resend_pending(&self) {
        let state = self.lock();
        if let Some(connection) = &state.connection {
            for pending in state.pending.values() {
                let _ = connection.outgoing.send(pending.frame.clone());
            }
        }
    }

    /// How many progress notifications the page has sent (all calls).
    pub fn progress_notifications(&self) -> u64 {
        self.progress_seen.load(Ordering::Relaxed)
    }

    /// Calls waiting for an answer.
    pub fn pending_calls(&self) -> usize {
        self.lock().pending.len()
    }

    pub(crate) fn set_tools(&self, tools: Vec<Tool>) {
        let mut state = self.lock();
        state.tools = tools;
        state.tools_listed = true;
        drop(state);
        self.changes.send_modify(|n| *n += 1);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep serving.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Why a request got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestFailure {
    NotConnected,
    Disconnected,
    TimedOut,
    /// An earlier call timed out and the page has not answered anything since.
    Unresponsive,
    /// The caller cancelled.
    Cancelled,
}

impl RequestFailure {
    pub fn describe(self, session: &str, timeout: Duration) -> String {
        match self {
            RequestFailure::NotConnected => {
                format!(
                    "the page (session '{session}') is not connected: open the page and try again"
                )
            }
            RequestFailure::Disconnected => {
                format!("the page (session '{session}') disconnected before answering")
            }
            RequestFailure::TimedOut => format!(
                "the page (session '{session}') did not answer within {} ms",
                timeout.as_millis()
            ),
            RequestFailure::Cancelled => "cancelled by the runtime".to_owned(),
            RequestFailure::Unresponsive => format!(
                "the page (session '{session}') did not answer an earlier call in time; \
                 calls fail at once until it answers again"
            ),
        }
    }
}

/// Shared handle.
pub type SessionRef = Arc<PageSession>;

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
