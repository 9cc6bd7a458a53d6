//! The state one `ClientTools` instance shares with its connection and its running calls.
//!
//! Everything lives behind `Rc` + `RefCell` (a page is single-threaded). Borrows are short and
//! never held across a call into page JavaScript (STYLE #7).

use client_tools_core::WarningCode;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use client_tools_core::connect::ConnectResult;
use client_tools_core::ledger::CallLedger;
use client_tools_core::protocol::{encode_notification, method, ProgressParams};
use client_tools_core::registry::{Registry, Warning};
use futures::channel::{mpsc, oneshot};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;

use crate::deadlines::Deadlines;
use crate::events::EventHub;
use crate::options::Options;
use crate::outgoing::{self, Kind};
use crate::webmcp::browser_agent::BrowserAgent;
use crate::webmcp::forms::FormTools;

/// Connection states reported by `connectionchange` (SPEC §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionState {
    Disconnected,
    Connecting,
    Connected,
    Reconnecting,
}

impl ConnectionState {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionState::Disconnected => "disconnected",
            ConnectionState::Connecting => "connecting",
            ConnectionState::Connected => "connected",
            ConnectionState::Reconnecting => "reconnecting",
        }
    }
}

/// The page's link to the runtime: where frames go, and whether the page wants to stay connected.
#[derive(Default)]
pub struct Link {
    pub outgoing: Option<mpsc::UnboundedSender<String>>,
    pub close: Option<oneshot::Sender<()>>,
    /// A page-supplied `send(frame)` (`attachTransport`), used instead of the WebSocket.
    pub custom: Option<js_sys::Function>,
    /// Frames produced while the socket was down, sent after the reconnect (bounded).
    pub backlog: Vec<String>,
}

/// How many frames are kept while disconnected; older ones are dropped first.
pub const BACKLOG_LIMIT: usize = 1_000;

/// Why a running call must stop before its handler returns.
pub enum Stop {
    /// The runtime cancelled it (`notifications/cancelled`, or a new session): no result is sent.
    Cancelled(String),
    /// Its handler ran past its timeout ([`crate::deadlines`]).
    TimedOut,
}

impl Stop {
    /// The `reason` of the `toolcancel` event.
    pub fn reason(self) -> String {
        match self {
            Stop::Cancelled(reason) => reason,
            Stop::TimedOut => "timeout".into(),
        }
    }
}

/// The calls in progress, by call id. A page runs few at once: a scanned `Vec` costs the package
/// less than a `HashMap` (this was the module's only `HashMap` of its own).
#[derive(Default)]
pub struct RunningCalls(Vec<(String, RunningCall)>);

impl RunningCalls {
    pub fn insert(&mut self, call_id: String, call: RunningCall) {
        self.remove(&call_id);
        self.0.push((call_id, call));
    }

    pub fn get(&self, call_id: &str) -> Option<&RunningCall> {
        self.0
            .iter()
            .find(|(id, _)| id == call_id)
            .map(|(_, call)| call)
    }

    pub fn get_mut(&mut self, call_id: &str) -> Option<&mut RunningCall> {
        self.0
            .iter_mut()
            .find(|(id, _)| id == call_id)
            .map(|(_, call)| call)
    }

    pub fn remove(&mut self, call_id: &str) -> Option<RunningCall> {
        let at = self.0.iter().position(|(id, _)| id == call_id)?;
        Some(self.0.swap_remove(at).1)
    }
}

/// A call whose handler may still be running.
pub struct RunningCall {
    /// Stops the call, once.
    pub stop: Option<oneshot::Sender<Stop>>,
    /// Where `ctx.reportProgress` reports to, when the runtime asked for progress.
    pub progress_token: Option<Value>,
    /// Progress already reported while a person decided (ms waited): the handler's own reports are
    /// sent above it, because MCP progress must only increase.
    pub progress_base: f64,
    /// Why the page withdrew the call ([`crate::call_runner::withdraw`]): it ends with an error
    /// result, where a runtime cancel ends with none.
    pub withdrawn: Option<String>,
}

type ProgressCallback = Closure<dyn Fn(JsValue, JsValue, JsValue, JsValue)>;

