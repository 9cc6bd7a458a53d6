//! W3C trace context (`_meta.traceparent`, `_meta.tracestate`: MCP 2026-07-28) through the bridge,
//! on every route a process reaches: the shipped [`Bridge::serve`] on loopback, a page over a real
//! WebSocket that records the `_meta` of each call it gets, and agents on `/mcp` (raw Streamable
//! HTTP, revisions 2025-11-25 and 2026-07-28), `/api`, the Rust API, the shipped binary's
//! `--stdio`, a call that becomes a task (read with `tasks/get` and `GET …/tasks/{id}`), and a
//! call made on a node of a cluster that relays it (NATS) to the node holding the page. The agent's
//! trace context reaches the page in the call frame's `_meta`, the call's log events carry its
//! `traceparent` (a task's "call became a task" too), and the result gives it back — after a
//! `redact` rule that would match it. A malformed one is dropped with a warning, never logged, and
//! the call goes on.
//!
//! The cluster test needs a NATS server (`NATS_SERVER`, as `cargo xtask test` sets it); without
//! one it says so and passes.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use client_tools_bridge::{Bridge, BridgeConfig, CallOptions, Policy};
use client_tools_core::protocol;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

mod cluster_nodes;
mod log_capture;
mod page_socket;

use cluster_nodes::{nats, node};
use log_capture::logged;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const STATE: &str = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
/// What the page puts in its results' `_meta` under the same keys (a page that cannot be trusted
/// with them).
const PAGE_PARENT: &str = "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-01";

/// Redacts 16 hex digits in `echo`'s results (the trace ids would match), and logs its calls.
const POLICY: &str = r#"
[[rule]]
id = "hex"
tools = ["echo"]
action = "redact"
patterns = ["[0-9a-f]{16}"]

[[rule]]
id = "audit-echo"
tools = ["echo"]
action = "log"
"#;

/// The `_meta` of each call the page received, in order.
type Received = Arc<Mutex<Vec<Value>>>;

struct Setup {
    bridge: Bridge,
    address: SocketAddr,
    page: String,
    received: Received,
    http: reqwest::Client,
}

/// A bridge serving on loopback, with [`POLICY`].
async fn serve() -> (Bridge, SocketAddr) {
    log_capture::capture(tracing::Level::INFO);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let bridge = Bridge::new(BridgeConfig {
        listen: address,
        policy: Arc::new(Policy::parse(POLICY).unwrap()),
        ..Default::default()
    });
    let server = bridge.clone();
    tokio::spawn(async move { server.serve(listener).await });
    (bridge, address)
}

async fn start() -> Setup {
    let (bridge, address) = serve().await;
    let received = Received::default();
    let page = connect_page(address, &received).await;
    listed_on(&bridge, &page).await;
    Setup::new(bridge, address, page, received)
}

