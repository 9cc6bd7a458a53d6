//! Agent-defined tools end to end (issue 11 item 4, SPEC §3/§6): the bridge's `--tools FILE`
//! tools are listed to agents with their full schemas, each call carries their schemas and policy
//! in `_meta`, and the page's `registerHandler` answers — through the Rust API, `/api` and the
//! official MCP Python SDK client. No call may set `clienttools/confirmedBy` or override a file
//! tool's schemas or policy, on any route.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use client_tools_bridge::{AgentTools, BridgeConfig, CallOptions};
use client_tools_core::protocol::CallToolResult;
use client_tools_e2e::{python_steps, Stack};
use serde_json::{json, Value};

const TOKEN: &str = "agent-tools-token";
const PAGE_TOKEN: &str = "agent-tools-page-token";
const TIMEOUT: Duration = Duration::from_secs(20);
/// `search_cars`'s own `timeoutMs` in the file: a call may not ask for more.
const SEARCH_TIMEOUT: Duration = Duration::from_secs(10);

pub fn tools_file() -> Arc<AgentTools> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tools/agent-tools.json");
    Arc::new(AgentTools::load(&path).expect("the test's tools file is valid"))
}

async fn stack() -> Stack {
    let config = BridgeConfig {
        agent_token: Some(TOKEN.into()),
        page_token: Some(PAGE_TOKEN.into()),
        tools: tools_file(),
        ..BridgeConfig::default()
    };
    Stack::start(&format!("agent-tools.html#token={PAGE_TOKEN}"), config).await
}

