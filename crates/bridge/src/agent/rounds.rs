//! A page's call that asks the agent something, as the bridge keeps it (SPEC §4 "Asking
//! mid-call", §11): [`RunningCall`] is the page's call running on its own task, with the page's
//! events (logs, rounds), progress and outcome as channels; [`drive`] relays them to whoever
//! called ([`AgentSide`]: an MCP request on this node or on another one, an `/api` request) until
//! the call ends or a round needs answers the caller gives by retrying; [`Suspended`] keeps the
//! call between that answer and the retry, found again by the `requestState` the bridge sealed
//! (HMAC under the bridge's key, crate::agent::request_state) and bound to the page session, the
//! suspension, its round, the tool's definition and the arguments, and naming the cluster node
//! that keeps it ([`holder`]: a retry that reaches another node is carried there, crate::
//! cluster). A state is single-use (a fresh nonce every time one is issued) and expires with the
//! human bound (`REQUEST_STATE_TTL_MS`, crate::limits); suspended calls are bounded, the oldest
//! forgotten first (forgetting one cancels its page call), so orphaned rounds never block new
//! calls. The rules of a round — capabilities, answers, retries — are here once, for every route.

// Sampling and roots are deprecated by SEP-2577 in rmcp, yet the revisions the bridge speaks
// have them, and pages use them (SPEC §4 "Asking mid-call").
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use client_tools_core::protocol::{
    self, method, CallToolResult, ProgressParams, RequestId, RpcError,
};
use client_tools_core::registry::TaskSupport;
use futures_util::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, CreateMessageResult, ElicitResult, InputResponses, ListRootsResult,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};

use crate::agent::request_state::{unsealed_payload, RequestStates};
use crate::calls::prepared_call::{resolve_name, PreparedCall};
use crate::calls::served::ServedRequest;
use crate::ids::{hex, now_unix_ms, random_hex};
use crate::limits::{
    ANSWER_SLACK, LOG_BUFFER, MAX_SUSPENDED_CALLS, REQUEST_STATE_TTL_MS, TASK_AFTER,
};
use crate::sessions::call_options::CallOptions;
use crate::sessions::call_options::{CallEvent, InputRound};
use crate::sessions::page_session::{missing_capability_error, PageSession};
use crate::sessions::user_tabs;

/// The prefix of a round's `requestState` (a confirmation's is `v1`).
pub(crate) const STATE_DOMAIN: &str = "r1";

/// A page call running on its own task. Dropping it cancels the page's call (its handler's
/// `ctx.signal` aborts) unless it has ended.
pub(crate) struct RunningCall<T = CallToolResult> {
    pub page: Arc<PageSession>,
    pub events: mpsc::Receiver<CallEvent>,
    pub progress: mpsc::Receiver<ProgressParams>,
    pub outcome: oneshot::Receiver<Option<Result<T, RpcError>>>,
    cancel: Option<oneshot::Sender<String>>,
    /// A tool call's W3C `traceparent` (checked), for the log events about it.
    pub traceparent: Option<String>,
}

impl RunningCall<Value> {
    /// Starts serving `request` on `page` (a prompt, a resource read, a completion: SPEC §11),
    /// its page's rounds, logs and progress relayed as a tool call's are.
    pub(crate) fn serve(
        page: Arc<PageSession>,
        request: ServedRequest,
        meta: Option<Map<String, Value>>,
        progress_buffer: usize,
    ) -> Self {
        let (cancel, cancelled) = oneshot::channel::<String>();
        let (events_tx, events) = mpsc::channel(LOG_BUFFER + 1);
        let (progress_tx, progress) = mpsc::channel(progress_buffer.max(1));
        let (outcome_tx, outcome) = oneshot::channel();
        let running = page.clone();
        tokio::spawn(async move {
            let cancel = async move {
                cancelled
                    .await
                    .unwrap_or_else(|_| "the agent stopped waiting".to_owned())
            };
            let mut options = CallOptions::new()
                .cancel(cancel)
                .progress(progress_tx)
                .events(events_tx);
            if let Some(meta) = meta {
                options = options.meta(meta);
            }
            let _ = outcome_tx.send(running.serve(request, options).await);
        });
        Self {
            page,
            events,
            progress,
            outcome,
            cancel: Some(cancel),
            traceparent: None,
        }
    }
}

impl<T> RunningCall<T> {
    /// Cancels the page's call with `reason` (the page is told; no result follows).
    pub(crate) fn cancel(mut self, reason: &str) {
        if let Some(cancel) = self.cancel.take() {
            let _ = cancel.send(reason.to_owned());
        }
    }

    /// Cancels the page's call with `reason` and waits for how it ended: `None` (cancelled, no
    /// result), or the page's answer to the cancel when it carries the handler's partial value
    /// (an error result, SPEC §7). Bounded: the request engine awaits that answer for
    /// [`ANSWER_SLACK`] at most (this waits twice that, should the engine's timer be late).
    pub(crate) async fn cancel_for_answer(mut self, reason: &str) -> Option<Result<T, RpcError>> {
        if let Some(cancel) = self.cancel.take() {
            let _ = cancel.send(reason.to_owned());
        }
        match tokio::time::timeout(ANSWER_SLACK * 2, self.outcome).await {
            Ok(Ok(outcome)) => outcome,
            _ => None,
        }
    }
}