/// Waits until `bridge` has the page's tools.
async fn listed_on(bridge: &Bridge, page: &str) {
    let deadline = Instant::now() + WAIT;
    while !bridge
        .session(page)
        .is_some_and(|s| s.has_listed_tools() && s.is_connected())
    {
        assert!(Instant::now() < deadline, "the page never listed its tools");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// How long any one awaited event may take before the test fails.
const WAIT: Duration = Duration::from_secs(20);

/// A page with three tools, `echo` (under the policy), `plain`, and `slow`, whose calls are
/// always tasks (`taskSupport: "required"`) for an agent that declares them; their results carry
/// the page's own `_meta`: `mine`, and trace keys of its own making.
async fn connect_page(address: SocketAddr, received: &Received) -> String {
    let (mut ws, id) = page_socket::connect_page(address).await;
    let received = received.clone();
    tokio::spawn(async move {
        while let Some(Ok(message)) = ws.next().await {
            let Message::Text(text) = message else {
                continue;
            };
            let request: Value = serde_json::from_str(text.as_str()).unwrap();
            let (Some(id), Some(method)) = (request.get("id"), request["method"].as_str()) else {
                continue;
            };
            let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
            let result = match method {
                "initialize" => json!({
                    "protocolVersion": protocol::PROTOCOL_VERSION,
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "traced-page", "version": "1.0.0"},
                }),
                "tools/list" => {
                    let mut slow = tool("slow");
                    slow["execution"] = json!({"taskSupport": "required"});
                    json!({"tools": [tool("echo"), tool("plain"), slow]})
                }
                "tools/call" => {
                    received
                        .lock()
                        .unwrap()
                        .push(request["params"]["_meta"].clone());
                    json!({"content": [{"type": "text", "text": "done"}],
                           "_meta": {"mine": 1, "traceparent": PAGE_PARENT, "tracestate": "page=1"}})
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
    id
}

/// A trace context of its own for each call (the tests share the log): `n` in its trace-id.
fn traced(n: u32) -> (String, Value) {
    let parent = format!("00-{n:032x}-00f067aa0ba902b7-01");
    let meta = json!({"traceparent": parent, "tracestate": STATE});
    (parent, meta)
}

impl Setup {
    fn new(bridge: Bridge, address: SocketAddr, page: String, received: Received) -> Self {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(WAIT)
            .build()
            .unwrap();
        Setup {
            bridge,
            address,
            page,
            received,
            http,
        }
    }

    /// The `_meta` of the last call the page received.
    fn last_received(&self) -> Value {
        self.received
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("a call")
    }

    async fn post(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: Value,
    ) -> (Option<String>, Value) {
        let url = format!("http://{}{path}", self.address);
        let mut request = self
            .http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let session = (response.headers().get("mcp-session-id"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await.unwrap_or_default();
        if !path.starts_with("/mcp") {
            return (session, serde_json::from_str(&text).unwrap_or(Value::Null));
        }
        let answer = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:").map(str::trim))
            .chain(std::iter::once(text.as_str()))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|message| message.get("result").is_some() || message.get("error").is_some())
            .unwrap_or(Value::Null);
        (session, answer)
    }

    /// `tools/call` on `/mcp`, revision 2025-11-25 (an initialized session): its result.
    async fn mcp_2025(&self, name: &str, meta: Value) -> Value {
        let path = format!("/mcp?session={}", self.page);
        let version = [("mcp-protocol-version", "2025-11-25")];
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"traced","version":"1"}}});
        let (session, _) = self.post(&path, &version, init).await;
        let session = session.expect("an MCP session id");
        let headers = [version[0], ("mcp-session-id", session.as_str())];
        let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        self.post(&path, &headers, note).await;
        let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
            "params":{"name": name, "arguments": {}, "_meta": meta}});
        self.post(&path, &headers, call).await.1["result"].clone()
    }

    /// `tools/call` on `/mcp`, revision 2026-07-28 (no session: the protocol in each request's
    /// `_meta`): its result.
    async fn mcp_2026(&self, name: &str, mut meta: Value) -> Value {
        meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28".into();
        meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
        let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
            "params":{"name": name, "arguments": {}, "_meta": meta}});
        let headers = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", name),
        ];
        let path = format!("/mcp?session={}", self.page);
        self.post(&path, &headers, call).await.1["result"].clone()
    }

    /// `POST /api/sessions/{id}/call` with `_meta`: the `CallToolResult` as JSON.
    async fn api(&self, name: &str, meta: Value) -> Value {
        let path = format!("/api/sessions/{}/call", self.page);
        let body = json!({"name": name, "arguments": {}, "_meta": meta});
        self.post(&path, &[], body).await.1
    }

    /// The Rust API's call with `_meta`.
    async fn rust(&self, name: &str, meta: Value) -> Value {
        let session = self.bridge.session(&self.page).unwrap();
        let meta: Map<String, Value> = serde_json::from_value(meta).unwrap();
        let options = CallOptions::new().meta(meta);
        let result = session.call_tool((name, json!({})), options).await;
        serde_json::to_value(result.into_result()).unwrap()
    }

    async fn call(&self, route: &str, name: &str, meta: Value) -> Value {
        match route {
            "mcp 2025-11-25" => self.mcp_2025(name, meta).await,
            "mcp 2026-07-28" => self.mcp_2026(name, meta).await,
            "api" => self.api(name, meta).await,
            "rust" => self.rust(name, meta).await,
            other => unreachable!("{other}"),
        }
    }
}

