//! A cancelled call's partial value through the bridge (issue 36 point 4, SPEC §7 `ctx.partial`),
//! with a page over a real WebSocket (`tests/page_socket`) that answers as the SDK does: when the
//! bridge cancels a call asking for the answer (`_meta["clienttools/answer"]: true`), the page ends
//! it with an error result carrying its handler's partial value.
//!
//! - `tasks/cancel`: the task is `cancelled` at once (as before) and stays so; the page's answer,
//!   with the partial value, after the operator's rules, is the cancelled task's `statusMessage`
//!   (what every client reads: the extension's `CancelledTask` has no `result`) and, where the
//!   task is written as JSON (`/api`), its `result`; without a partial value, neither.
//! - An agent's `notifications/cancelled`: nothing is sent to the agent; the bridge logs that the
//!   call had a partial value (the value itself only with `--log-payloads`, redacted as results).
//! - The Rust API's cancel: the call ends with that error result.
//! - In a cluster: a task kept by one node whose page is on another, cancelled through the node
//!   holding the page, keeps the partial value too. (Needs a NATS server, `NATS_SERVER`, as
//!   `cargo xtask test` sets it; without one that test says so and passes.)

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client_tools_bridge::{Bridge, BridgeConfig, CallEnd, CallOptions, Policy};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

mod agent_http;
mod cluster_nodes;
mod log_capture;
mod page_socket;

use agent_http::{http, mcp_2025};
use cluster_nodes::{nats, node};

/// How long any one awaited event may take before the test fails.
const WAIT: Duration = Duration::from_secs(20);

/// The operator masks e-mail addresses in everything an agent reads.
const POLICY: &str = r#"
[[rule]]
id = "mask"
tools = ["*"]
action = "redact"
redact = ["email"]
"#;

/// What the handler of `export` had done when it was cancelled.
fn partial() -> Value {
    json!({"rows": 2, "contact": "eve@example.com"})
}

/// The log's lines about page session `session` that contain `text`.
fn logged(session: &str, text: &str) -> Vec<String> {
    let mut lines = log_capture::logged(text);
    lines.retain(|line| line.contains(session));
    lines
}

async fn serve(log_payloads: bool) -> (Bridge, SocketAddr) {
    log_capture::capture(tracing::Level::DEBUG);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let bridge = Bridge::new(BridgeConfig {
        listen: address,
        policy: Arc::new(Policy::parse(POLICY).unwrap()),
        log_payloads,
        ..Default::default()
    });
    let server = bridge.clone();
    tokio::spawn(async move { server.serve(listener).await });
    (bridge, address)
}

/// The page: its session, the tools it was called for, and the cancels it received.
struct Page {
    session: String,
    calls: Arc<Mutex<Vec<String>>>,
    cancels: Arc<Mutex<Vec<Value>>>,
}

/// `export` keeps a partial value, `export_plain` none; both run until cancelled.
fn listed() -> Value {
    let tool = |name: &str| {
        json!({"name": name, "inputSchema": {"type": "object"},
                                   "execution": {"taskSupport": "optional"}})
    };
    json!({"tools": [tool("export"), tool("export_plain")]})
}

async fn page(address: SocketAddr) -> Page {
    let (mut ws, session) = page_socket::connect_page(address).await;
    let calls = Arc::new(Mutex::new(Vec::new()));
    let cancels = Arc::new(Mutex::new(Vec::new()));
    let (called, cancelled) = (calls.clone(), cancels.clone());
    tokio::spawn(async move {
        // The running calls: request id → tool.
        let mut running: Vec<(Value, String)> = Vec::new();
        while let Some(Ok(message)) = ws.next().await {
            let Message::Text(text) = message else {
                continue;
            };
            let frame: Value = serde_json::from_str(text.as_str()).unwrap();
            let id = frame.get("id").cloned();
            let reply = match (frame["method"].as_str(), id) {
                (Some("initialize"), Some(id)) => json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "export-page", "version": "1"}}}),
                (Some("tools/list"), Some(id)) => {
                    json!({"jsonrpc": "2.0", "id": id, "result": listed()})
                }
                (Some("tools/call"), Some(id)) => {
                    let tool = frame["params"]["name"].as_str().unwrap_or_default();
                    called.lock().unwrap().push(tool.to_owned());
                    running.push((id, tool.to_owned()));
                    continue;
                }
                (Some("notifications/cancelled"), None) => {
                    let params = frame["params"].clone();
                    cancelled.lock().unwrap().push(params.clone());
                    let at = running
                        .iter()
                        .position(|(id, _)| *id == params["requestId"]);
                    let Some((id, tool)) = at.map(|at| running.remove(at)) else {
                        continue;
                    };
                    if params["_meta"]["clienttools/answer"] != true {
                        continue; // SPEC §5: no result after a cancel
                    }
                    // As the page engine answers (crates/core/tests/partial_results.rs).
                    let reason = params["reason"].as_str().unwrap_or_default();
                    let mut result = json!({"isError": true, "content": [
                        {"type": "text", "text": format!("cancelled by the runtime: {reason}")}]});
                    if tool == "export" {
                        let carried = json!({"partial": partial()});
                        result["content"]
                            .as_array_mut()
                            .unwrap()
                            .push(json!({"type": "text", "text": carried.to_string()}));
                        result["structuredContent"] = carried;
                    }
                    json!({"jsonrpc": "2.0", "id": id, "result": result})
                }
                (Some(_), Some(id)) => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
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
    Page {
        session,
        calls,
        cancels,
    }
}

