//! The page as a whole MCP server, end to end on a real bridge (SPEC §11 "Resources, prompts,
//! completion"): a page on `/ws` that offers resources and prompts, an agent on `/mcp` speaking
//! revision 2026-07-28 (raw Streamable HTTP). The conformance suite's scenario
//! `input-required-result-non-tool-request`: `prompts/get` of a prompt whose handler asks the
//! agent answers `input_required`; the retry with `inputResponses` and `requestState` resumes the
//! same page request and gets the prompt. And an unknown resource: `-32602` with `data.uri`
//! (SEP-2164).

use std::time::Duration;

use client_tools_bridge::{Bridge, BridgeConfig};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

mod page_socket;

/// A page that offers a prompt asking the agent for context, and one resource.
async fn page(address: std::net::SocketAddr) -> String {
    let (mut ws, id) = page_socket::connect_page(address).await;
    tokio::spawn(async move {
        // The prompts/get waiting on its round: its request id.
        let mut asking: Option<Value> = None;
        while let Some(Ok(message)) = ws.next().await {
            let Message::Text(text) = message else {
                continue;
            };
            let frame: Value = serde_json::from_str(text.as_str()).unwrap();
            let reply = match (frame["method"].as_str(), frame.get("id")) {
                (Some(method), Some(id)) => {
                    let result = match method {
                        "initialize" => json!({
                            "protocolVersion": "2025-11-25",
                            "capabilities": {"tools": {"listChanged": true},
                                "resources": {"subscribe": true, "listChanged": true},
                                "prompts": {"listChanged": true}, "completions": {}},
                            "serverInfo": {"name": "served-page", "version": "1"},
                        }),
                        "tools/list" => json!({"tools": []}),
                        "resources/list" => {
                            json!({"resources": [{"uri": "test://static-text", "name": "static-text"}]})
                        }
                        "resources/templates/list" => json!({"resourceTemplates": []}),
                        "prompts/list" => {
                            json!({"prompts": [{"name": "test_input_required_result_prompt"}]})
                        }
                        // What the page was sent with the read: its `_meta`.
                        "resources/read" if frame["params"]["uri"] == "test://meta" => json!({
                            "contents": [{"uri": "test://meta",
                                "text": frame["params"]["_meta"].to_string()}]}),
                        "resources/read" => {
                            let uri = frame["params"]["uri"].clone();
                            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32002,
                                "message": format!("Resource not found: {uri}"), "data": {"uri": uri}}})
                        }
                        "prompts/get" => {
                            asking = Some(id.clone());
                            let call = id.as_str().unwrap();
                            json!({"jsonrpc": "2.0", "id": "round-1", "method": "clienttools/input",
                                "params": {"_meta": {"clienttools/callId": call}, "inputRequests": {
                                    "context": {"method": "elicitation/create", "params": {
                                        "message": "Context?", "requestedSchema": {"type": "object",
                                        "properties": {"context": {"type": "string"}}}}}}}})
                        }
                        _ => json!({}),
                    };
                    match result.get("jsonrpc") {
                        Some(_) => result,
                        None => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    }
                }
                // The agent's answers to the round: the prompt goes on with them.
                (None, Some(round)) if round == "round-1" => {
                    let context =
                        &frame["result"]["inputResponses"]["context"]["content"]["context"];
                    json!({"jsonrpc": "2.0", "id": asking.take().unwrap(), "result": {
                        "messages": [{"role": "user", "content": {"type": "text",
                            "text": format!("context: {}", context.as_str().unwrap())}}]}})
                }
                _ => continue,
            };
            if ws
                .send(Message::Text(reply.to_string().into()))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    id
}

/// One 2026-07-28 request on `/mcp?session=…`: its JSON-RPC response (from JSON or SSE).
async fn mcp(http: &reqwest::Client, url: &str, method: &str, mut params: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "served-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    if let Some(Value::Object(given)) = params.get("_meta") {
        for (key, value) in given {
            meta[key] = value.clone();
        }
    }
    params["_meta"] = meta;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let named = params["name"]
        .as_str()
        .or(params["uri"].as_str())
        .unwrap_or_default();
    let response = http
        .post(url)
        .header("mcp-name", named)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .json(&body)
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    let json = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:").map(str::trim).or(Some(line)))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|message| message.get("result").is_some() || message.get("error").is_some());
    json.unwrap_or_else(|| panic!("no response in {text}"))
}

