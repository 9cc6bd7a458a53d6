use std::sync::Arc;
use std::time::Duration;

use client_tools_core::protocol::{self, decode, method, Message, RequestId, RpcError};
use futures_util::FutureExt;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use tokio::time::sleep;

use super::*;
use crate::limits::{Limits, MAX_OPEN_ROUNDS_PER_SESSION, MAX_REQUESTS_PER_ROUND};
use crate::page::connection_queue::Outgoing;
use crate::sessions::call_options::{CallEvent, CallOptions, CallOutcome};
use crate::sessions::fake_page::{session, FakePage};
use crate::sessions::trace_capture::capture_trace;

const TIMEOUT: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn the_bridge_allow_list_filters_tools_and_refuses_calls_by_original_name() {
    let session = Arc::new(PageSession::new(
        "s1".into(),
        vec!["Secret Tool".into(), "echo".into()],
        Limits::default(),
        false,
    ));
    let mut page = FakePage::connect(&session);
    let tools = json!([
        {"name": "secret_tool", "inputSchema": {}, "_meta": {"clienttools/originalName": "Secret Tool"}},
        {"name": "delete_all", "inputSchema": {}},
    ]);
    session.set_tools(serde_json::from_value(tools).unwrap());
    let listed: Vec<String> = session.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(listed, ["secret_tool"]);

    for name in ["delete_all", "not_listed"] {
        let refused = session
            .call_tool((name, json!({})), CallOptions::new().timeout(TIMEOUT))
            .await
            .into_result();
        assert_eq!(refused.text(), format!("tool '{name}' is not allowed"));
    }
    assert!(page.has_nothing_queued());
    // Allowed by original name, or by name while the page has not listed it.
    for name in ["secret_tool", "echo"] {
        let call = {
            let session = session.clone();
            tokio::spawn(async move {
                session
                    .call_tool((name, json!({})), CallOptions::new().timeout(TIMEOUT))
                    .await
                    .into_result()
            })
        };
        let (id, params) = page.request(method::TOOLS_CALL).await;
        assert_eq!(params["name"], name);
        page.answer_call(&id, "allowed");
        assert_eq!(call.await.unwrap().text(), "allowed");
    }
}

/// Defect: running a prepared call trusted it (the allow-list was checked in `prepare_call`
/// only), so the Rust API could run a call prepared elsewhere or no longer allowed.
#[tokio::test(start_paused = true)]
async fn a_prepared_call_is_checked_again_when_it_runs() {
    let allowed = Arc::new(PageSession::new(
        "s1".into(),
        vec!["Echo".into()],
        Limits::default(),
        false,
    ));
    let other = Arc::new(PageSession::new(
        "s2".into(),
        Vec::new(),
        Limits::default(),
        false,
    ));
    let mut page = FakePage::connect(&allowed);
    let _other_page = FakePage::connect(&other);
    let listed = |original: &str| {
        serde_json::from_value::<Vec<Tool>>(json!([{"name": "echo", "inputSchema": {},
            "_meta": {"clienttools/originalName": original}}]))
        .unwrap()
    };
    allowed.set_tools(listed("Echo"));
    // By either name: allowed (the allow-list matches the original name), sent as `echo`.
    for name in ["Echo", "echo"] {
        let call = allowed.prepare_call(name, json!({}), None, None).unwrap();
        assert_eq!(call.name(), "echo");
        assert_eq!(call.original_name(), "Echo");
    }
    let elsewhere = allowed.prepare_call("echo", json!({}), None, None).unwrap();
    let refused = other
        .call_tool(elsewhere, CallOptions::new())
        .await
        .into_result();
    assert!(
        refused.is_error
            && refused
                .text()
                .contains("prepared for page session 's1', not 's2'"),
        "{}",
        refused.text()
    );
    // The page redefines `echo` as another tool the allow-list does not allow.
    let stale = allowed.prepare_call("echo", json!({}), None, None).unwrap();
    allowed.set_tools(listed("Echo Everything"));
    let refused = allowed
        .call_tool(stale, CallOptions::new())
        .await
        .into_result();
    assert_eq!(refused.text(), "tool 'echo' is not allowed");
    // A prepared call's timeout and `_meta` were decided by prepare_call: options setting
    // them again are refused, not ignored.
    allowed.set_tools(listed("Echo"));
    let prepared = allowed.prepare_call("echo", json!({}), None, None).unwrap();
    let options = CallOptions::new().timeout(Duration::from_secs(1));
    let refused = allowed.call_tool(prepared, options).await.into_result();
    assert!(
        refused.is_error && refused.text().contains("decided by prepare_call"),
        "{}",
        refused.text()
    );
    assert!(page.has_nothing_queued());
}

