//! End to end: the bridge on a loopback port, the built package in a headless browser (Chromium,
//! or Firefox with `E2E_BROWSER=firefox`), and calls through the bridge — its Rust API and its
//! HTTP API, as an agent runtime or a script would.

use std::time::Duration;

use client_tools_bridge::{BridgeConfig, CallOptions, CallToolResult};
use client_tools_e2e::Stack;
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(10);

async fn call(stack: &Stack, name: &str, arguments: Value) -> CallToolResult {
    stack
        .page
        .call_tool((name, arguments), CallOptions::new().timeout(TIMEOUT))
        .await
        .into_result()
}

async fn http_call(stack: &Stack, session: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/api/sessions/{session}/call", stack.base_url))
        .json(&body)
        .send()
        .await
        .expect("the bridge answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn board_tools_through_the_bridge() {
    let stack = Stack::start("board.html", BridgeConfig::default()).await;

    // The bridge sees the page's tools, normalized, with the original names in `_meta`.
    let tools = stack.page.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"read_board_tasks") && names.contains(&"create_task"),
        "{names:?}"
    );
    let create = tools.iter().find(|t| t.name == "create_task").unwrap();
    assert_eq!(create.original_name(), "Create Task");

    // Valid input: the handler's structured result.
    let result = call(
        &stack,
        "read_board_tasks",
        json!({"boardId": "main", "status": "todo"}),
    )
    .await;
    assert!(!result.is_error, "{}", result.text());
    let tasks = &result.structured_content.as_ref().unwrap()["tasks"];
    assert_eq!(tasks.as_array().unwrap().len(), 1);
    assert_eq!(tasks[0]["title"], "Ship the demo");

    // The same through the HTTP API a script or the demo console uses.
    let (status, body) = http_call(
        &stack,
        stack.page.id(),
        json!({"name": "create_task", "arguments": {"title": "Write the docs", "assignee": "di"}}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["isError"], false, "{body}");
    assert_eq!(body["structuredContent"]["title"], "Write the docs");

    // Missing boardId: an error result naming the field.
    let result = call(&stack, "read_board_tasks", json!({"status": "todo"})).await;
    assert!(result.is_error);
    assert!(result.text().contains("boardId"), "{}", result.text());

    // A status outside the enum: an error result naming the field.
    let result = call(
        &stack,
        "read_board_tasks",
        json!({"boardId": "main", "status": "later"}),
    )
    .await;
    assert!(result.is_error);
    assert!(result.text().contains("/status"), "{}", result.text());

    // An unknown tool, after the 2 s grace for late handlers.
    let result = call(&stack, "no_such_tool", json!({})).await;
    assert!(result.is_error);
    assert_eq!(
        result.text(),
        "no handler registered for tool 'no_such_tool' on this page"
    );

    // A throwing handler: its message.
    let result = call(&stack, "explode", json!({})).await;
    assert!(result.is_error);
    assert_eq!(result.text(), "the board is on fire");

    // A handler slower than its timeout.
    let result = call(&stack, "slow", json!({})).await;
    assert!(result.is_error);
    assert_eq!(result.text(), "timed out after 300 ms");

    // Unknown session over HTTP: still a 200 with an error result, not a failed request.
    let (status, body) = http_call(&stack, "nobody", json!({"name": "read_board_tasks"})).await;
    assert_eq!(status, 200);
    assert_eq!(body["isError"], true);
    assert!(body["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("no page session 'nobody'"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_tab_is_an_error_result_not_a_hang() {
    let mut stack = Stack::start("board.html", BridgeConfig::default()).await;
    let page = stack.page.clone();
    stack.close_browser().await;
    let started = std::time::Instant::now();
    let result = loop {
        let result = page
            .call_tool(
                ("read_board_tasks", json!({"boardId": "main"})),
                CallOptions::new().timeout(TIMEOUT),
            )
            .await
            .into_result();
        if result.is_error {
            break result;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the page never went away"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        result.text().contains("not connected") || result.text().contains("disconnected"),
        "{}",
        result.text()
    );
}
