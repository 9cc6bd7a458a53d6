//! Results from user-generated content (issue 36 point 3, SPEC §7 `untrustedContentHint`): every
//! result of a tool whose annotations say `untrustedContentHint: true` reaches every agent with
//! `_meta["clienttools/untrusted"]: true` — the page's result and the bridge's error result in its
//! stead, after the operator's policy, whatever the page put under that key — on the Rust API,
//! `/api`, `/mcp` on both revisions, a task read with `tasks/get` and `GET …/tasks/{id}`, the
//! shipped binary's `--stdio`, and through a node of a cluster without the page. A `--tools` tool
//! is marked by the file's annotations. The policy's conditions read the tool's annotations
//! (`annotations`), on the node holding the page too. A page over a real WebSocket answers as a
//! page would (`tests/page_socket`).
//!
//! The cluster test needs a NATS server (`NATS_SERVER`, as `cargo xtask test` sets it); without
//! one it says so and passes.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use client_tools_bridge::{
    AgentTools, Bridge, BridgeConfig, CallOptions, Policy, ACTED_META, UNTRUSTED_META,
};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

mod agent_http;
mod cluster_nodes;
mod page_socket;

use agent_http::{answer_in, http};
use cluster_nodes::{nats, node};

/// How long any one awaited event may take before the test fails.
const WAIT: Duration = Duration::from_secs(20);

const POLICY: &str = r#"
# The results of tools that hold others' content: e-mail addresses masked.
[[rule]]
id = "mask-untrusted"
tools = ["*"]
when = 'has(annotations.untrustedContentHint) && annotations.untrustedContentHint == true'
action = "redact"
redact = ["email"]

# Tools that read others' content send nothing: refused before the page sees the call.
[[rule]]
id = "untrusted-sends-nothing"
tools = ["*"]
when = 'has(annotations.untrustedContentHint) && annotations.untrustedContentHint && has(input.send)'
action = "block"
message = "a tool that reads others' content sends nothing"

# A result withheld after the page answered: the error result in its stead.
[[rule]]
id = "withhold"
tools = ["withheld_reviews"]
when = "has(result.content)"
action = "block"
message = "not today"

# Counted where the page's socket is (the node holding it reads the annotations there).
[[rule]]
id = "one-limited"
tools = ["limited_reviews"]
when = "annotations.untrustedContentHint == true"
action = "limit"
calls = 1
window_seconds = 600

# Today's rules on `tool` decide as before.
[[rule]]
id = "by-name"
tools = ["*"]
when = "tool == 'blocked_by_name'"
action = "block"
message = "blocked by name"
"#;

/// The `--tools` file: an agent-defined tool whose results hold others' content.
const TOOLS: &str = r#"[{
    "name": "file_reviews", "description": "Reviews the agent side defines",
    "inputSchema": {"type": "object", "properties": {"send": {"type": "string"}}},
    "annotations": {"readOnlyHint": true, "untrustedContentHint": true}
}]"#;

const UNTRUSTED: &[&str] = &[
    "read_reviews",
    "broken_reviews",
    "refusing_reviews",
    "withheld_reviews",
    "file_reviews",
];

fn config(address: SocketAddr) -> BridgeConfig {
    BridgeConfig {
        listen: address,
        policy: Arc::new(Policy::parse(POLICY).unwrap()),
        tools: Arc::new(AgentTools::parse(TOOLS).unwrap()),
        ..Default::default()
    }
}

async fn serve(config: impl FnOnce(SocketAddr) -> BridgeConfig) -> (Bridge, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let bridge = Bridge::new(config(address));
    let server = bridge.clone();
    tokio::spawn(async move { server.serve(listener).await });
    (bridge, address)
}

/// The page: its session, what lets one held `slow_reviews` call answer, and the tools it was
/// called for.
struct Page {
    session: String,
    release: mpsc::Sender<()>,
    received: Arc<Mutex<Vec<String>>>,
}

impl Page {
    fn calls_of(&self, tool: &str) -> usize {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|t| *t == tool)
            .count()
    }
}

