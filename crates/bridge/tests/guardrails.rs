//! Guardrails (`--policy`, docs/guardrails.md) on every route a process can reach: the shipped
//! [`Bridge::serve`] on loopback with a policy, a page over a real WebSocket that records the calls
//! it gets, and agents on `/mcp` (raw Streamable HTTP, revision 2025-11-25), `/api` and the Rust
//! API. Each action on each route; a limit shared by every route and kept across an agent's and a
//! page's reconnect; a `confirm` rule put to the agent under `--confirm-via agent`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client_tools_bridge::{Bridge, BridgeConfig, CallOptions, ConfirmVia, Policy, ACTED_META};
use client_tools_core::connect::{self, ConnectParams};
use client_tools_core::protocol;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::Message;

const POLICY: &str = r#"
[[rule]]
id = "no-secrets-in-tasks"
tools = ["create_task"]
when = 'input.title.matches("(?i)(password|api[_-]?key|secret)\\s*[:=]")'
action = "block"
message = "a task title must not hold a credential"

[[rule]]
id = "mask-cart"
tools = ["read_cart"]
action = "redact"
redact = ["card", "email"]

[[rule]]
id = "big-transfers"
tools = ["transfer"]
when = "input.amount > 500"
action = "confirm"

[[rule]]
id = "search-rate"
tools = ["search"]
action = "limit"
calls = 3
window_seconds = 600

[[rule]]
id = "audit-transfers"
tools = ["transfer"]
action = "log"
"#;

/// The calls the page received: (tool, `_meta`).
type Received = Arc<Mutex<Vec<(String, Value)>>>;

struct Setup {
    bridge: Bridge,
    address: SocketAddr,
    page: String,
    received: Received,
    resume: String,
    /// Closes the page's socket.
    close: Arc<Notify>,
    http: reqwest::Client,
}

async fn start() -> Setup {
    start_confirming_via(ConfirmVia::default()).await
}

async fn start_confirming_via(confirm_via: ConfirmVia) -> Setup {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let bridge = Bridge::new(BridgeConfig {
        listen: address,
        policy: Arc::new(Policy::parse(POLICY).unwrap()),
        confirm_via,
        ..Default::default()
    });
    let server = bridge.clone();
    tokio::spawn(async move { server.serve(listener).await });
    let received = Received::default();
    let (page, resume, close) = connect_page(address, &bridge, &received, None).await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    Setup {
        bridge,
        address,
        page,
        received,
        resume,
        close,
        http,
    }
}

/// A page that lists four tools and answers every call (`read_cart` with personal data in its
/// text and deep in its structured content). Returns its session id, its resume secret and what
/// closes its socket.
async fn connect_page(
    address: SocketAddr,
    bridge: &Bridge,
    received: &Received,
    resume: Option<String>,
) -> (String, String, Arc<Notify>) {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{address}/ws"))
        .await
        .unwrap();
    let hello = connect::encode_connect(&ConnectParams {
        token: None,
        resume_secret: resume,
    });
    ws.send(Message::Text(hello.into())).await.unwrap();
    let welcome = loop {
        if let Some(Ok(Message::Text(text))) = ws.next().await {
            break serde_json::from_str::<Value>(text.as_str()).unwrap();
        }
    };
    let id = welcome["result"]["sessionId"].as_str().unwrap().to_owned();
    let secret = welcome["result"]["resumeSecret"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let received = received.clone();
    let close = Arc::new(Notify::new());
    let closing = close.clone();
    tokio::spawn(async move {
        loop {
            let message = tokio::select! {
                message = ws.next() => message,
                () = closing.notified() => {
                    let _ = ws.close(None).await;
                    break;
                }
            };
            let Some(Ok(message)) = message else { break };
            let Message::Text(text) = message else {
                continue;
            };
            let Ok(request) = serde_json::from_str::<Value>(text.as_str()) else {
                continue;
            };
            let (Some(id), Some(method)) = (request.get("id"), request["method"].as_str()) else {
                continue;
            };
            let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
            let result = match method {
                "initialize" => json!({
                    "protocolVersion": protocol::PROTOCOL_VERSION,
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "guarded-page", "version": "1.0.0"},
                }),
                "tools/list" => json!({"tools": [
                    tool("create_task"), tool("read_cart"), tool("transfer"), tool("search"),
                ]}),
                "tools/call" => {
                    let name = request["params"]["name"].as_str().unwrap_or_default();
                    let meta = request["params"]["_meta"].clone();
                    received.lock().unwrap().push((name.to_owned(), meta));
                    match name {
                        "read_cart" => {
                            let cart = json!({
                                "items": [{"sku": "A1", "payment": {"card": "4111 1111 1111 1111"}}],
                                "owner": {"contacts": ["ada@example.com"]},
                            });
                            json!({
                                "content": [{"type": "text", "text": cart.to_string()}],
                                "structuredContent": cart,
                            })
                        }
                        other => {
                            json!({"content": [{"type": "text", "text": format!("done {other}")}]})
                        }
                    }
                }
                _ => json!({}),
            };
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
            if ws
                .send(Message::Text(answer.to_string().into()))
                .await
                .is_err()
            {
                break;
            }
        }
    });
    wait_until("the page lists its tools", || {
        bridge
            .session(&id)
            .is_some_and(|s| s.has_listed_tools() && s.is_connected())
    })
    .await;
    (id, secret, close)
}

