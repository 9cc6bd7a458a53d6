//! Guardrails (`--policy`, docs/guardrails.md) end to end: the `client-tools-bridge` binary started
//! with a policy file, a real page (`www/guardrails.html`) in the browser, and agents on every
//! route — `/api`, `/mcp` on revisions 2025-11-25 (with the handshake) and 2026-07-28 (without),
//! `--stdio`, and two nodes of a cluster. Block: the page never sees the call. Redact: the
//! personal data in the page's result reaches no agent, in the text or the structured content.
//! Limit: one window per page session and tool, whatever the route or the node. Confirm: the page's
//! dialog asks, though the tool itself opts out of confirmation. Redact covers everything an agent
//! reads from a call, not only its result: the page's log messages (keys of nested objects too),
//! its progress message, its question to the agent, its sampling request (system prompt, messages,
//! metadata), the `_meta` it set on its result (keys too) and a task's status, round and result,
//! each collected as an agent gets it — by the official MCP Python SDK's logging, progress,
//! elicitation and sampling callbacks on `/mcp` and `--stdio` (both revisions each) and through the
//! node of a cluster that does not hold the page; by a plain HTTP client on `/api` (its rounds and
//! its tasks) and for tasks on `/mcp` (both revisions: `tasks/get`, `tasks/update`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client_tools_e2e::cluster::{Nats, Node};
use client_tools_e2e::python_steps::{self, Server};
use client_tools_e2e::webdriver::Driven;
use client_tools_e2e::{browser, e2e_dir, pkg_dir, Tab};
use fantoccini::key::Key;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

const AGENT_TOKEN: &str = "guardrails-agent-token";
const PAGE_TOKEN: &str = "guardrails-page-token";

const POLICY: &str = r#"
[[rule]]
id = "no-secrets-in-tasks"
tools = ["create_task"]
when = 'input.title.matches("(?i)(password|api[_-]?key|secret)\\s*[:=]")'
action = "block"
message = "a task title must not hold a credential"

[[rule]]
id = "mask-contacts"
tools = ["read_contact"]
action = "redact"
redact = ["email", "card"]

[[rule]]
id = "mask-chatter"
tools = ["chatty", "summarize"]
action = "redact"
redact = ["email", "card"]

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
"#;

const LIMITED: &str = "rate limit of rule 'search-rate': at most 3 calls in 600 s per page session";

/// The policy, written to a file of its own (removed on drop).
struct PolicyFile(PathBuf);

impl PolicyFile {
    fn new() -> PolicyFile {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "client-tools-guardrails-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("policy.toml");
        std::fs::write(&path, POLICY).unwrap();
        PolicyFile(path)
    }

    fn arg(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for PolicyFile {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// One `client-tools-bridge` process (no cluster) serving the e2e site, with the policy.
struct BridgeProcess {
    child: Child,
    base_url: String,
    output: Arc<Mutex<Vec<String>>>,
    _policy: PolicyFile,
}

impl BridgeProcess {
    /// Starts the binary on a free port with `--policy` and more `args`; returns once it accepts
    /// connections. Under `--stdio` its stdin and stdout are the MCP session's.
    async fn start(args: &[&str]) -> BridgeProcess {
        let policy = PolicyFile::new();
        let address = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let binary = std::env::var_os("CLIENT_TOOLS_BRIDGE_BIN")
            .map(PathBuf::from)
            .expect("CLIENT_TOOLS_BRIDGE_BIN is not set: run these through `cargo xtask test`");
        let mut child = Command::new(binary)
            .args(["--listen", &address.to_string()])
            .arg("--www")
            .arg(e2e_dir().join("www"))
            .arg("--pkg")
            .arg(pkg_dir())
            .args(["--policy", policy.arg()])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start client-tools-bridge");
        let output = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("piped stderr");
        let into = output.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                into.lock().unwrap().push(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(address).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "the bridge exited ({status}):\n{}",
                    output.lock().unwrap().join("\n")
                );
            }
            assert!(
                Instant::now() < deadline,
                "the bridge did not listen in 30 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        BridgeProcess {
            child,
            base_url: format!("http://{address}"),
            output,
            _policy: policy,
        }
    }

    fn output(&self) -> String {
        self.output.lock().unwrap().join("\n")
    }
}

/// An agent route to one page session on one bridge process (or node).
#[derive(Clone, Copy, Debug)]
enum Route {
    Api,
    Mcp2025,
    Mcp2026,
}

const HTTP_ROUTES: [Route; 3] = [Route::Api, Route::Mcp2025, Route::Mcp2026];

/// Calls `tool` on the page `session` through `base_url` by `route`: the `CallToolResult` as JSON.
async fn call(route: Route, base_url: &str, session: &str, tool: &str, arguments: Value) -> Value {
    let http = reqwest::Client::new();
    match route {
        Route::Api => {
            let response = http
                .post(format!("{base_url}/api/sessions/{session}/call"))
                .bearer_auth(AGENT_TOKEN)
                .json(&json!({"name": tool, "arguments": arguments, "timeoutMs": 60_000}))
                .send()
                .await
                .expect("the bridge answers");
            assert_eq!(response.status(), 200, "{tool} on /api");
            response.json().await.expect("JSON")
        }
        Route::Mcp2025 => {
            let url = format!("{base_url}/mcp?session={session}");
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "guardrails-e2e", "version": "1"}}});
            let (mcp_session, _) = mcp_post(&url, "2025-11-25", None, &init).await;
            let mcp_session = mcp_session.expect("an MCP session id");
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            mcp_post(&url, "2025-11-25", Some(&mcp_session), &initialized).await;
            let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}});
            let (_, answer) = mcp_post(&url, "2025-11-25", Some(&mcp_session), &body).await;
            answer["result"].clone()
        }
        Route::Mcp2026 => {
            let url = format!("{base_url}/mcp?session={session}");
            let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": tool, "arguments": arguments, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }}});
            let (_, answer) = mcp_post(&url, "2026-07-28", None, &body).await;
            answer["result"].clone()
        }
    }
}