fn listed() -> Value {
    let untrusted = json!({"readOnlyHint": true, "untrustedContentHint": true});
    let tool = |name: &str, annotations: &Value| json!({"name": name, "inputSchema": {"type": "object"}, "annotations": annotations});
    let mut slow = tool("slow_reviews", &untrusted);
    slow["execution"] = json!({"taskSupport": "optional"});
    json!({"tools": [
        tool("read_reviews", &untrusted),
        tool("broken_reviews", &untrusted),
        tool("refusing_reviews", &untrusted),
        tool("withheld_reviews", &untrusted),
        tool("limited_reviews", &untrusted),
        tool("blocked_by_name", &untrusted),
        slow,
        // Not untrusted: a false hint, none at all, and one whose page marks its results itself.
        tool("plain", &json!({"untrustedContentHint": false})),
        json!({"name": "bare", "inputSchema": {"type": "object"}}),
        tool("self_marked", &json!({"readOnlyHint": true})),
        // What `registerHandler("file_reviews")` lists: the file's tool replaces it.
        {"name": "file_reviews", "inputSchema": {"type": "object"},
         "_meta": {"clienttools/kind": "handler"}},
    ]})
}

/// What the page answers to a call of `tool`: a result, or a JSON-RPC error.
fn answer(tool: &str) -> Result<Value, Value> {
    let text = |text: &str| json!({"content": [{"type": "text", "text": text}]});
    Ok(match tool {
        // The page tries to unmark its own untrusted tool's result.
        "read_reviews" | "file_reviews" | "limited_reviews" => json!({
            "content": [{"type": "text", "text": "Loved it! Write to eve@example.com"}],
            "_meta": {UNTRUSTED_META: false, "app/own": 1},
        }),
        "broken_reviews" => json!({
            "content": [{"type": "text", "text": "the review service failed"}], "isError": true,
        }),
        "refusing_reviews" => {
            return Err(json!({"code": -32603, "message": "reviews are closed"}));
        }
        "slow_reviews" => text("a late review"),
        "self_marked" => json!({
            "content": [{"type": "text", "text": "marked by its page"}],
            "_meta": {UNTRUSTED_META: true},
        }),
        _ => text("plain eve@example.com"),
    })
}

async fn page(address: SocketAddr) -> Page {
    let (mut ws, session) = page_socket::connect_page(address).await;
    let (release, mut released) = mpsc::channel::<()>(8);
    let received = Arc::new(Mutex::new(Vec::new()));
    let heard = received.clone();
    tokio::spawn(async move {
        // `slow_reviews` calls waiting, and releases that came before their call.
        let (mut held, mut early) = (Vec::<Value>::new(), 0usize);
        loop {
            let frame = tokio::select! {
                message = ws.next() => match message {
                    Some(Ok(Message::Text(text))) => serde_json::from_str::<Value>(text.as_str()).unwrap(),
                    Some(Ok(_)) => continue,
                    _ => return,
                },
                Some(()) = released.recv() => {
                    match held.pop() {
                        Some(id) => {
                            let reply = reply(&id, answer("slow_reviews"));
                            if ws.send(Message::Text(reply.to_string().into())).await.is_err() {
                                return;
                            }
                        }
                        None => early += 1,
                    }
                    continue;
                }
            };
            let (Some(id), Some(method)) = (frame.get("id").cloned(), frame["method"].as_str())
            else {
                continue;
            };
            let reply = match method {
                "initialize" => json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "reviews-page", "version": "1"}}}),
                "tools/list" => json!({"jsonrpc": "2.0", "id": id, "result": listed()}),
                "tools/call" => {
                    let tool = frame["params"]["name"].as_str().unwrap_or_default();
                    heard.lock().unwrap().push(tool.to_owned());
                    if tool == "slow_reviews" && early == 0 {
                        held.push(id);
                        continue;
                    }
                    if tool == "slow_reviews" {
                        early -= 1;
                    }
                    reply(&id, answer(tool))
                }
                _ => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
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
        release,
        received,
    }
}

fn reply(id: &Value, answer: Result<Value, Value>) -> Value {
    match answer {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    }
}

