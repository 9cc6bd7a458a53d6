//! The page as an MCP server (SPEC §5–§7), sans-IO: every rule of a call's life in one state
//! machine that takes inputs and the time and hands back what to do.
//!
//! The shape is quinn-proto's and str0m's: [`PageEngine::handle`] takes an [`Input`] (a frame's
//! text, a handler settled, a person decided, the timer…) with the current time,
//! [`PageEngine::poll_output`] hands back one [`Output`] at a time (send a frame, run a handler, ask
//! a person, emit an event, abort), and [`PageEngine::poll_timeout`] says when to wake it again. The
//! wasm SDK drives it with one timer and the socket; the tests and the bench's simulated pages drive
//! it natively, with time as a parameter.
//!
//! The engine owns the tool registry, admission, the at-most-once ledger, the 2 s wait for a late
//! handler, deadlines, human-time accounting (no handler time while a person decides; progress
//! every second), progress offsets, the outgoing-frame check, the result mapping and the session
//! rules. A call ends exactly once: every path out of a call goes through `end`, which removes
//! the call, so a second ending finds nothing.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::call::{self, outcome, Admission, ConfirmDecision, Confirmed, PreparedCall};
use crate::codes::WarningCode;
use crate::error::CoreError;
use crate::ledger::{self, Again, Arrival, CallLedger, Interrupted, Readmission};
use crate::limits::{
    HANDLER_GRACE_MS, HUMAN_WAIT_MAX_MS, HUMAN_WAIT_TICK_MS, MAX_LIVE_CALLS, MAX_LOGS_PER_CALL,
    MAX_ROUNDS_WAITING,
};
use crate::protocol::{
    self, check_outgoing, code, encode_call_result, encode_error, encode_notification,
    encode_result, method, CallToolParams, CallToolResult, CancelledParams, Implementation,
    InitializeResult, Message, ProgressParams, RequestId, RpcError, ToolsListResult, TraceContext,
    PROTOCOL_VERSION,
};
use crate::registry::{Declaration, RegisteredTool, Registry, ToolKind, Warning};
use crate::tape::DetachedTokens;
use crate::time::Millis;
use crate::validate::CompiledSchema;

/// One call inside the engine: what inputs and outputs name it by. Never reused, and unrelated to
/// the call id the runtime chose (a hostile runtime cannot make two calls share a handle).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallHandle(pub u64);

/// Who asked for a call: agents are subject to the allow-list, the page itself is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    Agent,
    Page,
}