async fn api_call(stack: &Stack, body: Value) -> CallToolResult {
    let url = format!("{}/api/sessions/{}/call", stack.base_url, stack.page.id());
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// What the page recorded: the calls its `confirm` callback was asked about, and the handlers
/// that ran (tool names, in order).
pub async fn page_record(stack: &Stack) -> (Vec<String>, Vec<String>) {
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

/// The calls the page's `confirm` callback was asked about (tool names).
async fn page_was_asked(stack: &Stack) -> Vec<String> {
    page_record(stack).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_tools_are_listed_with_their_schemas_and_answered_by_the_pages_handlers() {
    let stack = stack().await;
    // Listed once each, with the file's definition (the page's schema-less handler entry replaced).
    let tools = stack.page.tools();
    let search: Vec<_> = tools.iter().filter(|t| t.name == "search_cars").collect();
    assert_eq!(search.len(), 1, "{tools:?}");
    let search = search[0];
    assert_eq!(
        search.description.as_deref(),
        Some("Lists the cars with at least minSeats seats")
    );
    assert_eq!(
        search.input_schema["properties"]["minSeats"]["type"],
        "integer"
    );
    assert_eq!(
        search.output_schema.as_ref().unwrap()["required"],
        json!(["cars"])
    );
    assert_eq!(search.meta.as_ref().unwrap()["clienttools/kind"], "handler");
    // A file tool the page has no handler for is listed too (its fallback may answer).
    assert!(tools.iter().any(|t| t.name == "pick_date"));

    // The Rust API: the page's handler answers.
    let found = stack
        .page
        .call_tool(
            ("search_cars", json!({"minSeats": 5})),
            CallOptions::new().timeout(SEARCH_TIMEOUT),
        )
        .await
        .into_result();
    assert!(!found.is_error, "{}", found.text());
    assert_eq!(found.structured_content.unwrap()["cars"][0]["id"], "c1");
    // The bridge checks the file's input schema itself.
    let invalid = stack
        .page
        .call_tool(
            ("search_cars", json!({"minSeats": "five"})),
            CallOptions::new().timeout(SEARCH_TIMEOUT),
        )
        .await
        .into_result();
    assert!(
        invalid.is_error && invalid.text().contains("invalid input"),
        "{}",
        invalid.text()
    );
    // The output schema reached the page: it refuses its own handler's result.
    let bad = stack
        .page
        .call_tool(
            ("bad_output", json!({})),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result();
    assert!(bad.is_error, "{}", bad.text());
    assert!(bad.text().contains("output schema"), "{}", bad.text());
    // `requireConfirmation` reached the page: its confirm callback was asked (--confirm-via page).
    let deleted = stack
        .page
        .call_tool(
            ("delete_car", json!({"id": "c2"})),
            CallOptions::new().timeout(Duration::from_secs(10)),
        )
        .await
        .into_result();
    assert!(!deleted.is_error, "{}", deleted.text());
    assert!(page_was_asked(&stack)
        .await
        .contains(&"delete_car".to_owned()));
}

/// Defect: a call by the tool's ORIGINAL name (the page's handler is registered as "Delete_Car")
/// skipped the file's `_meta`, the bridge's input check and the confirmation, because the bridge
/// matched exact names while the page resolves original names too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_by_original_name_gets_the_file_tools_checks_and_policy() {
    let stack = stack().await;
    // The page's list is in (a call before it is covered too: crate::call_meta unit tests).
    client_tools_e2e::eventually("the page listed its tools", || {
        stack.page.tools().iter().any(|t| t.name == "wipe_board")
    })
    .await;
    // The bridge checks the file's input schema on the original name too: the handler never runs.
    let invalid = stack
        .page
        .call_tool(
            ("Delete_Car", json!({"id": 7})),
            CallOptions::new().timeout(Duration::from_secs(10)),
        )
        .await
        .into_result();
    assert!(
        invalid.is_error && invalid.text().contains("invalid input"),
        "{}",
        invalid.text()
    );
    // No caller may drop the file's policy by spelling the name differently.
    let policy = api_call(
        &stack,
        json!({
            "name": "Delete_Car", "arguments": {"id": "c1"},
            "_meta": {"clienttools/requireConfirmation": false},
        }),
    )
    .await;
    assert!(
        policy.is_error && policy.text().contains("defined by the bridge"),
        "{}",
        policy.text()
    );
    assert_eq!(page_record(&stack).await, (vec![], vec![]));
    // A valid call by the original name carries `requireConfirmation` (the page asks) and runs.
    let deleted = api_call(
        &stack,
        json!({"name": "Delete_Car", "arguments": {"id": "c2"}}),
    )
    .await;
    assert!(!deleted.is_error, "{}", deleted.text());
    assert_eq!(deleted.structured_content.unwrap()["deleted"], "c2");
    let (asked, ran) = page_record(&stack).await;
    assert_eq!(asked, ["delete_car"]);
    assert_eq!(ran, ["delete_car"]);
}

/// The Rust API's `prepare_call` + `call_tool`: the caller's `_meta` is checked as on `/mcp` and `/api`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepare_call_checks_the_callers_meta_and_timeout() {
    let stack = stack().await;
    let meta = |value: Value| value.as_object().cloned().unwrap();
    let call = |name: &'static str, arguments: Value, caller: Value, timeout: Option<u64>| {
        let page = stack.page.clone();
        async move {
            let prepared = page.prepare_call(
                name,
                arguments,
                Some(&meta(caller)),
                timeout.map(Duration::from_millis),
            );
            match prepared {
                Ok(call) => page.call_tool(call, CallOptions::new()).await.into_result(),
                Err(refused) => refused,
            }
        }
    };
    let forged = call(
        "delete_task",
        json!({"id": "t1"}),
        json!({"clienttools/confirmedBy": "agent"}),
        None,
    )
    .await;
    assert!(
        forged.is_error && forged.text().contains("set only by the bridge"),
        "{}",
        forged.text()
    );
    let overridden = call(
        "search_cars",
        json!({}),
        json!({"clienttools/outputSchema": {"type": "object"}}),
        None,
    )
    .await;
    assert!(
        overridden.text().contains("defined by the bridge"),
        "{}",
        overridden.text()
    );
    // search_cars has `timeoutMs: 10000` in the file: more is an error naming the field and limit.
    let longer = call(
        "search_cars",
        json!({}),
        json!({"clienttools/timeoutMs": 20_000}),
        None,
    )
    .await;
    assert!(
        longer.is_error
            && longer.text().contains(
                "_meta 'clienttools/timeoutMs' 20000 ms is above the tool's timeout of 10000 ms"
            ),
        "{}",
        longer.text()
    );
    let zero = call("search_cars", json!({}), json!({}), Some(0)).await;
    assert_eq!(
        zero.text(),
        "timeoutMs must be a positive number of milliseconds, not 0"
    );
    assert_eq!(page_record(&stack).await, (vec![], vec![]));
    // A tool the caller defines in `_meta`: the page's `registerHandler` answers, the schema from
    // the call checks the input at the page.
    let schema = json!({"type": "object", "properties": {"plate": {"type": "string"}},
        "required": ["plate"]});
    let found = call(
        "lookup_plate",
        json!({"plate": "AB-123"}),
        json!({"clienttools/inputSchema": schema, "progressToken": "ignored"}),
        Some(5_000),
    )
    .await;
    assert!(!found.is_error, "{}", found.text());
    assert_eq!(found.structured_content.unwrap()["plate"], "AB-123");
    let invalid = call(
        "lookup_plate",
        json!({"plate": 123}),
        json!({"clienttools/inputSchema": schema}),
        None,
    )
    .await;
    assert!(invalid.is_error, "{}", invalid.text());
    assert!(invalid.text().contains("plate"), "{}", invalid.text());
    assert_eq!(page_record(&stack).await.1, ["lookup_plate"]);
}

/// `--tools` with a bad file: the binary says what is wrong and exits with code 2.
#[test]
fn a_bad_tools_file_stops_the_bridge_with_exit_code_2() {
    let bin = std::env::var_os("CLIENT_TOOLS_BRIDGE_BIN")
        .map(PathBuf::from)
        .expect("CLIENT_TOOLS_BRIDGE_BIN: the built client-tools-bridge");
    let dir = std::env::temp_dir().join(format!("client-tools-bad-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tools.json");
    std::fs::write(
        &file,
        r#"[{"name": "Search Cars", "description": "x", "inputSchema": {"type": "object"}}]"#,
    )
    .unwrap();
    for tools in [file.clone(), dir.join("missing.json")] {
        let output = std::process::Command::new(&bin)
            .args(["--listen", "127.0.0.1:0", "--tools"])
            .arg(&tools)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("--tools {}", tools.display())),
            "{stderr}"
        );
    }
    let output = std::process::Command::new(&bin)
        .args(["--listen", "127.0.0.1:0", "--tools"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        stderr.contains("tool 'Search Cars': name must be") && stderr.contains("search_cars"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_calls_take_meta_and_no_caller_may_confirm_or_override_a_file_tool() {
    let stack = stack().await;
    let ok = api_call(&stack, json!({"name": "search_cars", "arguments": {}})).await;
    assert!(!ok.is_error, "{}", ok.text());

    let forged = api_call(
        &stack,
        json!({
            "name": "delete_task", "arguments": {"id": "t1"},
            "_meta": {"clienttools/confirmedBy": "agent"},
        }),
    )
    .await;
    assert!(
        forged.is_error && forged.text().contains("clienttools/confirmedBy"),
        "{}",
        forged.text()
    );
    let overridden = api_call(
        &stack,
        json!({
            "name": "search_cars", "arguments": {"minSeats": "any"},
            "_meta": {"clienttools/inputSchema": {"type": "object"}},
        }),
    )
    .await;
    assert!(
        overridden.is_error && overridden.text().contains("defined by the bridge"),
        "{}",
        overridden.text()
    );
    let policy = api_call(
        &stack,
        json!({
            "name": "delete_car", "arguments": {"id": "c1"},
            "_meta": {"clienttools/requireConfirmation": false},
        }),
    )
    .await;
    assert!(
        policy.is_error && policy.text().contains("defined by the bridge"),
        "{}",
        policy.text()
    );
    let unknown = api_call(
        &stack,
        json!({
            "name": "search_cars", "_meta": {"clienttools/kind": "function"},
        }),
    )
    .await;
    assert!(
        unknown.is_error && unknown.text().contains("not a key a call may carry"),
        "{}",
        unknown.text()
    );
    // A timeout of 0 is an error, not "the default"; above the tool's budget (10 s) too.
    let zero = api_call(&stack, json!({"name": "search_cars", "timeoutMs": 0})).await;
    assert_eq!(
        zero.text(),
        "timeoutMs must be a positive number of milliseconds, not 0"
    );
    let longer = api_call(&stack, json!({"name": "search_cars", "timeoutMs": 10_001})).await;
    assert!(
        longer
            .text()
            .starts_with("timeoutMs 10001 ms is above the tool's timeout of 10000 ms"),
        "{}",
        longer.text()
    );
    assert!(
        unknown.is_error && unknown.text().contains("not a key a call may carry"),
        "{}",
        unknown.text()
    );
    // None of these reached the page's confirm callback or its handlers (only the first call ran).
    assert_eq!(
        page_record(&stack).await,
        (vec![], vec!["search_cars".to_owned()])
    );

    // A body whose _meta is not an object is the client's mistake (4xx, the shape named).
    let response = reqwest::Client::new()
        .post(format!(
            "{}/api/sessions/{}/call",
            stack.base_url,
            stack.page.id()
        ))
        .bearer_auth(TOKEN)
        .json(&json!({"name": "search_cars", "_meta": 3}))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_client_error());
    assert!(response
        .text()
        .await
        .unwrap()
        .contains("\"_meta\"?: object"));
}

async fn over_mcp(revision: &str) {
    let stack = stack().await;
    let url = format!("{}/mcp?session={}", stack.base_url, stack.page.id());
    let steps = json!([
        {"list": true},
        {"call": "search_cars", "arguments": {"minSeats": 4}},
        {"call": "search_cars", "arguments": {"minSeats": -1}},
        {"call": "delete_task", "arguments": {"id": "t1"}, "meta": {"clienttools/confirmedBy": "agent"}},
        {"call": "search_cars", "arguments": {}, "meta": {"clienttools/outputSchema": {"type": "object"}}},
    ]);
    let out = python_steps::run(&url, TOKEN, revision, None, &steps).await;
    assert_eq!(out.len(), 5, "{out:?}");
    let tools = out[0]["tools"].as_array().unwrap();
    let search = tools
        .iter()
        .find(|t| t["name"] == "search_cars")
        .expect("search_cars listed");
    assert_eq!(search["title"], "Search cars");
    assert_eq!(
        search["description"],
        "Lists the cars with at least minSeats seats"
    );
    assert_eq!(
        search["inputSchema"]["properties"]["minSeats"]["minimum"],
        0
    );
    assert_eq!(search["outputSchema"]["required"], json!(["cars"]));
    assert_eq!(search["annotations"]["readOnlyHint"], true);
    assert_eq!(search["_meta"]["clienttools/kind"], "handler");
    let delete = tools.iter().find(|t| t["name"] == "delete_car").unwrap();
    assert_eq!(delete["_meta"]["clienttools/requireConfirmation"], true);

    assert_eq!(out[1]["isError"], false, "{}", out[1]);
    assert_eq!(out[1]["structured"]["cars"].as_array().unwrap().len(), 2);
    assert_eq!(out[2]["isError"], true, "{}", out[2]);
    assert!(
        out[2]["text"].as_str().unwrap().contains("minSeats"),
        "{}",
        out[2]
    );
    assert_eq!(out[3]["isError"], true, "{}", out[3]);
    assert!(
        out[3]["text"]
            .as_str()
            .unwrap()
            .contains("set only by the bridge"),
        "{}",
        out[3]
    );
    assert_eq!(out[4]["isError"], true, "{}", out[4]);
    assert!(
        out[4]["text"]
            .as_str()
            .unwrap()
            .contains("defined by the bridge"),
        "{}",
        out[4]
    );
    // Only the valid search ran a handler; the refused calls reached no handler and no dialog.
    assert_eq!(
        page_record(&stack).await,
        (vec![], vec!["search_cars".to_owned()])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_sees_and_calls_file_tools_2025_11_25() {
    over_mcp("2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_sees_and_calls_file_tools_2026_07_28() {
    over_mcp("2026-07-28").await;
}
