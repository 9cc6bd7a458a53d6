//! The state one `ClientTools` instance shares with its connection and its calls, and the loop
//! that drives the core's page engine: [`Page::feed`] hands it an input with the time, then every
//! output it returns is performed ([`Drivers`]: [`crate::driver`]'s functions) and the one page
//! timer is armed for the engine's next wake-up.
//!
//! Everything lives behind `Rc` + `RefCell` (a page is single-threaded). Borrows are short and
//! never held across a call into page JavaScript (STYLE #7): the engine is borrowed to take one
//! output, released, and only then is the output performed.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use crate::oneshot;
use client_tools_core::connection::{ConnInput, Connection};
use client_tools_core::limits::MAX_PARTIAL_BYTES;
use client_tools_core::page_engine::{
    CallHandle, Caller, HandlerOutcome, Input, Output, PageEngine,
};
use client_tools_core::partial;
use client_tools_core::protocol::CallToolResult;
use client_tools_core::time::Millis;
use client_tools_core::{CoreError, WarningCode};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::events::EventHub;
use crate::options::Options;
use crate::webmcp_state::{BrowserAgent, FormTools};

/// The page's link to the runtime: where frames go, and whether the page wants to stay connected.
#[derive(Default)]
pub struct Link {
    /// The WebSocket of the connection engine's current attempt.
    pub socket: Option<Socket>,
    /// `connect()` calls waiting for the connection engine's outcome.
    pub connecting: Vec<oneshot::Sender<Result<(), CoreError>>>,
    /// A page-supplied `send(frame)` (`attachTransport`), used instead of the WebSocket.
    pub custom: Option<js_sys::Function>,
    /// The page itself while its connection is wanted (see `transport::websocket`).
    pub keepalive: Option<Rc<Page>>,
    /// The page's visibility and focus are watched (reported to the runtime: SPEC §13).
    pub watching_activity: bool,
}

/// A WebSocket with the handlers that feed its events back (removed before it is dropped).
pub struct Socket {
    pub socket: web_sys::WebSocket,
    pub handlers: [Closure<dyn FnMut(JsValue)>; 3],
}

/// What a call has outside the engine while it runs: how to stop its handler or its form.
pub enum Running {
    /// A handler's `ctx` (its `signal` aborts).
    Handler(js_sys::Object),
    /// A form being filled: dropping the sender stops the wait for its submit.
    Form(oneshot::Sender<()>),
}

/// Per-call state the driver keeps beside the engine, by call handle. A page runs few calls at
/// once: scanned `Vec`s cost the package less than maps.
#[derive(Default)]
pub struct CallSlots {
    pub running: Vec<(CallHandle, Running)>,
    /// Dialog requests shown, to withdraw when the call ends first.
    pub asked: Vec<(CallHandle, u32)>,
    /// Page calls (`invoke`, the browser's agent) waiting for their outcome.
    pub waiting: Vec<(CallHandle, oneshot::Sender<Option<CallToolResult>>)>,
}

impl CallSlots {
    /// The `ctx` of `call`'s running handler.
    pub fn handler_ctx(&self, call: CallHandle) -> Option<js_sys::Object> {
        self.running.iter().find_map(|(c, running)| match running {
            Running::Handler(ctx) if *c == call => Some(ctx.clone()),
            _ => None,
        })
    }
}

/// Takes the entry of `call` out of `slots`.
pub fn take<T>(slots: &mut Vec<(CallHandle, T)>, call: CallHandle) -> Option<T> {
    let at = slots.iter().position(|(c, _)| *c == call)?;
    Some(slots.swap_remove(at).1)
}

