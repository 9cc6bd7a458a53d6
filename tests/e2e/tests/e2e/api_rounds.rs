//! `/api` callers answer a page's rounds (SPEC §4 "Asking mid-call", docs/api.md): a real page
//! whose handlers call `ctx.elicit` / `ctx.input` / `ctx.createMessage`, and a plain HTTP client
//! that declares what it can answer, gets `input_required` and calls again with its answers and the
//! `requestState` — checked as on `/mcp` 2026-07-28: single-use, bound to its call, tamper-proof;
//! a capability not declared is refused as before (the page's `CAPABILITY_MISSING`).

use client_tools_bridge::BridgeConfig;
use client_tools_e2e::Stack;
use serde_json::{json, Value};

const TOKEN: &str = "api-rounds-token";

async fn stack() -> Stack {
    let config = BridgeConfig {
        agent_token: Some(TOKEN.into()),
        ..BridgeConfig::default()
    };
    Stack::start("rounds.html", config).await
}

/// `POST /api/sessions/{id}/call` with `body`: the status and the JSON answer.
async fn call(stack: &Stack, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!(
            "{}/api/sessions/{}/call",
            stack.base_url,
            stack.page.id()
        ))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .expect("the bridge answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    let json = serde_json::from_str(&text).unwrap_or_else(|_| json!({"text": text}));
    (status, json)
}

/// The one input request of an `input_required` answer: its key and its request.
fn only_request(answer: &Value) -> (String, Value) {
    assert_eq!(answer["resultType"], "input_required", "{answer}");
    assert!(answer["requestState"].is_string(), "{answer}");
    let requests = answer["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{answer}");
    let (key, request) = requests.iter().next().unwrap();
    (key.clone(), request.clone())
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

fn refused_with(status: u16, answer: &Value, text: &str) {
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(text), "{text}: {answer}");
}

