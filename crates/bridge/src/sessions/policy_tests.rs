//! The policy at a page session's choke points, with the test's [`FakePage`]: what the page is sent
//! (a blocked call nothing, a confirmed one its `_meta`), results redacted on their way to the
//! caller, a limit counted by the session holding the page's socket for the calls other cluster
//! nodes relay to it, and the audit events. A call made on a node without the page's socket
//! (over a link) is blocked before the link and its result redacted for its caller; a call with
//! rounds (crate::agent::rounds) is admitted once and its final result redacted. The session's
//! user (SPEC §13): `user` in conditions on the input and on the result (on a linked node too),
//! `per = "user"` limits over a user's tabs (local and relayed calls), and the user in audit events.

use std::sync::Arc;
use std::time::Duration;

use client_tools_core::protocol::{self, Message, ProgressParams, RequestId, Tool};
use futures_util::future::BoxFuture;
use rmcp::model::ClientCapabilities;
use serde_json::{json, Map, Value};

use crate::agent::rounds::{
    arguments_digest, drive, resume, tool_digest, AgentSide, CallKey, Driven, Retry, Rounds,
    RunningCall,
};
use crate::calls::policy::{Policy, ACTED_META};
use crate::sessions::call_options::CallOptions;
use crate::sessions::fake_page::{session, FakePage};
use crate::sessions::page_session::{PageSession, RelayRefused};
use crate::sessions::trace_capture::capture_trace;

const RULES: &str = r#"
[[rule]]
id = "no-drop"
tools = ["sql"]
when = "input.q.matches('(?i)drop')"
action = "block"

[[rule]]
id = "relay-rate"
tools = ["search"]
action = "limit"
calls = 2
window_seconds = 60

[[rule]]
id = "mask"
tools = ["profile"]
action = "redact"
redact = ["email"]
"#;

fn guarded() -> Arc<PageSession> {
    guarded_by(RULES)
}

fn guarded_by(rules: &str) -> Arc<PageSession> {
    let plain = Arc::try_unwrap(session()).ok().unwrap();
    Arc::new(plain.with_policy(Arc::new(Policy::parse(rules).unwrap())))
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
    session.set_tools(vec![
        tool("sql"),
        tool("search"),
        tool("profile"),
        tool("ask"),
    ]);
}

#[tokio::test]
async fn a_blocked_call_sends_nothing_and_a_redacted_result_is_what_the_caller_gets() {
    let session = guarded();
    tools(&session);
    let mut page = FakePage::connect(&session);
    let blocked = session
        .call_tool(
            ("sql", json!({"q": "DROP TABLE x"})),
            CallOptions::new().timeout(Duration::from_secs(5)),
        )
        .await
        .into_result();
    assert!(blocked.is_error);
    assert!(page.has_nothing_queued());

    let caller = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .call_tool(
                    ("profile", json!({})),
                    CallOptions::new().timeout(Duration::from_secs(5)),
                )
                .await
                .into_result()
        })
    };
    let (id, _) = page.request(protocol::method::TOOLS_CALL).await;
    page.answer(
        &id,
        json!({"content": [{"type": "text", "text": "ada@example.com"}],
               "structuredContent": {"a": [{"b": "x ada@example.com"}]}}),
    );
    let result = caller.await.unwrap();
    let result = serde_json::to_value(result).unwrap();
    assert_eq!(result["content"][0]["text"], "[redacted email]");
    assert_eq!(
        result["structuredContent"]["a"][0]["b"],
        "x [redacted email]"
    );
    assert_eq!(result["_meta"][ACTED_META][0]["rule"], "mask");
}

/// What another node sends this node's page (crate::cluster::owner): a `tools/call` frame.
fn relayed_call(id: &str, tool: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": {}}})
    .to_string()
}