async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

impl Setup {
    fn calls_of(&self, tool: &str) -> Vec<Value> {
        let received = self.received.lock().unwrap();
        received
            .iter()
            .filter(|(name, _)| name == tool)
            .map(|(_, meta)| meta.clone())
            .collect()
    }

    /// `POST /api/sessions/{id}/call`: the `CallToolResult` as JSON.
    async fn api(&self, name: &str, arguments: Value) -> Value {
        let url = format!("http://{}/api/sessions/{}/call", self.address, self.page);
        let response = self
            .http
            .post(url)
            .json(&json!({"name": name, "arguments": arguments}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }

    /// An initialized MCP session (2025-11-25) bound to the page.
    async fn mcp_session(&self) -> String {
        self.mcp_session_with(json!({})).await
    }

    /// [`Self::mcp_session`] for an agent declaring `capabilities`.
    async fn mcp_session_with(&self, capabilities: Value) -> String {
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":capabilities,"clientInfo":{"name":"guardrails","version":"1"}}});
        let (session, _) = self.mcp(None, init).await;
        let session = session.expect("an MCP session id");
        self.mcp(
            Some(&session),
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        )
        .await;
        session
    }

    async fn mcp(&self, session: Option<&str>, body: Value) -> (Option<String>, Option<Value>) {
        let url = format!("http://{}/mcp?session={}", self.address, self.page);
        let mut request = self
            .http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let response = request.send().await.unwrap();
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
        (session, answer)
    }

    /// A `tools/call` on `/mcp`: its result.
    async fn mcp_call(&self, session: &str, name: &str, arguments: Value) -> Value {
        let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
            "params":{"name": name, "arguments": arguments}});
        let (_, answer) = self.mcp(Some(session), call).await;
        answer.expect("an answer")["result"].clone()
    }

