//! Confirmation at the agent's side (issue 11 item 5, SPEC §7, `--confirm-via agent`), with the
//! official MCP Python SDK client answering the bridge's question: `elicitation/create` on
//! 2025-11-25, an `InputRequiredResult` whose `requestState` is checked and spent on 2026-07-28.
//! A client that declares no elicitation gets the page's confirmation instead.
//!
//! The assertions marked `PAGE HONOURS confirmedBy` check that the page did not ask again once the
//! person at the agent approved (`_meta.clienttools/confirmedBy = "agent"`); those marked `PAGE EMITS
//! requireConfirmation` check what the page lists as its policy (`_meta["clienttools/requireConfirmation"]`).

use std::path::PathBuf;
use std::time::Duration;

use client_tools_bridge::{AgentTools, BridgeConfig, CallOptions, ConfirmVia};
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

/// What the page recorded: the calls its `confirm` callback was asked about, and the handlers
/// that ran (tool names).
async fn page_record(stack: &Stack) -> (Vec<String>, Vec<String>) {
    let result = stack
        .page
        .call_tool(
            ("confirmations", json!({})),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result();
    assert!(!result.is_error, "{}", result.text());
    let record = result.structured_content.unwrap();
    let names = |key: &str| {
        record[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["toolName"].as_str().unwrap().to_owned())
            .collect()
    };
    (names("asked"), names("ran"))
}

async fn page_was_asked(stack: &Stack) -> Vec<String> {
    page_record(stack).await.0
}

fn mcp_url(stack: &Stack) -> String {
    format!("{}/mcp?session={}", stack.base_url, stack.page.id())
}

/// Splits a client's output into the questions it was asked and the steps' outcomes.
fn questions_and_outcomes(out: Vec<Value>) -> (Vec<String>, Vec<Value>) {
    let (asked, outcomes): (Vec<_>, Vec<_>) =
        out.into_iter().partition(|v| v.get("elicited").is_some());
    let asked = asked
        .iter()
        .map(|v| v["elicited"].as_str().unwrap().to_owned())
        .collect();
    (asked, outcomes)
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
    // Neither call reached the page: no dialog, no handler (only the read-only search ran).
    assert_eq!(
        page_record(&stack).await,
        (vec![], vec!["search_cars".to_owned()])
    );
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

/// Defect: `accept` with a non-boolean `approve` ("false") approved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_boolean_approve_runs_nothing_2025_11_25() {
    refused(
        "2025-11-25",
        "accept-string",
        "the answer's 'approve' must be true or false, not string: the call was not run",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_boolean_approve_runs_nothing_2026_07_28() {
    refused(
        "2026-07-28",
        "accept-string",
        "the answer's 'approve' must be true or false, not string: the call was not run",
    )
    .await;
}

/// Defect: a call by the ORIGINAL name ("Wipe Board" for `wipe_board`, "Delete_Car" for the file's
/// `delete_car`) was not asked at the agent (nor given the file's `_meta`).
async fn original_names_are_confirmed_at_the_agent(revision: &str) {
    let stack = stack().await;
    let steps = json!([
        {"call": "Wipe Board", "arguments": {}},
        {"call": "Delete_Car", "arguments": {"id": "c1"}},
    ]);
    let out = python_steps::run(&mcp_url(&stack), TOKEN, revision, Some("decline"), &steps).await;
    let (asked, outcomes) = questions_and_outcomes(out);
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].contains("'wipe_board'"), "{}", asked[0]);
    assert!(
        asked[1].contains("'delete_car' (Delete a car)"),
        "{}",
        asked[1]
    );
    for outcome in &outcomes {
        assert_eq!(outcome["text"], "rejected by the user", "{outcome}");
    }
    assert_eq!(page_record(&stack).await, (vec![], vec![]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn original_names_are_confirmed_at_the_agent_2025_11_25() {
    original_names_are_confirmed_at_the_agent("2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn original_names_are_confirmed_at_the_agent_2026_07_28() {
    original_names_are_confirmed_at_the_agent("2026-07-28").await;
}

/// Defect: the question cut the arguments at 4 000 characters while the approval covered them
/// all. Longer arguments are not asked about at the agent: the page asks (it shows them whole).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_too_long_for_the_question_are_confirmed_by_the_page() {
    let stack = stack().await;
    let id = "x".repeat(5_000);
    let steps = json!([{"call": "delete_task", "arguments": {"id": id}}]);
    let out = python_steps::run(
        &mcp_url(&stack),
        TOKEN,
        "2025-11-25",
        Some("accept"),
        &steps,
    )
    .await;
    let (asked, outcomes) = questions_and_outcomes(out);
    assert!(asked.is_empty(), "{asked:?}");
    assert_eq!(outcomes[0]["isError"], false, "{}", outcomes[0]);
    assert_eq!(
        page_record(&stack).await,
        (
            vec!["delete_task".to_owned()],
            vec!["delete_task".to_owned()]
        )
    );
}

/// Waits for the gated client to be asked.
async fn until_asked(gate: &std::path::Path) {
    let asked = gate.join("asked");
    client_tools_e2e::eventually("the client was asked", || asked.exists()).await;
}

fn gate_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "client-tools-gate-{label}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Defect: no progress while the person at the agent decided (SPEC §5). With a progress token, the
/// bridge reports progress every second while the elicitation waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_while_the_person_at_the_agent_decides_2025_11_25() {
    let stack = stack().await;
    let gate = gate_dir("progress");
    let client = tokio::spawn({
        let (url, gate) = (mcp_url(&stack), gate.clone());
        async move {
            let steps =
                json!([{"call": "delete_task", "arguments": {"id": "t1"}, "progress": true}]);
            python_steps::run_gated(
                &url,
                TOKEN,
                "2025-11-25",
                Some("decline"),
                &steps,
                Some(&gate),
            )
            .await
        }
    });
    until_asked(&gate).await;
    tokio::time::sleep(Duration::from_millis(2_600)).await;
    std::fs::write(gate.join("answer"), "").unwrap();
    let (_, outcomes) = questions_and_outcomes(client.await.unwrap());
    let _ = std::fs::remove_dir_all(&gate);
    assert_eq!(
        outcomes[0]["text"], "rejected by the user",
        "{}",
        outcomes[0]
    );
    let progress = outcomes[0]["progress"].as_array().unwrap();
    assert!(progress.len() >= 2, "{progress:?}");
    for (n, report) in progress.iter().enumerate() {
        assert_eq!(report["progress"], (n + 1) as f64, "{report}");
        assert!(
            report["message"]
                .as_str()
                .unwrap()
                .contains("waiting for the person at the agent"),
            "{report}"
        );
    }
}

/// Defect: the confirmation did not cover the forwarded `_meta`. When the page redefines a
/// `--tools` tool as its own while the person decides (its calls would no longer carry the file's
/// schemas and policy), the approved call is not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_redefined_while_the_person_decides_is_not_run_2025_11_25() {
    use client_tools_core::connect::ConnectParams;
    use client_tools_e2e::raw_page::RawPage;
    use client_tools_e2e::BridgeOnly;

    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tools/agent-tools.json");
    let bridge = BridgeOnly::start(BridgeConfig {
        agent_token: Some(TOKEN.into()),
        tools: AgentTools::load(&path).unwrap().into(),
        confirm_via: ConfirmVia::Agent,
        ..BridgeConfig::default()
    })
    .await;
    let entry = |kind: &str| {
        json!([{"name": "delete_car", "description": "page's", "inputSchema": {"type": "object"},
            "_meta": {"clienttools/kind": kind, "clienttools/originalName": "delete_car"}}])
    };
    let mut page =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), entry("handler"))
            .await;
    let id = page.id().to_owned();
    let gate = gate_dir("redefined");
    let client = tokio::spawn({
        let url = format!("{}/mcp?session={id}", bridge.base_url);
        let gate = gate.clone();
        async move {
            let steps = json!([{"call": "delete_car", "arguments": {"id": "c1"}}]);
            python_steps::run_gated(
                &url,
                TOKEN,
                "2025-11-25",
                Some("accept"),
                &steps,
                Some(&gate),
            )
            .await
        }
    });
    until_asked(&gate).await;
    // The page now defines `delete_car` itself (a function): the file's definition is hidden.
    page.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
        .await;
    let list = page.next_method("tools/list").await.unwrap();
    page.reply(&list, json!({ "tools": entry("function") }))
        .await;
    let session = bridge.bridge.session(&id).unwrap();
    client_tools_e2e::eventually("the bridge saw the new definition", || {
        session
            .tools()
            .iter()
            .any(|t| t.name == "delete_car" && t.description.as_deref() == Some("page's"))
    })
    .await;
    std::fs::write(gate.join("answer"), "").unwrap();
    let (asked, outcomes) = questions_and_outcomes(client.await.unwrap());
    let _ = std::fs::remove_dir_all(&gate);
    assert_eq!(asked.len(), 1);
    assert_eq!(outcomes[0]["isError"], true, "{}", outcomes[0]);
    assert!(
        outcomes[0]["text"]
            .as_str()
            .unwrap()
            .contains("tool 'delete_car' changed while the person at the agent decided"),
        "{}",
        outcomes[0]
    );
    // Nothing reached the page but pings.
    let frames = page.frames_before_pong("after-refusal").await;
    assert!(
        frames.iter().all(|f| f["method"] != "tools/call"),
        "{frames:?}"
    );
}

