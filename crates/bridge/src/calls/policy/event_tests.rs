//! `redact` rules on everything the page sends about a call while it runs, with the test's
//! [`FakePage`]: log messages (however nested), progress messages, the requests of rounds, a page
//! error the agent gets as one, and what is new in results (`_meta`, blocks of kinds the core's
//! table does not know) — each redacted as it passes the session to the caller, also for a call
//! made on a node without the page's socket (its frames re-enter that node's session). A `block`
//! rule decided on the result acts on the result alone; a rule that replaced something only while
//! the call ran is listed in the result's `_meta` and audited once.

use std::sync::Arc;

use client_tools_core::protocol::{self, method, Message, ProgressParams, RequestId, Tool};
use serde_json::{json, Value};

use crate::agent::rounds::RunningCall;
use crate::calls::policy::{Policy, ACTED_META};
use crate::sessions::call_options::CallEvent;
use crate::sessions::fake_page::{session, FakePage};
use crate::sessions::page_session::PageSession;
use crate::sessions::trace_capture::capture_trace;

const RULES: &str = r#"
[[rule]]
id = "mask"
tools = ["lookup", "careful"]
action = "redact"
redact = ["email", "card"]

[[rule]]
id = "mask-when-asked"
tools = ["lookup"]
when = "has(input.mask) && input.mask"
action = "redact"
patterns = ["secret-[a-z]+"]
replacement = "[pattern]"

[[rule]]
id = "no-done"
tools = ["careful"]
when = 'result.content.exists(c, c.text.contains("done"))'
action = "block"
message = "not done"
"#;

const CARD: &str = "4111 1111 1111 1111";
const EMAIL: &str = "dee@example.com";

fn guarded() -> Arc<PageSession> {
    let plain = Arc::try_unwrap(session()).ok().unwrap();
    let session = Arc::new(plain.with_policy(Arc::new(Policy::parse(RULES).unwrap())));
    tools(&session);
    session
}

fn tools(session: &PageSession) {
    let tool = |name: &str| Tool {
        name: name.into(),
        description: None,
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: None,
        meta: None,
        execution: None,
    };
    session.set_tools(vec![tool("lookup"), tool("careful"), tool("plain")]);
}

/// Starts a call of `tool` on `session` as the MCP routes do (its progress and events heard).
fn start(session: &Arc<PageSession>, tool: &str, arguments: Value) -> RunningCall {
    let call = session.prepare_call(tool, arguments, None, None).unwrap();
    RunningCall::start(session.clone(), call, 8)
}

fn log_params(call: &RequestId, data: Value) -> Value {
    json!({"level": "info", "logger": format!("looker of {EMAIL}"), "data": data,
           "_meta": {"clienttools/callId": call.to_string(), "who": EMAIL}})
}

fn progress(call: &RequestId, message: &str) -> ProgressParams {
    ProgressParams {
        progress_token: json!(call.to_string()),
        progress: 0.5,
        total: Some(1.0),
        message: Some(message.into()),
    }
}

/// Every string of `value` (keys too), one a line: numbers are data, not text.
fn all_text(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{text}\n"),
        Value::Array(items) => items.iter().map(all_text).collect(),
        Value::Object(object) => object
            .iter()
            .map(|(key, value)| format!("{key}\n{}", all_text(value)))
            .collect(),
        _ => String::new(),
    }
}

/// No string of `value` holds the page's e-mail address or card number.
fn assert_clean(what: &str, value: &Value) {
    for secret in [EMAIL, CARD, "4111111111111111", "secret-abc"] {
        assert!(
            !all_text(value).contains(secret),
            "{what} shows {secret}: {value}"
        );
    }
}

#[tokio::test]
async fn log_and_progress_messages_are_redacted_as_they_pass() {
    let session = guarded();
    let mut page = FakePage::connect(&session);
    let mut running = start(&session, "lookup", json!({}));
    let (id, _) = page.request(method::TOOLS_CALL).await;

    session.page_log(log_params(
        &id,
        json!({"step": format!("looking up {EMAIL}"),
               "found": [{"card": CARD}, 4111111111111111u64], "level": "kept"}),
    ));
    let Some(CallEvent::Log(log)) = running.events.recv().await else {
        panic!("the log message reaches the caller")
    };
    let log = Value::Object(log);
    assert_clean("the log message", &log);
    assert_eq!(log["level"], "info");
    assert_eq!(log["logger"], "looker of [redacted]");
    assert_eq!(log["data"]["step"], "looking up [redacted]");
    assert_eq!(log["data"]["found"][0]["card"], "[redacted]");
    assert_eq!(
        log["data"]["found"][1], 4111111111111111u64,
        "numbers are data"
    );
    assert_eq!(log["_meta"], json!({"who": "[redacted]"}));

    session.progress(progress(&id, &format!("card {CARD} found")));
    let reported = running.progress.recv().await.unwrap();
    assert_eq!(reported.message.as_deref(), Some("card [redacted] found"));
    assert_eq!(reported.progress, 0.5);

    page.answer_call(&id, "nothing personal");
    let result = running.outcome.await.unwrap().unwrap().unwrap();
    let result = serde_json::to_value(result).unwrap();
    assert_eq!(result["content"][0]["text"], "nothing personal");
    // The rule acted on the call (on its log and progress), so the result lists it.
    assert_eq!(
        result["_meta"][ACTED_META],
        json!([{"rule": "mask", "action": "redact"}])
    );
}