impl RunningCall {
    /// Starts `call` on `page`.
    pub(crate) fn start(
        page: Arc<PageSession>,
        call: PreparedCall,
        progress_buffer: usize,
    ) -> Self {
        let (cancel, cancelled) = oneshot::channel::<String>();
        let (events_tx, events) = mpsc::channel(LOG_BUFFER + 1);
        let (progress_tx, progress) = mpsc::channel(progress_buffer.max(1));
        let (outcome_tx, outcome) = oneshot::channel();
        let running = page.clone();
        let traceparent = call.traceparent().map(str::to_owned);
        tokio::spawn(async move {
            let cancel = async move {
                cancelled
                    .await
                    .unwrap_or_else(|_| "the agent stopped waiting".to_owned())
            };
            let options = CallOptions::new()
                .cancel(cancel)
                .progress(progress_tx)
                .events(events_tx);
            let outcome = running.call_tool(call, options).await.into_outcome();
            let _ = outcome_tx.send(outcome);
        });
        Self {
            page,
            events,
            progress,
            outcome,
            cancel: Some(cancel),
            traceparent,
        }
    }

    /// Starts `call` on `page` for a caller that declared the tasks extension or not, unless its
    /// tool's calls must be tasks and this node's task book has no room for one: then the error
    /// result naming the limit, and the page never sees the call. (Room taken in between is
    /// still refused by [`drive`], which then cancels the call.)
    pub(crate) fn start_checked(
        rounds: &Rounds,
        page: Arc<PageSession>,
        call: PreparedCall,
        declares_tasks: bool,
        progress_buffer: usize,
    ) -> Result<Self, protocol::CallToolResult> {
        let required = declares_tasks && task_support(&page, call.name()) == TaskSupport::Required;
        if let Some(host) = rounds.tasks.get().filter(|_| required) {
            host.room(page.id())
                .map_err(protocol::CallToolResult::error)?;
        }
        Ok(Self::start(page, call, progress_buffer))
    }
}

/// What a page's answer is, for [`drive`] and [`resume`]: a tool call's result (which may become
/// an MCP task) or a served request's (`resources/read`, `prompts/get`, `completion/complete`:
/// never a task, its rounds kept apart from tool calls').
pub(crate) trait PageAnswer: Sized + Send + 'static {
    /// Where calls of this kind wait for the agent's retry.
    fn suspended(rounds: &Rounds) -> &SuspendedCalls<Self>;
    /// How the call named `name` may run as a task, for an agent that declared tasks.
    fn task_support(page: &PageSession, name: &str) -> TaskSupport;
    /// Makes `running` a task (see [`TaskHost::start`]).
    #[allow(clippy::type_complexity, clippy::result_large_err)]
    fn start_task(
        host: &dyn TaskHost,
        holder: &str,
        running: RunningCall<Self>,
        capabilities: ClientCapabilities,
        pending: Option<InputRound>,
    ) -> Result<Value, (RunningCall<Self>, Option<InputRound>, String)>;
    /// The end of a call the bridge stops, saying `why`.
    fn failed(why: String) -> Result<Self, RpcError>;
    /// The digest of the call's definition now (a state is refused when it changed).
    fn digest_now(page: &PageSession, call: &CallKey) -> String;
}

impl PageAnswer for CallToolResult {
    fn suspended(rounds: &Rounds) -> &SuspendedCalls<Self> {
        &rounds.suspended
    }

    fn task_support(page: &PageSession, name: &str) -> TaskSupport {
        task_support(page, name)
    }

    fn start_task(
        host: &dyn TaskHost,
        holder: &str,
        running: RunningCall,
        capabilities: ClientCapabilities,
        pending: Option<InputRound>,
    ) -> Result<Value, (RunningCall, Option<InputRound>, String)> {
        host.start(holder, running, capabilities, pending)
    }

    fn failed(why: String) -> Result<Self, RpcError> {
        Ok(CallToolResult::error(why))
    }

    fn digest_now(page: &PageSession, call: &CallKey) -> String {
        tool_digest(page.tools().iter().find(|t| t.name == call.tool))
    }
}

impl PageAnswer for Value {
    fn suspended(rounds: &Rounds) -> &SuspendedCalls<Self> {
        &rounds.served
    }

    fn task_support(_page: &PageSession, _name: &str) -> TaskSupport {
        TaskSupport::Forbidden
    }

    fn start_task(
        _host: &dyn TaskHost,
        _holder: &str,
        running: RunningCall<Self>,
        _capabilities: ClientCapabilities,
        pending: Option<InputRound>,
    ) -> Result<Value, (RunningCall<Self>, Option<InputRound>, String)> {
        Err((
            running,
            pending,
            "a served request never becomes a task".into(),
        ))
    }

    fn failed(why: String) -> Result<Self, RpcError> {
        Err(RpcError::new(protocol::code::INTERNAL_ERROR, why))
    }

    fn digest_now(_page: &PageSession, call: &CallKey) -> String {
        call.tool_digest.clone()
    }
}