/// One POST to `/mcp`: the session id it named (if any) and the JSON-RPC answer carrying an id
/// (`Value::Null` for a notification's empty answer).
async fn mcp_post(
    url: &str,
    revision: &str,
    mcp_session: Option<&str>,
    body: &Value,
) -> (Option<String>, Value) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", revision)
        .bearer_auth(AGENT_TOKEN)
        .json(body);
    if revision == "2026-07-28" {
        let params = &body["params"];
        let name = params.get("name").or_else(|| params.get("taskId"));
        request = request
            .header("mcp-method", body["method"].as_str().unwrap_or_default())
            .header("mcp-name", name.and_then(Value::as_str).unwrap_or_default());
    }
    if let Some(id) = mcp_session {
        request = request.header("mcp-session-id", id);
    }
    let response = request.send().await.expect("the bridge answers");
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.unwrap_or_default();
    let answer = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or(Value::Null);
    (id, answer)
}

fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn acted(result: &Value) -> Value {
    result["_meta"]["clienttools/policy"].clone()
}

/// How often each handler of the page ran (its `runs` tool, asked through `/api`).
async fn runs(base_url: &str, session: &str) -> Value {
    let result = call(Route::Api, base_url, session, "runs", json!({})).await;
    assert_ne!(result["isError"], true, "{result}");
    result["structuredContent"]["runs"].clone()
}