const ELICITATION: fn() -> Value = || json!({"elicitation": {}});

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_is_answered_and_its_state_works_once() {
    let stack = stack().await;
    let first = json!({"name": "ask_name", "arguments": {"greeting": "Hello"}, "capabilities": ELICITATION()});
    let (status, asked) = call(&stack, first).await;
    assert_eq!(status, 200, "{asked}");
    let (key, request) = only_request(&asked);
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    assert_eq!(
        request["params"]["message"], "What is your name?",
        "{asked}"
    );
    let state = asked["requestState"].clone();
    let retry = json!({"name": "ask_name", "arguments": {"greeting": "Hello"}, "capabilities": ELICITATION(),
        "requestState": state, "inputResponses": {key.clone(): accept(json!({"name": "Ada"}))}});
    let (status, done) = call(&stack, retry.clone()).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(
        done["structuredContent"]["greeting"], "Hello, Ada!",
        "{done}"
    );
    let (status, replayed) = call(&stack, retry).await;
    refused_with(status, &replayed, "already used");
    let (_, runs) = call(&stack, json!({"name": "runs"})).await;
    assert_eq!(runs["structuredContent"]["ask_name"], 1, "{runs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_after_round_and_answers_given_up_front() {
    let stack = stack().await;
    let body = |extra: Value| {
        let mut body =
            json!({"name": "two_rounds", "arguments": {}, "capabilities": ELICITATION()});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let (_, first) = call(&stack, body(json!({}))).await;
    let (key, _) = only_request(&first);
    assert_eq!(key, "name");
    let (_, second) = call(
        &stack,
        body(json!({"requestState": first["requestState"],
        "inputResponses": {"name": accept(json!({"name": "Ada"}))}})),
    )
    .await;
    let (key, request) = only_request(&second);
    assert_eq!(key, "color");
    assert_eq!(request["params"]["message"], "Step 2: your colour?");
    assert_ne!(first["requestState"], second["requestState"]);
    let (_, done) = call(
        &stack,
        body(json!({"requestState": second["requestState"],
        "inputResponses": {"color": accept(json!({"color": "teal"}))}})),
    )
    .await;
    assert_eq!(
        done["structuredContent"],
        json!({"name": "Ada", "color": "teal"}),
        "{done}"
    );
    // The first round's answer given with the call (no state): only the second is asked.
    let (_, up_front) = call(
        &stack,
        body(json!({"inputResponses": {"name": accept(json!({"name": "Bo"}))}})),
    )
    .await;
    let (key, _) = only_request(&up_front);
    assert_eq!(key, "color", "{up_front}");
}

/// Requests a handler makes together (`Promise.all([ctx.elicit(a), ctx.elicit(b)])`) are one round,
/// each under its own key; one made while that round waits is the next round (SPEC §11).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_made_together_are_one_round_and_a_later_one_the_next() {
    let stack = stack().await;
    let body = |extra: Value| {
        let mut body = json!({"name": "together", "arguments": {}, "capabilities": ELICITATION()});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let (_, first) = call(&stack, body(json!({}))).await;
    assert_eq!(first["resultType"], "input_required", "{first}");
    let requests = first["inputRequests"].as_object().expect("inputRequests");
    let mut asked: Vec<(&str, &str)> = requests
        .iter()
        .map(|(key, request)| (key.as_str(), request["params"]["message"].as_str().unwrap()))
        .collect();
    asked.sort();
    assert_eq!(
        asked,
        [
            ("elicitation/create", "Your name?"),
            ("elicitation/create#2", "Your colour?")
        ],
        "{first}"
    );
    let (_, second) = call(
        &stack,
        body(
            json!({"requestState": first["requestState"], "inputResponses": {
            "elicitation/create": accept(json!({"name": "Ada"})),
            "elicitation/create#2": accept(json!({"color": "teal"}))}}),
        ),
    )
    .await;
    let (key, request) = only_request(&second);
    assert_eq!(key, "size");
    assert_eq!(request["params"]["message"], "Your size?");
    let (_, done) = call(
        &stack,
        body(json!({"requestState": second["requestState"],
            "inputResponses": {"size": accept(json!({"size": "M"}))}})),
    )
    .await;
    assert_eq!(
        done["structuredContent"],
        json!({"name": "Ada", "color": "teal", "size": "M"}),
        "{done}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_retries_are_refused_with_the_reason() {
    let stack = stack().await;
    let first =
        json!({"name": "ask_name", "arguments": {"greeting": "Hi"}, "capabilities": ELICITATION()});
    let (_, asked) = call(&stack, first).await;
    let (key, _) = only_request(&asked);
    let state = asked["requestState"].as_str().unwrap().to_owned();
    let retry = |state: &str, arguments: Value, responses: Value| {
        json!({"name": "ask_name", "arguments": arguments, "capabilities": ELICITATION(),
            "requestState": state, "inputResponses": responses})
    };
    let answer = json!({key.clone(): accept(json!({"name": "Eve"}))});

    // Tampered: one hex digit of the payload changed.
    let mut tampered = state.clone().into_bytes();
    tampered[5] = if tampered[5] == b'0' { b'1' } else { b'0' };
    let tampered = String::from_utf8(tampered).unwrap();
    let (status, got) = call(
        &stack,
        retry(&tampered, json!({"greeting": "Hi"}), answer.clone()),
    )
    .await;
    refused_with(status, &got, "integrity check failed");
    let (status, got) = call(
        &stack,
        retry("not-a-state", json!({"greeting": "Hi"}), answer.clone()),
    )
    .await;
    refused_with(status, &got, "integrity check failed");

    // A malformed answer: refused, and the same state still works.
    let (status, got) = call(
        &stack,
        retry(
            &state,
            json!({"greeting": "Hi"}),
            json!({key.clone(): 12345}),
        ),
    )
    .await;
    refused_with(status, &got, "is not an answer to elicitation/create");
    // The answer's key missing: asked again, under a new state; the old one is spent.
    let (status, again) = call(
        &stack,
        retry(
            &state,
            json!({"greeting": "Hi"}),
            json!({"other": accept(json!({}))}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{again}");
    let (asked_again, _) = only_request(&again);
    assert_eq!(asked_again, key);
    let (status, got) = call(
        &stack,
        retry(&state, json!({"greeting": "Hi"}), answer.clone()),
    )
    .await;
    refused_with(status, &got, "already used");
    let state = again["requestState"].as_str().unwrap();
    // For other arguments: refused, and the call it stood for is over.
    let (status, got) = call(
        &stack,
        retry(state, json!({"greeting": "Yo"}), answer.clone()),
    )
    .await;
    refused_with(status, &got, "issued for other arguments");
    let (status, got) = call(&stack, retry(state, json!({"greeting": "Hi"}), answer)).await;
    refused_with(status, &got, "already used");
    let (_, runs) = call(&stack, json!({"name": "runs"})).await;
    assert_eq!(runs["structuredContent"]["ask_name"], 1, "{runs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capability_not_declared_is_refused_as_before() {
    let stack = stack().await;
    for body in [
        json!({"name": "needs_sampling", "arguments": {}}),
        json!({"name": "needs_sampling", "arguments": {}, "capabilities": ELICITATION()}),
        json!({"name": "ask_name", "arguments": {"greeting": "Hi"}}),
    ] {
        let (status, got) = call(&stack, body.clone()).await;
        assert_eq!(status, 200, "{got}");
        assert_eq!(got["isError"], true, "{body}: {got}");
        let text = got["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains("needs a capability this caller does not offer"),
            "{body}: {got}"
        );
    }
    let (_, got) = call(&stack, json!({"name": "needs_sampling", "arguments": {}})).await;
    let text = got["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("sampling"), "{got}");
    // A body with an unknown field is the client's error, as always.
    let (status, _) = call(&stack, json!({"name": "ask_name", "capability": {}})).await;
    assert_eq!(status, 422);
}
