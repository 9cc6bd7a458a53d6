//! A page session's calls: checked and prepared, sent and waited on (the engine decides when
//! they fail), cancelled; the page's progress and log messages on them.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use client_tools_core::call::outcome;
use client_tools_core::partial;
use client_tools_core::protocol::{
    self, encode_notification, encode_request, method, CallToolResult, ProgressParams, RequestId,
    TraceContext,
};
use client_tools_core::registry::is_allowed;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tracing::field;

use super::rounds::take_call_id;
use super::{now, run_timer, PageSession, State, Via, Waiter};
use crate::calls::policy::Who;
use crate::calls::policy_gate;
use crate::calls::prepared_call::{self, PreparedCall, RequestedTimeout};
pub use crate::calls::request_engine::RequestFailure;
use crate::calls::request_engine::{Answer, Purpose, Request, Settled};
use crate::calls::tool_annotations;
use crate::limits::ANSWER_SLACK;
use crate::sessions::call_options::{
    is_missing_capability, CallEnd, CallEvent, CallOptions, ToolCall,
};

/// Where a call's log messages and rounds go, and the `redact` rules they pass first.
pub(super) type Events = (
    Option<mpsc::Sender<CallEvent>>,
    Option<Arc<policy_gate::EventRedaction>>,
);

/// A request nobody hears log messages or rounds of.
const NO_EVENTS: Events = (None, None);

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

/// Gives a call's result its trace context back (`_meta.traceparent`, `tracestate`: the agent's,
/// as checked), replacing what the page put there.
fn traced(result: &mut CallToolResult, trace: Option<TraceContext>) {
    if let Some(trace) = trace {
        trace.put(result.meta.get_or_insert_with(Default::default));
    }
}

/// What a request's channel delivered. The engine settles every request it gives up on; a closed
/// channel means the session itself is gone.
fn outcome_of(received: Result<Settled, oneshot::error::RecvError>) -> Settled {
    received.unwrap_or(Err(RequestFailure::Disconnected))
}