const ROUTES: [&str; 4] = ["mcp 2025-11-25", "mcp 2026-07-28", "api", "rust"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_trace_context_reaches_the_page_the_log_and_comes_back_on_every_route() {
    let s = start().await;
    for (n, route) in ROUTES.into_iter().enumerate() {
        for tool in ["echo", "plain"] {
            let n = 1_000 + 10 * n as u32 + (tool == "echo") as u32;
            carried(&s, route, tool, n).await;
        }
    }
}

/// A call of `tool` on `route` with trace context `n` ([`traced`]): the page gets it, the result
/// gives it back (the agent's, after the `redact` rule), the call's log events carry it.
async fn carried(s: &Setup, route: &str, tool: &str, n: u32) {
    let (parent, meta) = traced(n);
    let result = s.call(route, tool, meta).await;
    assert_eq!(result["isError"], false, "{route} {tool}: {result}");
    // The page got it in the call frame's `_meta`, beside the bridge's keys.
    let sent = s.last_received();
    assert_eq!(sent["traceparent"], parent.as_str(), "{route}: {sent}");
    assert_eq!(sent["tracestate"], STATE, "{route}: {sent}");
    assert!(sent["clienttools/timeoutMs"].is_u64(), "{route}: {sent}");
    // The result gives back the agent's, not the page's own, and after the `redact`
    // rule: its 16 hex digits are not replaced. The page's other keys stay.
    let meta = &result["_meta"];
    assert_eq!(
        meta["traceparent"],
        parent.as_str(),
        "{route} {tool}: {result}"
    );
    assert_eq!(meta["tracestate"], STATE, "{route} {tool}: {result}");
    assert_eq!(meta["mine"], 1, "{route} {tool}: {result}");
    // The call's log events carry it: its end, and the policy's events about it.
    let lines = logged(&format!("traceparent={parent}"));
    assert!(
        lines.iter().any(|line| line.contains("tool call finished")),
        "{route} {tool}: {lines:#?} {:#?}",
        logged("tool call finished")
    );
    if tool == "echo" {
        assert!(
            lines.iter().any(|line| line.contains("policy rule acted")),
            "{route}: {lines:#?}"
        );
    }
}

/// Without a trace context of the agent's, a page's own keys are the page's `_meta` like any other:
/// they reach the agent, through the operator's `redact` rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_one_the_pages_own_keys_are_any_meta() {
    let s = start().await;
    let plain = s.api("plain", json!({})).await;
    assert_eq!(plain["_meta"]["traceparent"], PAGE_PARENT, "{plain}");
    assert_eq!(s.last_received().get("traceparent"), None);
    let echo = s.api("echo", json!({})).await;
    let redacted = echo["_meta"]["traceparent"].as_str().unwrap();
    assert!(!redacted.contains("bbbbbbbbbbbbbbbb"), "{echo}");
}

