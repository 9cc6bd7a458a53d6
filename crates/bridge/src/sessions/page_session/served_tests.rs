//! A page session serving resources, prompts and completion (sessions::page_session::served),
//! against the native fake page.

use std::sync::Arc;
use std::time::Duration;

use client_tools_core::protocol::{code, method as core_method, RequestId, RpcError};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::*;
use crate::calls::served::{method, ServedRequest};
use crate::limits::Limits;
use crate::sessions::call_options::{CallEvent, CallOptions};
use crate::sessions::fake_page::{session, FakePage};

const TIMEOUT: Duration = Duration::from_secs(1);

fn offering(session: &PageSession) {
    session.set_offered(&json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "completions": {},
    }));
}

/// Serves `request` on its own task.
fn serve(
    session: &Arc<PageSession>,
    request: ServedRequest,
    options: CallOptions<'static>,
) -> tokio::task::JoinHandle<Option<ServedOutcome>> {
    let session = session.clone();
    tokio::spawn(async move { session.serve(request, options).await })
}

#[tokio::test(start_paused = true)]
async fn a_prompt_goes_to_the_page_with_the_call_meta_and_its_answer_comes_back_checked() {
    let session = session();
    offering(&session);
    let mut page = FakePage::connect(&session);
    let mut arguments = serde_json::Map::new();
    arguments.insert("who".into(), json!("Ada"));
    let asked = serve(
        &session,
        ServedRequest::get_prompt("greet", Some(arguments)),
        CallOptions::new().timeout(TIMEOUT),
    );
    let (id, params) = page.request(method::PROMPTS_GET).await;
    assert_eq!(params["name"], "greet");
    assert_eq!(params["arguments"], json!({"who": "Ada"}));
    assert_eq!(params["_meta"]["progressToken"], json!(id.to_string()));
    assert_eq!(params["_meta"]["clienttools/timeoutMs"], 1000);
    let answer = json!({"description": "d", "messages": [{"role": "user", "content": {"type": "text", "text": "Hi Ada"}}]});
    page.answer(&id, answer.clone());
    assert_eq!(asked.await.unwrap(), Some(Ok(answer)));
}

#[tokio::test(start_paused = true)]
async fn the_pages_errors_pass_through_whole_and_silence_is_a_clear_error() {
    let session = session();
    offering(&session);
    let mut page = FakePage::connect(&session);
    let asked = serve(
        &session,
        ServedRequest::read("app://missing").unwrap(),
        CallOptions::new().timeout(TIMEOUT),
    );
    let (id, params) = page.request(method::RESOURCES_READ).await;
    assert_eq!(params["uri"], "app://missing");
    let mut error = RpcError::new(-32002, "Resource not found: app://missing");
    error.data = Some(json!({"uri": "app://missing"}));
    session.resolve(&id, Err(error.clone()));
    assert_eq!(asked.await.unwrap(), Some(Err(error)));

    // A page that never answers: the call's timeout rules, one clear error, the page told.
    let asked = serve(
        &session,
        ServedRequest::get_prompt("slow", None),
        CallOptions::new().timeout(TIMEOUT),
    );
    let (id, _) = page.request(method::PROMPTS_GET).await;
    let Some(Err(silent)) = asked.await.unwrap() else {
        panic!("an error")
    };
    assert_eq!(silent.code, code::INTERNAL_ERROR);
    assert!(
        silent.message.contains("did not answer within 1000 ms"),
        "{}",
        silent.message
    );
    let cancelled = page.notification(core_method::CANCELLED).await;
    assert_eq!(cancelled["requestId"], json!(id.to_string()));
}

#[tokio::test(start_paused = true)]
async fn a_malformed_answer_and_a_page_that_offers_nothing_are_errors() {
    let session = session();
    offering(&session);
    let mut page = FakePage::connect(&session);
    let asked = serve(
        &session,
        ServedRequest::read("app://a").unwrap(),
        CallOptions::new(),
    );
    let (id, _) = page.request(method::RESOURCES_READ).await;
    page.answer(&id, json!({"contents": [{"uri": "app://a"}]}));
    let Some(Err(error)) = asked.await.unwrap() else {
        panic!("an error")
    };
    assert!(
        error.message.contains("malformed resources/read result"),
        "{}",
        error.message
    );

    session.set_offered(&json!({"tools": {}}));
    let refused = session
        .serve(ServedRequest::get_prompt("p", None), CallOptions::new())
        .await;
    let Some(Err(error)) = refused else {
        panic!("an error")
    };
    assert_eq!(error.code, code::METHOD_NOT_FOUND);
    assert!(session.list(method::PROMPTS_LIST).await.unwrap().is_empty());
    assert!(page.has_nothing_queued());
}