#[tokio::test]
async fn a_prompt_asks_the_agent_by_input_required_and_the_retry_resumes_it() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let bridge = Bridge::new(BridgeConfig {
        listen: address,
        ..Default::default()
    });
    let server = bridge.clone();
    tokio::spawn(async move { server.serve(listener).await });
    let session = page(address).await;
    let url = format!("http://{address}/mcp?session={session}");
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();

    let listed = mcp(&http, &url, "prompts/list", json!({})).await;
    assert_eq!(
        listed["result"]["prompts"][0]["name"], "test_input_required_result_prompt",
        "{listed}"
    );
    let resources = mcp(&http, &url, "resources/list", json!({})).await;
    assert_eq!(
        resources["result"]["resources"][0]["uri"], "test://static-text",
        "{resources}"
    );

    let name = json!({"name": "test_input_required_result_prompt"});
    let asked = mcp(&http, &url, "prompts/get", name.clone()).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let key = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let state = result["requestState"].clone();
    let mut retry = name.clone();
    retry["inputResponses"] =
        json!({ key: {"action": "accept", "content": {"context": "test context"}} });
    retry["requestState"] = state.clone();
    let got = mcp(&http, &url, "prompts/get", retry.clone()).await;
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"], "context: test context",
        "{got}"
    );
    // The state is spent: the same retry again is refused.
    let again = mcp(&http, &url, "prompts/get", retry).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");

    let missing = mcp(
        &http,
        &url,
        "resources/read",
        json!({"uri": "test://missing"}),
    )
    .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert_eq!(
        missing["error"]["data"]["uri"], "test://missing",
        "{missing}"
    );
    let hostile = mcp(
        &http,
        &url,
        "resources/read",
        json!({"uri": "test://a/../b"}),
    )
    .await;
    assert_eq!(hostile["error"]["code"], -32602, "{hostile}");
}

#[tokio::test]
async fn the_agents_timeout_in_meta_reaches_the_page_and_is_bounded() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let bridge = Bridge::new(BridgeConfig {
        listen: address,
        ..Default::default()
    });
    let server = bridge.clone();
    tokio::spawn(async move { server.serve(listener).await });
    let session = page(address).await;
    let url = format!("http://{address}/mcp?session={session}");
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let read = |ms: Value| json!({"uri": "test://meta", "_meta": {"clienttools/timeoutMs": ms}});

    let asked = mcp(&http, &url, "resources/read", read(json!(123_456))).await;
    let sent = asked["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let sent: Value = serde_json::from_str(sent).unwrap_or_else(|_| panic!("{asked}"));
    assert_eq!(sent["clienttools/timeoutMs"], 123_456, "{asked}");
    // Over the bound of 300 s, or not a number: refused, as for tools/call.
    for bad in [json!(300_001), json!("soon")] {
        let refused = mcp(&http, &url, "resources/read", read(bad.clone())).await;
        assert_eq!(refused["error"]["code"], -32602, "{bad}: {refused}");
    }
}

/// Opens a `subscriptions/listen` stream (2026-07-28) on `/mcp?session=…` asking for `uris`: its
/// acknowledgment's `params.notifications`.
async fn listen_acknowledged(address: std::net::SocketAddr, session: &str, uris: &[&str]) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"notifications": {"resourcesListChanged": true, "resourceSubscriptions": uris},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "served-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut stream = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
        .post(format!("http://{address}/mcp?session={session}"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .json(&body)
        .send()
        .await
        .unwrap();
    let mut pending = String::new();
    while let Ok(Some(chunk)) = stream.chunk().await {
        pending.push_str(&String::from_utf8_lossy(&chunk));
        for line in pending.lines() {
            let Some(data) = line.strip_prefix("data:") else {
                continue;
            };
            let Ok(message) = serde_json::from_str::<Value>(data.trim()) else {
                continue;
            };
            if message["method"] == "notifications/subscriptions/acknowledged" {
                return message["params"]["notifications"].clone();
            }
        }
    }
    panic!("no acknowledgment in {pending}")
}

#[tokio::test]
async fn a_listen_stream_acknowledges_only_the_uris_it_subscribes() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let policy =
        "[[rule]]\nid = \"no-secrets\"\nresources = [\"test://secret/*\"]\naction = \"block\"\n";
    let bridge = Bridge::new(BridgeConfig {
        listen: address,
        policy: std::sync::Arc::new(client_tools_bridge::Policy::parse(policy).unwrap()),
        ..Default::default()
    });
    let server = bridge.clone();
    tokio::spawn(async move { server.serve(listener).await });
    let session = page(address).await;
    let acknowledged = listen_acknowledged(
        address,
        &session,
        &[
            "test://static-text",
            "test://secret/a",
            "test://%73ecret/b",
            "test://a/../b",
        ],
    )
    .await;
    assert_eq!(
        acknowledged["resourceSubscriptions"],
        json!(["test://static-text"]),
        "{acknowledged}"
    );
}
