//! Confirmation at the agent's side (issue 11 item 5, SPEC §7, `--confirm-via agent`), with the
//! official MCP Python SDK client answering the bridge's question: `elicitation/create` on
//! 2025-11-25, an `InputRequiredResult` whose `requestState` is checked and spent on 2026-07-28.
//! A client that declares no elicitation gets the page's confirmation instead.
//!
//! The assertions that the page was NOT asked after the person at the agent approved depend on the
//! page honouring `_meta.clienttools/confirmedBy = "agent"` (the SDK side of issue 11); they are
//! marked `PAGE HONOURS confirmedBy`.

use std::path::PathBuf;
use std::time::Duration;

use client_tools_bridge::{AgentTools, BridgeConfig, ConfirmVia};
use client_tools_e2e::python_steps::{self, Answer};
use client_tools_e2e::Stack;
use serde_json::{json, Value};

const TOKEN: &str = "elicitation-token";
const PAGE_TOKEN: &str = "elicitation-page-token";
const TIMEOUT: Duration = Duration::from_secs(20);

async fn stack() -> Stack {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tools/agent-tools.json");
    let config = BridgeConfig {
        agent_token: Some(TOKEN.into()),
        page_token: Some(PAGE_TOKEN.into()),
        tools: AgentTools::load(&path).unwrap().into(),
        confirm_via: ConfirmVia::Agent,
        ..BridgeConfig::default()
    };
    Stack::start(&format!("agent-tools.html#token={PAGE_TOKEN}"), config).await
}