#[tokio::test]
async fn the_node_holding_the_page_counts_relayed_calls_against_limits() {
    let session = guarded();
    tools(&session);
    let mut page = FakePage::connect(&session);
    for n in 0..2 {
        let frame = relayed_call(&format!("other-node-{n}"), "search");
        assert_eq!(
            session.relay_to_page(frame, Some(format!("r{n}")), "reply"),
            Ok(())
        );
        page.request(protocol::method::TOOLS_CALL).await;
    }
    let over = session.relay_to_page(
        relayed_call("other-node-2", "search"),
        Some("r2".into()),
        "reply",
    );
    let Err(RelayRefused::Answered(result)) = over else {
        panic!("expected the limit's answer, got {over:?}");
    };
    assert!(
        result.text().starts_with("rate limit of rule 'relay-rate'"),
        "{}",
        result.text()
    );
    assert!(
        page.has_nothing_queued(),
        "the page got a call over the limit"
    );
    // The limit is the session's: a local call counts against the same window.
    let local = session
        .call_tool(
            ("search", json!({})),
            CallOptions::new().timeout(Duration::from_secs(5)),
        )
        .await
        .into_result();
    assert!(
        local.text().starts_with("rate limit of rule 'relay-rate'"),
        "{}",
        local.text()
    );
    // Other tools and frames pass.
    assert_eq!(
        session.relay_to_page(relayed_call("n3", "profile"), Some("r3".into()), "reply"),
        Ok(())
    );
}

/// The same page session on the node without the page's socket: its calls go over a link (whose
/// frames the test reads) to the node holding it, as crate::cluster::link attaches it.
fn linked() -> (
    Arc<PageSession>,
    crate::page::connection_queue::OutgoingReceiver,
) {
    let linked = guarded();
    tools(&linked);
    let (sender, queue) = crate::page::connection_queue::channel(64, 1 << 20);
    let kill = Arc::new(tokio::sync::Notify::new());
    let attached = linked.attach_link(sender, kill, "node-b".into(), std::time::SystemTime::now());
    assert!(attached.is_some());
    (linked, queue)
}

#[tokio::test]
async fn a_call_relayed_between_nodes_is_blocked_before_the_link_and_redacted_for_its_caller() {
    use futures_util::FutureExt;

    use crate::page::connection_queue::Outgoing;

    let holder = guarded();
    tools(&holder);
    let mut page = FakePage::connect(&holder);
    let (linked, mut link) = linked();

    let blocked = linked
        .call_tool(
            ("sql", json!({"q": "DROP TABLE x"})),
            CallOptions::new().timeout(Duration::from_secs(5)),
        )
        .await
        .into_result();
    assert!(blocked.is_error);
    assert!(blocked.text().contains("no-drop"), "{}", blocked.text());
    assert!(
        link.recv().now_or_never().is_none(),
        "a blocked call went over the link"
    );
    assert!(page.has_nothing_queued());

    let caller = {
        let linked = linked.clone();
        tokio::spawn(async move {
            linked
                .call_tool(
                    ("profile", json!({})),
                    CallOptions::new().timeout(Duration::from_secs(5)),
                )
                .await
                .into_result()
        })
    };
    let Some(Outgoing::Frame(frame)) = link.recv().await else {
        panic!("the call goes over the link")
    };
    let Ok(Message::Request { id, .. }) = protocol::decode(&frame) else {
        panic!("a request: {frame}")
    };
    assert_eq!(
        holder.relay_to_page(frame, Some(id.to_string()), "reply"),
        Ok(())
    );
    let (at_page, _) = page.request(protocol::method::TOOLS_CALL).await;
    assert_eq!(at_page, id);
    // The page's answer, carried back to the linked node (crate::cluster relays it unread).
    let answer = json!({"jsonrpc": "2.0", "id": id, "result":
        {"content": [{"type": "text", "text": "ada@example.com"}]}});
    assert!(linked.deliver_answer(&answer.to_string()).is_none());
    let result = serde_json::to_value(caller.await.unwrap()).unwrap();
    assert_eq!(result["content"][0]["text"], "[redacted email]");
    assert_eq!(result["_meta"][ACTED_META][0]["rule"], "mask");
}

#[tokio::test]
async fn every_decision_is_one_audit_event_without_the_payload() {
    let (buffer, _guard) = capture_trace();
    let session = guarded();
    tools(&session);
    let _page = FakePage::connect(&session);
    session
        .call_tool(
            ("sql", json!({"q": "drop it, secret-value"})),
            CallOptions::new().timeout(Duration::from_secs(5)),
        )
        .await
        .into_result();
    let logged = buffer.text();
    let events: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains("policy rule acted"))
        .collect();
    assert_eq!(events.len(), 1, "{logged}");
    for field in [
        "rule=no-drop",
        "action=\"block\"",
        "tool=\"sql\"",
        "session=\"s1\"",
        "call=",
    ] {
        assert!(events[0].contains(field), "{field} missing: {}", events[0]);
    }
    assert!(!logged.contains("secret-value"), "{logged}");
}

