//! The page's connection engine natively, with time as a parameter: the handshake, joining a
//! connect in progress, refusals, reconnects with backoff and the resume secret, timeouts.

use client_tools_core::connect::{self, code, MAX_BACKOFF_MS};
use client_tools_core::connection::{ConnInput, ConnOutput, Connection, ConnectionState};
use client_tools_core::limits::CONNECT_TIMEOUT_MS;
use client_tools_core::time::Millis;
use client_tools_core::CoreError;
use serde_json::{json, Value};

struct Socket {
    connection: Connection,
    now: Millis,
}

impl Socket {
    fn new(token: Option<&str>) -> Self {
        Self {
            connection: Connection::new(
                Some("ws://h/ws".into()),
                token.map(str::to_owned),
                None,
                7,
            ),
            now: Millis(0.0),
        }
    }

    fn input(&mut self, input: ConnInput<'_>) -> Vec<ConnOutput> {
        self.connection.handle(self.now, input);
        std::iter::from_fn(|| self.connection.poll_output()).collect()
    }

    /// Moves to the engine's next wake-up and wakes it.
    fn wake(&mut self) -> Vec<ConnOutput> {
        self.now = self.connection.poll_timeout().expect("a timer");
        self.input(ConnInput::Timeout)
    }
}

fn accepted(resumed: bool) -> String {
    json!({"jsonrpc": "2.0", "id": connect::CONNECT_ID,
           "result": {"sessionId": "s1", "resumeSecret": "secret-1", "resumed": resumed}})
    .to_string()
}

fn first_frame(outputs: &[ConnOutput]) -> Value {
    let sent = outputs.iter().find_map(|o| match o {
        ConnOutput::Send(frame) => Some(frame),
        _ => None,
    });
    serde_json::from_str(sent.expect("the connect frame")).unwrap()
}

#[test]
fn a_connect_sends_the_credentials_first_and_joins_calls_in_progress() {
    let mut socket = Socket::new(Some("t0k"));
    let outputs = socket.input(ConnInput::Connect);
    assert_eq!(
        outputs,
        [
            ConnOutput::State(ConnectionState::Connecting),
            ConnOutput::Open
        ]
    );
    assert!(
        socket.input(ConnInput::Connect).is_empty(),
        "joins the first"
    );
    let outputs = socket.input(ConnInput::Opened);
    let frame = first_frame(&outputs);
    assert_eq!(frame["method"], connect::CONNECT);
    assert_eq!(frame["params"], json!({"token": "t0k"}));
    assert!(socket.connection.awaits_answer());
    let outputs = socket.input(ConnInput::Answer(&accepted(false)));
    assert!(matches!(&outputs[0], ConnOutput::Session(s) if s.session_id == "s1"));
    assert_eq!(outputs[1], ConnOutput::State(ConnectionState::Connected));
    assert_eq!(outputs[2], ConnOutput::Settled(Ok(())));
    assert!(!socket.connection.awaits_answer());
    assert_eq!(socket.connection.poll_timeout(), None);
    assert_eq!(
        socket.input(ConnInput::Connect),
        [ConnOutput::Settled(Ok(()))]
    );
}

#[test]
fn a_refused_first_connect_fails_without_the_token_in_the_message() {
    let mut socket = Socket::new(Some("t0k"));
    socket.input(ConnInput::Connect);
    socket.input(ConnInput::Opened);
    let refusal = connect::encode_refusal(code::UNAUTHORIZED, "bad token t0k");
    let outputs = socket.input(ConnInput::Answer(&refusal));
    assert!(matches!(outputs[0], ConnOutput::Close { .. }));
    assert_eq!(outputs[1], ConnOutput::State(ConnectionState::Disconnected));
    let ConnOutput::Settled(Err(CoreError::ConnectionFailed { url, message })) = &outputs[2] else {
        panic!("{outputs:?}")
    };
    assert_eq!(url, "ws://h/ws");
    assert_eq!(message, "the bridge refused the connection: bad token …");
}