/// What an agent may send that is not W3C Trace Context: the call goes on without it (the page
/// never sees it), one warning says which key and why, and the value itself is never logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_one_is_dropped_with_a_warning_and_never_logged() {
    let s = start().await;
    let upper = PARENT.to_uppercase().replace("00F067AA", "12F067AA");
    let zeros = format!("00-{}-1234567890abcdef-01", "0".repeat(32));
    let ten_kb = format!("huge={}", "x".repeat(10 * 1024));
    let newline = format!("{}\nfake log line", &PARENT[..50]);
    let cases = [
        (
            json!({"traceparent": upper.clone()}),
            "traceparent",
            "lowercase hex",
            upper.as_str(),
        ),
        (
            json!({"traceparent": zeros.clone(), "tracestate": "z=1"}),
            "traceparent",
            "all-zero",
            zeros.as_str(),
        ),
        (
            json!({"traceparent": 42}),
            "traceparent",
            "is not a string",
            "42",
        ),
        (
            json!({"traceparent": newline.clone()}),
            "traceparent",
            "55 characters",
            "fake log line",
        ),
        (
            json!({"tracestate": "lonely=1"}),
            "tracestate",
            "without a valid traceparent",
            "lonely=1",
        ),
    ];
    for (route, (meta, key, why, value)) in ROUTES.into_iter().cycle().zip(cases) {
        let result = s.call(route, "plain", meta.clone()).await;
        assert_eq!(result["isError"], false, "{route} {meta}: {result}");
        let sent = s.last_received();
        assert_eq!(sent.get("traceparent"), None, "{route}: {sent}");
        assert_eq!(sent.get("tracestate"), None, "{route}: {sent}");
        // The page's own keys come back: the agent's were dropped.
        assert_eq!(
            result["_meta"]["traceparent"], PAGE_PARENT,
            "{route}: {result}"
        );
        let warned = logged("trace context dropped");
        assert!(
            warned
                .iter()
                .any(|line| line.contains(&format!("key=\"{key}\"")) && line.contains(why)),
            "{route} {meta}: {warned:#?}"
        );
        assert!(
            logged(value).is_empty() || value == "42",
            "{value:?} was logged"
        );
    }
    // A tracestate that is not W3C's goes alone: the traceparent stays.
    let (parent, mut meta) = traced(2_000);
    meta["tracestate"] = ten_kb.as_str().into();
    let result = s.api("plain", meta).await;
    let sent = s.last_received();
    assert_eq!(sent["traceparent"], parent.as_str(), "{sent}");
    assert_eq!(sent.get("tracestate"), None, "{sent}");
    assert_eq!(result["_meta"]["traceparent"], parent.as_str(), "{result}");
    assert_eq!(result["_meta"].get("tracestate"), None, "{result}");
    assert!(logged("xxxxxxxxxx").is_empty(), "the tracestate was logged");
    assert!(logged("over 512 characters").len() == 1);
}

/// A call the bridge refuses before the page (a tool the allow-list leaves out, a `_meta` key a
/// call may not carry) still gives the trace context back, and its refusal is logged with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_gives_it_back_too() {
    let s = start().await;
    let (parent, mut meta) = traced(3_000);
    meta["clienttools/confirmedBy"] = "agent".into();
    let refused = s.api("plain", meta).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["_meta"]["traceparent"],
        parent.as_str(),
        "{refused}"
    );
    assert_eq!(refused["_meta"]["tracestate"], STATE, "{refused}");
    let lines = logged(&format!("traceparent={parent}"));
    assert!(
        lines.iter().any(|line| line.contains("tool call refused")),
        "{lines:#?}"
    );
}

/// The tasks extension an agent declares (SEP-2663).
fn with_tasks() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