impl Page {
    async fn until_called(&self, tool: &str, times: usize) {
        let calls = self.calls.clone();
        eventually(&format!("the page got {times} call(s) of {tool}"), || {
            calls.lock().unwrap().iter().filter(|t| *t == tool).count() >= times
        })
        .await;
    }

    /// The cancels the page received.
    fn cancels(&self) -> Vec<Value> {
        self.cancels.lock().unwrap().clone()
    }
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn listed_on(bridge: &Bridge, session: &str) {
    let deadline = Instant::now() + WAIT;
    while !bridge
        .session(session)
        .is_some_and(|s| s.has_listed_tools() && s.is_connected())
    {
        assert!(Instant::now() < deadline, "the page never listed its tools");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// One 2026-07-28 request on `/mcp?session=…` of an agent declaring the tasks extension.
async fn mcp_2026(address: SocketAddr, session: &str, method: &str, params: Value) -> Value {
    let capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    agent_http::mcp_2026(address, session, method, params, "partial", capabilities).await
}

/// A `tools/call` that becomes a task (the page holds it past the task window): its id.
async fn task_of(address: SocketAddr, page: &Page, tool: &str) -> String {
    let call = json!({"name": tool, "arguments": {}});
    let created = mcp_2026(address, &page.session, "tools/call", call).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

/// `tasks/get` until `done` holds of the task: the task.
async fn task_until(
    address: SocketAddr,
    session: &str,
    task: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let got = mcp_2026(address, session, "tasks/get", json!({"taskId": task})).await;
        let got = got["result"].clone();
        if done(&got) {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "task {task}: {got}\n{}",
            logged(session, "").join("\n")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `GET /api/sessions/{session}/tasks/{task}`: the task as JSON.
async fn api_task(address: SocketAddr, session: &str, task: &str) -> Value {
    let url = format!("http://{address}/api/sessions/{session}/tasks/{task}");
    http().get(url).send().await.unwrap().json().await.unwrap()
}

/// `tasks/cancel`: the task is `cancelled` at once and stays so; the page is asked for its answer,
/// and the one carrying the handler's partial value, redacted by the operator's rules, is the
/// task's `statusMessage` (and its `result` on `/api`). Without a partial value, neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_says_what_was_done() {
    let (bridge, address) = serve(false).await;
    let page = page(address).await;
    let session = page.session.clone();
    listed_on(&bridge, &session).await;

    let task = task_of(address, &page, "export").await;
    page.until_called("export", 1).await;
    let ack = mcp_2026(address, &session, "tasks/cancel", json!({"taskId": task})).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    // Cancelled before the acknowledgement (2025-11-25's rule), and it stays so.
    let now = mcp_2026(address, &session, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(now["result"]["status"], "cancelled", "{now}");

    let done = task_until(address, &session, &task, |t| {
        t.get("statusMessage").is_some()
    })
    .await;
    assert_eq!(done["status"], "cancelled", "{done}");
    let message = done["statusMessage"].as_str().unwrap();
    let (why, carried) = message.split_once('\n').unwrap();
    assert_eq!(
        why,
        "cancelled by the runtime: cancelled by the agent (tasks/cancel)"
    );
    let masked = json!({"partial": {"rows": 2, "contact": "[redacted email]"}});
    assert_eq!(serde_json::from_str::<Value>(carried).unwrap(), masked);
    assert!(!done.to_string().contains("eve@example.com"), "{done}");
    let cancel = &page.cancels()[0];
    assert_eq!(cancel["_meta"]["clienttools/answer"], true, "{cancel}");
    // Written as JSON, the task has the error result itself.
    let read = api_task(address, &session, &task).await;
    assert_eq!(read["status"], "cancelled", "{read}");
    assert_eq!(read["result"]["isError"], true, "{read}");
    assert_eq!(read["result"]["structuredContent"], masked, "{read}");

    // Without a partial value: `cancelled`, nothing more, as before.
    let task = task_of(address, &page, "export_plain").await;
    page.until_called("export_plain", 1).await;
    mcp_2026(address, &session, "tasks/cancel", json!({"taskId": task})).await;
    eventually("the page got the second cancel", || {
        page.cancels().len() == 2
    })
    .await;
    // The page answered that cancel at once; a later task's message shows the bridge read it.
    let later = task_of(address, &page, "export").await;
    page.until_called("export", 2).await;
    mcp_2026(address, &session, "tasks/cancel", json!({"taskId": later})).await;
    task_until(address, &session, &later, |t| {
        t.get("statusMessage").is_some()
    })
    .await;
    let plain = api_task(address, &session, &task).await;
    assert_eq!(plain["status"], "cancelled", "{plain}");
    assert!(plain.get("result").is_none(), "{plain}");
    assert!(plain.get("statusMessage").is_none(), "{plain}");
}

/// An agent's `notifications/cancelled` (2025-11-25): the agent asked not to hear back, so the
/// partial value is not sent to it; the bridge logs that the call had one — without the value,
/// which only `--log-payloads` writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_cancel_sends_it_nothing_and_the_log_says_there_was_a_partial_value() {
    let (bridge, address) = serve(false).await;
    let page = page(address).await;
    let session = page.session.clone();
    listed_on(&bridge, &session).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "partial", "version": "1"}}});
    let (given, _) = mcp_2025(address, &session, None, init).await;
    let mcp_session = given.expect("an MCP session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    mcp_2025(address, &session, Some(&mcp_session), initialized).await;

    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "export", "arguments": {}}});
    let calling = {
        let (session, mcp_session) = (session.clone(), mcp_session.clone());
        tokio::spawn(async move { mcp_2025(address, &session, Some(&mcp_session), call).await })
    };
    page.until_called("export", 1).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 7, "reason": "the agent changed its mind"}});
    mcp_2025(address, &session, Some(&mcp_session), cancel).await;

    eventually("the bridge logs the partial value's existence", || {
        !logged(&session, "the cancelled call had a partial value").is_empty()
    })
    .await;
    assert_eq!(page.cancels()[0]["_meta"]["clienttools/answer"], true);
    assert!(logged(&session, "tool call partial value").is_empty());
    assert!(logged(&session, "eve@example.com").is_empty());
    assert!(logged(&session, "rows").is_empty());
    // Whatever the agent's request stream carried, the partial value is not in it.
    if calling.is_finished() {
        let (_, text) = calling.await.unwrap();
        assert!(!text.contains("rows"), "{text}");
    } else {
        calling.abort();
    }
}