async fn page_was_asked(stack: &Stack) -> Vec<String> {
    let result = stack
        .page
        .call_tool("confirmations", json!({}), TIMEOUT)
        .await;
    assert!(!result.is_error, "{}", result.text());
    result.structured_content.unwrap()["asked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["toolName"].as_str().unwrap().to_owned())
        .collect()
}

/// Calls the page's own confirming tool and a `--tools` one; returns the questions the client was
/// asked and the two outcomes.
async fn two_calls(stack: &Stack, revision: &str, answer: Answer) -> (Vec<String>, Vec<Value>) {
    let url = format!("{}/mcp?session={}", stack.base_url, stack.page.id());
    let steps = json!([
        {"call": "delete_task", "arguments": {"id": "t1"}},
        {"call": "delete_car", "arguments": {"id": "c1"}},
        // Read-only: never asked.
        {"call": "search_cars", "arguments": {}},
    ]);
    let out = python_steps::run(&url, TOKEN, revision, answer, &steps).await;
    let (asked, outcomes): (Vec<_>, Vec<_>) =
        out.into_iter().partition(|v| v.get("elicited").is_some());
    let asked = asked
        .iter()
        .map(|v| v["elicited"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    assert_eq!(outcomes[2]["isError"], false, "{}", outcomes[2]);
    (asked, outcomes)
}

async fn accepted(revision: &str) {
    let stack = stack().await;
    let (asked, out) = two_calls(&stack, revision, Some("accept")).await;
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        asked[0].contains("'delete_task'") && asked[0].contains("\"id\": \"t1\""),
        "{}",
        asked[0]
    );
    assert!(
        asked[1].contains("'delete_car' (Delete a car): Deletes a car for good"),
        "{}",
        asked[1]
    );
    assert_eq!(out[0]["isError"], false, "{}", out[0]);
    assert_eq!(out[0]["structured"]["deleted"], "t1");
    assert_eq!(out[1]["isError"], false, "{}", out[1]);
    assert_eq!(out[1]["structured"]["deleted"], "c1");
    // PAGE HONOURS confirmedBy: the person at the agent approved, the page did not ask again.
    assert_eq!(page_was_asked(&stack).await, Vec::<String>::new());
}

async fn refused(revision: &str, answer: &'static str, expected: &str) {
    let stack = stack().await;
    let (asked, out) = two_calls(&stack, revision, Some(answer)).await;
    assert_eq!(asked.len(), 2, "{asked:?}");
    for outcome in &out[..2] {
        assert_eq!(outcome["isError"], true, "{outcome}");
        assert_eq!(outcome["text"], expected);
    }
    // Neither call reached the page (its confirm callback would have recorded it).
    assert_eq!(page_was_asked(&stack).await, Vec::<String>::new());
}

async fn no_elicitation_falls_back_to_the_page(revision: &str) {
    let stack = stack().await;
    let (asked, out) = two_calls(&stack, revision, None).await;
    assert!(asked.is_empty());
    assert_eq!(out[0]["isError"], false, "{}", out[0]);
    assert_eq!(out[1]["isError"], false, "{}", out[1]);
    assert_eq!(page_was_asked(&stack).await, ["delete_task", "delete_car"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_runs_the_call_2025_11_25() {
    accepted("2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_runs_the_call_2026_07_28() {
    accepted("2026-07-28").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decline_rejects_2025_11_25() {
    refused("2025-11-25", "decline", "rejected by the user").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decline_rejects_2026_07_28() {
    refused("2026-07-28", "decline", "rejected by the user").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reason_reaches_the_agent_2025_11_25() {
    refused(
        "2025-11-25",
        "accept-reject",
        "rejected by the user: not this one",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_cancels_2025_11_25() {
    refused("2025-11-25", "cancel", "the user cancelled").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_cancels_2026_07_28() {
    refused("2026-07-28", "cancel", "the user cancelled").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_gets_the_pages_confirmation_2025_11_25() {
    no_elicitation_falls_back_to_the_page("2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_gets_the_pages_confirmation_2026_07_28() {
    no_elicitation_falls_back_to_the_page("2026-07-28").await;
}

/// The `requestState` by hand (the SDK's low-level `call_tool(allow_input_required=True)`):
/// altered, sent for other arguments, without the answer, replayed — each refused with its reason;
/// a fresh one works once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_state_is_bound_and_single_use_2026_07_28() {
    let stack = stack().await;
    let url = format!("{}/mcp?session={}", stack.base_url, stack.page.id());
    let steps = json!([{"mrtr": "delete_task", "arguments": {"id": "t9"}}]);
    let out = python_steps::run(&url, TOKEN, "2026-07-28", Some("accept"), &steps).await;
    assert_eq!(out.len(), 1, "{out:?}");
    let r = &out[0];
    assert_eq!(r["inputRequestKeys"], json!(["confirm"]), "{r}");
    let says = |key: &str, text: &str| {
        assert_eq!(r[key]["isError"], true, "{key}: {}", r[key]);
        let got = r[key]["text"].as_str().unwrap();
        assert!(got.contains(text), "{key}: {got}");
    };
    says("tampered", "not issued by this bridge, or was altered");
    says("otherArguments", "issued for other arguments");
    says("noResponses", "carries no inputResponses['confirm']");
    says("replayed", "already used");
    assert_eq!(r["fresh"]["answered"]["isError"], false, "{}", r["fresh"]);
    assert_eq!(r["fresh"]["answered"]["structured"]["deleted"], "t9");
    assert!(r["fresh"]["replayed"]["text"]
        .as_str()
        .unwrap()
        .contains("already used"));
    // Only the fresh state ran the tool; PAGE HONOURS confirmedBy: the page never asked.
    assert_eq!(page_was_asked(&stack).await, Vec::<String>::new());
}

/// `/api` callers cannot elicit: the page asks, as with `--confirm-via page`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_calls_are_confirmed_by_the_page() {
    let stack = stack().await;
    let response: Value = reqwest::Client::new()
        .post(format!(
            "{}/api/sessions/{}/call",
            stack.base_url,
            stack.page.id()
        ))
        .bearer_auth(TOKEN)
        .json(&json!({"name": "delete_task", "arguments": {"id": "t2"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(response["isError"], false, "{response}");
    assert_eq!(page_was_asked(&stack).await, ["delete_task"]);
}

/// What the page receives, independent of the SDK: after the person at the agent accepted, the
/// bridge's `tools/call` carries `_meta.clienttools/confirmedBy = "agent"`; an `/api` call of the
/// same tool carries none (a raw page stands in for the browser).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_receives_confirmed_by_only_after_the_agent_accepted() {
    use client_tools_core::connect::ConnectParams;
    use client_tools_e2e::raw_page::RawPage;
    use client_tools_e2e::BridgeOnly;

    let bridge = BridgeOnly::start(BridgeConfig {
        agent_token: Some(TOKEN.into()),
        confirm_via: ConfirmVia::Agent,
        ..BridgeConfig::default()
    })
    .await;
    let tools = json!([{"name": "wipe", "description": "Wipes the board",
        "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}}]);
    let mut page =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), tools).await;
    let id = page.id().to_owned();
    for revision in ["2025-11-25", "2026-07-28"] {
        let url = format!("{}/mcp?session={id}", bridge.base_url);
        let steps = json!([{"call": "wipe", "arguments": {"all": true}}]);
        let client = tokio::spawn(async move {
            python_steps::run(&url, TOKEN, revision, Some("accept"), &steps).await
        });
        let call = tokio::time::timeout(TIMEOUT, page.next_method("tools/call"))
            .await
            .expect("the call reached the page")
            .unwrap();
        assert_eq!(
            call["params"]["_meta"]["clienttools/confirmedBy"], "agent",
            "{call}"
        );
        page.reply(
            &call,
            json!({"content": [{"type": "text", "text": "wiped"}]}),
        )
        .await;
        let out = client.await.unwrap();
        assert_eq!(out.last().unwrap()["text"], "wiped", "{revision}: {out:?}");
    }
    let api = tokio::spawn({
        let url = format!("{}/api/sessions/{id}/call", bridge.base_url);
        async move {
            reqwest::Client::new()
                .post(url)
                .bearer_auth(TOKEN)
                .json(&json!({"name": "wipe"}))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    });
    let call = tokio::time::timeout(TIMEOUT, page.next_method("tools/call"))
        .await
        .unwrap()
        .unwrap();
    assert!(
        call["params"]["_meta"]
            .get("clienttools/confirmedBy")
            .is_none(),
        "{call}"
    );
    page.reply(
        &call,
        json!({"content": [{"type": "text", "text": "wiped"}]}),
    )
    .await;
    assert_eq!(api.await.unwrap()["isError"], false);
}