/// The request `id`; `_meta.progressToken` is the id, so the page's progress reports name the
/// request they extend.
pub(super) fn new_request(
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

impl PageSession {
    /// Checks a call and decides what it carries (crate::calls::prepared_call): which tool `name` means (a
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
        // The caller's trace context, checked before anything logs or forwards it: what is not
        // W3C's is dropped with a warning (the call goes on), never logged.
        let (trace, dropped) = TraceContext::read(caller_meta);
        let traceparent = trace.as_ref().map(|trace| trace.traceparent.clone());
        if let Some(dropped) = dropped {
            tracing::info_span!("tool_call", session = %self.id, user = self.user.as_deref().unwrap_or(""), tool = ?name)
                .in_scope(|| tracing::warn!(key = dropped.key, reason = dropped.why, "trace context dropped"));
        }
        // Only the `Arc` is copied under the lock: schemas compile and arguments are checked
        // without holding it.
        let page_tools = self.lock().tools.clone();
        let context = prepared_call::Context {
            session: &self.id,
            user: self.user.as_deref(),
            allow: &self.allow,
            default_timeout: self.default_timeout,
            agent_tools: &self.agent_tools,
            page_tools: &page_tools,
        };
        let prepared =
            prepared_call::prepare(&context, name, arguments, caller_meta, requested, trace)
                .and_then(|call| {
                    policy_gate::prepared(
                        &self.policy,
                        call,
                        || self.next_request_id(),
                        self.log_payloads,
                    )
                });
        prepared.map_err(|mut result| {
            tracing::info_span!("tool_call", session = %self.id, user = self.user.as_deref().unwrap_or(""), tool = ?name, outcome = "refused", traceparent = traceparent.as_deref().map(field::display))
                .in_scope(|| tracing::info!(reason = %result.text(), "tool call refused"));
            // A refusal is the call's result: it carries the trace context back too.
            let trace = TraceContext::read(caller_meta).0;
            traced(&mut result, trace);
            result
        })
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
                *call
            }
        };
        let cancel = options.take_cancel();
        let (progress, events) = (options.progress, options.events);
        let trace = call.trace().cloned();
        let traceparent = trace.as_ref().map(|trace| trace.traceparent.as_str());
        if let Err(mut refused) = self.may_run(&call) {
            tracing::info_span!("tool_call", session = %self.id, user = self.user.as_deref().unwrap_or(""), tool = ?call.name(), outcome = "refused", traceparent = traceparent.map(field::display))
                .in_scope(|| tracing::info!(reason = %refused.text(), "tool call refused"));
            traced(&mut refused, trace);
            return CallEnd::Result(refused);
        }
        let id = self.next_request_id();
        let linked = matches!(self.via(), Some(Via::Node(_)));
        // The policy's events about a call with a trace context carry it: they are written in a
        // span of the call's, entered only around them (a call without one makes no span here).
        let policy_span = traceparent.map(|traceparent| {
            tracing::info_span!("tool_call", session = %self.id, user = self.user.as_deref().unwrap_or(""), tool = ?call.name(), call = %id, traceparent = %traceparent)
        });
        let policed = {
            let _in_call = policy_span.as_ref().map(tracing::Span::enter);
            policy_gate::running(&self.policy, &call, &id, linked, now(), self.log_payloads)
        };
        let policed = match policed {
            Ok(policed) => policed,
            Err(mut refused) => {
                traced(&mut refused, trace);
                return CallEnd::Result(refused);
            }
        };
        let started = tokio::time::Instant::now();
        let name = call.name().to_owned();
        let untrusted = call.is_untrusted();
        let redact = policed
            .as_ref()
            .and_then(policy_gate::Running::event_redaction);
        let (mut result, outcome) = self
            .run_tool_call(&id, call, cancel, progress, (events, redact))
            .await;
        let _in_call = policy_span.as_ref().map(tracing::Span::enter);
        match (&policed, &mut result) {
            (Some(policed), CallEnd::Result(result)) => policy_gate::answered(
                &self.policy,
                policed,
                Who {
                    session: &self.id,
                    user: self.user.as_deref(),
                },
                &id,
                result,
                self.log_payloads,
            ),
            (Some(policed), CallEnd::PageError(error)) => policy_gate::failed(policed, error),
            _ => {}
        }
        // A tool whose results hold untrusted content (`untrustedContentHint`): every result of
        // a call the page was sent is marked, after the operator's rules (a result a `block` rule
        // replaced too), whatever the page put under the key. Every route's call ends here.
        if let (true, CallEnd::Result(result)) = (untrusted, &mut result) {
            tool_annotations::mark_untrusted(result);
        }
        drop(_in_call);
        // After the operator's rules: what the agent sent comes back as it sent it (the page's own
        // values for these keys, when the call had none, were redacted as any `_meta`).
        let traceparent = trace.as_ref().map(|trace| trace.traceparent.clone());
        if let CallEnd::Result(result) = &mut result {
            traced(result, trace);
        }
        // The call's span is made once it is over, with every field known: nothing is recorded
        // into it afterwards, and the call's future is not entered and left at every poll (made
        // up front, recorded into and instrumenting the future, it cost 4.5 % of the CPU per call).
        let span = tracing::info_span!(
            "tool_call",
            session = %self.id,
            user = self.user.as_deref().unwrap_or(""),
            tool = ?name,
            call = %id,
            outcome,
            duration_ms = started.elapsed().as_millis() as u64,
            traceparent = traceparent.as_deref().map(field::display),
        );
        span.in_scope(|| {
            // A cancelled call whose page answered the cancel with its handler's partial value
            // (after the operator's rules): said; the value itself only with `--log-payloads`.
            if let (CallEnd::Result(result), "cancelled") = (&result, outcome) {
                tracing::info!(partial = true, "the cancelled call had a partial value");
                if let (Some(partial), true) = (partial::of(result), self.log_payloads) {
                    tracing::debug!(%partial, "tool call partial value");
                }
            } else if let (CallEnd::Result(result), true) = (&result, self.log_payloads) {
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
        let traceparent = call.traceparent().map(str::to_owned);
        let (name, arguments, meta, timeout) = call.into_parts();
        let name = name.as_str();
        if self.log_payloads {
            // In a span like the call's (whose own span is made when it ends).
            tracing::info_span!("tool_call", session = %self.id, user = self.user.as_deref().unwrap_or(""), tool = ?name, call = %id, traceparent = traceparent.as_deref().map(field::display))
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
        let asked = AtomicBool::new(false);
        let settled = self
            .send_and_wait(request, progress, events, cancel, Some(&asked))
            .await;
        if asked.load(Ordering::Relaxed) {
            // Cancelled, and the page answered the cancel: its error result counts only when it
            // carries the handler's partial value (a task's result then); else, as without one.
            return match settled {
                Ok(Ok(answer)) => match serde_json::from_str::<CallToolResult>(answer.get()) {
                    Ok(result) if partial::of(&result).is_some() => {
                        (CallEnd::Result(result), "cancelled")
                    }
                    _ => (CallEnd::Cancelled, "cancelled"),
                },
                _ => (CallEnd::Cancelled, "cancelled"),
            };
        }
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
        self.send_and_wait(
            request,
            None,
            NO_EVENTS,
            std::future::pending::<String>(),
            None,
        )
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
        self.send_and_wait(
            request,
            None,
            NO_EVENTS,
            std::future::pending::<String>(),
            None,
        )
        .await
        .is_ok()
    }

    pub(super) fn next_request_id(&self) -> String {
        let n = self.next_request.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", self.instance)
    }

    /// Hands the request to the engine and waits for its outcome: the answer, a failure the engine
    /// decides when woken at its deadline, or `cancel` (the page is told; no answer then). The
    /// page's progress on it goes to `observer`. `answer_after_cancel`: a cancel asks the page for
    /// its answer after all (a tool call: its handler's partial value, SPEC §7), awaited for a
    /// bounded time, and the flag is set when it did — the outcome is then the page's answer to
    /// the cancel, or [`RequestFailure::Cancelled`].
    pub(super) async fn send_and_wait(
        &self,
        request: Request,
        observer: Option<mpsc::Sender<ProgressParams>>,
        (events, redact): Events,
        cancel: impl Future<Output = String>,
        answer_after_cancel: Option<&AtomicBool>,
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
                let Some(asked) = answer_after_cancel else {
                    if self.cancel_request(&id, &reason) {
                        return Err(RequestFailure::Cancelled);
                    }
                    return outcome_of(settled.await); // the outcome came first: it stands
                };
                match self.cancel_for_answer(&id, &reason) {
                    Some(true) => {
                        asked.store(true, Ordering::Relaxed);
                        outcome_of(settled.await)
                    }
                    Some(false) => Err(RequestFailure::Cancelled),
                    None => outcome_of(settled.await), // the outcome came first: it stands
                }
            }
        }
    }

    /// The engine may want the time at `at` (a request begun, a disconnect's grace): wakes the
    /// session's timer when it sleeps until later (or starts it, with the first request). One timer
    /// per session, whatever the number of waiting requests (STYLE 13: one `poll_timeout`).
    pub(super) fn arm(&self, state: &mut State, at: Option<Instant>) {
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

    /// The caller cancels request `id` and asks for the page's answer to the cancel (see
    /// [`RequestEngine::cancel_for_answer`](crate::calls::request_engine::RequestEngine)): the
    /// waiter stays while it is awaited, and the timer wakes at its shorter deadline.
    fn cancel_for_answer(&self, id: &str, reason: &str) -> Option<bool> {
        let mut state = self.lock();
        let asked = state.drive(|engine| engine.cancel_for_answer(id, reason, now()));
        match asked {
            Some(true) => {
                let wake = state.engine.wake_at(id);
                self.arm(&mut state, wake);
            }
            Some(false) => {
                state.waiters.remove(id);
            }
            None => {}
        }
        asked
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
}
