//! The operator's policy on what agents ask a page besides tool calls (SPEC §11: prompts by name,
//! resources by URI), at a page session's choke points, with the test's [`FakePage`]: `block`
//! refuses a request with a JSON-RPC error naming the rule (the page sees nothing) and leaves the
//! entry out of lists; `redact` covers the answer (a resource's contents, a prompt's messages) and
//! the log, progress and round messages of the request while it runs; `limit` counts requests (a
//! relayed one on the node holding the page's socket); `log` and every other decision are audit
//! events.

use std::sync::Arc;
use std::time::Duration;

use client_tools_core::protocol::{code, ProgressParams, RequestId, RpcError};
use serde_json::{json, Map, Value};

use crate::agent::rounds::RunningCall;
use crate::calls::policy::{Policy, ACTED_META};
use crate::calls::served::{method, ServedRequest};
use crate::sessions::call_options::{CallEvent, CallOptions};
use crate::sessions::fake_page::{session, FakePage};
use crate::sessions::page_session::{PageSession, RelayRefused, ServedOutcome};
use crate::sessions::trace_capture::capture_trace;

const RULES: &str = r#"
[[rule]]
id = "no-secrets"
resources = ["app://secrets/*"]
action = "block"

[[rule]]
id = "no-admin"
prompts = ["admin_*"]
action = "block"
message = "admin prompts are off limits"

[[rule]]
id = "mask"
prompts = ["greet"]
resources = ["app://notes/*"]
action = "redact"
redact = ["email"]

[[rule]]
id = "read-rate"
resources = ["app://rated/*"]
action = "limit"
calls = 2
window_seconds = 60

[[rule]]
id = "audit-prompts"
prompts = ["*"]
action = "log"
"#;

const EMAIL: &str = "ada@example.com";
const TIMEOUT: Duration = Duration::from_secs(5);

fn guarded() -> Arc<PageSession> {
    let plain = Arc::try_unwrap(session()).ok().unwrap();
    let session = Arc::new(plain.with_policy(Arc::new(Policy::parse(RULES).unwrap())));
    session.set_offered(&json!({
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "completions": {},
    }));
    session
}

fn serve(
    session: &Arc<PageSession>,
    request: ServedRequest,
) -> tokio::task::JoinHandle<Option<ServedOutcome>> {
    let session = session.clone();
    tokio::spawn(async move {
        session
            .serve(request, CallOptions::new().timeout(TIMEOUT))
            .await
    })
}

/// The rule a policy error names in its `data`.
fn named_rule(error: &RpcError) -> Value {
    error.data.as_ref().unwrap()[ACTED_META][0]["rule"].clone()
}

#[tokio::test]
async fn block_refuses_the_request_naming_the_rule_and_the_page_sees_nothing() {
    let session = guarded();
    let mut page = FakePage::connect(&session);
    let read = ServedRequest::read("app://secrets/keys").unwrap();
    let Some(Err(error)) = session.serve(read, CallOptions::new()).await else {
        panic!("refused")
    };
    assert_eq!(error.code, code::INVALID_PARAMS);
    assert!(
        error.message.contains("rule 'no-secrets'"),
        "{}",
        error.message
    );
    assert_eq!(named_rule(&error), "no-secrets");

    let prompt = ServedRequest::get_prompt("admin_reset", None);
    let Some(Err(error)) = session.serve(prompt, CallOptions::new()).await else {
        panic!("refused")
    };
    assert_eq!(
        error.message,
        "admin prompts are off limits (policy rule 'no-admin')"
    );
    // A completion of a blocked prompt's argument, and a subscription to a blocked resource.
    let complete = ServedRequest::complete(
        json!({"ref": {"type": "ref/prompt", "name": "admin_reset"},
               "argument": {"name": "who", "value": "a"}})
        .as_object()
        .cloned()
        .unwrap(),
    )
    .unwrap();
    let Some(Err(error)) = session.serve(complete, CallOptions::new()).await else {
        panic!("refused")
    };
    assert_eq!(named_rule(&error), "no-admin");
    let subscribed = session.subscribe_resource("app://secrets/keys").await;
    assert_eq!(named_rule(&subscribed.unwrap_err()), "no-secrets");
    assert!(page.has_nothing_queued(), "the page was asked");

    // The session goes on: an allowed read reaches the page.
    let asked = serve(&session, ServedRequest::read("app://open").unwrap());
    let (id, _) = page.request(method::RESOURCES_READ).await;
    let answer = json!({"contents": [{"uri": "app://open", "text": "hi"}]});
    page.answer(&id, answer.clone());
    assert_eq!(asked.await.unwrap(), Some(Ok(answer)));
}