#[tokio::test]
async fn the_requests_of_a_round_are_redacted_binary_data_is_not() {
    let session = guarded();
    let mut page = FakePage::connect(&session);
    let mut running = start(&session, "lookup", json!({}));
    let (id, _) = page.request(method::TOOLS_CALL).await;
    let asked = session.page_input(
        RequestId::String("round-1".into()),
        json!({"inputRequests": {
            "confirm": {"method": "elicitation/create", "params": {
                "message": format!("Is {EMAIL} yours?"),
                "requestedSchema": {"type": "object", "properties": {"card": {
                    "type": "string", "description": format!("not {CARD}")}}}}},
            "summarize": {"method": "sampling/createMessage", "params": {
                "systemPrompt": format!("write to {EMAIL}"),
                "messages": [{"role": "user", "content": [
                    {"type": "text", "text": format!("card {CARD}")},
                    {"type": "image", "data": "NDExMTExMTExMTExMTExMQ==", "mimeType": "image/png"}]}],
                "maxTokens": 5}}},
            "_meta": {"clienttools/callId": id.to_string()}}),
    );
    assert_eq!(asked, None);
    let Some(CallEvent::Input(round)) = running.events.recv().await else {
        panic!("the round reaches the caller")
    };
    let requests = Value::Object(round.requests);
    assert_clean("the round", &requests);
    let confirm = &requests["confirm"]["params"];
    assert_eq!(confirm["message"], "Is [redacted] yours?");
    assert_eq!(
        confirm["requestedSchema"]["properties"]["card"]["description"],
        "not [redacted]"
    );
    let summarize = &requests["summarize"]["params"];
    assert_eq!(summarize["systemPrompt"], "write to [redacted]");
    let content = &summarize["messages"][0]["content"];
    assert_eq!(content[0]["text"], "card [redacted]");
    assert_eq!(content[1]["data"], "NDExMTExMTExMTExMTExMQ==");
    assert_eq!(requests["summarize"]["method"], "sampling/createMessage");
}

#[tokio::test]
async fn result_meta_and_blocks_of_unknown_kinds_are_redacted_as_text() {
    let session = guarded();
    let mut page = FakePage::connect(&session);
    let running = start(&session, "lookup", json!({}));
    let (id, _) = page.request(method::TOOLS_CALL).await;
    page.answer(
        &id,
        json!({"content": [
                {"type": "text", "text": "plain"},
                {"type": "hologram", "payload": format!("mail {EMAIL}"),
                 "frames": [{"caption": CARD}]},
                {"type": "image", "data": "QUJD", "mimeType": "image/png",
                 "_meta": {"alt": EMAIL}}],
               "_meta": {"trace": {"by": [EMAIL]}}}),
    );
    let result = running.outcome.await.unwrap().unwrap().unwrap();
    let result = serde_json::to_value(result).unwrap();
    assert_clean("the result", &result);
    assert_eq!(result["content"][1]["payload"], "mail [redacted]");
    assert_eq!(result["content"][1]["frames"][0]["caption"], "[redacted]");
    assert_eq!(result["content"][2]["_meta"]["alt"], "[redacted]");
    assert_eq!(result["content"][2]["data"], "QUJD");
    assert_eq!(result["_meta"]["trace"]["by"][0], "[redacted]");
    assert_eq!(
        result["_meta"][ACTED_META],
        json!([{"rule": "mask", "action": "redact"}])
    );
}

#[tokio::test]
async fn a_rules_condition_on_the_input_decides_for_its_events_too() {
    let session = guarded();
    let mut page = FakePage::connect(&session);
    for (mask, expected) in [(false, "keep secret-abc"), (true, "keep [pattern]")] {
        let mut running = start(&session, "lookup", json!({"mask": mask}));
        let (id, _) = page.request(method::TOOLS_CALL).await;
        session.progress(progress(&id, "keep secret-abc"));
        let reported = running.progress.recv().await.unwrap();
        assert_eq!(reported.message.as_deref(), Some(expected), "mask: {mask}");
        page.answer_call(&id, "ok");
        running.outcome.await.unwrap();
    }
    // A tool no rule covers: as the page wrote it.
    let mut running = start(&session, "plain", json!({}));
    let (id, _) = page.request(method::TOOLS_CALL).await;
    session.progress(progress(&id, EMAIL));
    let reported = running.progress.recv().await.unwrap();
    assert_eq!(reported.message.as_deref(), Some(EMAIL));
    page.answer_call(&id, "ok");
    running.outcome.await.unwrap();
}