/// What the engine is told.
#[derive(Debug)]
pub enum Input<'a> {
    /// A text frame from the runtime.
    Frame(&'a str),
    /// A handler (or a form tool's fill and submit) ended.
    HandlerSettled {
        call: CallHandle,
        outcome: HandlerOutcome,
    },
    /// The person (the dialog, or the page's `confirm` callback) answered what was asked.
    Answered { call: CallHandle, answer: Answer },
    /// A running form tool waits for the person to submit: human time, not handler time.
    WaitingForPerson { call: CallHandle },
    /// The person submitted: the handler's timeout counts from now.
    PersonDone { call: CallHandle },
    /// `ctx.log(level, data, logger?)` of a running handler: `notifications/message` to the agent,
    /// at or above the level it asked for, bounded per call; it never fails the call.
    Log {
        call: CallHandle,
        level: String,
        data: Value,
        logger: Option<String>,
    },
    /// `ctx.partial(value)` of a running handler: its progress so far, as JSON text (`Err`: why
    /// the page could not make JSON of it). The last one kept is carried by the call's error
    /// result when it times out or the runtime cancels it asking for the answer, and by its
    /// `toolcancel` event; one that is not JSON or over [`crate::limits::MAX_PARTIAL_BYTES`] is
    /// dropped with a `partial_dropped` warning (the earlier one stays). It never fails the call.
    Partial {
        call: CallHandle,
        json: Result<String, String>,
    },
    /// A running handler asks the calling agent (`ctx.elicit`, `ctx.createMessage`,
    /// `ctx.listRoots`, `ctx.input`): one round, `{key: {method, params}, …}` as JSON text, which
    /// goes to the runtime as it is (the runtime checks each request). Answered with
    /// [`Output::AgentAnswered`].
    AskAgent { call: CallHandle, requests: &'a str },
    /// `ctx.reportProgress` of a running handler.
    Progress {
        call: CallHandle,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// The page's tools changed (defined, registered, unregistered).
    ToolsChanged,
    /// The page's server tells the runtime something (`notifications/resources/updated`, a list
    /// changed): `params` is JSON text; sent when it fits the runtime's limits.
    Notify { method: &'a str, params: &'a str },
    /// The runtime accepted the connection; a new session (`resumed: false`) owes nothing to an
    /// earlier one.
    SessionBegun { resumed: bool },
    /// Whoever made a page call stopped it (the browser's agent aborted): no result is sent.
    Cancel { call: CallHandle, reason: String },
    /// The page withdrew the call (its form was reset or removed): it ends with an error result.
    Withdraw { call: CallHandle, reason: String },
    /// The time [`PageEngine::poll_timeout`] named has come (or passed).
    Timeout,
}

/// How a handler ended, as the driver saw it.
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerOutcome {
    /// It returned this value, as JSON text.
    Returned(String),
    /// It returned `undefined`: a success with a `null` result.
    ReturnedNothing,
    /// It threw or rejected with this message.
    Threw(String),
    /// Its value cannot be JSON (why).
    NotSerializable(String),
    /// It let a `CAPABILITY_MISSING` rejection propagate: the agent's request fails with MCP's
    /// -32021 and these `requiredCapabilities`.
    CapabilityMissing(Value),
}

/// What the driver must do.
#[derive(Debug)]
pub enum Output<H> {
    /// Send this frame to the runtime (already checked against the runtime's limits).
    Send(String),
    /// Run the tool's handler (or fill its form) on `input`, JSON text; `trace`: the call's W3C
    /// trace context (`ctx.traceparent`, `ctx.tracestate`).
    RunHandler {
        call: CallHandle,
        call_id: String,
        tool: Arc<RegisteredTool<H>>,
        input: String,
        trace: Option<TraceContext>,
    },
    /// Ask a person (the dialog, or the page's `confirm` callback).
    AskPerson {
        call: CallHandle,
        call_id: String,
        question: Question,
    },
    /// The call ended while a person was being asked: close what was shown.
    WithdrawAsk { call: CallHandle },
    /// The call ended while its handler ran: abort its `ctx.signal` (or stop filling its form).
    Abort { call: CallHandle, reason: String },
    /// The agent answered a round ([`Input::AskAgent`]): `{inputResponses: {key: result}}`, or
    /// why it could not (code -32021: the agent cannot do it, `data.requiredCapabilities` says
    /// what it lacks).
    AgentAnswered {
        call: CallHandle,
        answer: Result<Value, RpcError>,
    },
    /// A page call ([`PageEngine::begin_page_call`]) ended; `None`: it was cancelled.
    Settled {
        call: CallHandle,
        result: Option<CallToolResult>,
    },
    /// Tell the page.
    Emit(Event),
}

/// What a person is asked: everything a dialog shows, and what a page's `confirm` callback gets.
#[derive(Debug, Clone)]
pub struct Question {
    pub kind: QuestionKind,
    /// The heading: the tool's annotations' title, the call's, else its original name.
    pub title: String,
    /// The tool's description, else the call's (an agent-defined tool).
    pub description: Option<String>,
    pub tool_name: String,
    pub original_name: String,
    /// The tool's own description (what a `confirm` callback is told).
    pub tool_description: Option<String>,
    /// What the form shows: the proposed input, or the result form's initial value.
    pub value: Value,
    /// The form's schema: the input schema (a confirmation), the output schema (a result form).
    pub schema: Option<Arc<CompiledSchema>>,
    /// The call's arguments as JSON text, shown above a result form when it has any.
    pub context: Option<String>,
    /// Where "always allow" is offered: the tool's declaration as canonical text
    /// ([`RegisteredTool::declaration_text`]), what an approval kept is for.
    pub declaration: Option<String>,
}

impl Question {
    /// What a page's `confirm(request)` callback is handed (SPEC §4): the tool, the call and the
    /// proposed input, with the tool's description and input schema when it has them.
    pub fn confirm_request(&self, call_id: &str) -> Value {
        let mut request = json!({
            "toolName": self.tool_name,
            "originalName": self.original_name,
            "callId": call_id,
            "input": self.value,
        });
        if let Some(description) = &self.tool_description {
            request["description"] = description.as_str().into();
        }
        if let Some(schema) = &self.schema {
            request["inputSchema"] = schema.schema().clone();
        }
        request
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionKind {
    /// Approve, edit or reject a call before its handler runs (SPEC §7); `offer_session`: may
    /// offer "allow for the rest of this session"; `offer_always`: may offer "always allow" (kept
    /// by the page for this declaration, [`Question::declaration`]) and look up an approval kept.
    Confirm {
        offer_session: bool,
        offer_always: bool,
    },
    /// Fill in the result of an agent-defined tool that has no handler (SPEC §7).
    Result,
}

/// What the person answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `allow_always`: "always allow" was ticked (the page keeps it; the engine needs nothing).
    Approve {
        allow_session: bool,
        allow_always: bool,
    },
    /// Approve, on this edited input (validated again).
    Modify(Value),
    Reject(Option<String>),
    /// A result form's value.
    Result(Value),
    /// Closed without an answer (a confirmation: an error result; a result form: "the user
    /// cancelled").
    Cancelled,
    /// The person could not be asked (no dialog could be shown, the callback failed): why.
    Failed(String),
}

impl From<ConfirmDecision> for Answer {
    fn from(decision: ConfirmDecision) -> Self {
        match decision {
            ConfirmDecision::Approve => Answer::Approve {
                allow_session: false,
                allow_always: false,
            },
            ConfirmDecision::Modify { input } => Answer::Modify(input),
            ConfirmDecision::Reject { reason } => Answer::Reject(reason),
        }
    }
}

/// A page event (SPEC §4); the driver adds `connectionchange`.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `toolactivated`, `toolcancel` or `toolresult` of one call.
    Call {
        tool_name: String,
        call_id: String,
        what: CallEvent,
    },
    ToolsChanged,
    Warning {
        code: WarningCode,
        message: String,
        tool_name: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum CallEvent {
    /// `toolqueued`: admitted, it waits for its turn (the tool's `concurrency` is taken);
    /// `position` 1 starts next.
    Queued { position: usize },
    /// `toolactivated`: admitted; its handler runs (or a person is asked first).
    Activated,
    /// `toolcancel`: stopped before its handler returned; `partial`: the handler's last
    /// `ctx.partial` value, if it kept one.
    Cancelled {
        reason: String,
        partial: Option<Value>,
    },
    /// `toolresult`: ended with a result.
    Finished { is_error: bool, duration_ms: f64 },
}

/// The page's own settings the engine applies.
#[derive(Debug, Clone, Default)]
pub struct EngineConfig {
    /// Original names agents may call; empty = all.
    pub allow: Vec<String>,
    /// Whether the dialog offers "allow for this session".
    pub offer_allow_for_session: bool,
    /// Whether the dialog offers "always allow" (the page option `allowAlways`).
    pub offer_allow_always: bool,
}

/// Where a call's outcome goes.
#[derive(Debug)]
enum Reply {
    /// A `tools/call` frame: answered with a frame, kept in the ledger for re-sends.
    Frame(RequestId),
    /// A page call: [`Output::Settled`].
    Page,
}

/// A wait for a person: not handler time, bounded by [`HUMAN_WAIT_MAX_MS`], progress each tick.
#[derive(Debug)]
struct HumanWait {
    why: Waiting,
    next_tick: Millis,
    waited_ms: u64,
    /// The progress already sent when the wait began: the wait's reports go above it.
    origin: f64,
}

#[derive(Debug, Clone, Copy)]
enum Waiting {
    Confirmation,
    ResultForm,
    FormSubmit,
    /// The agent answering a round of requests.
    Agent,
}

impl Waiting {
    /// The progress message while waiting.
    fn message(self) -> &'static str {
        match self {
            Waiting::Confirmation => "waiting for the user to confirm",
            Waiting::ResultForm => "waiting for the user to fill in the result",
            Waiting::FormSubmit => "the user to submit the form",
            Waiting::Agent => "waiting for the agent to answer",
        }
    }

    /// The call's result when the person did not answer in time.
    fn expired(self) -> CallToolResult {
        match self {
            Waiting::Confirmation => CallToolResult::error(format!(
                "no confirmation from the user within {HUMAN_WAIT_MAX_MS} ms"
            )),
            Waiting::ResultForm => CallToolResult::error(format!(
                "no result from the user within {HUMAN_WAIT_MAX_MS} ms"
            )),
            Waiting::FormSubmit => {
                outcome::handler_failed("the user did not submit the form in time")
            }
            // Never ends the call: the round's keys are answered with this error instead.
            Waiting::Agent => CallToolResult::error(format!(
                "no answer from the agent within {HUMAN_WAIT_MAX_MS} ms"
            )),
        }
    }
}

impl HumanWait {
    fn new(why: Waiting, now: Millis) -> Self {
        Self::after(why, now, 0.0)
    }

    fn after(why: Waiting, now: Millis, origin: f64) -> Self {
        Self {
            why,
            next_tick: now.after(HUMAN_WAIT_TICK_MS),
            waited_ms: 0,
            origin,
        }
    }
}

#[derive(Debug)]
enum Phase<H> {
    /// No handler yet: admitted again when the tools change, failed when the grace ends.
    WaitingForHandler { until: Millis },
    /// Admitted, waiting for its tool's `concurrency` to let it start (asked first, or run): no
    /// timer (its timeout starts with its handler).
    Queued { prepared: PreparedCall<H> },
    Confirming {
        prepared: PreparedCall<H>,
        wait: HumanWait,
    },
    ResultForm {
        output: Arc<CompiledSchema>,
        wait: HumanWait,
    },
    Running {
        prepared: PreparedCall<H>,
        modified_input: Option<Value>,
        /// `None` while a person fills the tool's form (then `person` runs), or while the agent
        /// answers a round (then `round` runs).
        deadline: Option<Millis>,
        person: Option<HumanWait>,
        round: Option<AgentRound>,
    },
}

#[derive(Debug)]
struct Call<H> {
    handle: CallHandle,
    call_id: String,
    reply: Reply,
    caller: Caller,
    params: CallToolParams,
    /// The input as JSON text, as it stood in the frame (the handler parses it once).
    input: String,
    /// `input`'s tokens, when the frame's reader read them: admission validates them, and they
    /// are dropped once it has decided (they are ≈ 20 bytes a token); `None` whenever `input`
    /// changes.
    input_tokens: Option<DetachedTokens>,
    progress_token: Option<Value>,
    /// Progress reported while a person decided (ms waited): the handler's own reports go above
    /// it, because MCP progress must only increase.
    progress_base: f64,
    /// The highest progress sent on the call (a wait's reports start above it).
    progress_high: f64,
    /// Log messages sent (bounded by `limits::MAX_LOGS_PER_CALL`).
    logs: u32,
    /// The handler's last `ctx.partial` value (SPEC §7).
    partial: Option<Value>,
    /// The W3C trace context of the call's `_meta`, checked: its handler's, and its result's.
    trace: Option<TraceContext>,
    /// When `toolactivated` was emitted (its `toolresult` reports the duration); `None` before.
    activated_at: Option<Millis>,
    /// Interrupted by the reload of the previous page, and kept as one that may run again: the
    /// claim its admission checks (SPEC §7).
    again: Option<Again>,
    /// A request the page's server answers (resources, prompts, completion: SPEC §11), not a
    /// tool call: its handler's value is the JSON-RPC answer, every failure a JSON-RPC error,
    /// and it raises no tool events.
    served: bool,
    phase: Phase<H>,
}

impl<H> Call<H> {
    /// The tool's name for events: the normalized name once admitted, else the name as called.
    fn tool_name(&self) -> &str {
        match &self.phase {
            Phase::Confirming { prepared, .. }
            | Phase::Running { prepared, .. }
            | Phase::Queued { prepared } => &prepared.tool.name,
            _ => &self.params.name,
        }
    }

    /// The tool whose `concurrency` this call takes a turn of: one asking a person or running.
    fn turn_of(&self) -> Option<&str> {
        match &self.phase {
            Phase::Confirming { prepared, .. } | Phase::Running { prepared, .. } => {
                Some(&prepared.tool.name)
            }
            _ => None,
        }
    }

    /// When this call next needs the engine.
    fn wakes_at(&self) -> Option<Millis> {
        match &self.phase {
            Phase::WaitingForHandler { until } => Some(*until),
            Phase::Queued { .. } => None,
            Phase::Confirming { wait, .. } | Phase::ResultForm { wait, .. } => Some(wait.next_tick),
            Phase::Running {
                deadline,
                person,
                round,
                ..
            } => match (round, person) {
                (Some(round), _) => Some(round.wait.next_tick),
                (None, Some(wait)) => Some(wait.next_tick),
                (None, None) => *deadline,
            },
        }
    }
}

/// A round of requests a running handler put to the agent.
#[derive(Debug)]
struct AgentRound {
    /// The id of the page's `clienttools/input` request.
    id: RequestId,
    wait: HumanWait,
    /// What was left of the handler's timeout when the round began: it goes on from there.
    remaining_ms: f64,
}

/// How a call's work is cut short when it ends early.
struct Stop<'a> {
    /// The reason its handler's `ctx.signal` aborts with.
    abort: &'a str,
    /// The reason of its `toolcancel` event; `None`: no event (a person did not answer in time).
    toolcancel: Option<&'a str>,
}

impl<'a> Stop<'a> {
    /// Cancelled or withdrawn: the handler aborts and `toolcancel` says why, with one reason.
    fn cancelled(reason: &'a str) -> Option<Self> {
        Some(Self {
            abort: reason,
            toolcancel: Some(reason),
        })
    }
}

/// How a call ends.
enum Ending {
    /// With this result, reported to the page (`toolresult`).
    Result(CallToolResult),
    /// With this result, not reported as a finished run (a rejection before anything ran, or a
    /// withdrawal, whose `toolcancel` said it already).
    Quiet(CallToolResult),
    /// Cancelled: no result is sent.
    Cancelled,
    /// The request itself fails: a JSON-RPC error answers it (-32021, a capability the agent
    /// lacks).
    Failed(RpcError),
    /// A served request's answer, `{"result": …}` or `{"error": …}` as JSON text.
    Answer(String),
}

/// The page's calls, sans-IO. `H` is the page's handler (a JavaScript function in the browser).
pub struct PageEngine<H> {
    registry: Registry<H>,
    config: EngineConfig,
    ledger: CallLedger,
    calls: Vec<Call<H>>,
    outputs: VecDeque<Output<H>>,
    next_handle: u64,
    /// Tools the person allowed for the rest of this page's life, by name.
    allowed_for_session: Vec<String>,
    /// Inside [`PageEngine::batch_tool_changes`]: `Some(changed)`, told once at its end.
    batched: Option<bool>,
    /// The handler of the requests in [`method::SERVED`]; without one they are unknown methods.
    server: Option<Arc<RegisteredTool<H>>>,
}

impl<H> PageEngine<H> {
    /// `interrupted`: agent call ids (their JSON) the previous page of this session left running
    /// (SPEC §5).
    pub fn new(config: EngineConfig, default_timeout_ms: u64, interrupted: Vec<String>) -> Self {
        Self {
            registry: Registry::new(default_timeout_ms),
            config,
            ledger: CallLedger::default().with_interrupted(interrupted),
            calls: Vec::new(),
            outputs: VecDeque::new(),
            next_handle: 1,
            allowed_for_session: Vec::new(),
            batched: None,
            server: None,
        }
    }

    /// The handler of the page's resources, prompts and completion (SPEC §11): it is run with
    /// `{method, params}` of each request in [`method::SERVED`] and a `ctx`, as a tool's handler
    /// is, and answers `{result}` or `{error: {code, message, data?}}`. Its timeout is the
    /// page's default tool timeout.
    pub fn serve_with(&mut self, handler: H) {
        let timeout_ms = self.registry.default_timeout_ms();
        self.server = Some(Arc::new(RegisteredTool {
            name: "resources, prompts and completion".into(),
            original_name: String::new(),
            kind: ToolKind::Function,
            description: None,
            input: None,
            output: None,
            annotations: None,
            require_confirmation: false,
            timeout_ms,
            task_support: crate::registry::TaskSupport::Forbidden,
            concurrency: None,
            handler,
        }));
    }

    pub fn registry(&self) -> &Registry<H> {
        &self.registry
    }

    /// Change the tools, then tell the engine ([`Input::ToolsChanged`]) — or use [`Self::define`],
    /// [`Self::register_handler`] and [`Self::unregister`], which do both.
    pub fn registry_mut(&mut self) -> &mut Registry<H> {
        &mut self.registry
    }

    /// `defineFunction` (SPEC §3): the page hears the registry's warnings, the agent the change.
    pub fn define(
        &mut self,
        now: Millis,
        declaration: Declaration,
        kind: ToolKind,
        handler: H,
    ) -> Result<String, CoreError> {
        let before = (self.registry.get(&declaration.original_name)).map(|tool| tool.kind);
        let (name, warnings) = self.registry.define(declaration, kind, handler)?;
        // The page redefining its own tool keeps the person's allowance; another owner does not.
        if kind == ToolKind::Browser || before.is_some_and(|before| before != kind) {
            self.forget_session_allowance(&name);
        }
        self.report(warnings);
        self.tools_changed(now);
        Ok(name)
    }

    /// `registerHandler` (SPEC §3), told like [`Self::define`].
    pub fn register_handler(
        &mut self,
        now: Millis,
        name: &str,
        handler: H,
    ) -> Result<String, CoreError> {
        let (name, warnings) = self.registry.register_handler(name, handler)?;
        self.report(warnings);
        self.tools_changed(now);
        Ok(name)
    }

    /// `unregister` (SPEC §3): `false` when there was no such tool (and nothing is told).
    pub fn unregister(&mut self, now: Millis, name: &str) -> bool {
        let Some(tool) = self.registry.get(name) else {
            return false;
        };
        let removed = self.registry.unregister(name);
        if removed {
            self.forget_session_allowance(&tool.name);
            self.tools_changed(now);
        }
        removed
    }

    /// "Allow for this session" was given to a tool, not to a name: a tool that takes the name of
    /// one removed or replaced asks again.
    fn forget_session_allowance(&mut self, name: &str) {
        self.allowed_for_session.retain(|allowed| allowed != name);
    }

    /// Runs `changes` (defines, unregisters) and tells the page and the agent of them once, not
    /// once per tool.
    pub fn batch_tool_changes<T>(
        &mut self,
        now: Millis,
        changes: impl FnOnce(&mut Self) -> T,
    ) -> T {
        let outer = self.batched.replace(false);
        let done = changes(self);
        let changed = self.batched == Some(true);
        self.batched = outer;
        if changed {
            // Told by the outermost batch.
            self.tools_changed(now);
        }
        done
    }

    /// Tells the page each warning (a `warning` event).
    pub fn report(&mut self, warnings: Vec<Warning>) {
        for Warning {
            code,
            message,
            tool_name,
        } in warnings
        {
            self.outputs.push_back(Output::Emit(Event::Warning {
                code,
                message,
                tool_name,
            }));
        }
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Agent call ids running now, as their JSON.
    pub fn running_agent_calls(&self) -> Vec<String> {
        self.ledger.running_ids()
    }

    /// What the page keeps when it unloads: its running agent calls, so the next page of the
    /// session does not run them again — except, SPEC §7, one whose handler had not started (it
    /// is asked again) and one of a tool declared `idempotentHint: true` (it runs once more).
    pub fn kept_at_unload(&self) -> String {
        let claims: Vec<(String, Option<Again>)> = (self.calls.iter())
            .filter_map(|call| {
                let Reply::Frame(id) = &call.reply else {
                    return None;
                };
                let again = match &call.phase {
                    _ if call.served => None,
                    Phase::Running { prepared, .. } => {
                        ledger::is_idempotent(&prepared.tool).then_some(Again::Idempotent)
                    }
                    _ => Some(Again::Ask),
                };
                Some((ledger_key(id), again))
            })
            .collect();
        // The ledger says what runs: an id it has without a live call is kept with no claim.
        let calls: Vec<Interrupted> = (self.ledger.running_ids().into_iter())
            .map(|id| {
                let again = claims.iter().find(|(key, _)| *key == id).and_then(|c| c.1);
                Interrupted { id, again }
            })
            .collect();
        ledger::keep(&calls)
    }

    /// The next page of the session reads what the previous one kept ([`Self::kept_at_unload`]):
    /// a re-send of a call it names is answered that it was not run again, or admitted again on
    /// the claim it kept, checked when the call arrives. What is not what a page keeps is ignored
    /// with a `stored_data_ignored` warning, and runs nothing.
    pub fn reloaded(&mut self, kept: &str) {
        let (calls, ignored) = ledger::read_kept(kept);
        if let Some(why) = ignored {
            let message = format!(
                "what the previous page kept of its running calls (sessionStorage) is not what \
                 a page keeps: {why}"
            );
            self.warn_code(WarningCode::StoredDataIgnored, message, None);
        }
        self.ledger = std::mem::take(&mut self.ledger).with_interrupted(calls);
    }

    /// How many calls are live (any phase).
    pub fn live_calls(&self) -> usize {
        self.calls.len()
    }

    /// Whether `call` has not ended yet.
    pub fn is_live(&self, call: CallHandle) -> bool {
        self.position(call).is_some()
    }

    /// The page calls a tool itself (`invoke`, the browser's agent): the same pipeline as an
    /// agent's call; it ends with [`Output::Settled`].
    /// `input`: its arguments as JSON text (`None`: none).
    pub fn begin_page_call(
        &mut self,
        now: Millis,
        name: String,
        input: Option<String>,
        caller: Caller,
    ) -> CallHandle {
        let handle = self.new_handle();
        let params = CallToolParams {
            name,
            arguments: None,
            meta: None,
        };
        let call_id = format!("local-{}", handle.0);
        let input = input.map(|text| (text, None));
        self.begin(
            now,
            handle,
            call_id,
            Reply::Page,
            caller,
            params,
            input,
            None,
        );
        handle
    }

    /// The next thing to do, in order.
    pub fn poll_output(&mut self) -> Option<Output<H>> {
        self.outputs.pop_front()
    }

    /// When the engine next needs [`Input::Timeout`]; `None`: no timer.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.calls.iter().filter_map(Call::wakes_at).min()
    }

    pub fn handle(&mut self, now: Millis, input: Input<'_>) {
        match input {
            Input::Frame(text) => self.frame(now, text),
            Input::HandlerSettled { call, outcome } => self.settled(now, call, outcome),
            Input::Answered { call, answer } => self.answered(now, call, answer),
            Input::WaitingForPerson { call } => self.waiting_for_person(now, call),
            Input::PersonDone { call } => self.person_done(now, call),
            Input::Progress {
                call,
                progress,
                total,
                message,
            } => self.progress(call, progress, total, message),
            Input::Log {
                call,
                level,
                data,
                logger,
            } => self.log(call, &level, data, logger),
            Input::AskAgent { call, requests } => self.ask_agent(now, call, requests),
            Input::Partial { call, json } => self.partial(call, json),
            Input::ToolsChanged => self.tools_changed(now),
            Input::Notify { method, params } => {
                let frame = format!(
                    r#"{{"jsonrpc":"2.0","method":{},"params":{params}}}"#,
                    Value::from(method)
                );
                // A notification is a hint: one that does not fit is not sent.
                if check_outgoing(&frame).is_ok() && serde_json::from_str::<Value>(params).is_ok() {
                    self.outputs.push_back(Output::Send(frame));
                }
            }
            Input::SessionBegun { resumed } => self.session_begun(now, resumed),
            Input::Cancel { call, reason } => {
                self.end(now, call, Ending::Cancelled, Stop::cancelled(&reason))
            }
            Input::Withdraw { call, reason } => {
                let result = outcome::withdrawn(&reason);
                self.end(now, call, Ending::Quiet(result), Stop::cancelled(&reason))
            }
            Input::Timeout => self.timeout(now),
        }
    }

    // ---- frames -------------------------------------------------------------------------------

    fn frame(&mut self, now: Millis, text: &str) {
        // The hot frame first, read without a `Value` for its arguments (they are validated and
        // handed to the handler as text); anything else through the full decoder.
        if let Some((id, params, arguments)) = protocol::decode_call_read(text) {
            let arguments = arguments.map(|(text, tokens)| (text.to_owned(), Some(tokens)));
            return self.agent_call(now, id, params, arguments);
        }
        match protocol::decode(text) {
            // `None` for a malformed response: answering it could start an error ping-pong.
            Err(error) => {
                if let Some(answer) = error.to_frame() {
                    self.send(answer, Kind::Other);
                }
            }
            Ok(Message::Request { id, method, params }) => {
                self.request(now, text, id, &method, params)
            }
            Ok(Message::Notification { method, params }) => self.notification(now, &method, params),
            // The answer to a request of the page's (a round put to the agent); any other
            // response is never answered.
            Ok(Message::Response { id, result }) => self.agent_answer(now, &id, result),
        }
    }

    fn request(&mut self, now: Millis, frame: &str, id: RequestId, method: &str, params: Value) {
        match method {
            method::INITIALIZE => {
                let mut result = initialize_result();
                if self.server.is_some() {
                    // Read from text: a `json!` of it costs the wasm module more.
                    result.capabilities =
                        serde_json::from_str(SERVER_CAPABILITIES).unwrap_or_default();
                }
                let frame = encode_result(&id, &result);
                self.send(frame, Kind::Other);
            }

            method::TOOLS_LIST => {
                let result = ToolsListResult {
                    tools: self.registry.to_mcp_tools(&self.config.allow),
                    next_cursor: None,
                };
                let frame = encode_result(&id, &result);
                self.send(frame, Kind::ToolsList(&id));
            }
            method::TOOLS_CALL => match CallToolParams::from_value(params) {
                Err(error) => self.reply_error(
                    &id,
                    code::INVALID_PARAMS,
                    format!("invalid tools/call params: {error}"),
                ),
                Ok(params) => {
                    let arguments =
                        protocol::call_arguments_text(frame).map(|text| (text.to_owned(), None));
                    self.agent_call(now, id, params, arguments)
                }
            },
            served if self.server.is_some() && method::SERVED.contains(&served) => {
                self.served_request(now, id, served, params)
            }
            other => self.send(protocol::answer_plain_request(&id, other), Kind::Other),
        }
    }

    /// A request the page's server answers: at most once per id, run like a call (its timeout,
    /// cancellation, `ctx` with logs, progress and rounds), answered with a JSON-RPC result or
    /// error.
    fn served_request(&mut self, now: Millis, id: RequestId, method: &str, params: Value) {
        let refused = match self.ledger.arrive(&ledger_key(&id)) {
            Arrival::Join => return,
            Arrival::Resend(frame) => return self.outputs.push_back(Output::Send(frame)),
            // A served request is never run again, whatever the previous page kept.
            Arrival::Interrupted | Arrival::Rerun(_) => {
                format!("the page was reloaded while it answered request {id}")
            }
            Arrival::Run if self.calls.len() >= MAX_LIVE_CALLS => {
                format!("the page has {MAX_LIVE_CALLS} calls in progress; {method} was not run")
            }
            Arrival::Run => String::new(),
        };
        if !refused.is_empty() {
            let frame = encode_error(Some(&id), &RpcError::new(code::INTERNAL_ERROR, refused));
            self.ledger.finish(&ledger_key(&id), frame.clone());
            return self.outputs.push_back(Output::Send(frame));
        }
        let Some(tool) = self.server.clone() else {
            return;
        };
        let progress_token = params.pointer("/_meta/progressToken").cloned();
        let input = format!(r#"{{"method":"{method}","params":{params}}}"#);
        // The runtime's `clienttools/timeoutMs`, bounded by the page's default, as for its tools.
        let runtime_timeout = params
            .pointer("/_meta/clienttools~1timeoutMs")
            .and_then(Value::as_f64)
            .and_then(crate::limits::positive_ms);
        let timeout_ms = runtime_timeout.map_or(tool.timeout_ms, |ms| ms.min(tool.timeout_ms));
        let prepared = PreparedCall {
            tool,
            call_input: None,
            timeout_ms,
            require_confirmation: false,
            confirmation_forced_by_call: false,
            output: None,
            call_title: None,
            call_description: None,
        };
        let handle = self.new_handle();
        self.calls.push(Call {
            handle,
            call_id: id.to_string(),
            reply: Reply::Frame(id),
            caller: Caller::Agent,
            params: CallToolParams {
                name: method.to_owned(),
                arguments: None,
                meta: None,
            },
            input,
            input_tokens: None,
            progress_token,
            progress_base: 0.0,
            progress_high: 0.0,
            logs: 0,
            partial: None,
            trace: None,
            activated_at: None,
            again: None,
            served: true,
            phase: running_phase(prepared, None),
        });
        self.run(now, self.calls.len() - 1);
    }

    fn notification(&mut self, now: Millis, method: &str, params: Value) {
        // `notifications/initialized` and unknown notifications need no answer.
        if method != method::CANCELLED {
            return;
        }
        let Ok(cancelled) = CancelledParams::from_value(params) else {
            return;
        };
        // By the id itself: `1` and `"1"` are two calls.
        let found = self
            .calls
            .iter()
            .find(|call| matches!(&call.reply, Reply::Frame(id) if *id == cancelled.request_id));
        if let Some(handle) = found.map(|call| call.handle) {
            let reason = cancelled
                .reason
                .unwrap_or_else(|| "cancelled by the agent runtime".into());
            // The runtime asks for the answer after all (a client-tools extension): the call ends
            // with an error result, which carries the handler's partial value, if any.
            let answer = (cancelled.meta.as_ref())
                .and_then(|meta| meta.get(protocol::meta::ANSWER))
                .and_then(Value::as_bool)
                == Some(true);
            if answer {
                // Quiet: the page sees a cancel (`toolcancel`), as without the answer.
                let result = CallToolResult::error(format!("cancelled by the runtime: {reason}"));
                let result = self.with_partial(handle, result);
                let stop = Stop::cancelled(&reason);
                return self.end(now, handle, Ending::Quiet(result), stop);
            }
            self.end(now, handle, Ending::Cancelled, Stop::cancelled(&reason));
        }
    }

    fn reply_error(&mut self, id: &RequestId, code: i64, message: String) {
        self.send(
            encode_error(Some(id), &RpcError::new(code, message)),
            Kind::Other,
        );
    }

    /// A `tools/call` from the runtime: at most once per call id (SPEC §5).
    fn agent_call(
        &mut self,
        now: Millis,
        id: RequestId,
        params: CallToolParams,
        arguments: Option<(String, Option<DetachedTokens>)>,
    ) {
        let call_id = id.to_string();
        let refused = match self.ledger.arrive(&ledger_key(&id)) {
            // Re-sent while it runs: it is answered once, when it ends.
            Arrival::Join => return,
            // Stored answers fit already (they passed the check when first sent).
            Arrival::Resend(frame) => return self.outputs.push_back(Output::Send(frame)),
            Arrival::Interrupted => not_run_again(&call_id),
            Arrival::Run | Arrival::Rerun(_) if self.calls.len() >= MAX_LIVE_CALLS => {
                format!("the page has {MAX_LIVE_CALLS} calls in progress; this one was not run")
            }
            // A call the reload interrupted may be admitted again: its claim is checked once its
            // tool is known (`readmit`).
            arrival @ (Arrival::Run | Arrival::Rerun(_)) => {
                let again = if let Arrival::Rerun(again) = arrival {
                    Some(again)
                } else {
                    None
                };
                let handle = self.new_handle();
                let reply = Reply::Frame(id);
                let (caller, input) = (Caller::Agent, arguments);
                return self.begin(now, handle, call_id, reply, caller, params, input, again);
            }
        };
        let trace = self.trace_of(&params);
        let result = CallToolResult::error(refused);
        let frame = self.call_answer(&id, &params.name, result, trace);
        self.ledger.finish(&ledger_key(&id), frame.clone());
        self.outputs.push_back(Output::Send(frame));
    }

    // ---- a call's life ------------------------------------------------------------------------

    fn new_handle(&mut self) -> CallHandle {
        let handle = CallHandle(self.next_handle);
        self.next_handle += 1;
        handle
    }

    #[allow(clippy::too_many_arguments)]
    fn begin(
        &mut self,
        now: Millis,
        handle: CallHandle,
        call_id: String,
        reply: Reply,
        caller: Caller,
        params: CallToolParams,
        input: Option<(String, Option<DetachedTokens>)>,
        again: Option<Again>,
    ) {
        let (input, input_tokens) = match (input, &params.arguments) {
            (Some(read), _) => read,
            (None, Some(arguments)) => (arguments.to_string(), None),
            (None, None) => ("{}".to_owned(), None),
        };
        let progress_token = params.meta_value("progressToken").cloned();
        let trace = self.trace_of(&params);
        self.calls.push(Call {
            handle,
            call_id,
            reply,
            caller,
            params,
            input,
            input_tokens,
            progress_token,
            progress_base: 0.0,
            progress_high: 0.0,
            logs: 0,
            partial: None,
            trace,
            activated_at: None,
            again,
            served: false,
            phase: Phase::WaitingForHandler {
                until: now.after(HANDLER_GRACE_MS),
            },
        });
        self.admit(now, handle);
    }

    fn position(&self, handle: CallHandle) -> Option<usize> {
        self.calls.iter().position(|call| call.handle == handle)
    }

    fn call_mut(&mut self, handle: CallHandle) -> Option<&mut Call<H>> {
        self.calls.iter_mut().find(|call| call.handle == handle)
    }

    /// Admission of a call waiting for its handler: run, ask, wait on, or end.
    fn admit(&mut self, now: Millis, handle: CallHandle) {
        let Some(at) = self.position(handle) else {
            return;
        };
        let call = &self.calls[at];
        let Phase::WaitingForHandler { until } = call.phase else {
            return;
        };
        let allow: &[String] = match call.caller {
            Caller::Agent => &self.config.allow,
            Caller::Page => &[],
        };
        let tool = self.registry.get(&call.params.name);
        let tokens = call.input_tokens.as_ref();
        let admission =
            call::admit_read(tool, &call.params, &call.input, tokens, allow, now >= until);
        if !matches!(admission, Admission::WaitForHandler) {
            self.calls[at].input_tokens = None;
        }
        match admission {
            Admission::WaitForHandler => {}
            Admission::Reject(result) => self.end(now, handle, Ending::Quiet(result), None),
            Admission::ResultForm { output } => {
                let call = &mut self.calls[at];
                let schema = output.schema();
                // Who asks: the tool's title and description from the call (an agent-defined
                // tool), else the output schema's.
                let text = |key: &str, meta_key: &str| {
                    call.params
                        .meta_value(meta_key)
                        .or_else(|| schema.get(key))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                let shows_arguments = !matches!(call.input.trim(), "" | "{}" | "null");
                let question = Question {
                    kind: QuestionKind::Result,
                    title: text("title", protocol::meta::TITLE)
                        .unwrap_or_else(|| call.params.name.clone()),
                    description: text("description", protocol::meta::DESCRIPTION),
                    tool_name: call.params.name.clone(),
                    original_name: call.params.name.clone(),
                    tool_description: None,
                    value: crate::schema_field::initial_value(schema),
                    schema: Some(output.clone()),
                    context: shows_arguments.then(|| call.input.clone()),
                    declaration: None,
                };
                call.phase = Phase::ResultForm {
                    output,
                    wait: HumanWait::new(Waiting::ResultForm, now),
                };
                self.activate(now, at);
                let call = &self.calls[at];
                let (call, call_id) = (call.handle, call.call_id.clone());
                self.outputs.push_back(Output::AskPerson {
                    call,
                    call_id,
                    question,
                });
            }
            Admission::Run(prepared) => {
                let Some(prepared) = self.readmit(now, at, prepared) else {
                    return;
                };
                let Some(position) = self.queue_position(&prepared.tool) else {
                    return self.start(now, at, prepared);
                };
                let call = &mut self.calls[at];
                let event = Event::Call {
                    tool_name: prepared.tool.name.clone(),
                    call_id: call.call_id.clone(),
                    what: CallEvent::Queued { position },
                };
                call.phase = Phase::Queued { prepared };
                self.outputs.push_back(Output::Emit(event));
            }
        }
    }

    /// A call the reload interrupted, admitted again: its tool decides whether what the previous
    /// page kept holds ([`Again::admit`]). `None`: it ended, not run again.
    fn readmit(
        &mut self,
        now: Millis,
        at: usize,
        mut prepared: PreparedCall<H>,
    ) -> Option<PreparedCall<H>> {
        let call = &self.calls[at];
        let Some(again) = call.again else {
            return Some(prepared);
        };
        match again.admit(ledger::is_idempotent(&prepared.tool)) {
            Readmission::AsNew => {}
            // Whatever the tool's policy or an allowance given before: never assumed.
            Readmission::AskFirst => {
                prepared.require_confirmation = true;
                prepared.confirmation_forced_by_call = true;
            }
            Readmission::NotAgain => {
                let (handle, call_id, tool) = (call.handle, call.call_id.clone(), &prepared.tool);
                let message = format!(
                    "call {call_id} was kept at the page's reload as a call of a tool declared \
                     idempotentHint: true, but tool '{}' does not say so now; it was not run again",
                    tool.name
                );
                let name = tool.name.clone();
                self.warn_code(WarningCode::StoredDataIgnored, message, Some(&name));
                let result = CallToolResult::error(not_run_again(&call_id));
                self.end(now, handle, Ending::Quiet(result), None);
                return None;
            }
        }
        Some(prepared)
    }

    /// Where a call of `tool` admitted now waits (1: it starts next), in arrival order; `None`: it
    /// starts at once (the tool has no `concurrency`, or a turn is free and nobody waits).
    fn queue_position(&self, tool: &RegisteredTool<H>) -> Option<usize> {
        let limit = tool.concurrency?;
        let (taken, waiting, _) = self.turns(&tool.name);
        (taken >= limit || waiting > 0).then_some(waiting + 1)
    }

    /// How many calls of tool `name` take a turn now, how many wait for one, and the first of
    /// those to arrive (`calls` is in arrival order).
    fn turns(&self, name: &str) -> (usize, usize, Option<CallHandle>) {
        let mut turns = (0, 0, None);
        for call in &self.calls {
            match &call.phase {
                Phase::Queued { prepared } if prepared.tool.name == name => {
                    turns.1 += 1;
                    turns.2 = turns.2.or(Some(call.handle));
                }
                _ if call.turn_of() == Some(name) => turns.0 += 1,
                _ => {}
            }
        }
        turns
    }

    /// A turn of tool `name` is free: its calls that wait start, first come first, while its
    /// `concurrency` lets them.
    fn start_waiting(&mut self, now: Millis, name: &str) {
        while let (taken, _, Some(next)) = self.turns(name) {
            let Some(at) = self.position(next) else {
                return;
            };
            let call = &mut self.calls[at];
            let placeholder = Phase::WaitingForHandler { until: now };
            match std::mem::replace(&mut call.phase, placeholder) {
                Phase::Queued { prepared } if prepared.tool.concurrency > Some(taken) => {
                    self.start(now, at, prepared)
                }
                // Not its turn yet (the bound is taken): it waits on.
                phase => {
                    call.phase = phase;
                    return;
                }
            }
        }
    }

    /// An admitted call starts: a person is asked first, or its handler runs.
    fn start(&mut self, now: Millis, at: usize, prepared: PreparedCall<H>) {
        let handle = self.calls[at].handle;
        let confirm = prepared.require_confirmation
            && (prepared.confirmation_forced_by_call
                || !self.allowed_for_session.contains(&prepared.tool.name));
        let call = &mut self.calls[at];
        if !confirm {
            call.phase = running_phase(prepared, None);
            self.activate(now, at);
            return self.run(now, at);
        }
        let tool = &prepared.tool;
        let title = tool
            .annotations
            .as_ref()
            .and_then(|a| a.get("title"))
            .and_then(Value::as_str)
            .or(prepared.call_title.as_deref())
            .unwrap_or(&tool.original_name)
            .to_owned();
        // A confirmation the call forces (its `_meta`: the runtime, the bridge's `--tools` file, the
        // operator's policy, a reload) is asked each time: no allowance, kept or for the session.
        // "Always" only for the page's own tools: an agent-defined tool's declaration comes with
        // each call, it is not the page's to vouch for.
        let unforced = !prepared.confirmation_forced_by_call;
        let offer_always =
            unforced && self.config.offer_allow_always && tool.kind != ToolKind::Handler;
        let question = Question {
            kind: QuestionKind::Confirm {
                offer_session: unforced && self.config.offer_allow_for_session,
                offer_always,
            },
            declaration: offer_always.then(|| tool.declaration_text()),
            title,
            description: tool
                .description
                .clone()
                .or_else(|| prepared.call_description.clone()),
            tool_name: tool.name.clone(),
            original_name: tool.original_name.clone(),
            tool_description: tool.description.clone(),
            value: serde_json::from_str(&call.input).unwrap_or_default(),
            schema: prepared.input_schema_shared(),
            context: None,
        };
        call.phase = Phase::Confirming {
            prepared,
            wait: HumanWait::new(Waiting::Confirmation, now),
        };
        let call_id = call.call_id.clone();
        self.activate(now, at);
        self.outputs.push_back(Output::AskPerson {
            call: handle,
            call_id,
            question,
        });
    }

    /// `toolactivated`: the call passed admission and will run (or ask a person first).
    fn activate(&mut self, now: Millis, at: usize) {
        let call = &mut self.calls[at];
        call.activated_at = Some(now);
        let event = Event::Call {
            tool_name: call.tool_name().to_owned(),
            call_id: call.call_id.clone(),
            what: CallEvent::Activated,
        };
        self.outputs.push_back(Output::Emit(event));
    }

    /// The handler starts now: its timeout counts from here.
    fn run(&mut self, now: Millis, at: usize) {
        let call = &mut self.calls[at];
        let Phase::Running {
            prepared, deadline, ..
        } = &mut call.phase
        else {
            return;
        };
        *deadline = Some(now.after(prepared.timeout_ms));
        let output = Output::RunHandler {
            call: call.handle,
            call_id: call.call_id.clone(),
            tool: prepared.tool.clone(),
            input: std::mem::take(&mut call.input),
            trace: call.trace.clone(),
        };
        self.outputs.push_back(output);
    }

    fn answered(&mut self, now: Millis, handle: CallHandle, answer: Answer) {
        let Some(at) = self.position(handle) else {
            return; // ended already: an answer after a cancel runs nothing
        };
        let call = &mut self.calls[at];
        let decision = match (&call.phase, answer) {
            (Phase::ResultForm { output, .. }, Answer::Result(value)) => {
                let result = call::complete_text(&value.to_string(), Some(output));
                return self.end(now, handle, Ending::Result(result), None);
            }
            (Phase::ResultForm { .. } | Phase::Confirming { .. }, Answer::Failed(why)) => {
                let result = CallToolResult::error(why);
                return self.end(now, handle, Ending::Result(result), None);
            }
            (Phase::ResultForm { .. }, _) => {
                let result = outcome::user_cancelled();
                return self.end(now, handle, Ending::Result(result), None);
            }
            (Phase::Confirming { prepared, .. }, Answer::Approve { allow_session, .. }) => {
                let name = call.tool_name().to_owned();
                // Only where it was offered (a call that asks for confirmation itself is asked
                // each time).
                let offered =
                    self.config.offer_allow_for_session && !prepared.confirmation_forced_by_call;
                // For the tool that was asked about: not for another that took its name meanwhile.
                let same_tool = (self.registry.get(&name))
                    .is_some_and(|tool| Arc::ptr_eq(&tool, &prepared.tool));
                if allow_session
                    && offered
                    && same_tool
                    && !self.allowed_for_session.contains(&name)
                {
                    self.allowed_for_session.push(name);
                }
                ConfirmDecision::Approve
            }
            (Phase::Confirming { .. }, Answer::Modify(input)) => ConfirmDecision::Modify { input },
            (Phase::Confirming { .. }, Answer::Reject(reason)) => {
                ConfirmDecision::Reject { reason }
            }
            (Phase::Confirming { .. }, _) => {
                let result = CallToolResult::error("the dialog was closed");
                return self.end(now, handle, Ending::Result(result), None);
            }
            _ => return,
        };
        let call = &mut self.calls[at];
        let placeholder = Phase::WaitingForHandler { until: now };
        let Phase::Confirming { prepared, .. } = std::mem::replace(&mut call.phase, placeholder)
        else {
            unreachable!("matched above")
        };
        match call::apply_decision(&prepared, decision) {
            Confirmed::End(result) => {
                call.phase = running_phase(prepared, None);
                self.end(now, handle, Ending::Result(result), None)
            }
            Confirmed::Run { modified_input } => {
                if let Some(input) = &modified_input {
                    call.input = input.to_string();
                    call.input_tokens = None;
                }
                call.phase = running_phase(prepared, modified_input);
                self.run(now, at)
            }
        }
    }

    fn waiting_for_person(&mut self, now: Millis, handle: CallHandle) {
        if let Some(call) = self.call_mut(handle) {
            let origin = call.progress_high;
            if let Phase::Running {
                deadline, person, ..
            } = &mut call.phase
            {
                *deadline = None;
                *person = Some(HumanWait::after(Waiting::FormSubmit, now, origin));
            }
        }
    }

    fn person_done(&mut self, now: Millis, handle: CallHandle) {
        if let Some(call) = self.call_mut(handle) {
            if let Phase::Running {
                prepared,
                deadline,
                person,
                ..
            } = &mut call.phase
            {
                if person.take().is_some() {
                    *deadline = Some(now.after(prepared.timeout_ms));
                }
            }
        }
    }

    fn settled(&mut self, now: Millis, handle: CallHandle, outcome: HandlerOutcome) {
        let Some(call) = self.calls.iter().find(|call| call.handle == handle) else {
            return; // ended already (timed out, cancelled): a late handler changes nothing
        };
        let Phase::Running {
            prepared,
            modified_input,
            ..
        } = &call.phase
        else {
            return;
        };
        if call.served {
            let ending = match outcome {
                HandlerOutcome::Returned(text) => Ending::Answer(text),
                HandlerOutcome::Threw(why) | HandlerOutcome::NotSerializable(why) => {
                    Ending::Failed(RpcError::new(code::INTERNAL_ERROR, why))
                }
                _ => Ending::Failed(RpcError::new(
                    code::INTERNAL_ERROR,
                    "the page answered nothing",
                )),
            };
            return self.end(now, handle, ending, None);
        }
        let output = prepared.output.as_deref();
        let mut result = match outcome {
            HandlerOutcome::CapabilityMissing(required) => {
                let mut error = RpcError::new(
                    crate::protocol::code::MISSING_CAPABILITY,
                    "the tool needs a capability the agent's client did not declare",
                );
                error.data = Some(json!({ "requiredCapabilities": required }));
                return self.end(now, handle, Ending::Failed(error), None);
            }
            HandlerOutcome::Threw(message) => outcome::handler_failed(&message),
            HandlerOutcome::NotSerializable(why) => outcome::not_serializable(&why),
            HandlerOutcome::ReturnedNothing => call::complete_text("null", output),
            HandlerOutcome::Returned(text) => {
                let result = call::handler_result(&text, output);
                if result.is_error {
                    let warning = Event::Warning {
                        code: WarningCode::OutputInvalid,
                        message: result.text().to_owned(),
                        tool_name: Some(prepared.tool.name.clone()),
                    };
                    self.outputs.push_back(Output::Emit(warning));
                }
                result
            }
        };
        if let Some(input) = modified_input.clone() {
            call::mark_modified(&mut result, input);
        }
        self.end(now, handle, Ending::Result(result), None);
    }

    fn progress(
        &mut self,
        handle: CallHandle,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) {
        let Some(call) = self.calls.iter().find(|call| call.handle == handle) else {
            return; // over: reports after the end are dropped
        };
        // JSON has no NaN or infinity: such a report would reach the runtime as `null`.
        if !progress.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return;
        }
        let base = call.progress_base;
        let call_id = call.call_id.clone();
        let token = call.progress_token.clone();
        if let Some(call) = self.call_mut(handle) {
            call.progress_high = call.progress_high.max(progress + base);
        }
        self.send_progress(&call_id, token, progress, total, message, base);
    }

    /// `base`: what was reported while a person decided; this report goes above it.
    fn send_progress(
        &mut self,
        call_id: &str,
        token: Option<Value>,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
        base: f64,
    ) {
        let Some(progress_token) = token else {
            return; // the runtime did not ask for progress
        };
        let params = ProgressParams {
            progress_token,
            progress,
            total,
            message,
        }
        .above(base);
        let frame = encode_notification(method::PROGRESS, &params);
        self.send(frame, Kind::Progress(call_id));
    }

    /// `notifications/message` for a running call, at or above the level the agent asked for
    /// (`clienttools/logLevel` in the call's `_meta`; none: every level), at most
    /// [`MAX_LOGS_PER_CALL`] per call; what is dropped is said once, on the page.
    fn log(&mut self, handle: CallHandle, level: &str, data: Value, logger: Option<String>) {
        let Some(call) = self.call_mut(handle) else {
            return;
        };
        let Some(severity) = log_severity(level) else {
            let message = format!(
                "ctx.log: '{level}' is not a log level (debug, info, notice, warning, error, \
                 critical, alert, emergency); the message was dropped"
            );
            return self.warn_code(WarningCode::LogDropped, message, None);
        };
        let wanted = call
            .params
            .meta_value(protocol::meta::LOG_LEVEL)
            .and_then(Value::as_str)
            .and_then(log_severity)
            .is_none_or(|least| severity >= least);
        if !wanted {
            return;
        }
        call.logs += 1;
        if call.logs > MAX_LOGS_PER_CALL {
            if call.logs == MAX_LOGS_PER_CALL + 1 {
                let message = format!(
                    "call {} logged more than {MAX_LOGS_PER_CALL} messages; the rest are dropped",
                    call.call_id
                );
                self.warn_code(WarningCode::LogDropped, message, None);
            }
            return;
        }
        let params = LogParams {
            level,
            data,
            logger,
            meta: CallMeta {
                call_id: &call.call_id,
            },
        };
        let frame = encode_notification(method::MESSAGE, &params);
        self.send(frame, Kind::Other);
    }

    /// `ctx.partial`: kept while the call runs (a value after its end is ignored); one that is not
    /// JSON or too large is dropped with a warning naming why, and the earlier one stays.
    fn partial(&mut self, handle: CallHandle, json: Result<String, String>) {
        let Some(call) = self.call_mut(handle) else {
            return;
        };
        if !matches!(call.phase, Phase::Running { .. }) {
            return;
        }
        match crate::partial::read(json.as_deref().map_err(String::as_str)) {
            Ok(value) => call.partial = Some(value),
            Err(why) => {
                let message = format!(
                    "ctx.partial of call {}: {why}; the earlier partial value is kept",
                    shorten(&call.call_id)
                );
                let tool = call.tool_name().to_owned();
                self.warn_code(WarningCode::PartialDropped, message, Some(&tool));
            }
        }
    }

    /// `result` with the call's partial value, if its handler kept one (as a second text block,
    /// and `structuredContent` when the tool declares no output schema).
    fn with_partial(&self, handle: CallHandle, mut result: CallToolResult) -> CallToolResult {
        let Some(call) = self.calls.iter().find(|call| call.handle == handle) else {
            return result;
        };
        if let (Some(partial), Phase::Running { prepared, .. }) = (&call.partial, &call.phase) {
            crate::partial::attach(&mut result, partial, prepared.output.is_none());
        }
        result
    }

    /// A round of requests to the agent from a running handler: the page's own request,
    /// `clienttools/input`, tied to its call (`_meta` `clienttools/callId`); the handler's timeout
    /// stops while the agent answers (bounded like human time, with progress). What cannot be
    /// asked is answered at once with its reason.
    fn ask_agent(&mut self, now: Millis, handle: CallHandle, requests: &str) {
        let waiting = self
            .calls
            .iter()
            .filter(|call| matches!(&call.phase, Phase::Running { round: Some(_), .. }))
            .count();
        let Some(at) = self.position(handle) else {
            return;
        };
        let id = RequestId::String(format!("clienttools-input-{}", self.next_handle));
        self.next_handle += 1;
        let call = &self.calls[at];
        let object = requests.trim_start().starts_with('{')
            && crate::tape::Tape::parse_within(requests, crate::tape::MAX_DEPTH - 3).is_ok();
        let frame = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"{}","params":{{"inputRequests":{requests},"_meta":{{"{}":{}}}}}}}"#,
            serde_json::to_string(&id).unwrap_or_default(),
            method::INPUT,
            protocol::meta::CALL_ID,
            serde_json::to_string(&call.call_id).unwrap_or_default(),
        );
        let refusal = if matches!(call.reply, Reply::Page) {
            // A page call has no agent: as for an agent without the capability.
            Some((
                code::MISSING_CAPABILITY,
                "no agent to ask: the page itself made this call".to_owned(),
            ))
        } else if !matches!(call.phase, Phase::Running { round: None, .. }) {
            Some((
                code::INVALID_REQUEST,
                "the call is not running, or a round already waits".to_owned(),
            ))
        } else if waiting >= MAX_ROUNDS_WAITING {
            Some((
                code::INVALID_REQUEST,
                format!("the page has {MAX_ROUNDS_WAITING} rounds waiting for agents"),
            ))
        } else if !object || check_outgoing(&frame).is_err() {
            Some((
                code::INVALID_PARAMS,
                "a round is {key: {method, params}} within the frame limits".to_owned(),
            ))
        } else {
            None
        };
        if let Some((code, why)) = refusal {
            let answer = Err(RpcError::new(code, why));
            return self.outputs.push_back(Output::AgentAnswered {
                call: handle,
                answer,
            });
        }
        self.outputs.push_back(Output::Send(frame));
        let call = &mut self.calls[at];
        let origin = call.progress_high;
        if let Phase::Running {
            deadline, round, ..
        } = &mut call.phase
        {
            let remaining_ms = deadline.map_or(0.0, |d| (d.0 - now.0).max(0.0));
            *deadline = None;
            *round = Some(AgentRound {
                id,
                wait: HumanWait::after(Waiting::Agent, now, origin),
                remaining_ms,
            });
        }
    }

    /// A response from the runtime: the answer to a round, or why the agent could not answer it.
    fn agent_answer(&mut self, now: Millis, id: &RequestId, answer: Result<Value, RpcError>) {
        let found = self.calls.iter().find_map(|call| match &call.phase {
            Phase::Running {
                round: Some(round), ..
            } if round.id == *id => Some(call.handle),
            _ => None,
        });
        // The handler reads `inputResponses` as an object: anything else is the runtime's fault.
        let answer = answer.and_then(|result| match result.get("inputResponses") {
            Some(Value::Object(_)) => Ok(result),
            _ => Err(RpcError::new(
                code::INVALID_PARAMS,
                "the runtime's answer to the round is not {inputResponses: {key: result}}",
            )),
        });
        if let Some(handle) = found {
            self.end_round(now, handle, answer);
        }
    }

    /// The round is over: the handler hears the answer, and its timeout goes on.
    fn end_round(&mut self, now: Millis, handle: CallHandle, answer: Result<Value, RpcError>) {
        let Some(call) = self.call_mut(handle) else {
            return;
        };
        let Phase::Running {
            deadline, round, ..
        } = &mut call.phase
        else {
            return;
        };
        let Some(round) = round.take() else {
            return;
        };
        *deadline = Some(Millis(now.0 + round.remaining_ms));
        self.outputs.push_back(Output::AgentAnswered {
            call: handle,
            answer,
        });
    }

    fn tools_changed(&mut self, now: Millis) {
        if let Some(changed) = &mut self.batched {
            *changed = true;
            return;
        }
        self.outputs.push_back(Output::Emit(Event::ToolsChanged));
        let frame = encode_notification(method::TOOLS_LIST_CHANGED, &json!({}));
        self.send(frame, Kind::Other);
        // Calls waiting for a turn of a tool removed or replaced end: they were admitted for it.
        let orphaned: Vec<(CallHandle, String)> = (self.calls.iter())
            .filter_map(|call| match &call.phase {
                Phase::Queued { prepared } => {
                    let tool = self.registry.get(&prepared.tool.name);
                    let same = tool.is_some_and(|tool| Arc::ptr_eq(&tool, &prepared.tool));
                    (!same).then(|| (call.handle, prepared.tool.name.clone()))
                }
                _ => None,
            })
            .collect();
        for (handle, name) in orphaned {
            let why = format!(
                "tool '{name}' was removed or replaced while the call waited for its turn; it \
                 did not run"
            );
            let result = CallToolResult::error(why.clone());
            self.end(now, handle, Ending::Quiet(result), Stop::cancelled(&why));
        }
        // Calls waiting for a handler may have one now.
        let waiting: Vec<CallHandle> = self
            .calls
            .iter()
            .filter(|call| matches!(call.phase, Phase::WaitingForHandler { .. }))
            .map(|call| call.handle)
            .collect();
        for handle in waiting {
            self.admit(now, handle);
        }
    }

    /// A new session owes nothing to an earlier one: its stored answers and interrupted ids are
    /// forgotten, and agent calls still live for it are cancelled (nobody can receive their
    /// results: their ids mean nothing to the new session's runtime).
    fn session_begun(&mut self, now: Millis, resumed: bool) {
        if resumed {
            return;
        }
        let mut earlier: Vec<(bool, CallHandle)> = self
            .calls
            .iter()
            .filter(|call| matches!(call.reply, Reply::Frame(_)))
            .map(|call| (!matches!(call.phase, Phase::Queued { .. }), call.handle))
            .collect();
        // Those waiting for a turn first: a turn given back must not start one of them.
        earlier.sort();
        for (_, handle) in earlier {
            let reason = "the runtime started a new session";
            self.end(now, handle, Ending::Cancelled, Stop::cancelled(reason));
        }
        self.ledger = CallLedger::default();
    }

    fn timeout(&mut self, now: Millis) {
        let due: Vec<CallHandle> = self
            .calls
            .iter()
            .filter(|call| call.wakes_at().is_some_and(|at| at <= now))
            .map(|call| call.handle)
            .collect();
        for handle in due {
            self.wake(now, handle);
        }
    }

    fn wake(&mut self, now: Millis, handle: CallHandle) {
        let Some(at) = self.position(handle) else {
            return;
        };
        let call = &mut self.calls[at];
        let wait = match &mut call.phase {
            Phase::WaitingForHandler { .. } => return self.admit(now, handle),
            Phase::Running {
                prepared,
                deadline: Some(deadline),
                person: None,
                round: None,
                modified_input,
            } if *deadline <= now => {
                let mut result = outcome::timed_out(prepared.timeout_ms);
                if let Some(partial) = &call.partial {
                    crate::partial::attach(&mut result, partial, prepared.output.is_none());
                }
                if let Some(input) = modified_input.clone() {
                    call::mark_modified(&mut result, input);
                }
                let abort = result.text().to_owned();
                let stop = Stop {
                    abort: &abort,
                    toolcancel: Some("timeout"),
                };
                return self.end(now, handle, Ending::Result(result), Some(stop));
            }
            Phase::Running {
                round: Some(round), ..
            } => &mut round.wait,
            Phase::Running {
                person: Some(wait), ..
            }
            | Phase::Confirming { wait, .. }
            | Phase::ResultForm { wait, .. } => wait,
            Phase::Running { .. } | Phase::Queued { .. } => return,
        };
        if wait.next_tick > now {
            return;
        }
        while wait.next_tick <= now && wait.waited_ms < HUMAN_WAIT_MAX_MS {
            wait.waited_ms += HUMAN_WAIT_TICK_MS;
            wait.next_tick = wait.next_tick.after(HUMAN_WAIT_TICK_MS);
        }
        let (why, waited_ms, origin) = (wait.why, wait.waited_ms, wait.origin);
        if waited_ms >= HUMAN_WAIT_MAX_MS && matches!(why, Waiting::Agent) {
            let expired = RpcError::new(code::REQUEST_TIMEOUT, why.expired().text());
            return self.end_round(now, handle, Err(expired));
        }
        if waited_ms >= HUMAN_WAIT_MAX_MS {
            let mut result = why.expired();
            if let Phase::Running {
                modified_input: Some(input),
                ..
            } = &call.phase
            {
                call::mark_modified(&mut result, input.clone());
            }
            let abort = result.text().to_owned();
            let stop = Stop {
                abort: &abort,
                toolcancel: None,
            };
            return self.end(now, handle, Ending::Result(result), Some(stop));
        }
        let progress = origin + waited_ms as f64;
        call.progress_base = progress;
        call.progress_high = progress;
        let (call_id, token) = (call.call_id.clone(), call.progress_token.clone());
        let message = Some(why.message().to_owned());
        self.send_progress(&call_id, token, progress, None, message, 0.0);
    }

    /// Ends a call, once: the call leaves the engine here, so a later ending finds nothing.
    /// `stop`: the call's work is cut short (what was shown is withdrawn, its handler aborted).
    /// A call that took a turn of its tool gives it to the next call waiting for one.
    fn end(&mut self, now: Millis, handle: CallHandle, ending: Ending, stop: Option<Stop<'_>>) {
        let Some(at) = self.position(handle) else {
            return;
        };
        let turn = self.calls[at].turn_of().map(str::to_owned);
        self.remove(now, at, ending, stop);
        if let Some(name) = turn {
            self.start_waiting(now, &name);
        }
    }

    fn remove(&mut self, now: Millis, at: usize, ending: Ending, stop: Option<Stop<'_>>) {
        let call = self.calls.remove(at);
        let handle = call.handle;
        let tool_name = call.tool_name().to_owned();
        // A call of a tool declared `untrustedContentHint: true` (known once admitted): its
        // result is marked, for a runtime without the bridge and for `invoke` alike.
        let untrusted = match &call.phase {
            Phase::Queued { prepared }
            | Phase::Confirming { prepared, .. }
            | Phase::Running { prepared, .. } => {
                crate::call::is_untrusted(prepared.tool.annotations.as_ref())
            }
            _ => false,
        };
        if let Some(stop) = stop {
            match &call.phase {
                Phase::Confirming { .. } | Phase::ResultForm { .. } => {
                    self.outputs.push_back(Output::WithdrawAsk { call: handle })
                }
                Phase::Running { .. } => self.outputs.push_back(Output::Abort {
                    call: handle,
                    reason: stop.abort.to_owned(),
                }),
                Phase::WaitingForHandler { .. } | Phase::Queued { .. } => {}
            }
            let told = call.activated_at.is_some() || matches!(call.phase, Phase::Queued { .. });
            if let (Some(reason), true) = (stop.toolcancel, told) {
                self.outputs.push_back(Output::Emit(Event::Call {
                    tool_name: tool_name.clone(),
                    call_id: call.call_id.clone(),
                    what: CallEvent::Cancelled {
                        reason: reason.to_owned(),
                        partial: call.partial.clone(),
                    },
                }));
            }
        }
        // A served request's every ending is a JSON-RPC answer: its result, or an error with the
        // text a tool call's error result would have had.
        let ending = match ending {
            Ending::Result(result) | Ending::Quiet(result) if call.served => Ending::Failed(
                RpcError::new(code::INTERNAL_ERROR, result.text().to_owned()),
            ),
            Ending::Cancelled if call.served => {
                // Nothing is sent now, but a re-send of it learns what happened.
                if let Reply::Frame(id) = &call.reply {
                    let why = RpcError::new(code::INTERNAL_ERROR, "the request was cancelled");
                    self.ledger
                        .finish(&ledger_key(id), encode_error(Some(id), &why));
                }
                return;
            }
            Ending::Answer(body) => {
                if let Reply::Frame(id) = &call.reply {
                    let frame = served_answer(id, &body);
                    self.ledger.finish(&ledger_key(id), frame.clone());
                    self.outputs.push_back(Output::Send(frame));
                }
                return;
            }
            ending => ending,
        };
        if let Ending::Failed(error) = ending {
            if let Some(started) = call.activated_at {
                self.outputs.push_back(Output::Emit(Event::Call {
                    tool_name: tool_name.clone(),
                    call_id: call.call_id.clone(),
                    what: CallEvent::Finished {
                        is_error: true,
                        duration_ms: now.since(started),
                    },
                }));
            }
            return match call.reply {
                Reply::Page => self.outputs.push_back(Output::Settled {
                    call: handle,
                    result: Some(CallToolResult::error(error.message)),
                }),
                Reply::Frame(id) => {
                    let frame = encode_error(Some(&id), &error);
                    self.ledger.finish(&ledger_key(&id), frame.clone());
                    self.outputs.push_back(Output::Send(frame));
                }
            };
        }
        let mut result = match ending {
            Ending::Failed(_) | Ending::Answer(_) => unreachable!("answered above"),
            Ending::Result(result) => {
                if let Some(started) = call.activated_at {
                    self.outputs.push_back(Output::Emit(Event::Call {
                        tool_name: tool_name.clone(),
                        call_id: call.call_id.clone(),
                        what: CallEvent::Finished {
                            is_error: result.is_error,
                            duration_ms: now.since(started),
                        },
                    }));
                }
                Some(result)
            }
            Ending::Quiet(result) => Some(result),
            Ending::Cancelled => None,
        };
        if let (true, Some(result)) = (untrusted, &mut result) {
            crate::call::mark_untrusted(result);
        }
        match call.reply {
            Reply::Page => self.outputs.push_back(Output::Settled {
                call: handle,
                result,
            }),
            Reply::Frame(id) => {
                let sent = result.is_some();
                // A cancelled call sends nothing now, but a re-send of it learns what happened.
                let result = result.unwrap_or_else(outcome::cancelled);
                let frame = self.call_answer(&id, &tool_name, result, call.trace);
                self.ledger.finish(&ledger_key(&id), frame.clone());
                if sent {
                    self.outputs.push_back(Output::Send(frame));
                }
            }
        }
    }

    // ---- what leaves ------------------------------------------------------------------------

    /// The answer frame to `tools/call` `id`, with the call's trace context in its `_meta`: when the
    /// runtime would refuse it, an error result for the same call naming the limit, so the call
    /// still ends with exactly one outcome.
    fn call_answer(
        &mut self,
        id: &RequestId,
        tool: &str,
        mut result: CallToolResult,
        trace: Option<TraceContext>,
    ) -> String {
        let traced = |result: &mut CallToolResult| {
            if let Some(trace) = trace.clone() {
                trace.put(result.meta.get_or_insert_with(Default::default));
            }
        };
        traced(&mut result);
        let frame = encode_call_result(id, &result);
        let Err(limit) = check_outgoing(&frame) else {
            return frame;
        };
        self.warn(
            format!(
                "the result of '{tool}' (call {id}) was not sent: {limit}; \
                 the agent gets an error result instead"
            ),
            Some(tool),
        );
        let mut error = CallToolResult::error(format!("the tool's result was not sent: {limit}"));
        traced(&mut error);
        encode_call_result(id, &error)
    }

    /// Sends a frame if the runtime would accept it; what does not fit is replaced or dropped, by
    /// kind, with a page warning (SPEC §6: a side never sends what the other would refuse).
    fn send(&mut self, frame: String, kind: Kind<'_>) {
        let Err(limit) = check_outgoing(&frame) else {
            return self.outputs.push_back(Output::Send(frame));
        };
        drop(frame);
        match kind {
            Kind::ToolsList(id) => {
                self.warn(
                    format!(
                        "the tool list was not sent: {limit}; the runtime gets an error instead \
                         (a tool's schema or description is too large)"
                    ),
                    None,
                );
                let error = RpcError::new(
                    code::INTERNAL_ERROR,
                    format!("the page's tool list was not sent: {limit}"),
                );
                self.outputs
                    .push_back(Output::Send(encode_error(Some(id), &error)));
            }
            Kind::Progress(call_id) => {
                // Its token (or message) is what is too large: no later report would fit either.
                let stopped = self.calls.iter_mut().find(|call| call.call_id == call_id);
                if let Some(call) = stopped {
                    call.progress_token = None;
                }
                self.warn(
                    format!(
                        "a progress notification of call {} was dropped: {limit}; the call \
                         reports no more progress",
                        shorten(call_id)
                    ),
                    None,
                )
            }
            Kind::Other => self.warn(
                format!("a frame for the runtime was dropped: {limit}"),
                None,
            ),
        }
    }

    /// A call's W3C trace context, from its `_meta`: what is not W3C's is dropped, with a
    /// `trace_context_invalid` warning naming what was wrong (the call goes on).
    fn trace_of(&mut self, params: &CallToolParams) -> Option<TraceContext> {
        let (trace, dropped) = TraceContext::read(params.meta.as_ref());
        if let Some(dropped) = dropped {
            let (code, message) = (WarningCode::TraceContextInvalid, dropped.to_string());
            self.warn_code(code, message, Some(&params.name));
        }
        trace
    }

    fn warn(&mut self, message: String, tool_name: Option<&str>) {
        self.warn_code(WarningCode::FrameLimit, message, tool_name);
    }

    fn warn_code(&mut self, code: WarningCode, message: String, tool_name: Option<&str>) {
        self.outputs.push_back(Output::Emit(Event::Warning {
            code,
            message,
            tool_name: tool_name.map(str::to_owned),
        }));
    }
}