#[test]
fn the_socket_and_the_answer_each_have_a_deadline() {
    let mut socket = Socket::new(None);
    socket.input(ConnInput::Connect);
    assert_eq!(
        socket.connection.poll_timeout(),
        Some(Millis(CONNECT_TIMEOUT_MS as f64))
    );
    let outputs = socket.wake();
    assert!(matches!(outputs[0], ConnOutput::Close { .. }));
    assert!(matches!(&outputs[2], ConnOutput::Settled(Err(_))));

    socket.input(ConnInput::Connect);
    socket.input(ConnInput::Opened);
    let outputs = socket.wake();
    let ConnOutput::Settled(Err(CoreError::ConnectionFailed { message, .. })) = &outputs[2] else {
        panic!("{outputs:?}")
    };
    assert!(
        message.contains("did not answer the connect frame"),
        "{message}"
    );
}

#[test]
fn a_dropped_connection_reconnects_with_backoff_and_resumes_its_session() {
    let mut socket = Socket::new(None);
    socket.input(ConnInput::Connect);
    socket.input(ConnInput::Opened);
    socket.input(ConnInput::Answer(&accepted(false)));
    socket.now = Millis(1_000.0);
    let outputs = socket.input(ConnInput::Closed);
    assert_eq!(outputs, [ConnOutput::State(ConnectionState::Reconnecting)]);
    let mut previous_wait = 0.0;
    for attempt in 0..8 {
        let at = socket.connection.poll_timeout().unwrap();
        let wait = at.0 - socket.now.0;
        let cap = (250.0 * 2f64.powi(attempt)).min(MAX_BACKOFF_MS);
        assert!(
            wait >= cap / 2.0 && wait <= cap,
            "attempt {attempt}: {wait}"
        );
        assert!(attempt < 2 || wait >= previous_wait / 2.0);
        previous_wait = wait;
        assert_eq!(socket.wake(), [ConnOutput::Open]);
        // The runtime is down: the socket fails, and the page waits again.
        assert!(socket.input(ConnInput::Closed).is_empty());
    }
    socket.wake();
    let frame = first_frame(&socket.input(ConnInput::Opened));
    assert_eq!(frame["params"]["resumeSecret"], "secret-1", "it resumes");
    let outputs = socket.input(ConnInput::Answer(&accepted(true)));
    assert!(matches!(&outputs[0], ConnOutput::Session(s) if s.resumed));
    assert_eq!(outputs[1], ConnOutput::State(ConnectionState::Connected));
    assert_eq!(outputs.len(), 2, "no connect() waits on a reconnect");
}

#[test]
fn a_refusal_while_reconnecting_is_told_once_per_reason() {
    let mut socket = Socket::new(None);
    socket.input(ConnInput::Connect);
    socket.input(ConnInput::Opened);
    socket.input(ConnInput::Answer(&accepted(false)));
    socket.input(ConnInput::Closed);
    let refusal = connect::encode_refusal(code::OVERLOADED, "full");
    let mut warnings = 0;
    for _ in 0..3 {
        socket.wake();
        socket.input(ConnInput::Opened);
        let outputs = socket.input(ConnInput::Answer(&refusal));
        warnings += outputs
            .iter()
            .filter(|o| matches!(o, ConnOutput::Warn(m) if m.contains("full")))
            .count();
        socket.input(ConnInput::Closed);
    }
    assert_eq!(warnings, 1);
    assert_eq!(socket.connection.state(), ConnectionState::Reconnecting);
}