/// The page's `tools/list` flag decides both ways: `requireConfirmation: false` is the page opting
/// out (not asked at the agent, whatever the hints); `true` without hints asks (raw page).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_require_confirmation_flag_decides_both_ways() {
    use client_tools_core::connect::ConnectParams;
    use client_tools_e2e::raw_page::RawPage;
    use client_tools_e2e::BridgeOnly;

    let bridge = BridgeOnly::start(BridgeConfig {
        agent_token: Some(TOKEN.into()),
        confirm_via: ConfirmVia::Agent,
        ..BridgeConfig::default()
    })
    .await;
    let tools = json!([
        {"name": "tidy", "inputSchema": {"type": "object"},
            "annotations": {"destructiveHint": true, "consequentialHint": true},
            "_meta": {"clienttools/requireConfirmation": false}},
        {"name": "archive", "inputSchema": {"type": "object"},
            "_meta": {"clienttools/requireConfirmation": true}},
    ]);
    let mut page =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), tools).await;
    let id = page.id().to_owned();
    let client = tokio::spawn({
        let url = format!("{}/mcp?session={id}", bridge.base_url);
        async move {
            let steps = json!([{"call": "tidy"}, {"call": "archive"}]);
            python_steps::run(&url, TOKEN, "2025-11-25", Some("accept"), &steps).await
        }
    });
    for (tool, confirmed) in [("tidy", false), ("archive", true)] {
        let call = tokio::time::timeout(TIMEOUT, page.next_method("tools/call"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(call["params"]["name"], tool);
        assert_eq!(
            call["params"]["_meta"]
                .get("clienttools/confirmedBy")
                .is_some(),
            confirmed,
            "{call}"
        );
        page.reply(&call, json!({"content": [{"type": "text", "text": tool}]}))
            .await;
    }
    let (asked, outcomes) = questions_and_outcomes(client.await.unwrap());
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("'archive'"), "{}", asked[0]);
    assert_eq!(outcomes.len(), 2);
}