/// Waits until `base_url` lists a connected page with tools (held by node `holder`, if given): its
/// session id.
async fn wait_for_page(base_url: &str, holder: Option<&str>, log: impl Fn() -> String) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let listed: Vec<Value> = match reqwest::Client::new()
            .get(format!("{base_url}/api/sessions"))
            .bearer_auth(AGENT_TOKEN)
            .send()
            .await
        {
            Ok(response) => response.json().await.unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        let found = listed.iter().find(|s| {
            s["connected"] == true
                && s["tools"].as_array().is_some_and(|t| t.len() >= 5)
                && holder.is_none_or(|holder| s["node"] == holder)
        });
        if let Some(session) = found {
            return session["id"].as_str().unwrap().to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "no page listed within 60 s: {listed:?}\n{}",
            log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn secured_args() -> Vec<&'static str> {
    vec!["--agent-token", AGENT_TOKEN, "--page-token", PAGE_TOKEN]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_redact_and_limit_hold_on_every_http_route() {
    let bridge = BridgeProcess::start(&secured_args()).await;
    let mut tab = Tab::open(&format!(
        "{}/guardrails.html#token={PAGE_TOKEN}",
        bridge.base_url
    ));
    let base = bridge.base_url.as_str();
    let session = wait_for_page(base, None, || {
        format!("{}\n{}", tab.last_output(), bridge.output())
    })
    .await;

    for route in HTTP_ROUTES {
        // Block: an error result with the rule's message; the page never sees the call.
        let blocked = call(
            route,
            base,
            &session,
            "create_task",
            json!({"title": "password: hunter2"}),
        )
        .await;
        assert_eq!(blocked["isError"], true, "{route:?}: {blocked}");
        assert!(
            text(&blocked).contains("a task title must not hold a credential"),
            "{route:?}: {blocked}"
        );
        assert_eq!(
            acted(&blocked),
            json!([{"rule": "no-secrets-in-tasks", "action": "block"}]),
            "{route:?}: {blocked}"
        );
        let allowed = call(
            route,
            base,
            &session,
            "create_task",
            json!({"title": "Ship it"}),
        )
        .await;
        assert_ne!(allowed["isError"], true, "{route:?}: {allowed}");
        assert_eq!(allowed["structuredContent"]["created"], "Ship it");

        // Redact: the e-mail and the card are masked in the text and the structured content.
        let read = call(route, base, &session, "read_contact", json!({})).await;
        assert_ne!(read["isError"], true, "{route:?}: {read}");
        let shown = format!("{}{}", text(&read), read["structuredContent"]);
        for secret in ["ada@example.com", "4111", "1111 1111"] {
            assert!(!shown.contains(secret), "{route:?} shows {secret}: {read}");
        }
        assert!(text(&read).contains("[redacted]"), "{route:?}: {read}");
        let structured = &read["structuredContent"];
        assert_eq!(structured["name"], "Ada", "{route:?}: {read}");
        assert_eq!(structured["email"], "[redacted]", "{route:?}: {read}");
        assert_eq!(structured["payment"]["card"], "[redacted]", "{read}");
        assert_eq!(
            structured["payment"]["notes"],
            json!(["write to [redacted]"]),
            "{route:?}: {read}"
        );
        assert_eq!(
            acted(&read),
            json!([{"rule": "mask-contacts", "action": "redact"}])
        );

        // Limit: one window for the page session, whatever the route: one call on each.
        let searched = call(route, base, &session, "search", json!({"q": "x"})).await;
        assert_ne!(searched["isError"], true, "{route:?}: {searched}");
    }
    // Three calls counted (one per route): the fourth is refused on every route, naming the limit.
    for route in HTTP_ROUTES {
        let over = call(route, base, &session, "search", json!({"q": "y"})).await;
        assert_eq!(over["isError"], true, "{route:?}: {over}");
        assert!(text(&over).contains(LIMITED), "{route:?}: {over}");
        assert_eq!(
            acted(&over),
            json!([{"rule": "search-rate", "action": "limit"}])
        );
    }
    assert_eq!(
        runs(base, &session).await,
        json!({"create_task": 3, "read_contact": 3, "search": 3}),
        "blocked and limited calls never reach the page"
    );
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_asks_the_pages_dialog_though_the_tool_opts_out() {
    let bridge = BridgeProcess::start(&secured_args()).await;
    let base = bridge.base_url.clone();
    let driven = Driven::start(browser()).await;
    driven
        .goto(&format!("{base}/guardrails.html#token={PAGE_TOKEN}"))
        .await;
    let session = wait_for_page(&base, None, || bridge.output()).await;

    // Under the rule's condition: no dialog, the call runs at once.
    let small = call(
        Route::Api,
        &base,
        &session,
        "transfer",
        json!({"amount": 20}),
    )
    .await;
    assert_ne!(small["isError"], true, "{small}");
    assert_eq!(small["structuredContent"]["sent"], 20);
    assert!(driven.dialog_closed().await);

    // Over it, on /mcp: the dialog asks; nothing runs before the person approves.
    let approved = {
        let (base, session) = (base.clone(), session.clone());
        tokio::spawn(async move {
            call(
                Route::Mcp2025,
                &base,
                &session,
                "transfer",
                json!({"amount": 900}),
            )
            .await
        })
    };
    driven.wait_for_dialog("transfer").await;
    assert_eq!(runs(&base, &session).await, json!({"transfer": 1}));
    driven.tab_to("approve").await;
    driven.press(&[Key::Enter]).await;
    let approved = tokio::time::timeout(Duration::from_secs(60), approved)
        .await
        .expect("the call ends within 60 s")
        .unwrap();
    assert_ne!(approved["isError"], true, "{approved}");
    assert_eq!(approved["structuredContent"]["sent"], 900);
    assert_eq!(
        acted(&approved),
        json!([{"rule": "big-transfers", "action": "confirm"}])
    );

    // On /api, declined with Escape: the page never runs it.
    let declined = {
        let (base, session) = (base.clone(), session.clone());
        tokio::spawn(async move {
            call(
                Route::Api,
                &base,
                &session,
                "transfer",
                json!({"amount": 700}),
            )
            .await
        })
    };
    driven.wait_for_dialog("transfer").await;
    driven.press(&[Key::Escape]).await;
    let declined = tokio::time::timeout(Duration::from_secs(60), declined)
        .await
        .expect("the call ends within 60 s")
        .unwrap();
    assert_eq!(declined["isError"], true, "{declined}");
    assert!(
        text(&declined).contains("rejected by the user"),
        "{declined}"
    );
    assert_eq!(runs(&base, &session).await, json!({"transfer": 2}));
    driven.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_is_one_window_across_cluster_nodes() {
    let nats = Nats::start("guardrails-nats-token").await;
    let policy = PolicyFile::new();
    let mut args = secured_args();
    args.extend(["--policy", policy.arg()]);
    let nodes = [
        Node::start(&nats, &args).await,
        Node::start(&nats, &args).await,
    ];
    let mut tab = Tab::open(&format!(
        "{}/guardrails.html#token={PAGE_TOKEN}",
        nodes[0].base_url
    ));
    // The page is held by node 1; node 2 reaches it through NATS.
    let session = wait_for_page(&nodes[1].base_url, Some(&nodes[0].id), || {
        format!("{}\n{}", tab.last_output(), nodes[0].output())
    })
    .await;
    let [first, second] = [&nodes[0].base_url, &nodes[1].base_url];
    for (route, base) in [
        (Route::Api, first),
        (Route::Mcp2026, second),
        (Route::Api, second),
    ] {
        let searched = call(route, base, &session, "search", json!({})).await;
        assert_ne!(searched["isError"], true, "{route:?} on {base}: {searched}");
    }
    for (route, base) in [
        (Route::Api, first),
        (Route::Api, second),
        (Route::Mcp2025, second),
    ] {
        let over = call(route, base, &session, "search", json!({})).await;
        assert_eq!(over["isError"], true, "{route:?} on {base}: {over}");
        assert!(text(&over).contains(LIMITED), "{route:?} on {base}: {over}");
    }
    // Block and redact hold on the node that does not hold the page, too.
    let blocked = call(
        Route::Mcp2026,
        second,
        &session,
        "create_task",
        json!({"title": "secret=abc"}),
    )
    .await;
    assert_eq!(blocked["isError"], true, "{blocked}");
    let read = call(Route::Mcp2026, second, &session, "read_contact", json!({})).await;
    assert_eq!(read["structuredContent"]["email"], "[redacted]", "{read}");
    assert_eq!(
        runs(second, &session).await,
        json!({"search": 3, "read_contact": 1})
    );
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_holds_on_stdio() {
    let mut bridge = BridgeProcess::start(&["--stdio"]).await;
    let mut tab = Tab::open(&format!("{}/guardrails.html", bridge.base_url));
    // The page first (calls wait only 10 s for one): the bridge lists it on /api too.
    wait_for_page(&bridge.base_url, None, || {
        format!("{}\n{}", tab.last_output(), bridge.output())
    })
    .await;
    let mut stdio = StdioSession {
        stdin: bridge.child.stdin.take().expect("piped stdin"),
        stdout: BufReader::new(bridge.child.stdout.take().expect("piped stdout")).lines(),
    };
    stdio
        .request(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "guardrails-e2e", "version": "1"}}}),
        )
        .await;
    stdio
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let blocked = stdio
        .call(2, "create_task", json!({"title": "api_key = 123"}))
        .await;
    assert_eq!(blocked["isError"], true, "{blocked}");
    assert!(
        text(&blocked).contains("a task title must not hold a credential"),
        "{blocked}"
    );
    let allowed = stdio
        .call(3, "create_task", json!({"title": "Ship it"}))
        .await;
    assert_ne!(allowed["isError"], true, "{allowed}");
    let read = stdio.call(4, "read_contact", json!({})).await;
    assert_eq!(read["structuredContent"]["email"], "[redacted]", "{read}");
    assert!(!text(&read).contains("ada@example.com"), "{read}");
    let runs = stdio.call(5, "runs", json!({})).await;
    assert_eq!(
        runs["structuredContent"]["runs"],
        json!({"create_task": 1, "read_contact": 1}),
        "the blocked call never reached the page"
    );
    tab.close().await;
}

/// What `chatty` and `summarize` (www/guardrails.html) put in everything they send: none of it may
/// reach an agent.
const PERSONAL: [&str; 3] = ["dee@example.com", "4111 1111 1111 1111", "4111111111111111"];
const TASKS: &str = "io.modelcontextprotocol/tasks";
/// What the Python client's model answers a sampling request (steps.py `SAMPLED`).
const SAMPLED: &str = "a contact who pays by card";

/// Every string inside `value` (object keys too), one a line.
fn strings(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{text}\n"),
        Value::Array(items) => items.iter().map(strings).collect(),
        Value::Object(object) => object
            .iter()
            .map(|(key, value)| format!("{key}\n{}", strings(value)))
            .collect(),
        _ => String::new(),
    }
}