#[tokio::test]
async fn lists_leave_out_what_a_block_rule_covers() {
    let session = guarded();
    session.set_listed(
        method::RESOURCES_LIST,
        vec![
            json!({"uri": "app://secrets/keys", "name": "keys"}),
            json!({"uri": "app://notes/1", "name": "note"}),
        ],
    );
    session.set_listed(
        method::RESOURCE_TEMPLATES_LIST,
        vec![
            json!({"uriTemplate": "app://secrets/{id}", "name": "secret"}),
            json!({"uriTemplate": "app://notes/{id}", "name": "notes"}),
        ],
    );
    session.set_listed(
        method::PROMPTS_LIST,
        vec![json!({"name": "admin_reset"}), json!({"name": "greet"})],
    );
    let names = |entries: Vec<Value>| -> Vec<String> {
        entries
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let resources = session.list(method::RESOURCES_LIST).await.unwrap();
    assert_eq!(names(resources), ["note"]);
    let templates = session.list(method::RESOURCE_TEMPLATES_LIST).await.unwrap();
    assert_eq!(names(templates), ["notes"]);
    let prompts = session.list(method::PROMPTS_LIST).await.unwrap();
    assert_eq!(names(prompts), ["greet"]);
}

#[tokio::test]
async fn redact_covers_a_resources_contents_and_a_prompts_messages() {
    let session = guarded();
    let mut page = FakePage::connect(&session);
    let asked = serve(&session, ServedRequest::read("app://notes/1").unwrap());
    let (id, _) = page.request(method::RESOURCES_READ).await;
    page.answer(
        &id,
        json!({"contents": [
            {"uri": "app://notes/1", "text": format!("write to {EMAIL}")},
            {"uri": "app://notes/1.png", "mimeType": "image/png", "blob": "iVBORw0KGgo="}]}),
    );
    let answer = asked.await.unwrap().unwrap().unwrap();
    assert_eq!(answer["contents"][0]["text"], "write to [redacted email]");
    assert_eq!(answer["contents"][1].get("blob"), None, "binary: withheld");
    assert_eq!(
        answer["_meta"][ACTED_META],
        json!([{"rule": "mask", "action": "redact"}])
    );

    let asked = serve(&session, ServedRequest::get_prompt("greet", None));
    let (id, _) = page.request(method::PROMPTS_GET).await;
    page.answer(
        &id,
        json!({"description": format!("for {EMAIL}"), "messages": [
            {"role": "user", "content": {"type": "text", "text": format!("Hi {EMAIL}")}},
            {"role": "user", "content": {"type": "resource", "resource":
                {"uri": "app://notes/1", "mimeType": "text/plain", "text": EMAIL}}}]}),
    );
    let answer = asked.await.unwrap().unwrap().unwrap();
    assert!(!answer.to_string().contains(EMAIL), "{answer}");
    assert_eq!(
        answer["messages"][0]["content"]["text"],
        "Hi [redacted email]"
    );

    // A resource no rule covers is left as the page wrote it (no `_meta` added).
    let asked = serve(&session, ServedRequest::read("app://plain").unwrap());
    let (id, _) = page.request(method::RESOURCES_READ).await;
    let plain = json!({"contents": [{"uri": "app://plain", "text": EMAIL}]});
    page.answer(&id, plain.clone());
    assert_eq!(asked.await.unwrap(), Some(Ok(plain)));
}

#[tokio::test]
async fn redact_covers_the_log_progress_and_rounds_of_a_served_request() {
    let session = guarded();
    let mut page = FakePage::connect(&session);
    let mut running = RunningCall::serve(
        session.clone(),
        ServedRequest::get_prompt("greet", None),
        None,
        8,
    );
    let (id, _) = page.request(method::PROMPTS_GET).await;
    session.page_log(
        json!({"level": "info", "data": format!("looking up {EMAIL}"),
                            "_meta": {"clienttools/callId": id.to_string()}}),
    );
    let Some(CallEvent::Log(log)) = running.events.recv().await else {
        panic!("the log message reaches the caller")
    };
    assert_eq!(log["data"], "looking up [redacted email]");
    session.progress(ProgressParams {
        progress_token: json!(id.to_string()),
        progress: 0.5,
        total: None,
        message: Some(format!("asking {EMAIL}")),
    });
    let progress = running.progress.recv().await.unwrap();
    assert_eq!(progress.message.as_deref(), Some("asking [redacted email]"));
    let asked = session.page_input(
        RequestId::String("round-1".into()),
        json!({"inputRequests": {"who": {"method": "elicitation/create", "params": {
                "message": format!("Are you {EMAIL}?"),
                "requestedSchema": {"type": "object", "properties": {}}}}},
               "_meta": {"clienttools/callId": id.to_string()}}),
    );
    assert_eq!(asked, None);
    let Some(CallEvent::Input(round)) = running.events.recv().await else {
        panic!("the round reaches the caller")
    };
    assert_eq!(
        round.requests["who"]["params"]["message"],
        "Are you [redacted email]?"
    );
    // The round is answered; the answer, clean, lists the rule that acted while it ran.
    session.answer_round(&round.id, Ok(json!({"inputResponses": {}})));
    page.answer(
        &id,
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "ok"}}]}),
    );
    let answer = running.outcome.await.unwrap().unwrap().unwrap();
    assert_eq!(
        answer["_meta"][ACTED_META],
        json!([{"rule": "mask", "action": "redact"}])
    );
}

