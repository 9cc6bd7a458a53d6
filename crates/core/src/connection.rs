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
    /// The runtime closed the socket because the page's signed token lapsed unrefreshed (close
    /// code [`connect::CLOSE_TOKEN_EXPIRED`]): reconnect at once, with a fresh token.
    TokenLapsed,
    /// The time [`Connection::poll_timeout`] named has come.
    Timeout,
    /// What the page's token function gave ([`ConnOutput::FetchToken`]): a token, or why not.
    Token(Result<String, String>),
    /// The runtime's answer to the page's `clienttools/token` (a frame
    /// [`Connection::is_token_answer`] recognizes by its id).
    TokenAnswer(&'a str),
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
    /// Call the page's token function; feed its outcome back as [`ConnInput::Token`].
    FetchToken,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Idle,
    /// The page's token function was called (before opening a socket); it counts as failed at
    /// `until`.
    FetchingToken {
        until: Millis,
    },
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
    /// The token comes from the page's function: fetched before each connect, and again before it
    /// expires (SPEC §13).
    token_from_function: bool,
    /// While open: when to fetch a fresh token and send it (`clienttools/token`).
    refresh_at: Option<Millis>,
    /// A fresh token is being fetched for the open connection.
    refreshing: bool,
    /// The requests `clienttools/token` sent (their ids' numbers).
    token_requests: u64,
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
            token_from_function: false,
            refresh_at: None,
            refreshing: false,
            token_requests: 0,
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

    /// The page's token: the fixed string, or what its function gave last (`None` before).
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The token comes from the page's function ([`ConnOutput::FetchToken`]), not a fixed string.
    pub fn with_token_function(mut self) -> Self {
        self.token_from_function = true;
        self
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

    /// Whether an arriving frame is the runtime's answer to the page's latest `clienttools/token`
    /// ([`ConnInput::TokenAnswer`]): its `id` is that request's ([`connect::is_token_answer`]).
    /// Any other frame is MCP, whatever text it holds (a late answer to an earlier refresh too:
    /// the page engine ignores an answer to no request of its own).
    pub fn is_token_answer(&self, text: &str) -> bool {
        connect::is_token_answer(text, self.token_requests)
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
            Phase::FetchingToken { until }
            | Phase::Opening { until }
            | Phase::Handshaking { until } => Some(until),
            Phase::Waiting { at } => Some(at),
            Phase::Open if !self.refreshing => self.refresh_at,
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
                    Ok(session) => self.accepted(now, session),
                    Err(failure) => {
                        self.close(1000, "connect refused");
                        let message = failure.message(self.token.as_deref());
                        let refused = matches!(failure, ConnectFailure::Refused(_));
                        self.failed(now, message, refused);
                    }
                }
            }
            ConnInput::TokenLapsed => {
                self.handle(now, ConnInput::Closed);
                if matches!(self.phase, Phase::Waiting { .. }) {
                    // Not a failure of the runtime: the page owes a fresh token, now.
                    self.open(now);
                }
            }
            ConnInput::Token(outcome) => self.token_fetched(now, outcome),
            ConnInput::TokenAnswer(text) => self.token_answered(now, text),
            ConnInput::Closed => match self.phase {
                Phase::FetchingToken { .. } => {}
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
                Phase::FetchingToken { until } if until <= now => {
                    let message = format!("the token function gave no token within {CONNECT_TIMEOUT_MS} ms");
                    self.failed(now, message, false);
                }
                Phase::Open if self.refresh_at.is_some_and(|at| at <= now) && !self.refreshing => {
                    self.refreshing = true;
                    self.outputs.push_back(ConnOutput::FetchToken);
                }
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

    /// A connect attempt: the token first when a function gives it, then the socket.
    fn open(&mut self, now: Millis) {
        self.refresh_at = None;
        self.refreshing = false;
        if self.token_from_function {
            self.outputs.push_back(ConnOutput::FetchToken);
            self.phase = Phase::FetchingToken {
                until: now.after(CONNECT_TIMEOUT_MS),
            };
            return;
        }
        self.open_socket(now);
    }

    fn open_socket(&mut self, now: Millis) {
        self.outputs.push_back(ConnOutput::Open);
        self.phase = Phase::Opening {
            until: now.after(CONNECT_TIMEOUT_MS),
        };
    }

    /// The token function's outcome: for a connect, the socket opens with it (or the attempt
    /// failed); for the open connection, it is sent as `clienttools/token` (or tried again later).
    fn token_fetched(&mut self, now: Millis, outcome: Result<String, String>) {
        match (self.phase, outcome) {
            (Phase::FetchingToken { .. }, Ok(token)) => {
                self.token = Some(token);
                self.open_socket(now);
            }
            (Phase::FetchingToken { .. }, Err(why)) => {
                self.failed(now, format!("the token function failed: {why}"), true)
            }
            (Phase::Open, outcome) if self.refreshing => {
                self.refreshing = false;
                match outcome {
                    Ok(token) => {
                        self.token_requests += 1;
                        let frame = connect::encode_token_refresh(self.token_requests, &token);
                        self.token = Some(token);
                        self.outputs.push_back(ConnOutput::Send(frame));
                        // Until its answer re-arms it: a retry if none comes.
                        self.refresh_at = Some(now.after(connect::TOKEN_RETRY_MS));
                    }
                    Err(why) => {
                        self.outputs.push_back(ConnOutput::Warn(format!(
                            "the token function failed while refreshing the page token: {why}"
                        )));
                        self.refresh_at = Some(now.after(connect::TOKEN_RETRY_MS));
                    }
                }
            }
            _ => {} // late: the attempt it was for has ended
        }
    }

    /// The runtime's answer to `clienttools/token`: the fresh token's lifetime arms the next
    /// refresh; a refusal is told to the page (the refresh is tried again until the old lapses).
    fn token_answered(&mut self, now: Millis, text: &str) {
        if self.phase != Phase::Open {
            return;
        }
        match connect::read_token_answer(text) {
            Ok(expires_in_ms) => {
                self.refresh_at = connect::refresh_after(expires_in_ms).map(|ms| now.after(ms))
            }
            Err(message) => {
                let message = connect::redact(message, self.token.as_deref());
                self.outputs.push_back(ConnOutput::Warn(message));
            }
        }
    }

    fn close(&mut self, code: u16, reason: &'static str) {
        self.outputs.push_back(ConnOutput::Close { code, reason });
    }

    fn accepted(&mut self, now: Millis, session: ConnectResult) {
        // A token from a function is refreshed before it expires (a fixed one cannot be).
        self.refresh_at = match (self.token_from_function, session.token_expires_in_ms) {
            (true, Some(ms)) => connect::refresh_after(ms).map(|after| now.after(after)),
            _ => None,
        };
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