#[test]
fn disconnect_ends_everything_and_detach_reports_nothing() {
    let mut socket = Socket::new(None);
    socket.input(ConnInput::Connect);
    let outputs = socket.input(ConnInput::Disconnect);
    assert!(matches!(outputs[0], ConnOutput::Close { .. }));
    assert!(matches!(
        outputs[1],
        ConnOutput::Settled(Err(CoreError::NotConnected(_)))
    ));
    assert_eq!(outputs[2], ConnOutput::State(ConnectionState::Disconnected));
    assert_eq!(socket.connection.poll_timeout(), None);

    socket.input(ConnInput::Connect);
    socket.input(ConnInput::Opened);
    socket.input(ConnInput::Answer(&accepted(false)));
    assert_eq!(socket.connection.session_id(), Some("s1".into()));
    let outputs = socket.input(ConnInput::Attach);
    assert_eq!(
        outputs,
        [ConnOutput::Close {
            code: 1000,
            reason: "disconnect"
        }],
        "connected before and after: no state to report"
    );
    assert_eq!(socket.connection.state(), ConnectionState::Connected);
    assert_eq!(
        socket.connection.session_id(),
        None,
        "the socket's session is over"
    );
    assert!(!socket.connection.wants_socket());
    assert!(socket.input(ConnInput::Closed).is_empty(), "no reconnect");
    assert_eq!(socket.connection.send("f".into()), Some("f".into()));
    let refused = socket.input(ConnInput::Connect);
    assert!(
        matches!(&refused[..], [ConnOutput::Settled(Err(CoreError::NotConnected(why)))] if why.contains("attachTransport")),
        "{refused:?}"
    );
    let outputs = socket.input(ConnInput::Disconnect);
    assert_eq!(outputs, [ConnOutput::State(ConnectionState::Disconnected)]);
}

#[test]
fn a_page_without_an_endpoint_cannot_connect_but_may_attach_a_transport() {
    let mut connection = Connection::new(None, None, None, 7);
    connection.handle(Millis(0.0), ConnInput::Connect);
    let refused = connection.poll_output();
    assert!(
        matches!(&refused, Some(ConnOutput::Settled(Err(CoreError::NotConnected(why)))) if why.contains("'endpoint'")),
        "{refused:?}"
    );
    assert_eq!(connection.state(), ConnectionState::Disconnected);
    connection.handle(Millis(0.0), ConnInput::Attach);
    assert_eq!(
        connection.poll_output(),
        Some(ConnOutput::State(ConnectionState::Connected))
    );
    assert_eq!(connection.poll_output(), None);
}