const ROUND_RULES: &str = r#"
[[rule]]
id = "two-a-minute"
tools = ["ask"]
action = "limit"
calls = 2
window_seconds = 60

[[rule]]
id = "mask"
tools = ["ask"]
action = "redact"
redact = ["email"]
"#;

/// An agent that declared elicitation (2026-07-28: it answers a round by retrying the call).
struct Elicits;

impl AgentSide for Elicits {
    fn capabilities(&self) -> ClientCapabilities {
        serde_json::from_value(json!({"elicitation": {}})).unwrap()
    }
    fn progress(&self, _: ProgressParams) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn log(&self, _: Map<String, Value>) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn cancelled(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn a_multi_round_call_is_admitted_once_and_its_final_result_is_redacted() {
    let session = guarded_by(ROUND_RULES);
    tools(&session);
    let mut page = FakePage::connect(&session);
    let rounds = Rounds::default();
    let call = session.prepare_call("ask", json!({}), None, None).unwrap();
    let running = RunningCall::start(session.clone(), call, 4);
    let key = CallKey {
        page_session: session.id().to_owned(),
        tool: "ask".into(),
        tool_digest: tool_digest(session.tools().iter().find(|t| t.name == "ask")),
        arguments: arguments_digest(&json!({})),
    };
    let (call_id, _) = page.request(protocol::method::TOOLS_CALL).await;
    let round_id = RequestId::String("clienttools-input-1".into());
    let elicit = json!({"method": "elicitation/create", "params": {"message": "Name?",
        "requestedSchema": {"type": "object", "properties": {}},
        "_meta": {"clienttools/inputKey": "k"}}});
    let asked = session.page_input(
        round_id.clone(),
        json!({"inputRequests": {"name": elicit},
               "_meta": {"clienttools/callId": call_id.to_string()}}),
    );
    assert_eq!(asked, None);
    let Driven::InputRequired { state, .. } = drive(&rounds, running, &Elicits, key, 0, None).await
    else {
        panic!("the round goes to the agent")
    };
    let retry = Retry {
        state,
        page_session: session.id().to_owned(),
        tool: "ask".into(),
        arguments: Map::new(),
        responses: serde_json::from_value(
            json!({"name": {"action": "accept", "content": {"n": "Ada"}}}),
        )
        .unwrap(),
    };
    let page_side = async {
        let frame = page.frame().await;
        let Ok(Message::Response { id, result: Ok(_) }) = protocol::decode(&frame) else {
            panic!("the page gets the round's answers: {frame}")
        };
        assert_eq!(id, round_id);
        page.answer(
            &call_id,
            json!({"content": [{"type": "text", "text": "Ada is ada@example.com"}]}),
        );
    };
    let (resumed, ()) = tokio::join!(
        resume::<client_tools_core::protocol::CallToolResult>(&rounds, retry, &Elicits),
        page_side
    );
    let Driven::Ended(Some(Ok(result))) = resumed else {
        panic!("the call ends with a result")
    };
    let result = serde_json::to_value(result).unwrap();
    assert_eq!(result["content"][0]["text"], "Ada is [redacted email]");
    assert_eq!(result["_meta"][ACTED_META][0]["rule"], "mask");

    // The round did not count as a call: the limit of 2 admits one more, then refuses.
    let second = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .call_tool(
                    ("ask", json!({})),
                    CallOptions::new().timeout(Duration::from_secs(5)),
                )
                .await
                .into_result()
        })
    };
    let (second_id, _) = page.request(protocol::method::TOOLS_CALL).await;
    page.answer_call(&second_id, "fine");
    assert_eq!(second.await.unwrap().text(), "fine");
    let third = session
        .call_tool(
            ("ask", json!({})),
            CallOptions::new().timeout(Duration::from_secs(5)),
        )
        .await
        .into_result();
    assert!(
        third
            .text()
            .starts_with("rate limit of rule 'two-a-minute'"),
        "{}",
        third.text()
    );
    assert!(
        page.has_nothing_queued(),
        "the page got a call over the limit"
    );
}