#[tokio::test]
async fn limit_counts_reads_here_and_relayed_ones_on_the_node_holding_the_page() {
    let session = guarded();
    let mut page = FakePage::connect(&session);
    for n in 0..2 {
        let asked = serve(
            &session,
            ServedRequest::read(&format!("app://rated/{n}")).unwrap(),
        );
        let (id, _) = page.request(method::RESOURCES_READ).await;
        page.answer(&id, json!({"contents": []}));
        assert!(matches!(asked.await.unwrap(), Some(Ok(_))));
    }
    let over = session
        .serve(
            ServedRequest::read("app://rated/2").unwrap(),
            CallOptions::new(),
        )
        .await;
    let Some(Err(error)) = over else {
        panic!("over the limit")
    };
    assert!(
        error
            .message
            .starts_with("rate limit of rule 'read-rate': at most 2 calls in 60 s"),
        "{}",
        error.message
    );
    // Another node's read of the same page is answered here with the limit's error.
    let frame = json!({"jsonrpc": "2.0", "id": "other-1", "method": "resources/read",
                       "params": {"uri": "app://rated/3", "_meta": {}}})
    .to_string();
    let relayed = session.relay_to_page(frame, Some("other-1".into()), "reply");
    let Err(RelayRefused::Failed(error)) = relayed else {
        panic!("expected the limit's error, got {relayed:?}")
    };
    assert_eq!(named_rule(&error), "read-rate");
    assert!(
        page.has_nothing_queued(),
        "the page got a read over the limit"
    );
    // Unlimited resources pass.
    let frame = json!({"jsonrpc": "2.0", "id": "other-2", "method": "resources/read",
                       "params": {"uri": "app://notes/3"}})
    .to_string();
    assert_eq!(
        session.relay_to_page(frame, Some("other-2".into()), "reply"),
        Ok(())
    );
}

#[tokio::test]
async fn every_decision_is_an_audit_event_naming_the_prompt_or_resource() {
    let (buffer, _guard) = capture_trace();
    let session = guarded();
    let mut page = FakePage::connect(&session);
    let mut arguments = Map::new();
    arguments.insert("who".into(), json!("Ada"));
    let asked = serve(
        &session,
        ServedRequest::get_prompt("hello", Some(arguments)),
    );
    let (id, _) = page.request(method::PROMPTS_GET).await;
    page.answer(&id, json!({"messages": []}));
    assert!(matches!(asked.await.unwrap(), Some(Ok(_))));
    let _ = session
        .serve(
            ServedRequest::read("app://secrets/k").unwrap(),
            CallOptions::new(),
        )
        .await;
    let logged = buffer.text();
    assert!(
        logged.contains("rule=audit-prompts action=\"log\" tool=\"prompt:hello\""),
        "{logged}"
    );
    assert!(
        logged.contains("rule=no-secrets action=\"block\" tool=\"resource:app://secrets/k\""),
        "{logged}"
    );
}