#[tokio::test]
async fn a_block_on_the_result_acts_on_the_result_alone() {
    let session = guarded();
    let mut page = FakePage::connect(&session);
    let mut running = start(&session, "careful", json!({}));
    let (id, _) = page.request(method::TOOLS_CALL).await;
    session.page_log(log_params(&id, json!(format!("almost done for {EMAIL}"))));
    let Some(CallEvent::Log(log)) = running.events.recv().await else {
        panic!("the log message reaches the caller, redacted, not blocked")
    };
    assert_eq!(log["data"], "almost done for [redacted]");
    page.answer_call(&id, "done");
    let result = running.outcome.await.unwrap().unwrap().unwrap();
    assert!(result.is_error);
    assert!(result.text().contains("not done"), "{}", result.text());
    let result = serde_json::to_value(result).unwrap();
    assert_eq!(
        result["_meta"][ACTED_META],
        json!([{"rule": "no-done", "action": "block"}, {"rule": "mask", "action": "redact"}])
    );
}

#[tokio::test]
async fn a_page_error_the_agent_gets_as_one_is_redacted() {
    let session = guarded();
    let mut page = FakePage::connect(&session);
    let running = start(&session, "lookup", json!({}));
    let (id, _) = page.request(method::TOOLS_CALL).await;
    let mut error = protocol::RpcError::new(
        protocol::code::MISSING_CAPABILITY,
        format!("{EMAIL} needs sampling"),
    );
    error.data = Some(json!({"requiredCapabilities": {"sampling": {}}, "note": CARD}));
    session.resolve(&id, Err(error));
    let Some(Err(error)) = running.outcome.await.unwrap() else {
        panic!("the page's error")
    };
    assert_eq!(error.message, "[redacted] needs sampling");
    assert_eq!(error.data.unwrap()["note"], "[redacted]");
}

/// The session on the node without the page's socket: its calls go over a link, and the page's
/// frames about them come back to it unread (crate::cluster::link's inbox hands them to the
/// session as the test does), where its own policy redacts them.
#[tokio::test]
async fn a_call_relayed_between_nodes_is_redacted_on_the_node_of_its_caller() {
    let holder = guarded();
    let mut page = FakePage::connect(&holder);
    let linked = guarded();
    let (sender, mut link) = crate::page::connection_queue::channel(64, 1 << 20);
    let kill = Arc::new(tokio::sync::Notify::new());
    let attached = linked.attach_link(sender, kill, "node-b".into(), std::time::SystemTime::now());
    assert!(attached.is_some());

    let mut running = start(&linked, "lookup", json!({}));
    let Some(crate::page::connection_queue::Outgoing::Frame(frame)) = link.recv().await else {
        panic!("the call goes over the link")
    };
    let Ok(Message::Request { id, .. }) = protocol::decode(&frame) else {
        panic!("a request: {frame}")
    };
    assert_eq!(
        holder.relay_to_page(frame, Some(id.to_string()), "reply"),
        Ok(())
    );
    let (at_page, _) = page.request(method::TOOLS_CALL).await;
    assert_eq!(at_page, id);

    // What the holding node sends back, as the page wrote it.
    let progress = protocol::encode_notification(
        method::PROGRESS,
        &progress(&id, &format!("card {CARD} found")),
    );
    assert!(linked.deliver_answer(&progress).is_none());
    let log = protocol::encode_notification(method::MESSAGE, &log_params(&id, json!(EMAIL)));
    match linked.deliver_answer(&log) {
        Some(Ok(Message::Notification { params, .. })) => linked.page_log(params),
        other => panic!("a log notification: {other:?}"),
    }
    let reported = running.progress.recv().await.unwrap();
    assert_eq!(reported.message.as_deref(), Some("card [redacted] found"));
    let Some(CallEvent::Log(log)) = running.events.recv().await else {
        panic!("the log message reaches the caller")
    };
    assert_eq!(log["data"], "[redacted]");
    let answer = json!({"jsonrpc": "2.0", "id": id, "result":
        {"content": [{"type": "text", "text": format!("{EMAIL}")}]}});
    assert!(linked.deliver_answer(&answer.to_string()).is_none());
    let result = running.outcome.await.unwrap().unwrap().unwrap();
    assert_eq!(result.text(), "[redacted]");
}

#[tokio::test]
async fn a_rule_acting_while_the_call_runs_is_audited_once() {
    let (buffer, _guard) = capture_trace();

    let session = guarded();
    let mut page = FakePage::connect(&session);
    let mut running = start(&session, "lookup", json!({}));
    let (id, _) = page.request(method::TOOLS_CALL).await;
    for n in 0..3 {
        session.progress(progress(&id, &format!("{n}: {EMAIL}")));
        running.progress.recv().await.unwrap();
    }
    page.answer_call(&id, EMAIL);
    running.outcome.await.unwrap();
    let logged = buffer.text();
    let events: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains("policy rule acted"))
        .collect();
    assert_eq!(events.len(), 1, "{logged}");
    assert!(events[0].contains("rule=mask"), "{}", events[0]);
    assert!(events[0].contains("action=\"redact\""), "{}", events[0]);
    assert!(!logged.contains(EMAIL), "{logged}");
}