/// One tab (page session) of `user` on this node, under the node's one `policy` (the session table
/// gives every session the same: crate::sessions::table).
fn tab(id: &str, user: Option<&str>, policy: &Arc<Policy>) -> Arc<PageSession> {
    let session = PageSession::new(id.into(), Vec::new(), Default::default(), false)
        .with_policy(policy.clone())
        .with_user(user.map(str::to_owned));
    let session = Arc::new(session);
    tools(&session);
    session
}

/// A call the page answers with `text`: what the caller gets (a call the policy refuses instead
/// fails the test at once).
async fn answered_call(
    session: &Arc<PageSession>,
    page: &mut FakePage,
    tool: &str,
    text: &str,
) -> String {
    let mut caller = {
        let (session, tool) = (session.clone(), tool.to_owned());
        tokio::spawn(async move {
            session
                .call_tool(
                    (tool.as_str(), json!({})),
                    CallOptions::new().timeout(Duration::from_secs(5)),
                )
                .await
                .into_result()
        })
    };
    let (id, _) = tokio::select! {
        sent = page.request(protocol::method::TOOLS_CALL) => sent,
        ended = &mut caller => panic!("the call never reached the page: {}", ended.unwrap().text()),
    };
    page.answer_call(&id, text);
    caller.await.unwrap().text().to_owned()
}

/// A call the policy answers in the page's stead (a page that got it would leave it unanswered:
/// the call would time out, and the page's queue would hold it).
async fn refused_call(session: &Arc<PageSession>, page: &mut FakePage, tool: &str) -> String {
    let result = session
        .call_tool(
            (tool, json!({})),
            CallOptions::new().timeout(Duration::from_secs(5)),
        )
        .await
        .into_result();
    assert!(result.is_error, "{}", result.text());
    assert!(page.has_nothing_queued(), "the page got a refused call");
    result.text().to_owned()
}

const USER_RULES: &str = r#"
[[rule]]
id = "not-for-alice"
tools = ["sql"]
when = 'user == "alice"'
action = "block"

[[rule]]
id = "alice-sees-no-profile"
tools = ["profile"]
when = 'user == "alice" && size(result.content) > 0'
action = "block"
"#;

#[tokio::test]
async fn a_rule_on_the_user_blocks_alices_calls_and_not_bobs_on_every_node() {
    let policy = Arc::new(Policy::parse(USER_RULES).unwrap());
    let alice = tab("a1", Some("alice"), &policy);
    let bob = tab("b1", Some("bob"), &policy);
    // A session without a user, whose id is "alice": `session` is not `user`.
    let nobody = tab("alice", None, &policy);
    let (mut alice_page, mut bob_page, mut nobody_page) = (
        FakePage::connect(&alice),
        FakePage::connect(&bob),
        FakePage::connect(&nobody),
    );

    let text = refused_call(&alice, &mut alice_page, "sql").await;
    assert!(text.contains("not-for-alice"), "{text}");
    assert_eq!(
        answered_call(&bob, &mut bob_page, "sql", "rows").await,
        "rows"
    );
    assert_eq!(
        answered_call(&nobody, &mut nobody_page, "sql", "rows").await,
        "rows"
    );
    // On the result: the page ran alice's call, the caller gets the block instead.
    let text = answered_call(&alice, &mut alice_page, "profile", "Alice A.").await;
    assert!(text.contains("alice-sees-no-profile"), "{text}");
    assert_eq!(
        answered_call(&bob, &mut bob_page, "profile", "Bob B.").await,
        "Bob B."
    );

    // Alice's tab seen from a node without its socket (linked with the user its directory entry
    // names, crate::cluster): blocked there, before the link.
    let linked = tab("a1", Some("alice"), &policy);
    let (sender, mut link) = crate::page::connection_queue::channel(64, 1 << 20);
    let kill = Arc::new(tokio::sync::Notify::new());
    let attached = linked.attach_link(sender, kill, "node-b".into(), std::time::SystemTime::now());
    assert!(attached.is_some());
    let blocked = linked
        .call_tool(
            ("sql", json!({})),
            CallOptions::new().timeout(Duration::from_secs(5)),
        )
        .await
        .into_result();
    assert!(
        blocked.text().contains("not-for-alice"),
        "{}",
        blocked.text()
    );
    assert!(
        futures_util::FutureExt::now_or_never(link.recv()).is_none(),
        "a blocked call went over the link"
    );
}