/// A call suspended on a round (2026-07-28) until the agent retries.
pub(crate) struct Suspended<T = CallToolResult> {
    pub running: RunningCall<T>,
    pub call: CallKey,
    /// Rounds asked so far in this call (1 for the first).
    pub round: u32,
    /// The page's open round: its request id and all its requests.
    pub round_id: RequestId,
    pub requests: Map<String, Value>,
    /// Answers received so far for this round (the retry asked again for the rest).
    pub answered: Map<String, Value>,
    /// The nonce of the one state that may redeem it now.
    nonce: String,
    expires: Instant,
}

/// What a call is, for the `requestState` of its rounds.
#[derive(Debug, Clone)]
pub(crate) struct CallKey {
    /// The page session and tool (as the caller named it) of the call.
    pub page_session: String,
    pub tool: String,
    /// [`tool_digest`] of the tool's definition when the call was made.
    pub tool_digest: String,
    /// [`arguments_digest`] of the call's arguments.
    pub arguments: String,
}

/// What a round's `requestState` says (integrity-protected, readable: hashes only).
#[derive(Serialize, Deserialize)]
struct Claims {
    /// The cluster node keeping the suspended call (empty outside a cluster).
    #[serde(default)]
    o: String,
    /// The suspension's key in the store.
    k: String,
    /// Round number.
    r: u32,
    /// Hash of the page session id.
    p: String,
    /// Tool definition digest.
    d: String,
    /// Nonce.
    n: String,
    /// Expiry, unix milliseconds.
    e: u64,
}

/// Why a retry was refused (a JSON-RPC `-32602` for the agent).
pub(crate) type Refusal = String;

/// The bridge's suspended calls (of one kind: tool calls, or served requests).
pub(crate) struct SuspendedCalls<T = CallToolResult> {
    calls: Mutex<HashMap<String, Suspended<T>>>,
}

impl<T> Default for SuspendedCalls<T> {
    fn default() -> Self {
        Self {
            calls: Mutex::default(),
        }
    }
}

impl<T> SuspendedCalls<T> {
    /// Keeps `running` (its nonce and expiry are set here) and returns the state that resumes it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn suspend(
        &self,
        states: &RequestStates,
        holder: &str,
        running: RunningCall<T>,
        call: CallKey,
        round: u32,
        round_id: RequestId,
        requests: Map<String, Value>,
        answered: Map<String, Value>,
    ) -> String {
        let suspended = Suspended {
            running,
            call,
            round,
            round_id,
            requests,
            answered,
            nonce: String::new(),
            expires: Instant::now(),
        };
        self.keep(states, holder, random_hex(16), suspended)
    }

    /// Keeps `suspended` under `key` with a fresh nonce and expiry; returns its new state.
    pub(crate) fn keep(
        &self,
        states: &RequestStates,
        holder: &str,
        key: String,
        mut suspended: Suspended<T>,
    ) -> String {
        suspended.nonce = random_hex(16);
        suspended.expires = Instant::now() + Duration::from_millis(REQUEST_STATE_TTL_MS);
        let claims = Claims {
            o: holder.to_owned(),
            k: key.clone(),
            r: suspended.round,
            p: short_hash(&suspended.call.page_session),
            d: suspended.call.tool_digest.clone(),
            n: suspended.nonce.clone(),
            e: now_unix_ms() + REQUEST_STATE_TTL_MS,
        };
        let payload = serde_json::to_vec(&claims).expect("strings and numbers");
        let mut calls = self.lock();
        forget_expired(&mut calls);
        while calls.len() >= MAX_SUSPENDED_CALLS {
            let Some(oldest) = calls
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(forgotten) = calls.remove(&oldest) {
                forgotten
                    .running
                    .cancel("too many calls waiting for agents' answers on this bridge");
            }
        }
        calls.insert(key, suspended);
        states.seal(STATE_DOMAIN, &payload)
    }

    /// The suspended call `state` resumes, taken out of the store (with its key), if `state` is
    /// this bridge's, unaltered, unexpired and the current one of a call of page session `page`.
    pub(crate) fn take(
        &self,
        states: &RequestStates,
        state: &str,
        page: &str,
    ) -> Result<(String, Suspended<T>), Refusal> {
        let payload = states
            .open(STATE_DOMAIN, state)
            .ok_or("requestState integrity check failed (not issued by this bridge, or altered)")?;
        let claims: Claims =
            serde_json::from_slice(&payload).map_err(|_| "requestState integrity check failed")?;
        if now_unix_ms() >= claims.e {
            return Err(format!(
                "requestState expired (valid for {} s): make the request again without it",
                REQUEST_STATE_TTL_MS / 1000
            ));
        }
        if claims.p != short_hash(page) {
            return Err("requestState was issued for another page session".into());
        }
        let mut calls = self.lock();
        forget_expired(&mut calls);
        let fits = calls.get(&claims.k).is_some_and(|s| {
            s.nonce == claims.n && s.round == claims.r && s.call.tool_digest == claims.d
        });
        if !fits {
            return Err(
                "requestState was already used, or its call ended or was forgotten: call the \
                 tool again"
                    .into(),
            );
        }
        let suspended = calls.remove(&claims.k).expect("checked above");
        Ok((claims.k, suspended))
    }

    /// Puts a call [`Self::take`] took back as it was (same state, same expiry): its retry was
    /// refused for malformed answers, and the caller may send them again, well-formed.
    pub(crate) fn put_back(&self, key: String, suspended: Suspended<T>) {
        if suspended.expires > Instant::now() {
            self.lock().insert(key, suspended);
        }
    }

    /// Suspended calls kept now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Suspended<T>>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The bridge's rounds: its suspended calls, the key that seals their states, and — in a