/// At most 64 characters of `text`, for messages that quote what a runtime sent.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The answer to a call the page's reload interrupted, which it does not run again.
fn not_run_again(call_id: &str) -> String {
    format!("the page was reloaded while call {call_id} was running; it was not run again")
}

/// The ledger's key of a call id: its JSON, so `1` and `"1"` are two calls.
/// What a page with a server ([`PageEngine::serve_with`]) offers.
const SERVER_CAPABILITIES: &str = r#"{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"prompts":{"listChanged":true},"completions":{}}"#;

/// The frame answering served request `id` with `body` (`{"result": …}` or `{"error": …}`), or,
/// when the runtime would refuse it or it is no such answer, an error naming why.
fn served_answer(id: &RequestId, body: &str) -> String {
    let id_text = serde_json::to_string(id).unwrap_or_default();
    let shaped = body.starts_with(r#"{"result":"#) || body.starts_with(r#"{"error":"#);
    let frame = format!(
        r#"{{"jsonrpc":"2.0","id":{id_text},{}"#,
        body.get(1..).unwrap_or("")
    );
    let why = match check_outgoing(&frame) {
        Ok(()) if shaped => return frame,
        Ok(()) => "the page's server answered something that is not {result} or {error}".to_owned(),
        Err(limit) => format!("the page's answer was not sent: {limit}"),
    };
    encode_error(Some(id), &RpcError::new(code::INTERNAL_ERROR, why))
}

fn ledger_key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// `_meta` of the page's own messages for a call.
#[derive(serde::Serialize)]
struct CallMeta<'a> {
    #[serde(rename = "clienttools/callId")]
    call_id: &'a str,
}