#[tokio::test(start_paused = true)]
async fn rounds_logs_and_progress_during_a_prompt_reach_the_caller_as_during_a_call() {
    let session = session();
    offering(&session);
    let mut page = FakePage::connect(&session);
    let (events_tx, mut events) = mpsc::channel(4);
    let (progress_tx, mut progress) = mpsc::channel(4);
    let asked = serve(
        &session,
        ServedRequest::get_prompt("test_input_required_result_prompt", None),
        CallOptions::new()
            .timeout(TIMEOUT)
            .events(events_tx)
            .progress(progress_tx),
    );
    let (id, _) = page.request(method::PROMPTS_GET).await;
    let call = id.to_string();
    page.report_progress(&id, 0.5);
    assert_eq!(progress.recv().await.unwrap().progress, 0.5);
    session.page_log(
        json!({"level": "info", "data": "asking", "_meta": {"clienttools/callId": call}}),
    );
    let Some(CallEvent::Log(log)) = events.recv().await else {
        panic!("a log")
    };
    assert_eq!(log["data"], "asking");
    let round = json!({
        "_meta": {"clienttools/callId": call},
        "inputRequests": {"context": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}}},
    });
    assert_eq!(session.page_input(RequestId::Number(7), round), None);
    let Some(CallEvent::Input(round)) = events.recv().await else {
        panic!("a round")
    };
    assert!(round.requests.contains_key("context"));
    let responses =
        json!({"inputResponses": {"context": {"action": "accept", "content": {"context": "c"}}}});
    assert!(session.answer_round(&round.id, Ok(responses.clone())));
    let answered = page.frame().await;
    assert!(answered.contains("\"id\":7") && answered.contains("inputResponses"));
    let answer = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "c"}}]});
    page.answer(&id, answer.clone());
    assert_eq!(asked.await.unwrap(), Some(Ok(answer)));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_request_tells_the_page_and_has_no_outcome() {
    let session = session();
    offering(&session);
    let mut page = FakePage::connect(&session);
    let (cancel, cancelled) = tokio::sync::oneshot::channel::<()>();
    let asked = serve(
        &session,
        ServedRequest::read("app://slow").unwrap(),
        CallOptions::new().cancel(async move {
            let _ = cancelled.await;
            "the agent gave up".to_owned()
        }),
    );
    let (id, _) = page.request(method::RESOURCES_READ).await;
    cancel.send(()).unwrap();
    let told = page.notification(core_method::CANCELLED).await;
    assert_eq!(told["requestId"], json!(id.to_string()));
    assert_eq!(told["reason"], "the agent gave up");
    assert_eq!(asked.await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn hostile_uris_and_timeouts_are_refused_before_the_page_sees_them() {
    let session = session();
    offering(&session);
    let mut page = FakePage::connect(&session);
    for uri in ["app://a/../b", "no scheme"] {
        let error = ServedRequest::read(uri).unwrap_err();
        assert_eq!(
            (error.code, error.data),
            (code::INVALID_PARAMS, Some(json!({"uri": uri})))
        );
    }
    let mut meta = serde_json::Map::new();
    meta.insert("clienttools/timeoutMs".into(), json!(10_000_000));
    let refused = session
        .serve(
            ServedRequest::get_prompt("p", None),
            CallOptions::new().meta(meta),
        )
        .await;
    let Some(Err(error)) = refused else {
        panic!("an error")
    };
    assert!(
        error.message.contains("over the limit"),
        "{}",
        error.message
    );
    assert!(page.has_nothing_queued());
}

#[tokio::test(start_paused = true)]
async fn the_allow_list_hides_prompts_and_resources_by_name_and_refuses_them() {
    let session = Arc::new(PageSession::new(
        "s1".into(),
        vec!["shown".into(), "notes".into()],
        Limits::default(),
        false,
    ));
    offering(&session);
    let mut page = FakePage::connect(&session);
    session.set_listed(
        method::PROMPTS_LIST,
        vec![json!({"name": "shown"}), json!({"name": "hidden"})],
    );
    session.set_listed(
        method::RESOURCES_LIST,
        vec![
            json!({"uri": "app://shown", "name": "shown"}),
            json!({"uri": "app://secret", "name": "secret"}),
        ],
    );
    session.set_listed(
        method::RESOURCE_TEMPLATES_LIST,
        vec![
            json!({"uriTemplate": "app://notes/{id}", "name": "notes"}),
            json!({"uriTemplate": "app://keys/{id}", "name": "keys"}),
        ],
    );
    let names = |list: Vec<Value>| list.iter().map(|e| e["name"].clone()).collect::<Vec<_>>();
    assert_eq!(
        names(session.list(method::PROMPTS_LIST).await.unwrap()),
        ["shown"]
    );
    assert_eq!(
        names(session.list(method::RESOURCES_LIST).await.unwrap()),
        ["shown"]
    );
    assert_eq!(
        names(session.list(method::RESOURCE_TEMPLATES_LIST).await.unwrap()),
        ["notes"]
    );
    for refused in [
        ServedRequest::get_prompt("hidden", None),
        ServedRequest::read("app://secret").unwrap(),
        ServedRequest::read("app://keys/1").unwrap(),
    ] {
        let Some(Err(error)) = session.serve(refused, CallOptions::new()).await else {
            panic!("refused")
        };
        assert_eq!(error.code, code::INVALID_PARAMS);
        assert!(error.message.contains("not allowed"), "{}", error.message);
    }
    assert!(page.has_nothing_queued());
    let allowed = serve(
        &session,
        ServedRequest::read("app://notes/7").unwrap(),
        CallOptions::new(),
    );
    let (id, _) = page.request(method::RESOURCES_READ).await;
    page.answer(
        &id,
        json!({"contents": [{"uri": "app://notes/7", "text": "n"}]}),
    );
    assert!(matches!(allowed.await.unwrap(), Some(Ok(_))));
}

#[tokio::test(start_paused = true)]
async fn subscriptions_are_counted_per_page_and_reach_it_once() {
    let session = session();
    offering(&session);
    let mut page = FakePage::connect(&session);
    let first = {
        let session = session.clone();
        tokio::spawn(async move { session.subscribe_resource("app://a").await })
    };
    let (id, params) = page.request(method::RESOURCES_SUBSCRIBE).await;
    assert_eq!(params["uri"], "app://a");
    page.answer(&id, json!({}));
    first.await.unwrap().unwrap();
    session.subscribe_resource("app://a").await.unwrap();
    assert!(page.has_nothing_queued(), "the page hears a URI once");

    let mut updates = session.resource_updates();
    session.resource_updated("app://a".into());
    assert_eq!(updates.recv().await.unwrap(), "app://a");

    session.unsubscribe_resource("app://a").await;
    assert!(page.has_nothing_queued(), "one agent is still subscribed");
    let last = {
        let session = session.clone();
        tokio::spawn(async move { session.unsubscribe_resource("app://a").await })
    };
    let (id, params) = page.request(method::RESOURCES_UNSUBSCRIBE).await;
    assert_eq!(params["uri"], "app://a");
    page.answer(&id, json!({}));
    last.await.unwrap();

    // A page refusing the subscription: the agent gets its error, nothing is counted.
    let refused = {
        let session = session.clone();
        tokio::spawn(async move { session.subscribe_resource("app://gone").await })
    };
    let (id, _) = page.request(method::RESOURCES_SUBSCRIBE).await;
    session.resolve(&id, Err(RpcError::new(-32002, "Resource not found")));
    assert_eq!(refused.await.unwrap().unwrap_err().code, -32002);
    assert!(session.lock().subscribed.is_empty());
}

/// A second subscriber that comes while the page is asked about the first waits for its answer:
/// refused with the page's error when the page refuses (it is not left subscribed to a URI the
/// page does not watch), counted when it accepts.
#[tokio::test(start_paused = true)]
async fn a_subscriber_during_the_first_ones_asking_waits_for_the_pages_answer() {
    let session = session();
    offering(&session);
    let mut page = FakePage::connect(&session);
    let subscribe = |uri: &'static str| {
        let session = session.clone();
        tokio::spawn(async move { session.subscribe_resource(uri).await })
    };
    let first = subscribe("app://gone");
    let (id, _) = page.request(method::RESOURCES_SUBSCRIBE).await;
    let second = subscribe("app://gone");
    // The second is waiting (not answered Ok at once).
    tokio::task::yield_now().await;
    assert!(!second.is_finished(), "the second did not wait");
    session.resolve(&id, Err(RpcError::new(-32002, "Resource not found")));
    assert_eq!(first.await.unwrap().unwrap_err().code, -32002);
    assert_eq!(second.await.unwrap().unwrap_err().code, -32002);
    assert!(session.lock().subscribed.is_empty());
    assert!(page.has_nothing_queued(), "the page was asked once");

    let first = subscribe("app://a");
    let (id, _) = page.request(method::RESOURCES_SUBSCRIBE).await;
    let second = subscribe("app://a");
    tokio::task::yield_now().await;
    page.answer(&id, json!({}));
    first.await.unwrap().unwrap();
    second.await.unwrap().unwrap();
    assert_eq!(session.lock().subscribed.get("app://a"), Some(&2));
    assert!(page.has_nothing_queued(), "the page was asked once");
}

/// A forgotten subscription (another node's, in a cluster) that was a URI's last tells the page
/// `resources/unsubscribe`, so a long-lived tab's watched set does not fill up.
#[tokio::test(start_paused = true)]
async fn forgetting_a_uris_last_subscription_tells_the_page() {
    let session = session();
    offering(&session);
    let mut page = FakePage::connect(&session);
    let relayed = {
        let session = session.clone();
        tokio::spawn(async move { session.subscribe_relayed("app://a").await })
    };
    let (id, _) = page.request(method::RESOURCES_SUBSCRIBE).await;
    page.answer(&id, json!({}));
    relayed.await.unwrap().unwrap();
    session.subscribe_relayed("app://a").await.unwrap();
    session.forget_subscription("app://a");
    assert!(page.has_nothing_queued(), "another subscription is counted");
    session.forget_subscription("app://a");
    let (_, params) = page.request(method::RESOURCES_UNSUBSCRIBE).await;
    assert_eq!(params["uri"], "app://a");
}

/// A page session counts at most as many subscriptions as the page watches (256): one more is
/// refused naming the bound, before the page is asked.
#[tokio::test(start_paused = true)]
async fn a_page_session_subscribes_at_most_the_pages_bound() {
    use crate::limits::MAX_SUBSCRIPTIONS_PER_SESSION;
    assert_eq!(MAX_SUBSCRIPTIONS_PER_SESSION, 256);
    let session = session();
    offering(&session);
    let mut page = FakePage::connect(&session);
    for n in 0..MAX_SUBSCRIPTIONS_PER_SESSION {
        let subscribed = {
            let session = session.clone();
            tokio::spawn(async move { session.subscribe_resource(&format!("app://r/{n}")).await })
        };
        let (id, _) = page.request(method::RESOURCES_SUBSCRIBE).await;
        page.answer(&id, json!({}));
        subscribed.await.unwrap().unwrap();
    }
    let refused = session
        .subscribe_resource("app://r/last")
        .await
        .unwrap_err();
    assert!(refused.message.contains("limit 256"), "{}", refused.message);
    assert!(page.has_nothing_queued());
}

/// An answer over the frame limit ends its request at once with an error naming the limit (not a
/// timeout), a tool call's as its error result; the session answers on.
#[tokio::test(start_paused = true)]
async fn an_answer_over_the_frame_limit_is_a_clear_error_at_once() {
    use client_tools_core::limits::MAX_FRAME_BYTES;

    let session = session();
    offering(&session);
    let mut page = FakePage::connect(&session);
    let started = tokio::time::Instant::now();
    let asked = serve(
        &session,
        ServedRequest::read("app://big").unwrap(),
        CallOptions::new().timeout(TIMEOUT),
    );
    let (id, _) = page.request(method::RESOURCES_READ).await;
    let big = json!({"jsonrpc": "2.0", "id": id, "result": {"contents": [
        {"uri": "app://big", "text": "x".repeat(MAX_FRAME_BYTES)}]}});
    assert!(session.deliver_answer(&big.to_string()).is_none());
    let Some(Err(error)) = asked.await.unwrap() else {
        panic!("an error")
    };
    assert_eq!(error.code, code::INTERNAL_ERROR);
    assert!(
        error
            .message
            .contains("over the frame limit of 1048576 bytes"),
        "{}",
        error.message
    );
    assert!(started.elapsed() < TIMEOUT, "it waited for the timeout");

    let call = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .call_tool(("big", json!({})), CallOptions::new().timeout(TIMEOUT))
                .await
                .into_result()
        })
    };
    let (id, _) = page.request(core_method::TOOLS_CALL).await;
    let big = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [
        {"type": "text", "text": "x".repeat(MAX_FRAME_BYTES)}]}});
    assert!(session.deliver_answer(&big.to_string()).is_none());
    let result = call.await.unwrap();
    assert!(result.is_error);
    assert!(
        result.text().contains("over the frame limit"),
        "{}",
        result.text()
    );
    assert!(started.elapsed() < TIMEOUT, "it waited for the timeout");

    // The session answers on.
    let asked = serve(
        &session,
        ServedRequest::read("app://small").unwrap(),
        CallOptions::new().timeout(TIMEOUT),
    );
    let (id, _) = page.request(method::RESOURCES_READ).await;
    let small = json!({"contents": [{"uri": "app://small", "text": "s"}]});
    page.answer(&id, small.clone());
    assert_eq!(asked.await.unwrap(), Some(Ok(small)));
}