/// No string of what the agent received holds the page's e-mail address or card number.
fn assert_nothing_personal(what: &str, received: &Value) {
    let text = strings(received);
    for secret in PERSONAL {
        assert!(!text.contains(secret), "{what} shows {secret}: {received}");
    }
}

/// One call of `chatty` with a question, then one of `summarize` (a sampling request), through
/// the official MCP Python SDK against `server`, its logging, progress, elicitation and sampling
/// callbacks noting everything the agent reads.
async fn chatty_through_python(server: Server<'_>, revision: &str) -> Vec<Value> {
    let steps = json!([
        {"call": "chatty", "arguments": {"ask": true}, "progress": true},
        {"call": "summarize"},
    ]);
    python_steps::run_observing(server, revision, Some("accept"), &steps).await
}

/// The `_meta` of `chatty`'s result as the agent got it: the page's e-mail address replaced in a
/// value and in two keys (one nested), its card number in a value; the rule named.
fn assert_result_meta_redacted(what: &str, meta: &Value) {
    assert_eq!(
        meta["guardrails/contact"],
        json!({"[redacted]": "card [redacted]"}),
        "{what}: {meta}"
    );
    assert_eq!(meta["guardrails/[redacted]"], true, "{what}: {meta}");
    assert_eq!(
        meta["clienttools/policy"],
        json!([{"rule": "mask-chatter", "action": "redact"}]),
        "{what}: {meta}"
    );
}