#[tokio::test(start_paused = true)]
async fn the_rust_api_timeout_follows_the_rule_of_every_route() {
    let session = session();
    let _page = FakePage::connect(&session);
    let zero = session
        .call_tool(
            ("echo", json!({})),
            CallOptions::new().timeout(Duration::ZERO),
        )
        .await
        .into_result();
    assert_eq!(
        zero.text(),
        "timeout must be a positive number of milliseconds, not 0"
    );
    let long = session
        .call_tool(
            ("echo", json!({})),
            CallOptions::new().timeout(Duration::from_secs(301)),
        )
        .await
        .into_result();
    assert_eq!(
        long.text(),
        "timeout 301000 ms is above the maximum of 300000 ms"
    );
}

#[tokio::test(start_paused = true)]
async fn connection_facts_for_expiry_and_the_newest_session() {
    let session = session();
    sleep(Duration::from_secs(3)).await;
    assert!(!session.has_connected() && !session.is_connected());
    assert_eq!(session.connected_at(), None);
    // Never connected: disconnected since it was created.
    assert_eq!(
        session.disconnected_for(now()),
        Some(Duration::from_secs(3))
    );

    let before = SystemTime::now();
    let page = FakePage::connect(&session);
    assert!(session.has_connected() && session.is_connected());
    assert!(session.connected_at().is_some_and(|at| at >= before));
    assert_eq!(session.disconnected_for(now()), None);
    assert!(session.info().connected && session.info().connected_at_ms.is_some());

    page.disconnect();
    sleep(Duration::from_secs(7)).await;
    assert!(session.has_connected() && !session.is_connected());
    assert_eq!(session.connected_at(), None);
    assert_eq!(
        session.disconnected_for(now()),
        Some(Duration::from_secs(7))
    );
    assert!(!session.info().connected);
}

#[tokio::test(start_paused = true)]
async fn a_replaced_connection_is_closed_and_ending_late_does_not_disconnect_the_session() {
    let session = session();
    let mut old = FakePage::connect(&session);
    let mut new = FakePage::connect(&session);
    // Two connections never share a session: the older one is told, and its reader stops.
    assert!(old.kill.notified().now_or_never().is_some());
    assert!(matches!(
        old.queue.recv().await,
        Some(Outgoing::Close { code: 4000, .. })
    ));
    old.disconnect();
    assert!(session.is_connected());
    let call = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .call_tool(("echo", json!({})), CallOptions::new().timeout(TIMEOUT))
                .await
                .into_result()
        })
    };
    let (id, _) = new.request(method::TOOLS_CALL).await;
    new.answer_call(&id, "on the new connection");
    assert_eq!(call.await.unwrap().text(), "on the new connection");
}

#[tokio::test(start_paused = true)]
async fn an_explicit_close_gets_through_a_full_queue_and_stops_the_reader() {
    let session = session();
    let mut page = FakePage::connect_bounded(&session, 1, 1 << 20);
    session.notify_page(method::INITIALIZED, &json!({}));
    session.close_connection(4000, "replaced");
    assert!(page.kill.notified().now_or_never().is_some());
    page.notification(method::INITIALIZED).await;
    assert_eq!(
        page.queue.recv().await,
        Some(Outgoing::Close {
            code: 4000,
            reason: "replaced".into()
        })
    );
}

#[tokio::test(start_paused = true)]
async fn fault_injection_drops_the_connection_and_resends_a_waiting_call_with_its_id() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let call = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .call_tool(("echo", json!({})), CallOptions::new().timeout(TIMEOUT))
                .await
                .into_result()
        })
    };
    let first = page.frame().await;
    session.resend_pending();
    assert_eq!(page.frame().await, first);
    let Ok(Message::Request { id, .. }) = decode(&first) else {
        panic!("{first}")
    };
    page.answer_call(&id, "once");
    assert_eq!(call.await.unwrap().text(), "once");

    session.drop_connection();
    assert!(page.kill.notified().now_or_never().is_some());
}

/// A prepared call through `call_tool`, its events on a channel.
fn spawn_mcp_call(
    session: &Arc<PageSession>,
) -> (
    tokio::task::JoinHandle<Option<CallOutcome>>,
    mpsc::Receiver<CallEvent>,
) {
    let (events_tx, events) = mpsc::channel(8);
    let call = session.prepare_call("ask", json!({}), None, None).unwrap();
    let session = session.clone();
    let task = tokio::spawn(async move {
        session
            .call_tool(call, CallOptions::new().events(events_tx))
            .await
            .into_outcome()
    });
    (task, events)
}

