//! The page's connection to the runtime (SPEC §6), sans-IO: opening a socket, the connect handshake
//! (the first frame carries the credentials, never the URL), reconnecting with capped exponential
//! backoff and jitter while resuming the session, and `disconnect()`.
//!
//! The driver owns the socket: it performs [`ConnOutput`]s (open, send, close) and feeds back what
//! the socket did ([`ConnInput`]). Frames for the runtime pass [`Connection::send`]: sent at once
//! when connected, else kept (bounded) and sent after the reconnect — unless the runtime starts a
//! new session, which owes nothing to an earlier one. Frames from the runtime, once connected, go
//! to the page engine, and so does the session ([`ConnOutput::Session`] →
//! `page_engine::Input::SessionBegun`).

use std::collections::VecDeque;

use crate::connect::{self, ConnectFailure, ConnectParams, ConnectResult};
use crate::limits::{BACKLOG_FRAMES, CONNECT_TIMEOUT_MS};
use crate::time::Millis;
use crate::CoreError;

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

#[derive(Debug, Clone, PartialEq)]
pub enum ConnInput<'a> {
    /// `connect()`: resolves with [`ConnOutput::Settled`].
    Connect,
    /// `disconnect()`: closed for good, no reconnect.
    Disconnect,
    /// A page transport takes over (`attachTransport`): the socket closes, and the page is
    /// connected through the transport until `disconnect()`.
    Attach,
    /// The socket opened.
    Opened,
    /// A text frame arrived while the handshake waits for its answer.
    Answer(&'a str),
    /// The socket closed or failed.
    Closed,
    /// The time [`Connection::poll_timeout`] named has come.
    Timeout,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConnOutput {
    /// Open a socket to the endpoint.
    Open,
    /// Send this frame on the socket (the connect frame, or one kept while disconnected).
    Send(String),
    /// Close the socket (its handlers removed first: nothing more is fed from it).
    Close { code: u16, reason: &'static str },
    /// The state the page reports (`connectionchange`).
    State(ConnectionState),
    /// The runtime accepted the page: a session begun or resumed.
    Session(ConnectResult),
    /// The `connect()` calls waiting end: `Err` says why.
    Settled(Result<(), CoreError>),
    /// Tell the page (a refusal while reconnecting: it will not pass by itself).
    Warn(String),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Idle,
    /// A socket is opening (`until`: it counts as failed then).
    Opening {
        until: Millis,
    },
    /// The connect frame is sent; the answer is due by `until`.
    Handshaking {
        until: Millis,
    },
    Open,
    /// The next attempt opens at `at`.
    Waiting {
        at: Millis,
    },
}

pub struct Connection {
    /// `None`: the page has no WebSocket endpoint (a page transport may still be attached).
    endpoint: Option<String>,
    /// The runtime's id for the page's session: known from the first accepted connect.
    session_id: Option<String>,
    /// A page transport carries the frames (`attachTransport`).
    attached: bool,
    token: Option<String>,
    resume_secret: Option<String>,
    state: ConnectionState,
    phase: Phase,
    /// Failed attempts since the last success (the backoff's exponent), at most
    /// [`connect::MAX_BACKOFF_ATTEMPTS`].
    attempt: u32,
    last_refusal: Option<String>,
    /// Jitter source (xorshift): pages that lost one runtime together do not return together.
    random: u64,
    /// Frames for the runtime produced while the connection was down.
    backlog: VecDeque<String>,
    outputs: VecDeque<ConnOutput>,
}

impl Connection {
    /// `seed`: any number that differs between pages (the driver's `Math.random()`).
    pub fn new(
        endpoint: Option<String>,
        token: Option<String>,
        resume_secret: Option<String>,
        seed: u64,
    ) -> Self {
        Self {
            endpoint,
            session_id: None,
            attached: false,
            token,
            resume_secret,
            state: ConnectionState::Disconnected,
            phase: Phase::Idle,
            attempt: 0,
            last_refusal: None,
            random: seed | 1,
            backlog: VecDeque::new(),
            outputs: VecDeque::new(),
        }
    }

    pub fn state(&self) -> ConnectionState {
        self.state
    }

    pub fn session_id(&self) -> Option<String> {
        self.session_id.clone()
    }

    /// Whether a socket is wanted: connected by it, or trying to be (not a page transport).
    pub fn wants_socket(&self) -> bool {
        self.state != ConnectionState::Disconnected && !self.attached
    }

    /// Whether an arriving frame is the answer to the connect frame (else it is MCP).
    pub fn awaits_answer(&self) -> bool {
        matches!(self.phase, Phase::Handshaking { .. })
    }

    /// A frame for the runtime: `Some` to send now; else it waits for the reconnect (or is
    /// dropped when the page is not connected at all and not trying: nobody would read it).
    pub fn send(&mut self, frame: String) -> Option<String> {
        if self.phase == Phase::Open || self.attached {
            return Some(frame);
        }
        if self.state != ConnectionState::Disconnected {
            if self.backlog.len() >= BACKLOG_FRAMES {
                self.backlog.pop_front();
            }
            self.backlog.push_back(frame);
        }
        None
    }

    pub fn poll_output(&mut self) -> Option<ConnOutput> {
        self.outputs.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Millis> {
        match self.phase {
            Phase::Opening { until } | Phase::Handshaking { until } => Some(until),
            Phase::Waiting { at } => Some(at),
            Phase::Idle | Phase::Open => None,
        }
    }

    pub fn handle(&mut self, now: Millis, input: ConnInput<'_>) {
        match input {
            ConnInput::Connect if self.attached => self.refuse_connect(
                "a page transport is attached (attachTransport): call disconnect() before connect()",
            ),
            ConnInput::Connect if self.endpoint.is_none() => {
                self.refuse_connect("no 'endpoint' option was given")
            }
            ConnInput::Connect => match self.state {
                ConnectionState::Disconnected => {
                    self.set_state(ConnectionState::Connecting);
                    self.open(now);
                }
                // Another connect() is on its way: this one ends with it.
                ConnectionState::Connecting => {}
                // Connected, or reconnecting by itself.
                _ => self.outputs.push_back(ConnOutput::Settled(Ok(()))),
            },
            ConnInput::Disconnect | ConnInput::Attach => {
                if !matches!(self.phase, Phase::Idle | Phase::Waiting { .. }) {
                    self.close(1000, "disconnect");
                }
                self.phase = Phase::Idle;
                if self.state == ConnectionState::Connecting {
                    self.outputs
                        .push_back(ConnOutput::Settled(Err(CoreError::NotConnected(
                            "disconnect() or attachTransport() was called while connecting".into(),
                        ))));
                }
                self.attached = input == ConnInput::Attach;
                if self.attached {
                    // No handshake on a page's transport: no session id either (docs/api.md).
                    self.session_id = None;
                    // The page's transport answers other requests: these frames mean nothing there.
                    self.backlog.clear();
                    self.set_state(ConnectionState::Connected);
                } else {
                    self.set_state(ConnectionState::Disconnected);
                }
            }
            ConnInput::Opened => {
                if matches!(self.phase, Phase::Opening { .. }) {
                    let frame = connect::encode_connect(&ConnectParams {
                        token: self.token.clone(),
                        resume_secret: self.resume_secret.clone(),
                    });
                    self.outputs.push_back(ConnOutput::Send(frame));
                    self.phase = Phase::Handshaking {
                        until: now.after(CONNECT_TIMEOUT_MS),
                    };
                }
            }
            ConnInput::Answer(text) => {
                if !self.awaits_answer() {
                    return;
                }
                match connect::read_answer(text) {
                    Ok(session) => self.accepted(session),
                    Err(failure) => {
                        self.close(1000, "connect refused");
                        let message = failure.message(self.token.as_deref());
                        let refused = matches!(failure, ConnectFailure::Refused(_));
                        self.failed(now, message, refused);
                    }
                }
            }
            ConnInput::Closed => match self.phase {
                Phase::Opening { .. } => {
                    self.failed(now, "the connection was refused or closed".into(), false)
                }
                Phase::Handshaking { .. } => self.failed(
                    now,
                    "the connection closed before the runtime answered the connect frame".into(),
                    false,
                ),
                Phase::Open => {
                    self.set_state(ConnectionState::Reconnecting);
                    self.wait(now);
                }
                Phase::Idle | Phase::Waiting { .. } => {}
            },
            ConnInput::Timeout => match self.phase {
                Phase::Opening { until } if until <= now => {
                    self.close(1000, "no answer");
                    let message = format!("no answer within {CONNECT_TIMEOUT_MS} ms");
                    self.failed(now, message, false);
                }
                Phase::Handshaking { until } if until <= now => {
                    self.close(1000, "no answer");
                    let message = format!(
                        "the runtime did not answer the connect frame within {CONNECT_TIMEOUT_MS} ms"
                    );
                    self.failed(now, message, false);
                }
                Phase::Waiting { at } if at <= now => self.open(now),
                _ => {}
            },
        }
    }

    fn refuse_connect(&mut self, why: &str) {
        let error = CoreError::NotConnected(why.into());
        self.outputs.push_back(ConnOutput::Settled(Err(error)));
    }

    fn open(&mut self, now: Millis) {
        self.outputs.push_back(ConnOutput::Open);
        self.phase = Phase::Opening {
            until: now.after(CONNECT_TIMEOUT_MS),
        };
    }

    fn close(&mut self, code: u16, reason: &'static str) {
        self.outputs.push_back(ConnOutput::Close { code, reason });
    }

    fn accepted(&mut self, session: ConnectResult) {
        self.resume_secret = Some(session.resume_secret.clone());
        self.session_id = Some(session.session_id.clone());
        self.phase = Phase::Open;
        self.attempt = 0;
        self.last_refusal = None;
        let first = self.state == ConnectionState::Connecting;
        if !session.resumed {
            self.backlog.clear();
        }
        self.outputs.push_back(ConnOutput::Session(session));
        let backlog = std::mem::take(&mut self.backlog);
        self.outputs
            .extend(backlog.into_iter().map(ConnOutput::Send));
        self.set_state(ConnectionState::Connected);
        if first {
            self.outputs.push_back(ConnOutput::Settled(Ok(())));
        }
    }

    /// An attempt failed: the first `connect()` fails with `message`; a reconnect tries again
    /// (telling the page of a refusal once per reason).
    fn failed(&mut self, now: Millis, message: String, refused: bool) {
        if self.state == ConnectionState::Connecting {
            self.phase = Phase::Idle;
            self.set_state(ConnectionState::Disconnected);
            let url = self.endpoint.clone().unwrap_or_default();
            let error = CoreError::ConnectionFailed { url, message };
            self.outputs.push_back(ConnOutput::Settled(Err(error)));
            return;
        }
        if refused && self.last_refusal.as_ref() != Some(&message) {
            self.outputs.push_back(ConnOutput::Warn(message.clone()));
            self.last_refusal = Some(message);
        }
        self.attempt = (self.attempt + 1).min(connect::MAX_BACKOFF_ATTEMPTS);
        self.wait(now);
    }

    fn wait(&mut self, now: Millis) {
        // xorshift64: enough to spread reconnects, no dependency.
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        let unit = (self.random >> 11) as f64 / (1u64 << 53) as f64;
        let delay = connect::reconnect_delay_ms(self.attempt, unit);
        self.phase = Phase::Waiting {
            at: Millis(now.0 + delay),
        };
    }

    fn set_state(&mut self, state: ConnectionState) {
        if self.state != state {
            self.state = state;
            self.outputs.push_back(ConnOutput::State(state));
        }
    }
}