/// Waits until `check` holds (each look is an event: a request answered), within [`WAIT`].
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until the bridge has the page's tools.
async fn listed_on(bridge: &Bridge, session: &str) {
    eventually("the page lists its tools", || async {
        bridge
            .session(session)
            .is_some_and(|s| s.has_listed_tools() && s.is_connected())
    })
    .await;
}

/// A route an agent calls a tool on: the `CallToolResult` as JSON.
#[derive(Clone, Copy)]
enum Route<'a> {
    Rust(&'a Bridge),
    Api,
    /// `/mcp` on 2025-11-25, in the MCP session given.
    Mcp2025(&'a str),
    Mcp2026,
}

async fn call(
    route: Route<'_>,
    address: SocketAddr,
    session: &str,
    tool: &str,
    arguments: Value,
) -> Value {
    match route {
        Route::Rust(bridge) => {
            let result = bridge
                .session(session)
                .unwrap()
                .call_tool((tool, arguments), CallOptions::new().timeout(WAIT))
                .await
                .into_result();
            serde_json::to_value(result).unwrap()
        }
        Route::Api => {
            let (status, result) = api(
                address,
                session,
                "call",
                json!({"name": tool, "arguments": arguments}),
            )
            .await;
            assert_eq!(status, 200, "{result}");
            result
        }
        Route::Mcp2025(mcp_session) => {
            let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}});
            let answer = mcp_2025(address, session, Some(mcp_session), body).await.1;
            answer["result"].clone()
        }
        Route::Mcp2026 => {
            let params = json!({"name": tool, "arguments": arguments});
            mcp_2026(address, session, "tools/call", params, false).await["result"].clone()
        }
    }
}

/// `POST /api/sessions/{session}/{path}`: its status and JSON body.
async fn api(address: SocketAddr, session: &str, path: &str, body: Value) -> (u16, Value) {
    let response = http()
        .post(format!("http://{address}/api/sessions/{session}/{path}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// One 2025-11-25 message on `/mcp?session=…`: the MCP session id the bridge gave, and the answer
/// (`Null` for a notification).
async fn mcp_2025(
    address: SocketAddr,
    session: &str,
    mcp_session: Option<&str>,
    body: Value,
) -> (Option<String>, Value) {
    let request = body.get("id").is_some();
    let (given, text) = agent_http::mcp_2025(address, session, mcp_session, body).await;
    let answer = match request {
        true => answer_in(&text),
        false => Value::Null,
    };
    (given, answer)
}

/// An initialized 2025-11-25 MCP session bound to the page.
async fn mcp_2025_session(address: SocketAddr, session: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "untrusted", "version": "1"}}});
    let (given, _) = mcp_2025(address, session, None, init).await;
    let given = given.expect("an MCP session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    mcp_2025(address, session, Some(&given), initialized).await;
    given
}