/// cluster — this node's id, which every state names as the one keeping its call; and where calls
/// that become MCP tasks go (crate::agent::tasks).
#[derive(Default)]
pub(crate) struct Rounds {
    pub suspended: SuspendedCalls,
    /// Served requests (prompts, resource reads, completions) suspended on a round.
    pub served: SuspendedCalls<Value>,
    pub states: RequestStates,
    node: OnceLock<String>,
    tasks: OnceLock<Arc<dyn TaskHost>>,
}

impl Rounds {
    /// This node's id, once it joined a cluster (set once).
    pub(crate) fn set_node(&self, node: &str) {
        let _ = self.node.set(node.to_owned());
    }

    pub(crate) fn holder(&self) -> &str {
        self.node.get().map_or("", String::as_str)
    }

    /// Where calls that become tasks go (set once).
    pub(crate) fn set_tasks(&self, tasks: Arc<dyn TaskHost>) {
        let _ = self.tasks.set(tasks);
    }
}

/// What keeps the calls that became MCP tasks (crate::agent::tasks).
pub(crate) trait TaskHost: Send + Sync {
    /// Whether a task of `page_session` may be created now: why not, naming the limit.
    fn room(&self, page_session: &str) -> Result<(), String>;
    /// Makes `running` a task of its page session, run for an agent that declared `capabilities`,
    /// with the round `pending` the page already asked: the `CreateTaskResult` fields; or the call
    /// back with why there is no room for it.
    // Not boxed: the refusal is rare (a full book), the call is moved back once.
    #[allow(clippy::type_complexity, clippy::result_large_err)]
    fn start(
        &self,
        holder: &str,
        running: RunningCall,
        capabilities: ClientCapabilities,
        pending: Option<InputRound>,
    ) -> Result<Value, (RunningCall, Option<InputRound>, String)>;
}

/// The `taskSupport` of the tool a call's `tool` means, in the merged view agents see
/// (`PageSession::tools`, crate::calls::prepared_call's resolution): a `--tools` tool's (also when the page
/// registered a handler for it) unless a page tool of its own hides it, else as the page lists it
/// (MCP `execution.taskSupport`; absent: forbidden). No list is copied.
pub(crate) fn task_support(page: &PageSession, tool: &str) -> TaskSupport {
    let listed = page.page_tools();
    let agent_tools = page.agent_tools();
    let name = resolve_name(tool, agent_tools, &listed);
    if let Some(file_tool) = agent_tools.for_call(&name, &listed) {
        return file_tool.task_support;
    }
    listed
        .iter()
        .find(|t| t.name == name)
        .and_then(|t| {
            let given = t.execution.as_ref()?.get("taskSupport")?.as_str()?;
            TaskSupport::parse(given)
        })
        .unwrap_or(TaskSupport::Forbidden)
}

/// The refusal of a call of a tool whose calls must be tasks, for a caller that did not declare
/// the tasks extension (`-32021` with the extension in `requiredCapabilities`), before it runs.
pub(crate) fn task_refusal(
    page: &PageSession,
    tool: &str,
    declares_tasks: bool,
) -> Option<RpcError> {
    if declares_tasks || task_support(page, tool) != TaskSupport::Required {
        return None;
    }
    let mut error = RpcError::new(
        -32021,
        format!(
            "tool '{tool}' runs only as a task: declare the {} extension",
            rmcp::model::TASKS_EXTENSION_ID
        ),
    );
    error.data = Some(serde_json::json!({
        "requiredCapabilities": {"extensions": {rmcp::model::TASKS_EXTENSION_ID: {}}}
    }));
    Some(error)
}

/// The node a round's `requestState` names as keeping its call, read without checking the state
/// (only that node can: it holds the key). `None` outside a cluster or when it is no round state.
/// A forged name at worst sends the retry to a node that refuses it, or to none.
pub(crate) fn holder(state: &str) -> Option<String> {
    let payload = unsealed_payload(STATE_DOMAIN, state)?;
    let claims: Claims = serde_json::from_slice(&payload).ok()?;
    (!claims.o.is_empty()).then_some(claims.o)
}

/// Which of `sessions` a `requestState` was issued for (read, not verified: [`Rounds::take`]
/// checks it again): an agent over a user's tabs resumes the round on the tab that asked it.
pub(crate) fn page_session_of<'a>(state: &str, sessions: &[&'a str]) -> Option<&'a str> {
    let payload = unsealed_payload(STATE_DOMAIN, state)?;
    let claims: Claims = serde_json::from_slice(&payload).ok()?;
    sessions
        .iter()
        .find(|session| short_hash(session) == claims.p)
        .copied()
}