    /// A `tools/call` on `/mcp` whose elicitation requests (on the call's event stream) the agent
    /// answers with `answer`: the questions asked, and the call's result.
    async fn mcp_call_answering(
        &self,
        session: &str,
        name: &str,
        arguments: Value,
        answer: Value,
    ) -> (Vec<Value>, Value) {
        let url = format!("http://{}/mcp?session={}", self.address, self.page);
        let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
            "params":{"name": name, "arguments": arguments}});
        let mut response = self
            .http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", session)
            .json(&call)
            .send()
            .await
            .unwrap();
        let (mut questions, mut buffer) = (Vec::new(), String::new());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let chunk = tokio::time::timeout_at(deadline.into(), response.chunk())
                .await
                .expect("the call ends in time")
                .unwrap()
                .expect("the call's stream ended without its result");
            buffer.push_str(std::str::from_utf8(&chunk).unwrap());
            while let Some(end) = buffer.find('\n') {
                let line: String = buffer.drain(..=end).collect();
                let Some(data) = line.trim_end().strip_prefix("data: ") else {
                    continue;
                };
                let Ok(message) = serde_json::from_str::<Value>(data) else {
                    continue;
                };
                if message["method"] == "elicitation/create" {
                    questions.push(message["params"].clone());
                    let reply = json!({"jsonrpc":"2.0","id":message["id"],"result":answer});
                    let (_, _) = self.mcp(Some(session), reply).await;
                } else if message["id"] == 7 {
                    return (questions, message["result"].clone());
                }
            }
        }
    }

    /// The Rust API's call.
    async fn rust(&self, name: &str, arguments: Value) -> Value {
        let session = self.bridge.session(&self.page).unwrap();
        let result = session
            .call_tool(
                (name, arguments),
                CallOptions::new().timeout(Duration::from_secs(10)),
            )
            .await
            .into_result();
        serde_json::to_value(result).unwrap()
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

fn acted(result: &Value) -> &Value {
    &result["_meta"][ACTED_META]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_stops_the_call_before_the_page_on_every_route() {
    let s = start().await;
    let mcp = s.mcp_session().await;
    let secret = json!({"title": "api_key = 12345"});
    for result in [
        s.api("create_task", secret.clone()).await,
        s.mcp_call(&mcp, "create_task", secret.clone()).await,
        s.rust("create_task", secret.clone()).await,
    ] {
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(text(&result), "a task title must not hold a credential");
        assert_eq!(
            acted(&result),
            &json!([{"rule": "no-secrets-in-tasks", "action": "block"}])
        );
    }
    assert!(
        s.calls_of("create_task").is_empty(),
        "the page saw a blocked call"
    );
    // A harmless title goes through on every route.
    for result in [
        s.api("create_task", json!({"title": "milk"})).await,
        s.mcp_call(&mcp, "create_task", json!({"title": "milk"}))
            .await,
        s.rust("create_task", json!({"title": "milk"})).await,
    ] {
        assert_eq!(text(&result), "done create_task", "{result}");
        assert!(acted(&result).is_null());
    }
    assert_eq!(s.calls_of("create_task").len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redact_reaches_no_agent_on_any_route() {
    let s = start().await;
    let mcp = s.mcp_session().await;
    for result in [
        s.api("read_cart", json!({})).await,
        s.mcp_call(&mcp, "read_cart", json!({})).await,
        s.rust("read_cart", json!({})).await,
    ] {
        let whole = result.to_string();
        assert!(!whole.contains("4111"), "{whole}");
        assert!(!whole.contains("ada@example.com"), "{whole}");
        assert_eq!(
            result["structuredContent"]["items"][0]["payment"]["card"],
            "[redacted]"
        );
        assert!(text(&result).contains("[redacted]"), "{whole}");
        assert_eq!(
            acted(&result),
            &json!([{"rule": "mask-cart", "action": "redact"}])
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_asks_the_page_whatever_its_own_policy_and_only_when_it_holds() {
    let s = start().await;
    let mcp = s.mcp_session().await;
    for result in [
        s.api("transfer", json!({"amount": 900})).await,
        s.mcp_call(&mcp, "transfer", json!({"amount": 900})).await,
        s.rust("transfer", json!({"amount": 900})).await,
    ] {
        assert_eq!(text(&result), "done transfer", "{result}");
        assert_eq!(
            acted(&result),
            &json!([{"rule": "big-transfers", "action": "confirm"}])
        );
    }
    s.rust("transfer", json!({"amount": 10})).await;
    let metas = s.calls_of("transfer");
    assert_eq!(metas.len(), 4);
    for meta in &metas[..3] {
        assert_eq!(meta["clienttools/requireConfirmation"], true, "{meta}");
    }
    assert!(metas[3].get("clienttools/requireConfirmation").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_limit_for_every_route_kept_across_reconnects() {
    let s = start().await;
    let first_agent = s.mcp_session().await;
    assert_eq!(text(&s.api("search", json!({})).await), "done search");
    assert_eq!(
        text(&s.mcp_call(&first_agent, "search", json!({})).await),
        "done search"
    );
    // The agent reconnects (a new MCP session), the page reconnects (same session): one count.
    let second_agent = s.mcp_session().await;
    s.close.notify_one();
    let session = s.bridge.session(&s.page).unwrap();
    wait_until("the page is gone", || !session.is_connected()).await;
    let (again, _, _) =
        connect_page(s.address, &s.bridge, &s.received, Some(s.resume.clone())).await;
    assert_eq!(again, s.page, "the page resumed its session");
    assert_eq!(text(&s.rust("search", json!({})).await), "done search");
    for result in [
        s.api("search", json!({})).await,
        s.mcp_call(&second_agent, "search", json!({})).await,
        s.rust("search", json!({})).await,
    ] {
        assert_eq!(result["isError"], true, "{result}");
        assert!(
            text(&result).starts_with(
                "rate limit of rule 'search-rate': at most 3 calls in 600 s per page session"
            ),
            "{result}"
        );
        assert_eq!(
            acted(&result),
            &json!([{"rule": "search-rate", "action": "limit"}])
        );
    }
    assert_eq!(s.calls_of("search").len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_is_for_the_operator_alone() {
    // `log` changes nothing the agent sees (the audit event: policy::tests).
    let s = start().await;
    let result = s.api("transfer", json!({"amount": 1})).await;
    assert_eq!(text(&result), "done transfer");
    assert!(acted(&result).is_null(), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_via_agent_asks_the_agent_when_a_confirm_rule_holds() {
    let s = start_confirming_via(ConfirmVia::Agent).await;
    let agent = s.mcp_session_with(json!({"elicitation": {}})).await;
    // `transfer` does not ask for confirmation itself: the rule makes its big calls need it.
    let (asked, result) = s
        .mcp_call_answering(
            &agent,
            "transfer",
            json!({"amount": 900}),
            json!({"action": "decline"}),
        )
        .await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("transfer"),
        "{asked:?}"
    );
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        text(&result).starts_with("rejected by the user"),
        "{result}"
    );
    assert!(s.calls_of("transfer").is_empty(), "a declined call ran");
    // Where the rule does not hold, nobody is asked and the call runs.
    let (asked, result) = s
        .mcp_call_answering(
            &agent,
            "transfer",
            json!({"amount": 10}),
            json!({"action": "decline"}),
        )
        .await;
    assert!(asked.is_empty(), "{asked:?}");
    assert_eq!(text(&result), "done transfer", "{result}");
    assert_eq!(s.calls_of("transfer").len(), 1);
}