/// One 2026-07-28 request on `/mcp?session=…` (declaring the tasks extension when `tasks`): the
/// JSON-RPC answer.
async fn mcp_2026(
    address: SocketAddr,
    session: &str,
    method: &str,
    params: Value,
    tasks: bool,
) -> Value {
    let mut capabilities = json!({});
    if tasks {
        capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    }
    agent_http::mcp_2026(address, session, method, params, "untrusted", capabilities).await
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The mark, as the agent got it (`Null`: none).
fn mark(result: &Value) -> &Value {
    &result["_meta"][UNTRUSTED_META]
}

/// What every route must give for each tool of the page: asserts it, naming the route.
fn assert_marked_as_they_say(route: &str, tool: &str, result: &Value) {
    let whole = result.to_string();
    let untrusted = UNTRUSTED.contains(&tool) || tool == "self_marked";
    match untrusted {
        true => assert_eq!(mark(result), &json!(true), "{route} {tool}: {whole}"),
        false => assert!(mark(result).is_null(), "{route} {tool}: {whole}"),
    }
    match tool {
        "read_reviews" | "file_reviews" => {
            // After the operator's rules (its `annotations` condition held: redacted), the
            // page's other keys kept.
            assert_eq!(
                text(result),
                "Loved it! Write to [redacted email]",
                "{route} {tool}"
            );
            assert_eq!(result["_meta"]["app/own"], 1, "{route} {tool}: {whole}");
            assert_eq!(
                result["_meta"][ACTED_META],
                json!([{"rule": "mask-untrusted", "action": "redact"}]),
                "{route} {tool}"
            );
            assert_ne!(result["isError"], true, "{route} {tool}: {whole}");
        }
        "broken_reviews" => {
            assert_eq!(result["isError"], true, "{route} {tool}: {whole}");
            assert_eq!(text(result), "the review service failed");
        }
        "refusing_reviews" => {
            assert_eq!(result["isError"], true, "{route} {tool}: {whole}");
            assert_eq!(
                text(result),
                "the page refused the call: reviews are closed"
            );
        }
        "withheld_reviews" => {
            assert_eq!(result["isError"], true, "{route} {tool}: {whole}");
            assert_eq!(text(result), "the result was withheld: not today");
        }
        // No `annotations` condition holds for a tool without the hint: nothing redacted.
        "plain" | "bare" => {
            assert_eq!(
                text(result),
                "plain eve@example.com",
                "{route} {tool}: {whole}"
            )
        }
        _ => {}
    }
}

const TOOLS_CALLED: [&str; 8] = [
    "read_reviews",
    "broken_reviews",
    "refusing_reviews",
    "withheld_reviews",
    "file_reviews",
    "plain",
    "bare",
    "self_marked",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_marks_every_result_of_an_untrusted_tool_and_no_other() {
    let (bridge, address) = serve(config).await;
    let page = page(address).await;
    let session = page.session.as_str();
    listed_on(&bridge, session).await;
    let mcp_session = mcp_2025_session(address, session).await;
    let routes = [
        ("rust", Route::Rust(&bridge)),
        ("api", Route::Api),
        ("mcp 2025-11-25", Route::Mcp2025(&mcp_session)),
        ("mcp 2026-07-28", Route::Mcp2026),
    ];
    for (name, route) in routes {
        for tool in TOOLS_CALLED {
            let result = call(route, address, session, tool, json!({})).await;
            assert_marked_as_they_say(name, tool, &result);
        }
        // A call refused before it is sent holds nothing of the page: not marked (and the page
        // never sees it) — by the `annotations` of a `--tools` tool, and a rule on `tool`.
        let refused = call(
            route,
            address,
            session,
            "file_reviews",
            json!({"send": "x"}),
        )
        .await;
        assert_eq!(
            text(&refused),
            "a tool that reads others' content sends nothing",
            "{name}: {refused}"
        );
        assert!(mark(&refused).is_null(), "{name}: {refused}");
        let by_name = call(route, address, session, "blocked_by_name", json!({})).await;
        assert_eq!(text(&by_name), "blocked by name", "{name}: {by_name}");
    }
    assert_eq!(page.calls_of("file_reviews"), routes.len());
    assert_eq!(page.calls_of("blocked_by_name"), 0);
}

/// `tasks/get` (or `GET …/tasks/{id}` with `api`) until the task is `completed`: its result.
async fn completed_task(address: SocketAddr, session: &str, task: &str, api: bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let got = match api {
            true => {
                let response = http()
                    .get(format!(
                        "http://{address}/api/sessions/{session}/tasks/{task}"
                    ))
                    .send()
                    .await
                    .unwrap();
                response.json::<Value>().await.unwrap()
            }
            false => mcp_2026(address, session, "tasks/get", json!({"taskId": task}), true).await
                ["result"]
                .clone(),
        };
        if got["status"] == "completed" {
            return got["result"].clone();
        }
        assert!(got["status"] == "working", "{got}");
        assert!(
            Instant::now() < deadline,
            "task {task} not completed: {got}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_result_is_marked_on_mcp_and_api() {
    let (bridge, address) = serve(config).await;
    let page = page(address).await;
    let session = page.session.as_str();
    listed_on(&bridge, session).await;

    let call = json!({"name": "slow_reviews", "arguments": {}});
    let created = mcp_2026(address, session, "tools/call", call, true).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    page.release.send(()).await.unwrap();
    let task = created["taskId"].as_str().unwrap();
    let result = completed_task(address, session, task, false).await;
    assert_eq!(text(&result), "a late review", "{result}");
    assert_eq!(mark(&result), &json!(true), "{result}");

    let call = json!({"name": "slow_reviews", "arguments": {},
        "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let (status, created) = api(address, session, "call", call).await;
    assert_eq!(
        (status, &created["resultType"]),
        (200, &json!("task")),
        "{created}"
    );
    page.release.send(()).await.unwrap();
    let task = created["taskId"].as_str().unwrap();
    let result = completed_task(address, session, task, true).await;
    assert_eq!(mark(&result), &json!(true), "{result}");
}

/// A file of the test's own in the temp directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn with(name: &str, text: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "client-tools-untrusted-{}-{name}",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        Self(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The shipped binary under `--stdio`: its MCP session on stdin and stdout (one message a line).
struct StdioBridge {
    child: Child,
    stdin: ChildStdin,
    lines: std_mpsc::Receiver<String>,
}

impl Drop for StdioBridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl StdioBridge {
    /// Starts it on a loopback port the OS picks: it and the address it serves pages on.
    fn start(policy: &TempFile, tools: &TempFile) -> (Self, SocketAddr) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_client-tools-bridge"))
            .args(["--listen", "127.0.0.1:0", "--stdio", "--policy"])
            .arg(&policy.0)
            .arg("--tools")
            .arg(&tools.0)
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
        let (said, heard) = std_mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binarys_stdio_session_gets_the_marks() {
    let policy = TempFile::with("policy.toml", POLICY);
    let tools = TempFile::with("tools.json", TOOLS);
    let (mut stdio, address) = StdioBridge::start(&policy, &tools);
    let _page = page(address).await;
    eventually("the page lists its tools", || async {
        let sessions: Value = http()
            .get(format!("http://{address}/api/sessions"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        sessions.to_string().contains("read_reviews")
    })
    .await;
    let results = tokio::task::spawn_blocking(move || {
        let init = stdio.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "untrusted", "version": "1"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let mut results = Vec::new();
        for (n, tool) in TOOLS_CALLED.iter().enumerate() {
            let params = json!({"name": tool, "arguments": {}});
            let answer = stdio.request(10 + n as u64, "tools/call", params);
            results.push((tool, answer["result"].clone()));
        }
        results
    })
    .await
    .unwrap();
    for (tool, result) in results {
        assert_marked_as_they_say("stdio", tool, &result);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_the_page_gives_its_agents_the_marks() {
    let Some((_nats, url)) = nats("the cluster test of untrusted results is").await else {
        return;
    };
    let (bridge_a, a) = node(&url, serve(config).await).await;
    let (bridge_b, b) = node(&url, serve(config).await).await;
    let page = page(a).await;
    let session = page.session.as_str();
    listed_on(&bridge_a, session).await;
    eventually("node B has the page's tools", || async {
        bridge_b
            .session(session)
            .is_some_and(|s| s.tools().iter().any(|t| t.name == "read_reviews"))
    })
    .await;
    let mcp_session = mcp_2025_session(b, session).await;
    for (name, route) in [
        ("node B rust", Route::Rust(&bridge_b)),
        ("node B api", Route::Api),
        ("node B mcp 2025-11-25", Route::Mcp2025(&mcp_session)),
        ("node B mcp 2026-07-28", Route::Mcp2026),
    ] {
        for tool in TOOLS_CALLED {
            let result = call(route, b, session, tool, json!({})).await;
            assert_marked_as_they_say(name, tool, &result);
        }
    }
    // Node A counts the limit, its condition on the tool's annotations decided there: the first
    // call runs (an undecidable condition would have blocked it), the second is over the limit.
    let first = call(Route::Api, b, session, "limited_reviews", json!({})).await;
    assert_eq!(mark(&first), &json!(true), "{first}");
    assert_eq!(
        text(&first),
        "Loved it! Write to [redacted email]",
        "{first}"
    );
    let second = call(Route::Api, b, session, "limited_reviews", json!({})).await;
    assert!(
        text(&second).starts_with("rate limit of rule 'one-limited'"),
        "{second}"
    );
    assert_eq!(page.calls_of("limited_reviews"), 1);
}