pub struct Page {
    pub options: Options,
    pub registry: RefCell<Registry<js_sys::Function>>,
    pub events: EventHub,
    /// Calls in progress, by call id.
    pub running: RefCell<RunningCalls>,
    pub link: RefCell<Link>,
    pub state: Cell<ConnectionState>,
    /// The runtime's id for this page's session: unknown until the first successful connect.
    pub session_id: RefCell<Option<String>>,
    /// What resumes the session on the next connect (from the last connect, or `sessionStorage`).
    pub resume_secret: RefCell<Option<String>>,
    /// Counts the sessions this page had: a call answers only the session it arrived in.
    pub session_epoch: Cell<u64>,
    /// Which agent call ids ran, run, or were interrupted by a reload (at most once per id).
    pub ledger: RefCell<CallLedger>,
    /// The handler timeouts of running calls (one page timer).
    pub deadlines: Deadlines,
    /// Tools the user allowed for the rest of this page's life (`allowForSession`), by name.
    pub allowed_for_session: RefCell<Vec<String>>,
    /// The `<form toolname>` tools (SPEC §8).
    pub forms: FormTools,
    /// What is registered with the browser's `modelContext` (SPEC §8).
    pub browser_agent: BrowserAgent,
    /// This page itself, for what must hold it weakly (the browser agent's `execute`).
    this: Weak<Page>,
    next_local_call: Cell<u64>,
    report_progress: ProgressCallback,
}

impl Page {
    /// `resume_secret` and `interrupted`: what the previous page of this tab left (the secret of its
    /// session, the call ids that were running when it was unloaded).
    pub fn new(
        options: Options,
        resume_secret: Option<String>,
        interrupted: Vec<String>,
    ) -> Rc<Self> {
        Rc::new_cyclic(|weak: &Weak<Page>| {
            let deadlines = Deadlines::new(weak.clone());
            let this = weak.clone();
            let weak = weak.clone();
            let report_progress = Closure::new(
                move |call_id: JsValue, progress: JsValue, total: JsValue, message: JsValue| {
                    if let (Some(page), Some(call_id)) = (weak.upgrade(), call_id.as_string()) {
                        page.report_progress(
                            &call_id,
                            progress.as_f64(),
                            total.as_f64(),
                            message.as_string(),
                        );
                    }
                },
            );
            Self {
                deadlines,
                registry: RefCell::new(Registry::new(options.default_timeout_ms)),
                options,
                events: EventHub::default(),
                running: RefCell::default(),
                link: RefCell::new(Link::default()),
                state: Cell::new(ConnectionState::Disconnected),
                ledger: RefCell::new(CallLedger::default().with_interrupted(interrupted)),
                session_id: RefCell::new(None),
                resume_secret: RefCell::new(resume_secret),
                session_epoch: Cell::new(0),
                allowed_for_session: RefCell::default(),
                forms: FormTools::default(),
                browser_agent: BrowserAgent::new(this.clone()),
                this,
                next_local_call: Cell::new(1),
                report_progress,
            }
        })
    }

    /// `(callId, progress, total?, message?)`: bound to a call id, it becomes `ctx.reportProgress`.
    pub fn report_progress_fn(&self) -> &js_sys::Function {
        self.report_progress.as_ref().unchecked_ref()
    }

    /// Sends `notifications/progress` for a running call that has a progress token (the handler's
    /// `ctx.reportProgress`): above what was reported while a person decided, `total` shifted alike.
    pub fn report_progress(
        &self,
        call_id: &str,
        progress: Option<f64>,
        total: Option<f64>,
        message: Option<String>,
    ) {
        let (token, base) = match self.running.borrow().get(call_id) {
            Some(call) => (call.progress_token.clone(), call.progress_base),
            None => return,
        };
        let progress = progress.unwrap_or(0.0) + base;
        self.send_progress(call_id, token, progress, total.map(|t| t + base), message);
    }