impl Setup {
    /// A request on `/mcp`, revision 2026-07-28, of an agent that declares tasks: its `result`.
    async fn mcp_2026_tasks(&self, method: &str, mut params: Value, named: &str) -> Value {
        let mut meta = params["_meta"].take();
        if !meta.is_object() {
            meta = json!({});
        }
        meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28".into();
        meta["io.modelcontextprotocol/clientCapabilities"] = with_tasks();
        params["_meta"] = meta;
        let request = json!({"jsonrpc":"2.0","id":8,"method":method,"params":params});
        let headers = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
            ("mcp-name", named),
        ];
        let path = format!("/mcp?session={}", self.page);
        self.post(&path, &headers, request).await.1["result"].clone()
    }

    /// `slow` called as a task on `route` ("mcp 2026-07-28" or "api") with `meta`: the task's id.
    async fn task(&self, route: &str, meta: Value) -> String {
        let created = match route {
            "mcp 2026-07-28" => {
                let params = json!({"name": "slow", "arguments": {}, "_meta": meta});
                self.mcp_2026_tasks("tools/call", params, "slow").await
            }
            _ => {
                let path = format!("/api/sessions/{}/call", self.page);
                let body = json!({"name": "slow", "arguments": {}, "_meta": meta,
                    "capabilities": with_tasks()});
                self.post(&path, &[], body).await.1
            }
        };
        assert_eq!(created["resultType"], "task", "{route}: {created}");
        created["taskId"].as_str().unwrap().to_owned()
    }

    /// Reads task `id` on `route` until it is `completed`: its result.
    async fn completed(&self, route: &str, id: &str) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let got = match route {
                "mcp 2026-07-28" => {
                    self.mcp_2026_tasks("tasks/get", json!({"taskId": id}), id)
                        .await
                }
                _ => {
                    let url = format!(
                        "http://{}/api/sessions/{}/tasks/{id}",
                        self.address, self.page
                    );
                    let response = self.http.get(url).send().await.unwrap();
                    response.json::<Value>().await.unwrap()
                }
            };
            if got["status"] == "completed" {
                return got["result"].clone();
            }
            assert_eq!(got["status"], "working", "{route}: {got}");
            assert!(Instant::now() < deadline, "{route}: task {id}: {got}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether the page received a call whose `_meta` has `parent` and [`STATE`].
    fn page_got(&self, parent: &str) -> bool {
        (self.received.lock().unwrap().iter())
            .any(|meta| meta["traceparent"] == parent && meta["tracestate"] == STATE)
    }
}

/// A call that becomes a task (`slow`: `taskSupport: "required"`, an agent that declares tasks)
/// carries it too: the page gets it, the task's log line ("call became a task") has it, and the
/// task's result gives it back, read with `tasks/get` or `GET …/tasks/{id}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_carries_it_to_the_page_its_log_line_and_its_result() {
    let s = start().await;
    for (n, route) in ["mcp 2026-07-28", "api"].into_iter().enumerate() {
        let (parent, meta) = traced(4_000 + n as u32);
        let task = s.task(route, meta).await;
        let result = s.completed(route, &task).await;
        assert_eq!(result["isError"], false, "{route}: {result}");
        assert_eq!(
            result["_meta"]["traceparent"],
            parent.as_str(),
            "{route}: {result}"
        );
        assert_eq!(result["_meta"]["tracestate"], STATE, "{route}: {result}");
        assert_eq!(result["_meta"]["mine"], 1, "{route}: {result}");
        // The page answered, so it had the call, with the agent's trace context.
        assert!(s.page_got(&parent), "{route}: {:#?}", s.received);
        let lines = logged(&format!("traceparent={parent}"));
        assert!(
            (lines.iter()).any(|line| line.contains("call became a task") && line.contains(&task)),
            "{route}: {lines:#?} {:#?}",
            logged("call became a task")
        );
    }
}

/// The shipped binary under `--stdio`: the MCP session on its stdin and stdout (one message a
/// line), its log on stderr. Stopped when dropped.
struct StdioBridge {
    child: Child,
    stdin: ChildStdin,
    lines: std_mpsc::Receiver<String>,
    log: Arc<Mutex<Vec<String>>>,
    policy: PathBuf,
}

impl Drop for StdioBridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.policy);
    }
}

impl StdioBridge {
    /// Starts it with [`POLICY`] on a loopback port the OS picks: it and where it serves pages.
    fn start() -> (Self, SocketAddr) {
        let policy = std::env::temp_dir().join(format!(
            "client-tools-trace-context-{}-policy.toml",
            std::process::id()
        ));
        std::fs::write(&policy, POLICY).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_client-tools-bridge"))
            .args(["--listen", "127.0.0.1:0", "--stdio", "--policy"])
            .arg(&policy)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (stdin, stdout, stderr) = (
            child.stdin.take().unwrap(),
            child.stdout.take().unwrap(),
            child.stderr.take().unwrap(),
        );
        let log = Arc::new(Mutex::new(Vec::new()));
        let (said, heard) = std_mpsc::channel();
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                kept.lock().unwrap().push(line.clone());
                let _ = said.send(line);
            }
        });
        let (out, lines) = std_mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = out.send(line);
            }
        });
        let deadline = Instant::now() + WAIT;
        let address = loop {
            let line = heard
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("the bridge says where it listens");
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break rest.trim_end_matches('/').parse().unwrap();
            }
        };
        let bridge = Self {
            child,
            stdin,
            lines,
            log,
            policy,
        };
        (bridge, address)
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends request `id` and waits for its answer.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + WAIT;
        loop {
            let line = self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["id"] == id {
                return message;
            }
        }
    }

    /// The lines of its log that contain `text`.
    fn logged(&self, text: &str) -> Vec<String> {
        (self.log.lock().unwrap().iter())
            .filter(|line| line.contains(text))
            .cloned()
            .collect()
    }
}