fn round(call: &RequestId, requests: Value) -> Value {
    json!({"inputRequests": requests, "_meta": {"clienttools/callId": call.to_string()}})
}

fn elicit(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"message": message,
        "requestedSchema": {"type": "object", "properties": {}}, "_meta": {"clienttools/inputKey": "k"}}})
}

#[tokio::test(start_paused = true)]
async fn a_round_goes_to_its_call_and_its_answer_back_to_the_page_once() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let (call, mut events) = spawn_mcp_call(&session);
    let (call_id, _) = page.request(method::TOOLS_CALL).await;
    let round_id = RequestId::String("clienttools-input-1".into());
    let asked = session.page_input(
        round_id.clone(),
        round(&call_id, json!({"name": elicit("Name?")})),
    );
    assert_eq!(asked, None);
    let Some(CallEvent::Input(got)) = events.recv().await else {
        panic!("no round")
    };
    assert_eq!(got.id, round_id);
    // The page's own `_meta` keys never reach the agent.
    assert_eq!(
        got.requests["name"],
        json!({"method": "elicitation/create", "params": {"message": "Name?",
            "requestedSchema": {"type": "object", "properties": {}}}})
    );
    // One round at a time per call; the same request id twice is refused.
    let again = session.page_input(
        RequestId::Number(9),
        round(&call_id, json!({"x": elicit("?")})),
    );
    assert!(again.unwrap().message.contains("one round at a time"));
    let answer = json!({"inputResponses": {"name": {"action": "accept", "content": {"n": "A"}}}});
    assert!(session.answer_round(&round_id, Ok(answer.clone())));
    assert!(
        !session.answer_round(&round_id, Ok(answer.clone())),
        "answered once"
    );
    let frame = page.frame().await;
    let Ok(Message::Response {
        id,
        result: Ok(result),
    }) = decode(&frame)
    else {
        panic!("{frame}")
    };
    assert_eq!((id, result), (round_id, answer));
    // Logs of the call reach its caller without the page's call id.
    session.page_log(json!({"level": "info", "data": "hi",
        "_meta": {"clienttools/callId": call_id.to_string()}}));
    assert_eq!(
        events.recv().await,
        Some(CallEvent::Log(
            json!({"level": "info", "data": "hi"})
                .as_object()
                .unwrap()
                .clone()
        ))
    );
    page.answer_call(&call_id, "done");
    assert_eq!(call.await.unwrap().unwrap().unwrap().text(), "done");
    // The call is over: a round for it now is refused.
    let late = session.page_input(
        RequestId::Number(10),
        round(&call_id, json!({"x": elicit("?")})),
    );
    assert!(late.unwrap().message.contains("is waiting"));
}

#[tokio::test(start_paused = true)]
async fn hostile_rounds_are_refused_with_a_clear_error() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let (_call, _events) = spawn_mcp_call(&session);
    let (call_id, _) = page.request(method::TOOLS_CALL).await;
    let refused = |params: Value| session.page_input(RequestId::Number(1), params).unwrap();
    let unknown = RequestId::String("someone-else".into());
    assert!(refused(round(&unknown, json!({"a": elicit("?")})))
        .message
        .contains("no call 'someone-else'"));
    assert!(refused(json!({"inputRequests": {"a": elicit("?")}}))
        .message
        .contains("callId"));
    assert!(refused(round(&call_id, json!({})))
        .message
        .contains("empty"));
    assert!(refused(round(
        &call_id,
        json!({"a": {"method": "tools/call", "params": {}}})
    ))
    .message
    .contains("method must be"));
    assert!(refused(round(
        &call_id,
        json!({"a": {"method": "roots/list", "params": 3}})
    ))
    .message
    .contains("params must be an object"));
    let many: Map<String, Value> = (0..=MAX_REQUESTS_PER_ROUND)
        .map(|n| (format!("k{n}"), elicit("?")))
        .collect();
    let error = refused(round(&call_id, Value::Object(many)));
    assert_eq!(error.code, protocol::code::INVALID_PARAMS);
    assert!(error.message.contains("at most 16"), "{}", error.message);
}