const PER_USER_RULES: &str = r#"
[[rule]]
id = "user-rate"
tools = ["search"]
action = "limit"
calls = 2
window_seconds = 60
per = "user"
"#;

#[tokio::test]
async fn a_per_user_limit_counts_a_users_tabs_together_and_other_users_and_sessions_apart() {
    let (buffer, _guard) = capture_trace();
    let policy = Arc::new(Policy::parse(PER_USER_RULES).unwrap());
    let (a1, a2) = (
        tab("a1", Some("alice"), &policy),
        tab("a2", Some("alice"), &policy),
    );
    let b1 = tab("b1", Some("bob"), &policy);
    let (n1, n2) = (tab("n1", None, &policy), tab("n2", None, &policy));
    let mut a1_page = FakePage::connect(&a1);
    let mut a2_page = FakePage::connect(&a2);
    let mut b1_page = FakePage::connect(&b1);
    let mut n1_page = FakePage::connect(&n1);
    let mut n2_page = FakePage::connect(&n2);

    // One call on each of alice's tabs: one of them relayed from another node, counted here.
    assert_eq!(
        answered_call(&a1, &mut a1_page, "search", "one").await,
        "one"
    );
    assert_eq!(
        a2.relay_to_page(
            relayed_call("other-node-1", "search"),
            Some("r1".into()),
            "reply"
        ),
        Ok(())
    );
    a2_page.request(protocol::method::TOOLS_CALL).await;
    // Her third, on either tab, locally or relayed: over the limit.
    let text = refused_call(&a1, &mut a1_page, "search").await;
    assert!(
        text.starts_with("rate limit of rule 'user-rate': at most 2 calls in 60 s per user"),
        "{text}"
    );
    refused_call(&a2, &mut a2_page, "search").await;
    let over = a2.relay_to_page(
        relayed_call("other-node-2", "search"),
        Some("r2".into()),
        "reply",
    );
    assert!(
        matches!(over, Err(RelayRefused::Answered(_))),
        "expected the limit's answer, got {over:?}"
    );
    assert!(a2_page.has_nothing_queued());

    // Bob has his own count.
    for n in 0..2 {
        assert_eq!(
            answered_call(&b1, &mut b1_page, "search", &format!("bob {n}")).await,
            format!("bob {n}")
        );
    }
    // Sessions without a user count each alone, never together.
    for (session, page) in [(&n1, &mut n1_page), (&n2, &mut n2_page)] {
        for n in 0..2 {
            assert_eq!(
                answered_call(session, page, "search", &format!("n {n}")).await,
                format!("n {n}")
            );
        }
        refused_call(session, page, "search").await;
    }

    // The limit's audit events name the user; a session without one names none.
    let logged = buffer.text();
    let events: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains("policy rule acted"))
        .collect();
    assert_eq!(events.len(), 5, "{logged}");
    for event in &events[..3] {
        assert!(event.contains("user=\"alice\""), "{event}");
        assert!(event.contains("rule=user-rate"), "{event}");
    }
    assert!(events[3].contains("session=\"n1\"") && events[3].contains("user=\"\""));
    assert!(events[4].contains("session=\"n2\"") && events[4].contains("user=\"\""));
}

#[tokio::test]
async fn the_audit_event_names_the_sessions_user() {
    let (buffer, _guard) = capture_trace();
    let policy = Arc::new(Policy::parse(USER_RULES).unwrap());
    let alice = tab("a1", Some("alice"), &policy);
    let mut page = FakePage::connect(&alice);
    refused_call(&alice, &mut page, "sql").await;
    answered_call(&alice, &mut page, "profile", "Alice A.").await;
    let logged = buffer.text();
    let events: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains("policy rule acted"))
        .collect();
    assert_eq!(events.len(), 2, "{logged}");
    for (event, rule) in events
        .iter()
        .zip(["not-for-alice", "alice-sees-no-profile"])
    {
        for field in [
            format!("rule={rule}"),
            "session=\"a1\"".into(),
            "user=\"alice\"".into(),
        ] {
            assert!(event.contains(&field), "{field} missing: {event}");
        }
    }
}
