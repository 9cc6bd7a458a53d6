//! The one way to call a page's tool from Rust ([`PageSession::call_tool`]): what to call
//! ([`ToolCall`]), how ([`CallOptions`]) and how it ended ([`CallEnd`]). Every route of the bridge
//! calls through it too, so an embedding runtime gets exactly the rules `/mcp` and `/api` get.
//!
//! [`PageSession::call_tool`]: crate::PageSession::call_tool

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use client_tools_core::protocol::{CallToolResult, ProgressParams, RpcError};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::calls::prepared_call::PreparedCall;
use client_tools_core::protocol::{self, RequestId};

/// What [`PageSession::call_tool`](crate::PageSession::call_tool) calls: a tool by name with its
/// arguments (checked there as on every route), or a call already checked by
/// [`PageSession::prepare_call`](crate::PageSession::prepare_call) — the routes prepare first
/// when the person at the agent must confirm before the call runs.
#[derive(Debug)]
pub enum ToolCall {
    /// A tool of the page (or of `--tools`) by its listed or its original name.
    Named { name: String, arguments: Value },
    /// A call its session prepared: its timeout and `_meta` were decided then (boxed: it is the
    /// larger by far).
    Prepared(Box<PreparedCall>),
}

impl ToolCall {
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self::Named {
            name: name.into(),
            arguments,
        }
    }
}

impl From<PreparedCall> for ToolCall {
    fn from(call: PreparedCall) -> Self {
        Self::Prepared(Box::new(call))
    }
}

impl<N: Into<String>> From<(N, Value)> for ToolCall {
    fn from((name, arguments): (N, Value)) -> Self {
        Self::new(name, arguments)
    }
}

/// A future that ends a call early with its reason (see [`CallOptions::cancel`]).
type Cancel<'a> = Pin<Box<dyn Future<Output = String> + Send + 'a>>;

/// How one call runs. Every option is optional: `CallOptions::default()` calls with the tool's or
/// the bridge's timeout, no `_meta`, no cancellation, and no one to hear the page's progress, log
/// messages or rounds (each round is then refused as a capability the caller lacks, SPEC §4).
#[derive(Default)]
pub struct CallOptions<'a> {
    pub(crate) timeout: Option<Duration>,
    pub(crate) meta: Option<Map<String, Value>>,
    pub(crate) cancel: Option<Cancel<'a>>,
    pub(crate) progress: Option<mpsc::Sender<ProgressParams>>,
    pub(crate) events: Option<mpsc::Sender<CallEvent>>,
}

impl<'a> CallOptions<'a> {
    pub fn new() -> Self {
        Self::default()
    }

    /// How long the page's handler may run (SPEC §6; within the core's bounds, else the call is
    /// refused naming them). Without it: the `_meta`'s `clienttools/timeoutMs`, the tool's, or the
    /// bridge's default.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The caller's `_meta` for the call (SPEC §6), checked as on every route: only the keys a
    /// caller may set; `clienttools/confirmedBy` is refused.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// When `cancel` completes first (with a reason), the page is sent `notifications/cancelled`
    /// (its handler's `ctx.signal` aborts) asking for its answer (`clienttools/answer`), awaited
    /// 2.5 s at most: the call ends [`CallEnd::Cancelled`] — or, when that answer carries the
    /// handler's partial value (`ctx.partial`, SPEC §7), [`CallEnd::Result`] with the error
    /// result carrying it (`client_tools_core::partial::of` reads it).
    pub fn cancel(mut self, cancel: impl Future<Output = String> + Send + 'a) -> Self {
        self.cancel = Some(Box::pin(cancel));
        self
    }

    /// The page's progress reports, after the guardrails (one that does not fit is dropped: the
    /// next one supersedes it).
    pub fn progress(mut self, progress: mpsc::Sender<ProgressParams>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// The page's log messages and rounds of requests for the call ([`CallEvent`]), after the
    /// guardrails. A round must be answered with
    /// [`PageSession::answer_round`](crate::PageSession::answer_round); a full channel drops a log
    /// message and refuses a round.
    pub fn events(mut self, events: mpsc::Sender<CallEvent>) -> Self {
        self.events = Some(events);
        self
    }

    /// The cancellation, or a future that never completes.
    pub(crate) fn take_cancel(&mut self) -> Cancel<'a> {
        self.cancel
            .take()
            .unwrap_or_else(|| Box::pin(std::future::pending()))
    }
}

/// How a call ended: exactly one of these, whatever happened to the page.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum CallEnd {
    /// The call's result. A page that is missing, gone, silent or refusing, a call the bridge
    /// refused, and a handler that failed are all error results (`is_error`), never a hang.
    Result(CallToolResult),
    /// The page failed the call with a JSON-RPC error an MCP agent must get as one: `-32021`, a
    /// capability the caller did not declare (SPEC §4), with `requiredCapabilities`.
    PageError(RpcError),
    /// The call's [`CallOptions::cancel`] completed first: the page was told, no result follows
    /// (unless the page's answer to the cancel carried a partial value: then a `Result`).
    Cancelled,
}

impl CallEnd {
    /// The result to answer with for a caller that is not an MCP peer: a page error and a
    /// cancellation become error results that say so.
    pub fn into_result(self) -> CallToolResult {
        match self {
            Self::Result(result) => result,
            Self::PageError(error) => CallToolResult::error(describe_page_error(&error)),
            Self::Cancelled => CallToolResult::error("cancelled"),
        }
    }

    /// `None` when cancelled; otherwise [`Self::into_result`].
    pub fn result(self) -> Option<CallToolResult> {
        match self {
            Self::Cancelled => None,
            other => Some(other.into_result()),
        }
    }

    /// `None` when cancelled; otherwise the result or the page's JSON-RPC error.
    pub(crate) fn into_outcome(self) -> Option<CallOutcome> {
        match self {
            Self::Result(result) => Some(Ok(result)),
            Self::PageError(error) => Some(Err(error)),
            Self::Cancelled => None,
        }
    }
}

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
}

/// A call's end as the page decided it: its result, or the JSON-RPC error the agent must get as
/// one (`-32021` with `requiredCapabilities`).
pub type CallOutcome = Result<CallToolResult, RpcError>;

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

/// Whether the page's error on a call is `-32021` (a capability the agent did not declare).
pub(crate) fn is_missing_capability(error: &RpcError) -> bool {
    error.code == protocol::code::MISSING_CAPABILITY
}