    /// Progress while a person decides (`waited_ms` so far); the handler's reports go above it.
    pub fn report_waiting(&self, call_id: &str, waited_ms: f64, message: &str) {
        let token = match self.running.borrow_mut().get_mut(call_id) {
            Some(call) => {
                call.progress_base = waited_ms;
                call.progress_token.clone()
            }
            None => return,
        };
        self.send_progress(call_id, token, waited_ms, None, Some(message.into()));
    }

    fn send_progress(
        &self,
        call_id: &str,
        token: Option<Value>,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) {
        if let Some(progress_token) = token {
            let params = ProgressParams {
                progress_token,
                progress,
                total,
                message,
            };
            let frame = encode_notification(method::PROGRESS, &params);
            self.send_as(frame, Kind::Progress { call_id });
        }
    }

    /// The runtime accepted the connection (`client_tools_core::connect`): remember the session.
    /// A new session (`resumed: false`) owes nothing to an earlier one: its interrupted call ids,
    /// stored answers and waiting frames are forgotten, and agent calls still running for it are
    /// cancelled (nobody can receive their results).
    pub fn begin_session(&self, session: ConnectResult) {
        crate::session::store(&session);
        *self.resume_secret.borrow_mut() = Some(session.resume_secret);
        *self.session_id.borrow_mut() = Some(session.session_id);
        if session.resumed {
            return;
        }
        self.session_epoch.set(self.session_epoch.get() + 1);
        self.link.borrow_mut().backlog.clear();
        let earlier = std::mem::take(&mut *self.ledger.borrow_mut());
        for call_id in earlier.running_ids() {
            let reason = "the runtime started a new session".into();
            crate::call_runner::stop(self, &call_id, Stop::Cancelled(reason));
        }
    }

    /// Sends a frame to the runtime (or keeps it for after the reconnect), if it fits the runtime's
    /// limits; see [`Self::send_as`].
    pub fn send(&self, frame: String) {
        self.send_as(frame, Kind::Other);
    }

    /// Sends a frame of a known kind: one the runtime would refuse is replaced or dropped by
    /// [`outgoing::fit`], the one place that checks.
    pub fn send_as(&self, frame: String, kind: Kind<'_>) {
        if let Some(frame) = outgoing::fit(&self.events, frame, kind) {
            self.transmit(frame);
        }
    }

    fn transmit(&self, mut frame: String) {
        // The function is called with no borrow held: it may hand a frame straight back.
        let custom = self.link.borrow().custom.clone();
        if let Some(send) = custom {
            if let Err(thrown) = send.call1(&JsValue::NULL, &JsValue::from_str(&frame)) {
                let message = crate::js::error_message(&thrown);
                self.events.warn(
                    WarningCode::TransportFailed,
                    &format!("the transport's send threw: {message}"),
                    None,
                );
            }
            return;
        }
        let mut link = self.link.borrow_mut();
        if let Some(outgoing) = &link.outgoing {
            match outgoing.unbounded_send(frame) {
                Ok(()) => return,
                Err(closed) => frame = closed.into_inner(),
            }
        }
        if self.state.get() == ConnectionState::Disconnected {
            return; // not connected at all, and not trying: nobody will read it
        }
        if link.backlog.len() >= BACKLOG_LIMIT {
            link.backlog.remove(0);
        }
        link.backlog.push(frame);
    }

    pub fn set_state(&self, state: ConnectionState) {
        if self.state.replace(state) != state {
            let detail = crate::js::object(&[("state", state.as_str().into())]);
            self.events.emit("connectionchange", &detail);
        }
    }

    /// The tool list changed: tell the page and the runtime.
    pub fn tools_changed(&self) {
        if let Some(page) = self.this.upgrade() {
            BrowserAgent::sync(&page);
        }
        self.events.emit("toolschanged", &js_sys::Object::new());
        self.send(encode_notification(method::TOOLS_LIST_CHANGED, &json!({})));
    }

    pub fn report(&self, warnings: &[Warning]) {
        for warning in warnings {
            self.events
                .warn(warning.code, &warning.message, warning.tool_name.as_deref());
        }
    }

    /// A fresh id for a call the page makes itself (`invoke`).
    pub fn next_local_call_id(&self) -> String {
        let n = self.next_local_call.get();
        self.next_local_call.set(n + 1);
        format!("local-{n}")
    }
}