#[tokio::test]
async fn resource_rules_also_match_the_percent_decoded_uri() {
    let session = guarded();
    let mut page = FakePage::connect(&session);
    // The page decodes a `{+path}` variable: each of these is `app://secrets/...` to it.
    for uri in [
        "app://%73ecrets/keys",
        "app://secrets%2Fkeys",
        "app://%2573ecrets/keys",
    ] {
        let read = ServedRequest::read(uri).unwrap();
        let Some(Err(error)) = session.serve(read, CallOptions::new()).await else {
            panic!("{uri}: refused")
        };
        assert_eq!(named_rule(&error), "no-secrets", "{uri}");
        let subscribed = session.subscribe_resource(uri).await;
        assert_eq!(named_rule(&subscribed.unwrap_err()), "no-secrets", "{uri}");
        let complete = ServedRequest::complete(
            json!({"ref": {"type": "ref/resource", "uri": uri},
                   "argument": {"name": "path", "value": ""}})
            .as_object()
            .cloned()
            .unwrap(),
        )
        .unwrap();
        let Some(Err(error)) = session.serve(complete, CallOptions::new()).await else {
            panic!("{uri}: completion refused")
        };
        assert_eq!(named_rule(&error), "no-secrets", "{uri}");
    }
    assert!(page.has_nothing_queued(), "the page was asked");

    // Redaction too: an encoded note is redacted as the note is.
    let asked = serve(&session, ServedRequest::read("app://n%6Ftes/1").unwrap());
    let (id, _) = page.request(method::RESOURCES_READ).await;
    page.answer(
        &id,
        json!({"contents": [{"uri": "app://notes/1", "text": format!("to {EMAIL}")}]}),
    );
    let answer = asked.await.unwrap().unwrap().unwrap();
    assert_eq!(answer["contents"][0]["text"], "to [redacted email]");
}

#[tokio::test]
async fn the_allow_list_matches_the_percent_decoded_uri_too() {
    let session = Arc::new(PageSession::new(
        "s1".into(),
        vec!["public".into()],
        crate::limits::Limits::default(),
        false,
    ));
    session.set_offered(&json!({"resources": {"subscribe": true}}));
    session.set_listed(
        method::RESOURCE_TEMPLATES_LIST,
        vec![json!({"uriTemplate": "app://public/{+path}", "name": "public"})],
    );
    session.set_listed(method::RESOURCES_LIST, vec![]);
    let allowed = ServedRequest::read("app://%70ublic/a").unwrap();
    session.may_serve(allowed.subject()).await.unwrap();
    let refused = ServedRequest::read("app://private/a").unwrap();
    assert!(session.may_serve(refused.subject()).await.is_err());
    // What a listen stream's acknowledgment decides without asking the page.
    assert_eq!(session.refuses_subscription_now("app://%70ublic/a"), None);
    let refused = session.refuses_subscription_now("app://private/a").unwrap();
    assert!(refused.message.contains("--allow"), "{}", refused.message);
}

/// The page lists a prompt under a normalized `name` with its original in `_meta`: the allow-list
/// and the policy's `prompts` patterns match the original, as for tools.
#[tokio::test]
async fn prompts_are_allowed_and_policed_by_their_original_name() {
    let listed = vec![
        json!({"name": "greet_me", "_meta": {"clienttools/originalName": "Greet Me"}}),
        json!({"name": "admin_reset", "_meta": {"clienttools/originalName": "Admin Reset"}}),
        json!({"name": "plain"}),
    ];
    let allowed = |allow: &[&str]| {
        let session = Arc::new(PageSession::new(
            "s1".into(),
            allow.iter().map(|a| a.to_string()).collect(),
            crate::limits::Limits::default(),
            false,
        ));
        session.set_offered(&json!({"prompts": {}}));
        session.set_listed(method::PROMPTS_LIST, listed.clone());
        session
    };
    let session = allowed(&["Greet Me", "plain"]);
    let names: Vec<Value> = (session.list(method::PROMPTS_LIST).await.unwrap())
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(names, [json!("greet_me"), json!("plain")]);
    let get = ServedRequest::get_prompt("greet_me", None);
    session.may_serve(get.subject()).await.unwrap();
    let get = ServedRequest::get_prompt("admin_reset", None);
    assert!(session.may_serve(get.subject()).await.is_err());
    // The normalized name is not the one the allow-list names.
    let session = allowed(&["greet_me"]);
    assert!(session.list(method::PROMPTS_LIST).await.unwrap().is_empty());

    let rules = "[[rule]]\nid = \"no-admin\"\nprompts = [\"Admin *\"]\naction = \"block\"\n";
    let plain = Arc::try_unwrap(session_with_prompts(listed.clone()))
        .ok()
        .unwrap();
    let session = Arc::new(plain.with_policy(Arc::new(Policy::parse(rules).unwrap())));
    let names: Vec<Value> = (session.list(method::PROMPTS_LIST).await.unwrap())
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(names, [json!("greet_me"), json!("plain")]);
    let get = ServedRequest::get_prompt("admin_reset", None);
    let Some(Err(error)) = session.serve(get, CallOptions::new()).await else {
        panic!("refused")
    };
    assert_eq!(named_rule(&error), "no-admin");
}

fn session_with_prompts(listed: Vec<Value>) -> Arc<PageSession> {
    let session = session();
    session.set_offered(&json!({"prompts": {}}));
    session.set_listed(method::PROMPTS_LIST, listed);
    session
}