/// What performs the engines' outputs (the driver's and the transport's functions: the page only
/// calls them, so nothing here imports them).
pub struct Drivers {
    /// Performs one page engine output.
    pub perform: fn(&Rc<Page>, Output<js_sys::Function>),
    /// Feeds the connection engine (its timer).
    pub connection: fn(&Rc<Page>, ConnInput<'_>),
}

type CtxCallback = Closure<dyn Fn(f64, String, JsValue, JsValue, JsValue)>;

pub struct Page {
    pub options: Options,
    /// Every rule of a call's life, and the tools.
    pub engine: RefCell<PageEngine<js_sys::Function>>,
    /// The connection to the runtime: its state, session, and the socket's life.
    pub connection: RefCell<Connection>,
    pub events: EventHub,
    pub calls: RefCell<CallSlots>,
    pub link: RefCell<Link>,
    /// The `<form toolname>` tools (SPEC §8).
    pub forms: FormTools,
    /// What is registered with the browser's `modelContext` (SPEC §8).
    pub browser_agent: BrowserAgent,
    drivers: Drivers,
    /// The one page timer: the time it is armed for, and its id.
    timer: RefCell<Option<(Millis, JsValue)>>,
    on_timer: Closure<dyn Fn()>,
    from_ctx: CtxCallback,
}

#[wasm_bindgen]
extern "C" {
    // The global functions (a window's or a worker's).
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &js_sys::Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// Browsers treat a longer `setTimeout` delay as 0.
const MAX_DELAY_MS: f64 = i32::MAX as f64;

/// The time, for the engine.
pub fn now() -> Millis {
    Millis(crate::js::now_ms())
}

impl Page {
    /// `drivers` perform what the engines ask for.
    pub fn new(
        options: Options,
        engine: PageEngine<js_sys::Function>,
        connection: Connection,
        drivers: Drivers,
    ) -> Rc<Self> {
        Rc::new_cyclic(|weak: &Weak<Page>| {
            let on_timer = {
                let weak = weak.clone();
                Closure::new(move || {
                    if let Some(page) = weak.upgrade() {
                        page.timer.replace(None);
                        (page.drivers.connection)(&page, ConnInput::Timeout);
                        page.feed(Input::Timeout);
                    }
                })
            };
            let weak = weak.clone();
            // `(call, what, a, b, c)`: a handler's ctx reporting progress, logging or asking.
            let from_ctx = Closure::new(
                move |call: f64, what: String, a: JsValue, b: JsValue, c: JsValue| {
                    let Some(page) = weak.upgrade() else { return };
                    let call = CallHandle(call as u64);
                    // (A partial value's text is copied only once its length is known to fit.)
                    let requests = match what.as_str() {
                        "partial" => String::new(),
                        _ => a.as_string().unwrap_or_default(),
                    };
                    // The page server's notifications (`pageServer` in `js.js`): `(0, "notify", method, params)`.
                    let params = (what == "notify").then(|| b.as_string().unwrap_or_default());
                    page.feed(match what.as_str() {
                        "notify" => Input::Notify {
                            method: &requests,
                            params: params.as_deref().unwrap_or_default(),
                        },
                        "progress" => Input::Progress {
                            call,
                            progress: a.as_f64().unwrap_or(0.0),
                            total: b.as_f64(),
                            message: c.as_string(),
                        },
                        "log" => Input::Log {
                            call,
                            level: a.as_string().unwrap_or_default(),
                            // A log never fails the call: what is not JSON is sent as its reason.
                            data: crate::js::to_json(&b).unwrap_or_else(Value::from),
                            logger: c.as_string(),
                        },
                        // `ctx.partial`: its JSON text, or why there is none. A text whose length
                        // alone is over the bound is not copied into wasm (UTF-16 units never
                        // outnumber UTF-8 bytes).
                        "partial" => Input::Partial {
                            call,
                            json: match a.dyn_ref::<js_sys::JsString>() {
                                Some(text) if text.length() as usize > MAX_PARTIAL_BYTES => {
                                    Err(partial::too_large())
                                }
                                Some(text) => Ok(String::from(text)),
                                None => Err(partial::not_json(&b.as_string().unwrap_or_default())),
                            },
                        },
                        _ => Input::AskAgent {
                            call,
                            requests: &requests,
                        },
                    });
                },
            );
            Self {
                options,
                engine: RefCell::new(engine),
                connection: RefCell::new(connection),
                events: EventHub::default(),
                calls: RefCell::default(),
                link: RefCell::new(Link::default()),
                forms: FormTools::default(),
                browser_agent: BrowserAgent::default(),
                drivers,
                timer: RefCell::new(None),
                on_timer,
                from_ctx,
            }
        })
    }

    /// Hands the engine one input, then performs what it asks.
    pub fn feed(self: &Rc<Self>, input: Input<'_>) {
        self.engine.borrow_mut().handle(now(), input);
        self.drain();
    }

    /// Performs the engine's outputs in order (an output may feed the engine again: what that
    /// adds is performed in the same loop), then arms the timer for its next wake-up.
    pub fn drain(self: &Rc<Self>) {
        // The closure's borrow of the engine ends before the output is performed.
        let next = || self.engine.borrow_mut().poll_output();
        while let Some(output) = next() {
            (self.drivers.perform)(self, output);
        }
        self.arm_timer();
    }

    /// One `setTimeout` for the engines' earliest wake-up, replaced only when that changes.
    pub fn arm_timer(&self) {
        let calls = self.engine.borrow().poll_timeout();
        let connection = self.connection.borrow().poll_timeout();
        let wanted = calls.into_iter().chain(connection).min();
        let armed = self.timer.borrow().as_ref().map(|(at, _)| *at);
        if wanted == armed {
            return;
        }
        let next = wanted.map(|at| {
            let delay = (at.0 - crate::js::now_ms()).clamp(0.0, MAX_DELAY_MS);
            (
                at,
                set_timeout(self.on_timer.as_ref().unchecked_ref(), delay.ceil()),
            )
        });
        if let Some((_, earlier)) = self.timer.replace(next) {
            clear_timeout(&earlier);
        }
    }

    /// The page calls a tool itself (`invoke`, the browser's agent) with `input` (`undefined`: no
    /// arguments): `started` learns the call's handle before it runs; the outcome is `None` when
    /// it was cancelled, `Err` when `input` has no JSON form.
    pub async fn call(
        self: &Rc<Self>,
        name: String,
        input: &JsValue,
        caller: Caller,
        started: impl FnOnce(CallHandle),
    ) -> Result<Option<CallToolResult>, String> {
        let input = crate::js::input_text(input)
            .map_err(|why| format!("input of '{name}' is not JSON: {why}"))?;
        let (sender, outcome) = oneshot::channel();
        let call = self
            .engine
            .borrow_mut()
            .begin_page_call(now(), name, input, caller);
        self.calls.borrow_mut().waiting.push((call, sender));
        started(call);
        self.drain();
        Ok(outcome.await.ok().flatten())
    }

    /// A handler's (or a form's) value or throw, told to the engine as it reads it.
    pub fn settle(self: &Rc<Self>, call: CallHandle, settled: Result<JsValue, JsValue>) {
        take(&mut self.calls.borrow_mut().running, call);
        let outcome = match settled {
            Err(thrown) => match crate::js::required_capabilities(&thrown) {
                Some(required) => HandlerOutcome::CapabilityMissing(
                    serde_json::from_str(&required).unwrap_or_default(),
                ),
                None => HandlerOutcome::Threw(crate::js::error_message(&thrown)),
            },
            Ok(value) if value.is_undefined() => HandlerOutcome::ReturnedNothing,
            Ok(value) => match crate::js::to_json_text(&value) {
                Ok(text) => HandlerOutcome::Returned(text),
                Err(why) => HandlerOutcome::NotSerializable(why),
            },
        };
        self.feed(Input::HandlerSettled { call, outcome });
    }

    /// What a handler's `ctx` calls to reach the engine (`js.js`, `handlerContext`).
    pub fn from_ctx_fn(&self) -> &js_sys::Function {
        self.from_ctx.as_ref().unchecked_ref()
    }

    /// Sends a frame to the runtime: through the page's transport, else the socket when it is
    /// connected (the connection engine keeps it for after a reconnect otherwise). The engine
    /// checked it against the runtime's limits.
    pub fn transmit(&self, frame: String) {
        let Some(frame) = self.connection.borrow_mut().send(frame) else {
            return;
        };
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
        if let Some(socket) = &self.link.borrow().socket {
            // A closing socket drops it silently: its calls are sent again after the reconnect,
            // and the ledger answers them.
            let _ = socket.socket.send_with_str(&frame);
        }
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        if let Some((_, id)) = self.timer.take() {
            clear_timeout(&id);
        }
    }
}