#[test]
fn frames_wait_for_the_reconnect_unless_the_session_is_new() {
    let mut socket = Socket::new(None);
    assert_eq!(
        socket.connection.send("dropped".into()),
        None,
        "not connected at all"
    );
    socket.input(ConnInput::Connect);
    assert_eq!(socket.connection.send("early".into()), None, "kept");
    socket.input(ConnInput::Opened);
    let outputs = socket.input(ConnInput::Answer(&accepted(false)));
    assert!(
        !outputs.contains(&ConnOutput::Send("early".into())),
        "a new session owes nothing"
    );
    assert_eq!(socket.connection.send("now".into()), Some("now".into()));

    socket.input(ConnInput::Closed);
    for n in 0..1_001 {
        assert_eq!(socket.connection.send(format!("f{n}")), None);
    }
    socket.wake();
    socket.input(ConnInput::Opened);
    let outputs = socket.input(ConnInput::Answer(&accepted(true)));
    let sent: Vec<_> = outputs
        .iter()
        .filter_map(|o| match o {
            ConnOutput::Send(frame) => Some(frame.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 1_000, "bounded: the oldest went first");
    assert_eq!((sent[0], sent[999]), ("f1", "f1000"));
    assert!(
        matches!(outputs[0], ConnOutput::Session(_)),
        "after the session"
    );
}

/// A page whose token comes from a function (SPEC §13).
fn with_token_function() -> Socket {
    let mut socket = Socket::new(None);
    socket.connection =
        Connection::new(Some("ws://h/ws".into()), None, None, 7).with_token_function();
    socket
}

fn accepted_for(expires_in_ms: u64) -> String {
    json!({"jsonrpc": "2.0", "id": connect::CONNECT_ID,
           "result": {"sessionId": "s1", "resumeSecret": "secret-1", "resumed": false,
                      "user": "alice", "tokenExpiresInMs": expires_in_ms}})
    .to_string()
}

#[test]
fn a_token_function_is_asked_before_each_connect_and_its_token_goes_in_the_first_frame() {
    let mut socket = with_token_function();
    let outputs = socket.input(ConnInput::Connect);
    assert_eq!(
        outputs,
        [
            ConnOutput::State(ConnectionState::Connecting),
            ConnOutput::FetchToken
        ]
    );
    assert_eq!(
        socket.input(ConnInput::Token(Ok("jwt-1".into()))),
        [ConnOutput::Open]
    );
    let frame = first_frame(&socket.input(ConnInput::Opened));
    assert_eq!(frame["params"], json!({"token": "jwt-1"}));
    let outputs = socket.input(ConnInput::Answer(&accepted_for(600_000)));
    assert!(matches!(&outputs[0], ConnOutput::Session(s) if s.user.as_deref() == Some("alice")));
    // The connection drops: the reconnect asks the function again, for a fresh token.
    socket.input(ConnInput::Closed);
    assert_eq!(socket.wake(), [ConnOutput::FetchToken]);
    assert_eq!(
        socket.input(ConnInput::Token(Ok("jwt-2".into()))),
        [ConnOutput::Open]
    );
    let frame = first_frame(&socket.input(ConnInput::Opened));
    assert_eq!(frame["params"]["token"], "jwt-2");
}

#[test]
fn a_token_function_that_fails_fails_the_connect_with_its_reason() {
    let mut socket = with_token_function();
    socket.input(ConnInput::Connect);
    let outputs = socket.input(ConnInput::Token(Err("login expired".into())));
    let Some(ConnOutput::Settled(Err(error))) = outputs.last() else {
        panic!("{outputs:?}");
    };
    assert!(
        error
            .to_string()
            .contains("the token function failed: login expired"),
        "{error}"
    );
    // One that never answers fails the attempt at the connect timeout.
    let mut socket = with_token_function();
    socket.input(ConnInput::Connect);
    assert_eq!(
        socket.connection.poll_timeout(),
        Some(Millis(CONNECT_TIMEOUT_MS as f64))
    );
    let outputs = socket.wake();
    assert!(
        matches!(outputs.last(), Some(ConnOutput::Settled(Err(_)))),
        "{outputs:?}"
    );
    // A late token changes nothing.
    assert!(socket.input(ConnInput::Token(Ok("late".into()))).is_empty());
}

#[test]
fn the_token_is_refreshed_before_it_expires_on_the_open_connection() {
    let mut socket = with_token_function();
    socket.input(ConnInput::Connect);
    socket.input(ConnInput::Token(Ok("jwt-1".into())));
    socket.input(ConnInput::Opened);
    socket.input(ConnInput::Answer(&accepted_for(600_000)));
    // At four fifths of its ten minutes.
    assert_eq!(socket.connection.poll_timeout(), Some(Millis(480_000.0)));
    assert_eq!(socket.wake(), [ConnOutput::FetchToken]);
    assert_eq!(
        socket.connection.poll_timeout(),
        None,
        "one fetch at a time"
    );
    let outputs = socket.input(ConnInput::Token(Ok("jwt-2".into())));
    let frame = first_frame(&outputs);
    assert_eq!(frame["method"], connect::TOKEN_REFRESH);
    assert_eq!(frame["params"], json!({"token": "jwt-2"}));
    let id = frame["id"].as_str().unwrap().to_owned();
    let answer =
        json!({"jsonrpc": "2.0", "id": id, "result": {"tokenExpiresInMs": 600_000}}).to_string();
    assert!(socket.connection.is_token_answer(&answer));
    assert!(socket.input(ConnInput::TokenAnswer(&answer)).is_empty());
    assert_eq!(socket.connection.poll_timeout(), Some(Millis(960_000.0)));
    // A refused refresh is told to the page and tried again.
    socket.wake();
    let frame = first_frame(&socket.input(ConnInput::Token(Ok("jwt-3".into()))));
    let refused = json!({"jsonrpc": "2.0", "id": frame["id"],
        "error": {"code": code::UNAUTHORIZED, "message": "page token refused: bad signature jwt-3"}})
    .to_string();
    let outputs = socket.input(ConnInput::TokenAnswer(&refused));
    let Some(ConnOutput::Warn(message)) = outputs.first() else {
        panic!("{outputs:?}")
    };
    assert!(message.contains("bad signature"), "{message}");
    assert!(
        !message.contains("jwt-3"),
        "the token is never shown: {message}"
    );
    assert!(socket.connection.poll_timeout().is_some());
}

#[test]
fn only_the_answer_to_the_token_request_is_taken_for_it_never_a_frame_holding_its_id() {
    let mut socket = with_token_function();
    socket.input(ConnInput::Connect);
    socket.input(ConnInput::Token(Ok("jwt-1".into())));
    socket.input(ConnInput::Opened);
    socket.input(ConnInput::Answer(&accepted_for(600_000)));
    let answer_to = |id: &str| {
        json!({"jsonrpc": "2.0", "id": id, "result": {"tokenExpiresInMs": 600_000}}).to_string()
    };
    // No refresh asked yet: nothing is its answer.
    let unasked = answer_to("clienttools-token-1");
    assert!(!socket.connection.is_token_answer(&unasked));
    socket.wake();
    let frame = first_frame(&socket.input(ConnInput::Token(Ok("jwt-2".into()))));
    let id = frame["id"].as_str().unwrap().to_owned();
    // An agent's answer to the page's elicitation that holds the id's text (as a value, as a
    // member name), a request naming it, answers to other ids: MCP, for the page engine.
    for frame in [
        json!({"jsonrpc": "2.0", "id": "p-3", "result": {"content": {"note": id}}}).to_string(),
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":{{"{id}":"tokenExpiresInMs"}}}}}}"#
        ),
        json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string(),
        answer_to(&format!("{id}0")),
        answer_to(&format!("x{id}")),
        answer_to("clienttools-token-0"),
        format!("not a frame: {}", answer_to(&id)),
    ] {
        assert!(!socket.connection.is_token_answer(&frame), "{frame}");
    }
    assert!(socket.connection.is_token_answer(&answer_to(&id)));
}

#[test]
fn a_lapsed_token_reconnects_at_once_and_a_fixed_token_is_never_refreshed() {
    let mut socket = with_token_function();
    socket.input(ConnInput::Connect);
    socket.input(ConnInput::Token(Ok("jwt-1".into())));
    socket.input(ConnInput::Opened);
    socket.input(ConnInput::Answer(&accepted_for(600_000)));
    let outputs = socket.input(ConnInput::TokenLapsed);
    assert!(outputs.contains(&ConnOutput::FetchToken), "{outputs:?}");
    assert_eq!(socket.connection.state(), ConnectionState::Reconnecting);
    // A fixed token: the connect goes as before, and no refresh is armed.
    let mut fixed = Socket::new(Some("t0k"));
    fixed.input(ConnInput::Connect);
    fixed.input(ConnInput::Opened);
    fixed.input(ConnInput::Answer(&accepted_for(600_000)));
    assert_eq!(fixed.connection.poll_timeout(), None);
}

#[test]
fn refreshes_come_before_expiry_whatever_the_lifetime() {
    assert_eq!(connect::refresh_after(600_000), Some(480_000));
    assert_eq!(connect::refresh_after(40_000), Some(20_000));
    assert_eq!(connect::refresh_after(10_000), Some(5_000));
    for life in [2_001, 30_000, 60_000, 3_600_000] {
        let at = connect::refresh_after(life).unwrap();
        assert!(at < life && at >= life / 2, "{life}: {at}");
    }
    // A token about to expire (or past its exp, within the runtime's leeway): not in a loop.
    assert_eq!(
        connect::refresh_after(0),
        Some(connect::TOKEN_REFRESH_MIN_MS)
    );
}