/// Which of a user's tabs (`pages`, SPEC §13) a call of `tool` runs on: a retry (with `state`)
/// on the tab whose round it answers — a state of none of these tabs goes to the front-most one,
/// which refuses it as another page session's —, else the tab `meta`'s `clienttools/session`
/// names, else the one offering the tool that was most recently in front (`user_tabs::route`).
pub(crate) fn user_tab(
    pages: &[Arc<PageSession>],
    tool: &str,
    state: Option<&str>,
    meta: Option<&Map<String, Value>>,
) -> Result<Arc<PageSession>, String> {
    if let Some(state) = state {
        let ids: Vec<&str> = pages.iter().map(|page| page.id()).collect();
        let asked = page_session_of(state, &ids).map(str::to_owned);
        let page = match asked {
            Some(id) => pages.iter().find(|page| page.id() == id).cloned(),
            None => user_tabs::front_most(pages),
        };
        return page.ok_or_else(|| "no open tab of this user: open the page again".to_owned());
    }
    match meta.and_then(|meta| meta.get(protocol::meta::SESSION)) {
        None => user_tabs::route(pages, tool, None),
        Some(Value::String(id)) => user_tabs::route(pages, tool, Some(id)),
        Some(other) => Err(format!(
            "_meta '{}' must be a page session id (a string), not {other}",
            protocol::meta::SESSION
        )),
    }
}

/// The caller's side of a page call while [`drive`] relays it: what the caller declared it can
/// answer, and where the page's progress and log messages go.
pub(crate) trait AgentSide: Send + Sync {
    /// The client capabilities the caller declared (elicitation, sampling, roots).
    fn capabilities(&self) -> ClientCapabilities;
    /// Whether the caller declared the MCP tasks extension (its calls may become tasks).
    fn declares_tasks(&self) -> bool {
        self.capabilities().supports_tasks()
    }
    /// The page's progress on the call.
    fn progress(&self, update: ProgressParams) -> BoxFuture<'_, ()>;
    /// One of the page's log messages about the call (`clienttools/callId` removed).
    fn log(&self, params: Map<String, Value>) -> BoxFuture<'_, ()>;
    /// Completes when the caller gave up on the call (never, for some).
    fn cancelled(&self) -> BoxFuture<'_, ()>;
    /// Revision 2025-11-25: sends a round's requests to the agent now and resolves to the page's
    /// `{inputResponses}`. `None`: the caller answers by retrying with a `requestState`.
    fn ask(
        &self,
        _requests: &Map<String, Value>,
    ) -> Option<BoxFuture<'static, Result<Value, RpcError>>> {
        None
    }
}

/// Where [`drive`] left a call.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Driven<T = CallToolResult> {
    /// The call ended: its outcome (`None`: cancelled, no result).
    Ended(Option<Result<T, RpcError>>),
    /// A round needs the caller's answers: these requests, and the state to retry with.
    InputRequired {
        requests: Map<String, Value>,
        state: String,
    },
    /// The caller's retry or answers were refused (JSON-RPC `-32602` with this reason).
    Refused(String),
    /// The call became an MCP task: the `CreateTaskResult` fields (crate::agent::tasks).
    Task(Value),
}

/// A caller's retry of a suspended call: the state it was given, the call as it names it again,
/// and its answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Retry {
    pub state: String,
    /// The page session the caller is bound to.
    pub page_session: String,
    pub tool: String,
    pub arguments: Map<String, Value>,
    #[serde(default)]
    pub responses: InputResponses,
}

