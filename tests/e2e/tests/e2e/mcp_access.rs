//! Access control of the bridge (SPEC §9): agent bearer token, page token, page origin, and one
//! agent's binding to one page session. Raw HTTP here, so every status code is visible; the official
//! SDK clients run in `mcp_interop.rs`.

use client_tools_bridge::BridgeConfig;
use client_tools_core::connect::ConnectParams;
use client_tools_e2e::raw_page::RawPage;
use client_tools_e2e::Stack;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

const TOKEN: &str = "s3cret-token";
const PAGE_TOKEN: &str = "page-token";

/// One JSON-RPC message to `/mcp`; returns the status, the session id header and the JSON answer
/// (read from the SSE stream when there is one).
async fn mcp(
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>, Option<Value>) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.expect("the bridge answers");
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.unwrap_or_default();
    let answer = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .chain(std::iter::once(text.as_str()))
        .find_map(|data| {
            serde_json::from_str::<Value>(data)
                .ok()
                .filter(|v| v.get("jsonrpc").is_some())
        });
    (status, session, answer)
}

/// The whole SSE body of one request in an MCP session.
async fn mcp_raw(url: &str, session: &str, body: Value) -> String {
    reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", session)
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .expect("the bridge answers")
        .text()
        .await
        .unwrap_or_default()
}

/// `answer` is a JSON-RPC result that is an MCP error result whose text contains `expected`.
fn assert_error_result(answer: Option<Value>, expected: &str) {
    let answer = answer.expect("an answer");
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains(expected), "{answer}");
}

/// An initialized MCP session at `url`; returns its id.
async fn initialize(url: &str) -> String {
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"access-test","version":"1"}}});
    let (status, session, _) = mcp(url, Some(TOKEN), None, init).await;
    assert_eq!(status, 200);
    let session = session.expect("an MCP session id");
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    mcp(url, Some(TOKEN), Some(&session), initialized).await;
    session
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_origins_and_session_binding() {
    let config = BridgeConfig {
        agent_token: Some(TOKEN.into()),
        page_token: Some(PAGE_TOKEN.into()),
        ..BridgeConfig::default()
    };
    let stack = Stack::start(&format!("mcp.html#token={PAGE_TOKEN}"), config).await;
    let mcp_url = format!("{}/mcp", stack.base_url);
    let ws_url = stack.base_url.replace("http://", "ws://") + "/ws";

    // Agents: no token, or a wrong one → 401.
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}});
    assert_eq!(mcp(&mcp_url, None, None, init.clone()).await.0, 401);
    assert_eq!(
        mcp(&mcp_url, Some("wrong"), None, init.clone()).await.0,
        401
    );

    // Pages: a foreign origin → 403 before the upgrade (tokens: tests/trust.rs).
    let mut foreign = ws_url.as_str().into_client_request().unwrap();
    foreign
        .headers_mut()
        .insert("origin", "https://evil.example".parse().unwrap());
    let refused = tokio_tungstenite::connect_async(foreign).await;
    assert!(refused.unwrap_err().to_string().contains("403"));

    // A second page session (a bare WebSocket client acting as a page) with its own tool.
    let page_params = ConnectParams {
        token: Some(PAGE_TOKEN.into()),
        resume_secret: None,
    };
    let tools = json!([{"name":"other_only","inputSchema":{"type":"object"}}]);
    let mut other = RawPage::connect_with_tools(&ws_url, &page_params, tools).await;
    let other_id = other.id().to_owned();
    let answer_page = tokio::spawn(async move {
        while let Some(frame) = other.next_json().await {
            if frame["method"] == "tools/call" {
                let reply =
                    json!({"content":[{"type":"text","text":"other page ran"}],"isError":false});
                other.reply(&frame, reply).await;
            }
        }
    });

    // An MCP `?session=` naming no session is an error result, not a session made up for it.
    let nowhere = format!("{mcp_url}?session=0123456789abcdef0123456789abcdef");
    let session = initialize(&nowhere).await;
    let call = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"read_board_tasks","arguments":{}}});
    let (_, _, answer) = mcp(&nowhere, Some(TOKEN), Some(&session), call).await;
    assert_error_result(answer, "no page session '0123456789abcdef0123456789abcdef'");
    assert!(stack
        .bridge
        .session("0123456789abcdef0123456789abcdef")
        .is_none());

    // An agent bound to the real page sees only its tools and cannot reach the other page's.
    let bound = format!("{mcp_url}?session={}", stack.page.id());
    let session = initialize(&bound).await;
    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
    let (_, _, answer) = mcp(&bound, Some(TOKEN), Some(&session), list).await;
    let names: Vec<String> = answer.unwrap()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"read_board_tasks".to_owned()), "{names:?}");
    assert!(!names.contains(&"other_only".to_owned()), "{names:?}");
    let call = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"other_only","arguments":{}}});
    let (_, _, answer) = mcp(&bound, Some(TOKEN), Some(&session), call).await;
    assert_error_result(answer, "no handler registered");

    // The page's progress reaches the agent under the agent's own progress token, on the call's
    // event stream, before the result.
    let call = json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{
        "name":"work","arguments":{"waitMs":600},"_meta":{"progressToken":"agent-token-7"}}});
    let body = mcp_raw(&bound, &session, call).await;
    let progress: Vec<Value> = body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(!progress.is_empty(), "{body}");
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progressToken"] == "agent-token-7"),
        "{body}"
    );

    // The other page's agent reaches the other page only.
    let other_url = format!("{mcp_url}?session={other_id}");
    let session = initialize(&other_url).await;
    let call = json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"other_only","arguments":{}}});
    let (_, _, answer) = mcp(&other_url, Some(TOKEN), Some(&session), call).await;
    assert_eq!(
        answer.unwrap()["result"]["content"][0]["text"],
        "other page ran"
    );
    answer_page.abort();
}