/// The shipped binary's `--stdio` session (MCP 2025-11-25 on stdin and stdout): the agent's trace
/// context reaches the page, the call's log events on stderr carry it, the result gives it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binarys_stdio_session_carries_it() {
    let (mut stdio, address) = StdioBridge::start();
    let received = Received::default();
    let page = connect_page(address, &received).await;
    let s = Setup::new(log_only_bridge(), address, page, received);
    let deadline = Instant::now() + WAIT;
    loop {
        let url = format!("http://{address}/api/sessions");
        let sessions = s.http.get(url).send().await.unwrap().text().await.unwrap();
        if sessions.contains("\"slow\"") {
            break;
        }
        assert!(Instant::now() < deadline, "the page never listed its tools");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (parent, meta) = traced(5_000);
    let (stdio, result) = tokio::task::spawn_blocking(move || {
        let init = stdio.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "traced", "version": "1"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let params = json!({"name": "echo", "arguments": {}, "_meta": meta});
        let answer = stdio.request(2, "tools/call", params);
        (stdio, answer["result"].clone())
    })
    .await
    .unwrap();
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["_meta"]["traceparent"], parent.as_str(), "{result}");
    assert_eq!(result["_meta"]["tracestate"], STATE, "{result}");
    assert_eq!(result["_meta"]["mine"], 1, "{result}");
    let sent = s.last_received();
    assert_eq!(sent["traceparent"], parent.as_str(), "{sent}");
    assert_eq!(sent["tracestate"], STATE, "{sent}");
    // Written before the answer: the end's event, and the policy's.
    let lines = stdio.logged(&format!("traceparent={parent}"));
    assert!(
        lines.iter().any(|line| line.contains("tool call finished")),
        "{lines:#?} {:#?}",
        stdio.logged("")
    );
    assert!(
        lines.iter().any(|line| line.contains("policy rule acted")),
        "{lines:#?}"
    );
}

/// A bridge that serves nothing: [`Setup`]'s for routes that do not call through it.
fn log_only_bridge() -> Bridge {
    Bridge::new(BridgeConfig::default())
}

/// A call relayed through a cluster (NATS): made on node B, whose linked session sends the frame
/// to node A, which holds the page's socket. It carries the trace context on every route of B as
/// on one node. Needs a NATS server (`NATS_SERVER`); without one it says so and passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_relayed_through_a_cluster_carries_it() {
    let Some((_nats, url)) = nats("the cluster test of trace context is").await else {
        return;
    };
    let (bridge_a, a) = node(&url, serve().await).await;
    let (bridge_b, b) = node(&url, serve().await).await;
    let received = Received::default();
    let page = connect_page(a, &received).await;
    listed_on(&bridge_a, &page).await;
    let deadline = Instant::now() + WAIT;
    while !bridge_b
        .session(&page)
        .is_some_and(|s| s.tools().iter().any(|t| t.name == "echo"))
    {
        assert!(
            Instant::now() < deadline,
            "node B never had the page's tools"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let s = Setup::new(bridge_b, b, page, received);
    for (n, route) in ROUTES.into_iter().enumerate() {
        for tool in ["echo", "plain"] {
            let n = 6_000 + 10 * n as u32 + (tool == "echo") as u32;
            carried(&s, route, tool, n).await;
        }
    }
}
