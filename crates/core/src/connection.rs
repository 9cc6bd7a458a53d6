//! The page's connection to the runtime (SPEC §6), sans-IO: opening a socket, the connect handshake
//! (the first frame carries the credentials, never the URL), reconnecting with capped exponential
//! backoff and jitter while resuming the session, and `disconnect()`.
//!
//! The driver owns the socket: it performs [`ConnOutput`]s (open, send the first frame, close)
//! and feeds back what the socket did ([`ConnInput`]). Once connected, frames bypass this engine
//! and go to the page engine; the session the runtime answered with goes there too
//! ([`ConnOutput::Session`] → `page_engine::Input::SessionBegun`).

use std::collections::VecDeque;

use crate::connect::{self, ConnectFailure, ConnectParams, ConnectResult};
use crate::limits::CONNECT_TIMEOUT_MS;
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
    /// A page transport takes over (`attachTransport`): the socket closes with nothing reported.
    Detach,
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
    /// Send this frame on the socket (the connect frame).
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
    endpoint: String,
    token: Option<String>,
    resume_secret: Option<String>,
    state: ConnectionState,
    phase: Phase,
    /// Failed attempts since the last success (the backoff's exponent).
    attempt: u32,
    last_refusal: Option<String>,
    /// Jitter source (xorshift): pages that lost one runtime together do not return together.
    random: u64,
    outputs: VecDeque<ConnOutput>,
}

impl Connection {
    /// `seed`: any number that differs between pages (the driver's `Math.random()`).
    pub fn new(
        endpoint: String,
        token: Option<String>,
        resume_secret: Option<String>,
        seed: u64,
    ) -> Self {
        Self {
            endpoint,
            token,
            resume_secret,
            state: ConnectionState::Disconnected,
            phase: Phase::Idle,
            attempt: 0,
            last_refusal: None,
            random: seed | 1,
            outputs: VecDeque::new(),
        }
    }

    pub fn state(&self) -> ConnectionState {
        self.state
    }

    /// Whether an arriving frame is the answer to the connect frame (else it is MCP).
    pub fn awaits_answer(&self) -> bool {
        matches!(self.phase, Phase::Handshaking { .. })
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
            ConnInput::Disconnect | ConnInput::Detach => {
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
                if input == ConnInput::Disconnect {
                    self.set_state(ConnectionState::Disconnected);
                } else {
                    self.state = ConnectionState::Disconnected;
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
        self.phase = Phase::Open;
        self.attempt = 0;
        self.last_refusal = None;
        let first = self.state == ConnectionState::Connecting;
        self.outputs.push_back(ConnOutput::Session(session));
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
            let url = self.endpoint.clone();
            let error = CoreError::ConnectionFailed { url, message };
            self.outputs.push_back(ConnOutput::Settled(Err(error)));
            return;
        }
        if refused && self.last_refusal.as_ref() != Some(&message) {
            self.outputs.push_back(ConnOutput::Warn(message.clone()));
            self.last_refusal = Some(message);
        }
        self.attempt = (self.attempt + 1).min(16);
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
