//! One page session, as the runtime sees it: the page's tools, its connection (when it has one),
//! and the calls waiting for its answers.
//!
//! A session outlives its connections: a page that reloads or reconnects with the same id (kept in
//! its `sessionStorage`) gets the same [`PageSession`] back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use client_tools_core::call::outcome;
use client_tools_core::protocol::{
    encode_notification, encode_request, meta, method, CallToolParams, CallToolResult,
    CancelledParams, RequestId, RpcError, Tool,
};
use client_tools_core::registry::is_allowed;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot, watch};

/// Extra time the runtime waits beyond a call's timeout: the page's 2 s grace for late handlers
/// plus the network, so the page's own, more precise, outcome normally arrives first.
const ANSWER_SLACK: Duration = Duration::from_millis(2_500);

type Answer = Result<Value, RpcError>;

/// The live connection of a session.
struct Connection {
    generation: u64,
    outgoing: mpsc::UnboundedSender<String>,
}

#[derive(Default)]
struct State {
    connection: Option<Connection>,
    tools: Vec<Tool>,
    pending: HashMap<i64, (u64, oneshot::Sender<Answer>)>,
    generations: u64,
    connected_at: Option<SystemTime>,
}

pub struct PageSession {
    id: String,
    state: Mutex<State>,
    next_request: AtomicI64,
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
            next_request: AtomicI64::new(1),
            changes: watch::channel(0).0,
            allow,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
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
        if let Some(tool) = self.lock().tools.iter().find(|t| t.name == name) {
            if !is_allowed(&self.allow, tool.original_name()) {
                return outcome::not_allowed(name);
            }
        } else if !self.allow.is_empty() && !is_allowed(&self.allow, name) {
            return outcome::not_allowed(name);
        }
        let mut extensions = Map::new();
        extensions.insert(meta::TIMEOUT_MS.into(), (timeout.as_millis() as u64).into());
        let params = CallToolParams {
            name: name.to_owned(),
            arguments: Some(arguments),
            meta: Some(extensions),
        };
        let params = serde_json::to_value(params).unwrap_or_default();
        match self
            .request(method::TOOLS_CALL, params, timeout + ANSWER_SLACK)
            .await
        {
            Ok(Ok(value)) => serde_json::from_value(value).unwrap_or_else(|error| {
                CallToolResult::error(format!(
                    "the page sent a malformed tools/call result: {error}"
                ))
            }),
            Ok(Err(error)) => {
                CallToolResult::error(format!("the page refused the call: {}", error.message))
            }
            Err(failure) => CallToolResult::error(failure.describe(&self.id, timeout)),
        }
    }

    /// Sends a request to the page and waits for its answer.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Answer, RequestFailure> {
        let id = self.next_request.fetch_add(1, Ordering::Relaxed);
        let (answer_tx, answer_rx) = oneshot::channel();
        {
            let mut state = self.lock();
            let Some(connection) = &state.connection else {
                return Err(RequestFailure::NotConnected);
            };
            let frame = encode_request(&RequestId::Number(id), method, &params);
            if connection.outgoing.send(frame).is_err() {
                return Err(RequestFailure::NotConnected);
            }
            let generation = connection.generation;
            state.pending.insert(id, (generation, answer_tx));
        }
        match tokio::time::timeout(timeout, answer_rx).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(RequestFailure::Disconnected),
            Err(_) => {
                self.lock().pending.remove(&id);
                self.notify_page(
                    method::CANCELLED,
                    &CancelledParams {
                        request_id: RequestId::Number(id),
                        reason: Some("the runtime stopped waiting (timeout)".into()),
                    },
                );
                Err(RequestFailure::TimedOut)
            }
        }
    }

    /// Sends a notification to the page if it is connected.
    pub(crate) fn notify_page(&self, method: &str, params: &impl serde::Serialize) {
        if let Some(connection) = &self.lock().connection {
            let _ = connection
                .outgoing
                .send(encode_notification(method, params));
        }
    }

    /// A page connection starts: returns its generation (to tell stale connections apart).
    pub(crate) fn attach(&self, outgoing: mpsc::UnboundedSender<String>) -> u64 {
        let mut state = self.lock();
        state.generations += 1;
        let generation = state.generations;
        state.connection = Some(Connection {
            generation,
            outgoing,
        });
        state.connected_at = Some(SystemTime::now());
        drop(state);
        self.changes.send_modify(|n| *n += 1);
        generation
    }

    /// The connection of `generation` ended: calls waiting on it fail at once.
    pub(crate) fn detach(&self, generation: u64) {
        let mut state = self.lock();
        if state.connection.as_ref().map(|c| c.generation) == Some(generation) {
            state.connection = None;
        }
        // Dropping the senders wakes each waiter with "page disconnected".
        state.pending.retain(|_, (g, _)| *g != generation);
        drop(state);
        self.changes.send_modify(|n| *n += 1);
    }

    /// An answer from the page.
    pub(crate) fn resolve(&self, id: &RequestId, answer: Answer) {
        let RequestId::Number(id) = id else { return };
        if let Some((_, waiter)) = self.lock().pending.remove(id) {
            let _ = waiter.send(answer);
        }
    }

    pub(crate) fn set_tools(&self, tools: Vec<Tool>) {
        self.lock().tools = tools;
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
        }
    }
}

/// Shared handle.
pub type SessionRef = Arc<PageSession>;