/// The params of `summarize`'s `sampling/createMessage` as the agent got them: the system prompt,
/// every message (single block and array content) and the metadata (a key too), redacted.
fn assert_sampling_redacted(what: &str, params: &Value) {
    assert_eq!(
        params["systemPrompt"], "You summarize the contact [redacted]",
        "{what}: {params}"
    );
    let messages = &params["messages"];
    assert_eq!(
        messages[0]["content"]["text"], "Who pays with the card [redacted]?",
        "{what}: {params}"
    );
    assert_eq!(
        messages[1]["content"]["text"], "The owner of [redacted].",
        "{what}: {params}"
    );
    assert_eq!(
        messages[2]["content"][0]["text"], "Summarize [redacted] in a line.",
        "{what}: {params}"
    );
    assert_eq!(
        params["metadata"],
        json!({"contact": {"[redacted]": "[redacted]"}}),
        "{what}: {params}"
    );
    assert_eq!(params["maxTokens"], 50, "{what}: {params}");
}

/// The agent got the page's log messages, progress message, question, sampling request and
/// results, each redacted.
fn assert_chatty_redacted(what: &str, lines: &[Value]) {
    let all = Value::Array(lines.to_vec());
    assert_nothing_personal(what, &all);
    let logged = |level: &str| {
        lines
            .iter()
            .filter_map(|l| l.get("logged"))
            .find(|log| log["level"] == level)
            .unwrap_or_else(|| panic!("{what}: the {level} log message reaches the agent: {all}"))
    };
    let info = logged("info");
    assert_eq!(
        info["data"]["step"], "looking up [redacted]",
        "{what}: {all}"
    );
    assert_eq!(
        info["data"]["found"][0]["card"], "[redacted]",
        "{what}: {all}"
    );
    // An address as a key of a nested object, and in the logger's name.
    let notice = logged("notice");
    assert_eq!(
        notice["data"],
        json!({"seen": {"[redacted]": {"cards": ["[redacted]"]}}}),
        "{what}: {all}"
    );
    assert_eq!(notice["logger"], "contacts of [redacted]", "{what}: {all}");
    assert_eq!(
        logged("warning")["data"],
        "done with [redacted]",
        "{what}: {all}"
    );
    let elicited: Vec<&Value> = lines.iter().filter_map(|l| l.get("elicited")).collect();
    assert_eq!(elicited, [&json!("Is [redacted] yours?")], "{what}: {all}");
    let asked = |field: &str| {
        lines
            .iter()
            .filter_map(|l| l.get("asked"))
            .find(|params| params.get(field).is_some())
            .unwrap_or_else(|| panic!("{what}: a request with {field} reaches the agent: {all}"))
    };
    assert_eq!(
        asked("requestedSchema")["requestedSchema"]["properties"]["approve"]["description"],
        "card [redacted]",
        "{what}: {all}"
    );
    assert_sampling_redacted(what, asked("messages"));
    let outcomes: Vec<&Value> = lines
        .iter()
        .filter(|l| l.get("isError").is_some())
        .collect();
    let [outcome, summarized] = outcomes[..] else {
        panic!("{what}: both calls end: {all}");
    };
    assert_eq!(outcome["isError"], false, "{what}: {all}");
    assert_eq!(
        outcome["structured"]["contact"], "[redacted]",
        "{what}: {all}"
    );
    assert_eq!(outcome["structured"]["answered"], "accept", "{what}: {all}");
    assert_result_meta_redacted(what, &outcome["meta"]);
    let messages: Vec<&Value> = outcome["progress"]
        .as_array()
        .map(|reports| reports.iter().map(|r| &r["message"]).collect())
        .unwrap_or_default();
    assert!(
        messages.contains(&&json!("card [redacted] found for [redacted]")),
        "{what}: the progress message reaches the agent: {all}"
    );
    // The agent's model answered the redacted request; the page got the answer.
    assert_eq!(summarized["isError"], false, "{what}: {all}");
    assert_eq!(
        summarized["structured"]["summary"], SAMPLED,
        "{what}: {all}"
    );
}