#[tokio::test(start_paused = true)]
async fn a_caller_that_takes_no_rounds_refuses_them_as_missing_capabilities() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let call = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .call_tool(("ask", json!({})), CallOptions::new().timeout(TIMEOUT))
                .await
                .into_result()
        })
    };
    let (call_id, _) = page.request(method::TOOLS_CALL).await;
    let requests = json!({"a": {"method": "sampling/createMessage", "params": {}},
        "b": {"method": "roots/list"}, "c": elicit("?")});
    let error = session
        .page_input(RequestId::Number(1), round(&call_id, requests))
        .unwrap();
    assert_eq!(error.code, -32021);
    assert_eq!(
        error.data,
        Some(
            json!({"requiredCapabilities": {"sampling": {}, "roots": {}, "elicitation": {"form": {}}}})
        )
    );
    // The handler let it propagate: the page fails the call with -32021; this caller gets a
    // clear error result.
    let mut failed = RpcError::new(-32021, "Missing required client capability");
    failed.data = error.data.clone();
    session.resolve(&call_id, Err(failed));
    let result = call.await.unwrap();
    assert!(result.is_error);
    assert!(
        result
            .text()
            .contains("needs a capability this caller does not offer"),
        "{}",
        result.text()
    );
}

#[tokio::test(start_paused = true)]
async fn a_missing_capability_error_of_the_page_reaches_an_mcp_caller_as_an_error() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let (call, _events) = spawn_mcp_call(&session);
    let (call_id, _) = page.request(method::TOOLS_CALL).await;
    let mut failed = RpcError::new(-32021, "Missing required client capability");
    failed.data = Some(json!({"requiredCapabilities": {"sampling": {}}}));
    session.resolve(&call_id, Err(failed.clone()));
    assert_eq!(call.await.unwrap(), Some(Err(failed)));
    // Other errors of the page stay error results.
    let (call, _events) = spawn_mcp_call(&session);
    let (call_id, _) = page.request(method::TOOLS_CALL).await;
    session.resolve(&call_id, Err(RpcError::new(-32602, "bad")));
    let result = call.await.unwrap().unwrap().unwrap();
    assert_eq!(result.text(), "the page refused the call: bad");
}

#[tokio::test(start_paused = true)]
async fn open_rounds_are_bounded_per_session() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let mut calls = Vec::new();
    for n in 0..=MAX_OPEN_ROUNDS_PER_SESSION {
        let (task, events) = spawn_mcp_call(&session);
        let (call_id, _) = page.request(method::TOOLS_CALL).await;
        let asked = session.page_input(
            RequestId::Number(n as i64),
            round(&call_id, json!({"a": elicit("?")})),
        );
        if n < MAX_OPEN_ROUNDS_PER_SESSION {
            assert_eq!(asked, None);
        } else {
            assert!(asked.unwrap().message.contains("too many rounds"));
        }
        calls.push((task, events));
    }
}

/// The trace of one call: what `tracing` wrote while `log_payloads` was as given.
async fn trace_of_one_call(log_payloads: bool) -> String {
    let (captured, _trace) = capture_trace();

    let session = Arc::new(PageSession::new(
        "s1".into(),
        Vec::new(),
        Limits::default(),
        log_payloads,
    ));
    let mut page = FakePage::connect(&session);
    let call = {
        let session = session.clone();
        let arguments = json!({"password": "hunter2"});
        tokio::spawn(async move {
            session
                .call_tool(("login", arguments), CallOptions::new().timeout(TIMEOUT))
                .await
                .into_result()
        })
    };
    let (id, _) = page.request(method::TOOLS_CALL).await;
    sleep(Duration::from_millis(40)).await;
    page.answer_call(&id, "the account balance");
    assert!(!call.await.unwrap().is_error);
    captured.text()
}

#[tokio::test(start_paused = true)]
async fn one_span_per_call_with_its_outcome_and_no_payloads_unless_asked() {
    let trace = trace_of_one_call(false).await;
    let finished: Vec<&str> = trace
        .lines()
        .filter(|line| line.contains("tool call finished"))
        .collect();
    assert_eq!(finished.len(), 1, "{trace}");
    for field in [
        "tool_call{",
        "session=s1",
        "tool=\"login\"",
        "call=",
        "outcome=\"ok\"",
        "duration_ms=40",
    ] {
        assert!(finished[0].contains(field), "{field} in {trace}");
    }
    assert!(
        !trace.contains("hunter2") && !trace.contains("balance"),
        "{trace}"
    );

    let trace = trace_of_one_call(true).await;
    assert!(
        trace.contains("hunter2") && trace.contains("the account balance"),
        "{trace}"
    );
}
