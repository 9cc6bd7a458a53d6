//! An agent's requests on a page's MCP server, `/mcp?session=…` (Streamable HTTP, revisions
//! 2025-11-25 and 2026-07-28), for the bridge's tests that call through it (`partial_results.rs`,
//! `untrusted_results.rs`). One copy, so that those tests speak to `/mcp` alike.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};

/// How long one HTTP request may take before the test fails.
const ANSWERED_WITHIN: Duration = Duration::from_secs(20);

/// A client for the bridge on loopback (no proxy).
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(ANSWERED_WITHIN)
        .build()
        .unwrap()
}

/// The JSON-RPC message answering a request in a Streamable HTTP body (JSON or SSE).
pub fn answer_in(text: &str) -> Value {
    text.lines()
        .filter_map(|line| line.strip_prefix("data:").map(str::trim).or(Some(line)))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|message| message.get("result").is_some() || message.get("error").is_some())
        .unwrap_or_else(|| panic!("no answer in {text}"))
}

/// One 2026-07-28 request on `/mcp?session=…` of agent `client` declaring `capabilities`: the
/// JSON-RPC answer.
pub async fn mcp_2026(
    address: SocketAddr,
    session: &str,
    method: &str,
    mut params: Value,
    client: &str,
    capabilities: Value,
) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let named = (params["name"].as_str())
        .or(params["taskId"].as_str())
        .unwrap_or_default()
        .to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = http()
        .post(format!("http://{address}/mcp?session={session}"))
        .header("mcp-name", named)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .json(&body)
        .send()
        .await
        .unwrap();
    answer_in(&response.text().await.unwrap())
}

/// One 2025-11-25 message on `/mcp?session=…` in MCP session `mcp_session` (`None`: it starts
/// one): the MCP session id given, and the body's text.
pub async fn mcp_2025(
    address: SocketAddr,
    session: &str,
    mcp_session: Option<&str>,
    body: Value,
) -> (Option<String>, String) {
    let mut request = http()
        .post(format!("http://{address}/mcp?session={session}"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body);
    if let Some(mcp_session) = mcp_session {
        request = request.header("mcp-session-id", mcp_session);
    }
    let response = request.send().await.unwrap();
    let given = (response.headers().get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (given, response.text().await.unwrap_or_default())
}