/// The page's own tool that requires confirmation by its definition only (no hints) is asked at
/// the agent (PAGE EMITS requireConfirmation); one the page opted out of (destructive hint,
/// `requireConfirmation: false`) is asked nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_tool_requiring_confirmation_without_hints_is_asked_at_the_agent() {
    let stack = stack().await;
    let steps = json!([{"call": "archive_task", "arguments": {"id": "t3"}}]);
    let out = python_steps::run(
        &mcp_url(&stack),
        TOKEN,
        "2025-11-25",
        Some("decline"),
        &steps,
    )
    .await;
    let (asked, outcomes) = questions_and_outcomes(out);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("'archive_task'"), "{}", asked[0]);
    assert_eq!(outcomes[0]["text"], "rejected by the user");
    assert_eq!(page_record(&stack).await, (vec![], vec![]));

    let steps = json!([{"call": "quiet_wipe", "arguments": {}}]);
    let out = python_steps::run(
        &mcp_url(&stack),
        TOKEN,
        "2025-11-25",
        Some("decline"),
        &steps,
    )
    .await;
    let (asked, outcomes) = questions_and_outcomes(out);
    assert_eq!(
        asked,
        Vec::<String>::new(),
        "the page's opt-out holds at the agent"
    );
    assert_eq!(outcomes[0]["isError"], false, "{}", outcomes[0]);
    assert_eq!(
        page_record(&stack).await,
        (vec![], vec!["quiet_wipe".to_owned()])
    );
}