/// `notifications/message` params (`ctx.log`).
#[derive(serde::Serialize)]
struct LogParams<'a> {
    level: &'a str,
    data: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    logger: Option<String>,
    #[serde(rename = "_meta")]
    meta: CallMeta<'a>,
}

/// RFC 5424 levels, least severe first (MCP's `LoggingLevel`).
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Where `level` stands among [`LOG_LEVELS`] (higher is more severe); `None` for a name MCP does not have.
pub fn log_severity(level: &str) -> Option<usize> {
    LOG_LEVELS.iter().position(|known| *known == level)
}

fn running_phase<H>(prepared: PreparedCall<H>, modified_input: Option<Value>) -> Phase<H> {
    Phase::Running {
        prepared,
        modified_input,
        deadline: None,
        person: None,
        round: None,
    }
}

/// What a frame is, which decides what replaces it when it does not fit.
enum Kind<'a> {
    /// The answer to `tools/list` `id`: replaced by a JSON-RPC error response.
    ToolsList(&'a RequestId),
    /// `notifications/progress` of a call: dropped (a hint; the result still comes).
    Progress(&'a str),
    /// Anything else (small by construction): dropped.
    Other,
}

/// The page's answer to `initialize`: an MCP server with tools that change.
pub fn initialize_result() -> InitializeResult {
    InitializeResult {
        protocol_version: PROTOCOL_VERSION.into(),
        capabilities: json!({ "tools": { "listChanged": true } }),
        server_info: Implementation {
            name: "client-tools".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        instructions: None,
    }
}