/// The Rust API's cancel asks for the answer too: the call ends with the error result carrying
/// the partial value (redacted); `--log-payloads` writes the value, redacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_callers_cancel_ends_with_the_partial_value_logged_with_payloads() {
    let (bridge, address) = serve(true).await;
    let page = page(address).await;
    let session = page.session.clone();
    listed_on(&bridge, &session).await;

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let calls = page.calls.clone();
    let cancel = async move {
        let _ = stopped.await;
        "the caller stopped".to_owned()
    };
    let running = bridge.session(&session).unwrap();
    let call = running.call_tool(("export", json!({})), CallOptions::new().cancel(cancel));
    let stopper = async move {
        eventually("the page got the call", || {
            !calls.lock().unwrap().is_empty()
        })
        .await;
        let _ = stop.send(());
    };
    let (end, ()) = tokio::join!(call, stopper);
    let CallEnd::Result(result) = end else {
        panic!("the answer to the cancel: {end:?}")
    };
    assert!(result.is_error);
    assert_eq!(
        result.text(),
        "cancelled by the runtime: the caller stopped"
    );
    let masked = json!({"rows": 2, "contact": "[redacted email]"});
    assert_eq!(client_tools_core::partial::of(&result), Some(masked));

    let lines = logged(&session, "tool call partial value");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("[redacted email]"), "{lines:?}");
    assert!(logged(&session, "eve@example.com").is_empty());
}

/// A task of an agent on node B, whose page is on node A, cancelled through node A: the cancel
/// travels to the page with its `clienttools/answer`, and the answer back to the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_on_another_node_than_its_page_keeps_the_partial_value() {
    let Some((_nats, url)) = nats("the cluster test of partial values is").await else {
        return;
    };
    let (bridge_a, a) = node(&url, serve(false).await).await;
    let (bridge_b, b) = node(&url, serve(false).await).await;
    let page = page(a).await;
    let session = page.session.clone();
    listed_on(&bridge_a, &session).await;
    let deadline = Instant::now() + WAIT;
    while !(bridge_b.session(&session))
        .is_some_and(|s| s.tools().iter().any(|t| t.name == "export"))
    {
        assert!(
            Instant::now() < deadline,
            "node B never had the page's tools"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let task = task_of(b, &page, "export").await;
    page.until_called("export", 1).await;
    let ack = mcp_2026(a, &session, "tasks/cancel", json!({"taskId": task})).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let done = task_until(a, &session, &task, |t| t.get("statusMessage").is_some()).await;
    assert_eq!(done["status"], "cancelled", "{done}");
    let message = done["statusMessage"].as_str().unwrap();
    let masked = json!({"partial": {"rows": 2, "contact": "[redacted email]"}});
    let carried = message.split_once('\n').unwrap().1;
    assert_eq!(serde_json::from_str::<Value>(carried).unwrap(), masked);
    assert_eq!(page.cancels()[0]["_meta"]["clienttools/answer"], true);
}