/// An `/api` request (`POST` with `body`, else `GET`) of page session `session`'s `path`: the
/// JSON answer (status 200).
async fn api(base_url: &str, session: &str, path: &str, body: Option<Value>) -> Value {
    let url = format!("{base_url}/api/sessions/{session}/{path}");
    let client = reqwest::Client::new();
    let request = match body {
        Some(body) => client.post(url).json(&body),
        None => client.get(url),
    };
    let response = request
        .bearer_auth(AGENT_TOKEN)
        .send()
        .await
        .expect("the bridge answers");
    let status = response.status().as_u16();
    let answer: Value = response.json().await.expect("JSON");
    assert_eq!(status, 200, "{path}: {answer}");
    answer
}

/// `GET …/tasks/{task}` until the task's status is `status` (30 s at most): every answer read.
async fn task_until(base_url: &str, session: &str, task: &str, status: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut read = Vec::new();
    loop {
        let got = api(base_url, session, &format!("tasks/{task}"), None).await;
        let done = got["status"] == status;
        read.push(got);
        if done {
            return read;
        }
        assert!(
            Instant::now() < deadline,
            "task {task} not {status} in 30 s: {read:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An agent on `/mcp` that declares elicitation and the tasks extension: on 2025-11-25 in its
/// MCP session's `initialize`, on 2026-07-28 in each request's `_meta`.
struct TaskAgent {
    url: String,
    revision: &'static str,
    mcp_session: Option<String>,
}

impl TaskAgent {
    async fn start(url: &str, revision: &'static str) -> TaskAgent {
        let mcp_session = if revision == "2025-11-25" {
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": revision,
                "capabilities": {"elicitation": {}, "extensions": {TASKS: {}}},
                "clientInfo": {"name": "guardrails-e2e", "version": "1"}}});
            let (id, answer) = mcp_post(url, revision, None, &init).await;
            assert!(answer.get("result").is_some(), "initialize: {answer}");
            let id = id.expect("an MCP session id");
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            mcp_post(url, revision, Some(&id), &initialized).await;
            Some(id)
        } else {
            None
        };
        TaskAgent {
            url: url.to_owned(),
            revision,
            mcp_session,
        }
    }

    /// One request: its JSON-RPC result (an error fails the test).
    async fn request(&self, method: &str, mut params: Value) -> Value {
        if self.revision == "2026-07-28" {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": self.revision,
                "io.modelcontextprotocol/clientCapabilities":
                    {"elicitation": {}, "extensions": {TASKS: {}}},
            });
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let session = self.mcp_session.as_deref();
        let (_, answer) = mcp_post(&self.url, self.revision, session, &body).await;
        assert!(
            answer.get("result").is_some(),
            "{method} on {}: {answer}",
            self.revision
        );
        answer["result"].clone()
    }

    /// `tasks/get` until the task's status is `status` (30 s at most): every answer read.
    async fn task_until(&self, task: &str, status: &str) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut read = Vec::new();
        loop {
            let got = self.request("tasks/get", json!({"taskId": task})).await;
            let done = got["status"] == status;
            read.push(got);
            if done {
                return read;
            }
            assert!(
                Instant::now() < deadline,
                "task {task} not {status} in 30 s on {}: {read:?}",
                self.revision
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The one input request of an answer asking for input (`inputRequests`): its key and request.
fn only_request(answer: &Value) -> (String, Value) {
    let requests = answer["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("inputRequests: {answer}"));
    assert_eq!(requests.len(), 1, "{answer}");
    let (key, request) = requests.iter().next().unwrap();
    (key.clone(), request.clone())
}

fn assert_question_redacted(what: &str, request: &Value) {
    assert_eq!(request["method"], "elicitation/create", "{what}: {request}");
    let params = &request["params"];
    assert_eq!(
        params["message"], "Is [redacted] yours?",
        "{what}: {request}"
    );
    assert_eq!(
        params["requestedSchema"]["properties"]["approve"]["description"], "card [redacted]",
        "{what}: {request}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redact_covers_log_progress_rounds_and_tasks_on_mcp_and_api() {
    let bridge = BridgeProcess::start(&secured_args()).await;
    let mut tab = Tab::open(&format!(
        "{}/guardrails.html#token={PAGE_TOKEN}",
        bridge.base_url
    ));
    let base = bridge.base_url.as_str();
    let session = wait_for_page(base, None, || {
        format!("{}\n{}", tab.last_output(), bridge.output())
    })
    .await;

    // /mcp on both revisions, through the official Python SDK.
    let url = format!("{base}/mcp?session={session}");
    for revision in ["2025-11-25", "2026-07-28"] {
        let server = Server::Http {
            url: &url,
            token: AGENT_TOKEN,
        };
        let lines = chatty_through_python(server, revision).await;
        assert_chatty_redacted(&format!("/mcp {revision}"), &lines);
    }

    // /api: its caller gets the round (log and progress messages are not sent on /api) and the
    // result.
    let capabilities = json!({"elicitation": {}});
    let first = json!({"name": "chatty", "arguments": {"ask": true}, "capabilities": capabilities});
    let asked = api(base, &session, "call", Some(first)).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let (key, request) = only_request(&asked);
    assert_question_redacted("/api", &request);
    let answer = json!({key: {"action": "accept", "content": {"approve": true}}});
    let retry = json!({"name": "chatty", "arguments": {"ask": true}, "capabilities": capabilities,
        "requestState": asked["requestState"], "inputResponses": answer});
    let done = api(base, &session, "call", Some(retry)).await;
    assert_eq!(done["structuredContent"]["contact"], "[redacted]", "{done}");
    assert_eq!(done["structuredContent"]["answered"], "accept", "{done}");
    assert_result_meta_redacted("/api", &done["_meta"]);
    assert_nothing_personal("/api", &json!([asked, done]));

    // /api, a sampling round: its caller gets the request redacted; the page gets the answer.
    let capabilities = json!({"sampling": {}});
    let first = json!({"name": "summarize", "arguments": {}, "capabilities": capabilities});
    let asked = api(base, &session, "call", Some(first)).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let (key, request) = only_request(&asked);
    assert_eq!(request["method"], "sampling/createMessage", "{asked}");
    assert_sampling_redacted("/api", &request["params"]);
    let answer = json!({key: {"role": "assistant", "model": "guardrails-e2e",
        "content": {"type": "text", "text": SAMPLED}}});
    let retry = json!({"name": "summarize", "arguments": {}, "capabilities": capabilities,
        "requestState": asked["requestState"], "inputResponses": answer});
    let done = api(base, &session, "call", Some(retry)).await;
    assert_eq!(done["structuredContent"]["summary"], SAMPLED, "{done}");
    assert_nothing_personal("/api, sampling", &json!([asked, done]));

    // A task (an /api caller declaring the extension): its status message is the page's progress
    // message, its round waits in it, its result ends it.
    let capabilities = json!({"elicitation": {}, "extensions": {TASKS: {}}});
    let call = json!({"name": "chatty", "arguments": {"ask": true, "waitMs": 700},
        "capabilities": capabilities});
    let created = api(base, &session, "call", Some(call)).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let task = created["taskId"].as_str().unwrap().to_owned();
    let mut read = task_until(base, &session, &task, "input_required").await;
    let waiting = read.last().unwrap().clone();
    assert_eq!(
        waiting["statusMessage"], "card [redacted] found for [redacted]",
        "{waiting}"
    );
    let (key, request) = only_request(&waiting);
    assert_question_redacted("a task", &request);
    let answer =
        json!({"inputResponses": {key: {"action": "accept", "content": {"approve": true}}}});
    api(
        base,
        &session,
        &format!("tasks/{task}/update"),
        Some(answer),
    )
    .await;
    read.extend(task_until(base, &session, &task, "completed").await);
    let completed = read.last().unwrap();
    let result = &completed["result"]["structuredContent"];
    assert_eq!(result["contact"], "[redacted]", "{completed}");
    assert_eq!(result["answered"], "accept", "{completed}");
    assert_result_meta_redacted("a task", &completed["result"]["_meta"]);
    assert_nothing_personal("a task", &json!([created, read]));

    // A task on /mcp (both revisions), read with tasks/get: its status message, the round it
    // waits on and, once answered with tasks/update, its result.
    for revision in ["2025-11-25", "2026-07-28"] {
        let what = format!("a task on /mcp {revision}");
        let agent = TaskAgent::start(&url, revision).await;
        let call = json!({"name": "chatty", "arguments": {"ask": true, "waitMs": 700}});
        let created = agent.request("tools/call", call).await;
        assert_eq!(created["resultType"], "task", "{what}: {created}");
        let task = created["taskId"].as_str().unwrap().to_owned();
        let mut read = agent.task_until(&task, "input_required").await;
        let waiting = read.last().unwrap().clone();
        assert_eq!(
            waiting["statusMessage"], "card [redacted] found for [redacted]",
            "{what}: {waiting}"
        );
        let (key, request) = only_request(&waiting);
        assert_question_redacted(&what, &request);
        let answer = json!({key: {"action": "accept", "content": {"approve": true}}});
        let update = json!({"taskId": task, "inputResponses": answer});
        agent.request("tasks/update", update).await;
        read.extend(agent.task_until(&task, "completed").await);
        let completed = read.last().unwrap();
        let result = &completed["result"];
        assert_eq!(result["isError"], false, "{what}: {completed}");
        assert_eq!(
            result["structuredContent"]["contact"], "[redacted]",
            "{what}: {completed}"
        );
        assert_eq!(
            result["structuredContent"]["answered"], "accept",
            "{what}: {completed}"
        );
        assert!(
            text(result).contains(r#""contact":"[redacted]""#),
            "{what}: {completed}"
        );
        assert_result_meta_redacted(&what, &result["_meta"]);
        assert_nothing_personal(&what, &json!([created, read]));
    }

    assert_eq!(
        runs(base, &session).await,
        json!({"chatty": 6, "summarize": 3}),
        "every call ran once (a round is not a call)"
    );
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redact_covers_log_progress_and_rounds_on_stdio() {
    // The Python client launches the bridge (`--stdio`, with the policy); the page, served by
    // another bridge process, connects to the launched one's /ws. One launch per revision, each
    // on its own port with its own tab.
    let web = BridgeProcess::start(&[]).await;
    let policy = PolicyFile::new();
    let binary = std::env::var_os("CLIENT_TOOLS_BRIDGE_BIN")
        .map(PathBuf::from)
        .expect("CLIENT_TOOLS_BRIDGE_BIN is not set: run these through `cargo xtask test`");
    for revision in ["2025-11-25", "2026-07-28"] {
        let port = free_port();
        let mut tab = Tab::open(&format!(
            "{}/guardrails.html?endpoint=ws://127.0.0.1:{port}/ws",
            web.base_url
        ));
        let args: Vec<String> = vec![
            "--stdio".into(),
            format!("--listen=127.0.0.1:{port}"),
            format!("--www={}", e2e_dir().join("www").display()),
            format!("--pkg={}", pkg_dir().display()),
            format!("--policy={}", policy.arg()),
        ];
        let server = Server::Stdio {
            command: &binary,
            args: &args,
        };
        let lines = chatty_through_python(server, revision).await;
        assert_chatty_redacted(&format!("stdio {revision}"), &lines);
        tab.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redact_covers_log_progress_and_rounds_of_a_call_relayed_between_nodes() {
    let nats = Nats::start("guardrails-nats-token").await;
    let policy = PolicyFile::new();
    let mut args = secured_args();
    args.extend(["--policy", policy.arg()]);
    let nodes = [
        Node::start(&nats, &args).await,
        Node::start(&nats, &args).await,
    ];
    let mut tab = Tab::open(&format!(
        "{}/guardrails.html#token={PAGE_TOKEN}",
        nodes[0].base_url
    ));
    // The page is held by node 1; the agent calls through node 2, which relays the call and gets
    // the page's log, progress and round frames back through NATS.
    let session = wait_for_page(&nodes[1].base_url, Some(&nodes[0].id), || {
        format!("{}\n{}", tab.last_output(), nodes[0].output())
    })
    .await;
    let url = format!("{}/mcp?session={session}", nodes[1].base_url);
    for revision in ["2025-11-25", "2026-07-28"] {
        let server = Server::Http {
            url: &url,
            token: AGENT_TOKEN,
        };
        let lines = chatty_through_python(server, revision).await;
        assert_chatty_redacted(&format!("node 2, /mcp {revision}"), &lines);
    }
    tab.close().await;
}

/// The MCP session on a `--stdio` bridge's stdin and stdout (one JSON-RPC message a line).
struct StdioSession {
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl StdioSession {
    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Sends `message` and waits (60 s) for the answer with its id.
    async fn request(&mut self, message: Value) -> Value {
        let id = message["id"].clone();
        self.send(message).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let line = tokio::time::timeout_at(deadline, self.stdout.next_line())
                .await
                .expect("the bridge answers on stdout within 60 s")
                .unwrap()
                .expect("the bridge's stdout stays open");
            let answer: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if answer["id"] == id {
                return answer;
            }
        }
    }

    /// A `tools/call`: its result.
    async fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        let answer = self
            .request(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}}))
            .await;
        answer["result"].clone()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}