/// Relays what the page sends about a running call to `agent` until the call ends or a round
/// needs answers the agent gives by retrying: the call is suspended (kept by `rounds`) and the
/// agent gets the requests and a state. A round needing a capability the agent did not declare
/// is refused to the page as such (`-32021` if the handler lets it propagate). `asked`: rounds
/// asked so far; `supplied`: answers the agent gave for the next round (2026-07-28: a fresh
/// call's `inputResponses`).
pub(crate) async fn drive<T: PageAnswer>(
    rounds: &Rounds,
    mut running: RunningCall<T>,
    agent: &dyn AgentSide,
    call: CallKey,
    mut asked: u32,
    mut supplied: Option<InputResponses>,
) -> Driven<T> {
    let mut cancelled = agent.cancelled();
    let mut asking: Option<(RequestId, BoxFuture<'static, Result<Value, RpcError>>)> = None;
    // A call the caller may have as a task becomes one after [`TASK_AFTER`]. What the page asks
    // before that decides by the tool's `taskSupport` (docs/api.md, *Long calls as tasks*): an
    // `optional` call becomes a task at its first question, which waits in the task; a `required`
    // call asks on the `tools/call` itself (multi round-trip) and is always a task in the end —
    // one that ends within the window is a task already completed (SEP-2663: a server unable to
    // answer without a task says so, so a `required` tool's caller always gets one).
    // (Checked once per call, without copying anything, for callers that declare no tasks.)
    let support = match agent.declares_tasks() {
        true => T::task_support(&running.page, &call.tool),
        false => TaskSupport::Forbidden,
    };
    let mut tasking = (support != TaskSupport::Forbidden)
        .then(|| rounds.tasks.get().cloned())
        .flatten();
    let window = tokio::time::sleep(TASK_AFTER);
    tokio::pin!(window);
    loop {
        // Biased: what the page sent before its result or its next round (progress, logs)
        // goes to the agent first (on 2026-07-28 the request's stream ends with the response: a
        // notification sent after it is lost).
        tokio::select! {
            biased;
            () = &mut cancelled => {
                running.cancel("cancelled by the agent");
                return Driven::Ended(None);
            }
            () = &mut window, if tasking.is_some() && asking.is_none() => {
                let host = tasking.take().expect("guarded");
                match T::start_task(&*host, rounds.holder(), running, agent.capabilities(), None) {
                    Ok(task) => return Driven::Task(task),
                    Err((back, _, why)) => {
                        running = back;
                        if support == TaskSupport::Required {
                            running.cancel("no room for its task");
                            return Driven::Ended(Some(T::failed(why)));
                        }
                    }
                }
            }
            Some(update) = running.progress.recv() => agent.progress(update).await,
            Some(event) = running.events.recv() => match event {
                CallEvent::Log(params) => agent.log(params).await,
                CallEvent::Input(mut round) => {
                    asked += 1;
                    if let Some(host) = tasking.clone().filter(|_| support != TaskSupport::Required) {
                        tasking = None;
                        match T::start_task(&*host, rounds.holder(), running, agent.capabilities(), Some(round)) {
                            Ok(task) => return Driven::Task(task),
                            Err((back, pending, why)) => {
                                (running, round) = (back, pending.expect("given back"));
                                if support == TaskSupport::Required {
                                    running.cancel("no room for its task");
                                    return Driven::Ended(Some(T::failed(why)));
                                }
                            }
                        }
                    }
                    let capabilities = agent.capabilities();
                    let lacking: Map<String, Value> = round
                        .requests
                        .iter()
                        .filter(|(_, request)| !declared(&capabilities, request))
                        .map(|(key, request)| (key.clone(), request.clone()))
                        .collect();
                    if !lacking.is_empty() {
                        running.page.answer_round(&round.id, Err(missing_capability_error(&lacking)));
                        continue;
                    }
                    if let Some(ask) = agent.ask(&round.requests) {
                        asking = Some((round.id, ask));
                        continue;
                    }
                    let answered = match supplied.take() {
                        Some(given) => match check_responses(&round.requests, &given) {
                            Ok(answered) => answered,
                            Err(why) => {
                                running.cancel("the agent's answers were malformed");
                                return Driven::Refused(why);
                            }
                        },
                        None => Map::new(),
                    };
                    if answered.len() == round.requests.len() {
                        let responses = serde_json::json!({"inputResponses": answered});
                        running.page.answer_round(&round.id, Ok(responses));
                        continue;
                    }
                    let requests = still_asked(&round.requests, &answered);
                    let state = T::suspended(rounds).suspend(
                        &rounds.states,
                        rounds.holder(),
                        running,
                        call,
                        asked,
                        round.id,
                        round.requests,
                        answered,
                    );
                    return Driven::InputRequired { requests, state };
                }
            },
            answer = async { asking.as_mut().expect("guarded").1.as_mut().await }, if asking.is_some() => {
                let (id, _) = asking.take().expect("guarded");
                running.page.answer_round(&id, answer);
            }
            outcome = &mut running.outcome => {
                // The page sent its progress and logs before its answer (they may have come
                // in after the branches above were polled): they go first.
                while let Ok(update) = running.progress.try_recv() {
                    agent.progress(update).await;
                }
                while let Ok(event) = running.events.try_recv() {
                    if let CallEvent::Log(params) = event {
                        agent.log(params).await;
                    }
                }
                let outcome = outcome.ok().flatten();
                let required = tasking.take().filter(|_| support == TaskSupport::Required);
                return match (required, outcome) {
                    (Some(host), Some(ended)) => completed_task(rounds, host, running, agent, ended),
                    (_, outcome) => Driven::Ended(outcome),
                };
            }
        }
    }
}

/// A `required` tool's call that ended before it became a task: a task already completed with
/// `outcome` (or, with no room for a task, the error result naming the limit).
fn completed_task<T: PageAnswer>(
    rounds: &Rounds,
    host: Arc<dyn TaskHost>,
    mut running: RunningCall<T>,
    agent: &dyn AgentSide,
    outcome: Result<T, RpcError>,
) -> Driven<T> {
    let (settle, settled) = oneshot::channel();
    let _ = settle.send(Some(outcome));
    running.outcome = settled;
    match T::start_task(&*host, rounds.holder(), running, agent.capabilities(), None) {
        Ok(task) => Driven::Task(task),
        Err((_, _, why)) => Driven::Ended(Some(T::failed(why))),
    }
}

/// A retry of a suspended call on this node: its state checked and spent, the call as named
/// again checked against it (tool, arguments, the tool's definition now), its answers checked;
/// missing answers are asked again (a new state), and once the round is answered the call goes
/// on ([`drive`]) to its end or its next round.
pub(crate) async fn resume<T: PageAnswer>(
    rounds: &Rounds,
    retry: Retry,
    agent: &dyn AgentSide,
) -> Driven<T> {
    let suspended = T::suspended(rounds);
    let (key, mut call) = match suspended.take(&rounds.states, &retry.state, &retry.page_session) {
        Ok(taken) => taken,
        Err(why) => return Driven::Refused(why),
    };
    let arguments = arguments_digest(&Value::Object(retry.arguments));
    let page = call.running.page.clone();
    let tool_now = T::digest_now(&page, &call.call);
    let mismatch = if call.call.tool != retry.tool {
        Some(format!(
            "requestState was issued for tool '{}', not '{}'",
            call.call.tool, retry.tool
        ))
    } else if call.call.arguments != arguments {
        Some("requestState was issued for other arguments".to_owned())
    } else if call.call.tool_digest != tool_now {
        Some(format!(
            "tool '{}' changed since the question (its definition): call it again",
            call.call.tool
        ))
    } else {
        None
    };
    if let Some(why) = mismatch {
        call.running
            .cancel("the agent's retry did not match its call");
        return Driven::Refused(why);
    }
    let unanswered = still_asked(&call.requests, &call.answered);
    let answered = match check_responses(&unanswered, &retry.responses) {
        Ok(answered) => answered,
        Err(why) => {
            // Not spent: the agent may send well-formed answers with the same state.
            suspended.put_back(key, call);
            return Driven::Refused(why);
        }
    };
    call.answered.extend(answered);
    if call.answered.len() < call.requests.len() {
        let requests = still_asked(&call.requests, &call.answered);
        let state = suspended.keep(&rounds.states, rounds.holder(), key, call);
        return Driven::InputRequired { requests, state };
    }
    let responses = serde_json::json!({"inputResponses": call.answered});
    page.answer_round(&call.round_id, Ok(responses));
    drive(rounds, call.running, agent, call.call, call.round, None).await
}

/// Whether the agent declared what `request` (`{method, params}`) needs; a bare `elicitation: {}`
/// means form.
pub(crate) fn declared(capabilities: &ClientCapabilities, request: &Value) -> bool {
    match request.get("method").and_then(Value::as_str) {
        Some(method::ELICITATION_CREATE) => {
            let url = request.pointer("/params/mode").and_then(Value::as_str) == Some("url");
            capabilities
                .elicitation
                .as_ref()
                .is_some_and(|e| match url {
                    true => e.url.is_some(),
                    false => e.form.is_some() || e.url.is_none(),
                })
        }
        Some(method::SAMPLING_CREATE_MESSAGE) => capabilities.sampling.is_some(),
        Some(method::ROOTS_LIST) => capabilities.roots.is_some(),
        _ => false,
    }
}

/// The answers in `given` to the requests of `requests` that it has (extra keys ignored), each
/// checked against its request's result type; an answer that is not one is an error naming it.
pub(crate) fn check_responses(
    requests: &Map<String, Value>,
    given: &InputResponses,
) -> Result<Map<String, Value>, String> {
    let mut answered = Map::new();
    for (key, request) in requests {
        let Some(answer) = given.get(key) else {
            continue;
        };
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let read = match method {
            method::ELICITATION_CREATE => {
                serde_json::from_value::<ElicitResult>(answer.clone()).map(drop)
            }
            method::SAMPLING_CREATE_MESSAGE => {
                serde_json::from_value::<CreateMessageResult>(answer.clone()).map(drop)
            }
            _ => serde_json::from_value::<ListRootsResult>(answer.clone()).map(drop),
        };
        read.map_err(|error| {
            format!("inputResponses['{key}'] is not an answer to {method}: {error}")
        })?;
        answered.insert(key.clone(), answer.clone());
    }
    Ok(answered)
}

/// The requests of `requests` not answered yet.
pub(crate) fn still_asked(
    requests: &Map<String, Value>,
    answered: &Map<String, Value>,
) -> Map<String, Value> {
    requests
        .iter()
        .filter(|(key, _)| !answered.contains_key(*key))
        .map(|(key, request)| (key.clone(), request.clone()))
        .collect()
}

/// Forgets (and cancels) the suspended calls whose time is over.
fn forget_expired<T>(calls: &mut HashMap<String, Suspended<T>>) {
    let now = Instant::now();
    let expired: Vec<String> = calls
        .iter()
        .filter(|(_, s)| s.expires <= now)
        .map(|(k, _)| k.clone())
        .collect();
    for key in expired {
        if let Some(forgotten) = calls.remove(&key) {
            forgotten.running.cancel("the agent did not answer in time");
        }
    }
}

/// SHA-256 of a tool's definition as listed (its JSON): a state is bound to it.
pub(crate) fn tool_digest(tool: Option<&client_tools_core::protocol::Tool>) -> String {
    let json = serde_json::to_vec(&tool).unwrap_or_default();
    hex(&Sha256::digest(&json))
}

/// SHA-256 of a call's arguments (their JSON as the agent sent them, keys in order).
pub(crate) fn arguments_digest(arguments: &Value) -> String {
    let json = serde_json::to_vec(arguments).unwrap_or_default();
    hex(&Sha256::digest(&json))
}

fn short_hash(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes())[..16])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::sessions::fake_page::{session, FakePage};

    fn suspend(calls: &SuspendedCalls, states: &RequestStates, page: &Arc<PageSession>) -> String {
        let call = page.prepare_call("ask", json!({}), None, None).unwrap();
        let running = RunningCall::start(page.clone(), call, 4);
        let call = CallKey {
            page_session: page.id().to_owned(),
            tool: "ask".into(),
            tool_digest: "digest".into(),
            arguments: arguments_digest(&json!({})),
        };
        calls.suspend(
            states,
            "",
            running,
            call,
            1,
            RequestId::Number(1),
            Map::new(),
            Map::new(),
        )
    }

    #[tokio::test]
    async fn a_state_resumes_its_call_once_and_a_tampered_one_never() {
        let page = session();
        let _page = FakePage::connect(&page);
        let (calls, states) = (SuspendedCalls::default(), RequestStates::default());
        let state = suspend(&calls, &states, &page);
        let tampered = format!("{state}-TAMPERED");
        let error = calls.take(&states, &tampered, page.id()).err().unwrap();
        assert!(error.contains("integrity check failed"), "{error}");
        let mut flipped = state.clone().into_bytes();
        flipped[5] = if flipped[5] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert!(calls.take(&states, &flipped, page.id()).is_err());
        let other = RequestStates::default();
        assert!(
            calls.take(&other, &state, page.id()).is_err(),
            "another bridge's key"
        );
        assert!(calls.take(&states, &state, "another-page").is_err());

        let (key, suspended) = calls.take(&states, &state, page.id()).unwrap();
        assert_eq!(calls.len(), 0);
        let again = calls.take(&states, &state, page.id()).err().unwrap();
        assert!(again.contains("already used"), "{again}");
        // Kept again (asked again for missing answers, or the next round): a new state.
        let next = calls.keep(&states, "0123456789abcdef", key, suspended);
        assert_eq!(holder(&next).as_deref(), Some("0123456789abcdef"));
        assert_eq!(holder(&state), None);
        assert_ne!(next, state);
        assert!(calls.take(&states, &state, page.id()).is_err());
        assert!(calls.take(&states, &next, page.id()).is_ok());
    }

    #[tokio::test]
    async fn a_call_put_back_after_malformed_answers_keeps_its_state() {
        let page = session();
        let _page = FakePage::connect(&page);
        let (calls, states) = (SuspendedCalls::default(), RequestStates::default());
        let state = suspend(&calls, &states, &page);
        let (key, suspended) = calls.take(&states, &state, page.id()).unwrap();
        calls.put_back(key, suspended);
        assert!(calls.take(&states, &state, page.id()).is_ok());
    }

    #[tokio::test]
    async fn suspended_calls_are_bounded_the_oldest_forgotten_first() {
        let page = crate::sessions::fake_page::session_with(crate::Limits {
            max_pending_per_session: MAX_SUSPENDED_CALLS + 8,
            ..Default::default()
        });
        let _page = FakePage::connect(&page);
        let (calls, states) = (SuspendedCalls::default(), RequestStates::default());
        let first = suspend(&calls, &states, &page);
        for _ in 0..MAX_SUSPENDED_CALLS {
            suspend(&calls, &states, &page);
        }
        assert_eq!(calls.len(), MAX_SUSPENDED_CALLS);
        assert!(calls.take(&states, &first, page.id()).is_err());
    }

    #[test]
    fn answers_are_checked_against_their_requests_and_extra_keys_ignored() {
        let requests = json!({
            "user_name": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}},
            "greeting": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}},
            "roots": {"method": "roots/list", "params": {}},
        });
        let requests = requests.as_object().unwrap();
        let given: InputResponses = serde_json::from_value(json!({
            "user_name": {"action": "accept", "content": {"name": "Alice"}},
            "greeting": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m", "stopReason": "endTurn"},
            "extra": {"action": "accept"},
        }))
        .unwrap();
        let answered = check_responses(requests, &given).unwrap();
        assert_eq!(
            answered.keys().collect::<Vec<_>>(),
            ["greeting", "user_name"]
        );
        let missing = still_asked(requests, &answered);
        assert_eq!(missing.keys().collect::<Vec<_>>(), ["roots"]);
        for malformed in [
            json!({"user_name": 12345}),
            json!({"roots": {"roots": "none"}}),
        ] {
            let given: InputResponses = serde_json::from_value(malformed).unwrap();
            let error = check_responses(requests, &given).unwrap_err();
            assert!(error.starts_with("inputResponses['"), "{error}");
        }
    }

    #[test]
    fn capabilities_declared_per_kind_of_request_and_bare_elicitation_is_form() {
        let caps = |value: Value| serde_json::from_value::<ClientCapabilities>(value).unwrap();
        let form = json!({"method": "elicitation/create", "params": {}});
        let url = json!({"method": "elicitation/create", "params": {"mode": "url"}});
        let sampling = json!({"method": "sampling/createMessage", "params": {}});
        let roots = json!({"method": "roots/list", "params": {}});
        let bare = caps(json!({"elicitation": {}}));
        assert!(declared(&bare, &form) && !declared(&bare, &url));
        assert!(!declared(&bare, &sampling) && !declared(&bare, &roots));
        let only_url = caps(json!({"elicitation": {"url": {}}}));
        assert!(!declared(&only_url, &form) && declared(&only_url, &url));
        let all = caps(json!({"sampling": {}, "roots": {"listChanged": true}}));
        assert!(declared(&all, &sampling) && declared(&all, &roots) && !declared(&all, &form));
    }
}
