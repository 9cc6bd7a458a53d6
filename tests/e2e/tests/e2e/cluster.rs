//! The bridge as a cluster (SPEC §9 *Cluster*, docs/deploy.md): three `client-tools-bridge`
//! processes joined through a real NATS server, a real page connected to node 1 through a load
//! balancer, agents on node 3. `cargo xtask test` installs `nats-server` and sets `NATS_SERVER`.
//!
//! Each test says what a user of a cluster counts on: an MCP client on any node reaches a page on
//! any other (tools, calls, `list_changed`, cancellation, and the page's resources and prompts with a
//! subscription that hears its change); a page whose node dies resumes on another
//! node and a call waiting on it ends once, its handler having run once; NATS going away fails calls
//! cleanly and the cluster recovers when it is back; access settings hold across nodes.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use client_tools_bridge::CallToolResult;
use client_tools_core::connect::ConnectParams;
use client_tools_e2e::cluster::{run_node, Failover, Nats, Node};
use client_tools_e2e::raw_page::RawPage;
use client_tools_e2e::{eventually, python_steps, Tab};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const AGENT_TOKEN: &str = "cluster-agent-token";
const PAGE_TOKEN: &str = "cluster-page-token";
const NATS_TOKEN: &str = "cluster-nats-token";
const NODE_ARGS: [&str; 4] = ["--agent-token", AGENT_TOKEN, "--page-token", PAGE_TOKEN];

/// NATS, three nodes, a balancer in front of nodes 1 and 2, and `page` open through it.
struct Cluster {
    nats: Nats,
    nodes: Vec<Node>,
    _balancer: Failover,
    tab: Tab,
    /// The page's session id, as node 3 lists it.
    session: String,
}

impl Cluster {
    async fn start(page: &str) -> Cluster {
        Self::start_balancing(page, &[0, 1]).await
    }

    /// [`Self::start`] with the balancer in front of the nodes `balanced` (indexes).
    async fn start_balancing(page: &str, balanced: &[usize]) -> Cluster {
        let nats = Nats::start(NATS_TOKEN).await;
        let mut nodes = Vec::new();
        for _ in 0..3 {
            nodes.push(Node::start(&nats, &NODE_ARGS).await);
        }
        let backends = balanced.iter().map(|&index| nodes[index].address).collect();
        let balancer = Failover::start(backends).await;
        let tab = Tab::open(&format!(
            "http://{}/{page}#token={PAGE_TOKEN}",
            balancer.address
        ));
        let mut cluster = Cluster {
            nats,
            nodes,
            _balancer: balancer,
            tab,
            session: String::new(),
        };
        // The balancer sends the page to node 1.
        cluster.session = cluster.wait_for_page_on(2, Some(0)).await;
        cluster
    }

    /// Waits until node `index` lists a connected page with tools (held by node `on`, if given);
    /// its session id.
    async fn wait_for_page_on(&self, index: usize, on: Option<usize>) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        let holder = on.map(|on| self.nodes[on].id.as_str());
        loop {
            let listed = sessions(&self.nodes[index]).await;
            let connected = listed.iter().find(|s| {
                s["connected"] == true
                    && s["tools"].as_array().is_some_and(|t| !t.is_empty())
                    && holder.is_none_or(|holder| s["node"] == holder)
            });
            if let Some(session) = connected {
                return session["id"].as_str().unwrap().to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "no page listed on node {} within 60 s: {listed:?}{}\nnode 1:\n{}",
                index + 1,
                self.tab.last_output(),
                self.nodes[0].output()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn sessions(node: &Node) -> Vec<Value> {
    let response = reqwest::Client::new()
        .get(format!("{}/api/sessions", node.base_url))
        .bearer_auth(AGENT_TOKEN)
        .send()
        .await;
    match response {
        Ok(response) => response.json().await.unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// A call through node `node`'s `/api` (an agent route, like `/mcp`).
async fn call(node: &Node, session: &str, name: &str, arguments: Value) -> CallToolResult {
    call_at(node.base_url.clone(), session.to_owned(), name, arguments).await
}

/// [`call`], running in the background.
fn spawn_call(
    node: &Node,
    session: &str,
    name: &'static str,
    arguments: Value,
) -> tokio::task::JoinHandle<CallToolResult> {
    tokio::spawn(call_at(
        node.base_url.clone(),
        session.to_owned(),
        name,
        arguments,
    ))
}

async fn call_at(
    base_url: String,
    session: String,
    name: &str,
    arguments: Value,
) -> CallToolResult {
    let response = reqwest::Client::new()
        .post(format!("{base_url}/api/sessions/{session}/call"))
        .bearer_auth(AGENT_TOKEN)
        .json(&json!({"name": name, "arguments": arguments, "timeoutMs": 20_000}))
        .send()
        .await
        .expect("the node answers");
    assert!(response.status().is_success(), "{}", response.status());
    response.json().await.expect("a call result")
}

/// Handler runs per key, as the page counted them (faults.html).
async fn runs(node: &Node, session: &str, key: &str) -> u64 {
    let result = call(node, session, "runs", json!({})).await;
    assert!(!result.is_error, "{}", result.text());
    result.structured_content.unwrap()[key]
        .as_u64()
        .unwrap_or(0)
}

/// The run number `work` returned (0 for an error result).
fn run_of(result: &CallToolResult) -> u64 {
    let run = result
        .structured_content
        .as_ref()
        .and_then(|s| s["run"].as_u64());
    run.unwrap_or_default()
}

fn env_path(name: &str) -> PathBuf {
    std::env::var_os(name)
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{name} is not set: run these through `cargo xtask test`"))
}

/// The official MCP Python SDK client's scenarios (tests/interop/python/client.py) against the
/// page on node 1, through node 3.
async fn python_client_through_node_3(revision: &str) {
    let mut cluster = Cluster::start("mcp.html").await;
    let url = format!(
        "{}/mcp?session={}",
        cluster.nodes[2].base_url, cluster.session
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../interop/python/client.py");
    let mut child = Command::new(env_path("INTEROP_PYTHON"))
        .arg(script)
        .args(["--transport", "http", "--url", &url, "--token", AGENT_TOKEN])
        .args(["--protocol-version", revision])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start the MCP client");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut passed = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line == "CLOSE_TAB" {
            cluster.tab.close().await;
            stdin.write_all(b"closed\n").await.unwrap();
            stdin.flush().await.unwrap();
        } else if let Some(name) = line.strip_prefix("PASS ") {
            passed.push(name.to_owned());
        }
    }
    let status = child.wait().await.unwrap();
    assert!(
        status.success(),
        "the client failed ({status}) after passing {passed:?}\nnode 1:\n{}\nnode 3:\n{}",
        cluster.nodes[0].output(),
        cluster.nodes[2].output()
    );
    assert_eq!(
        passed,
        [
            "initialize",
            "list",
            "call-valid",
            "call-invalid",
            "list-changed",
            "cancel",
            "resources",
            "prompts",
            "tab-closed",
            "close"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_on_node_3_uses_a_page_on_node_1_2025_11_25() {
    python_client_through_node_3("2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_on_node_3_uses_a_page_on_node_1_2026_07_28() {
    python_client_through_node_3("2026-07-28").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_node_dies_mid_call() {
    let mut cluster = Cluster::start("faults.html").await;
    let session = cluster.session.clone();
    let node_3 = &cluster.nodes[2];
    assert_eq!(
        run_of(&call(node_3, &session, "work", json!({"key": "before"})).await),
        1
    );
    let arguments = json!({"key": "k", "waitMs": 3_000});
    let waiting = spawn_call(&cluster.nodes[2], &session, "work", arguments);
    let deadline = Instant::now() + Duration::from_secs(20);
    while runs(&cluster.nodes[2], &session, "k").await == 0 {
        assert!(Instant::now() < deadline, "the call never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let killed = Instant::now();
    cluster.nodes[0].kill().await;
    // The page reconnects through the balancer to node 2 and resumes its session there.
    let resumed = cluster.wait_for_page_on(2, Some(1)).await;
    let back_after = killed.elapsed();
    assert_eq!(resumed, session, "the page resumed its own session");
    let result = waiting.await.unwrap();
    let ended_after = killed.elapsed();
    assert!(
        !result.is_error && run_of(&result) == 1,
        "the waiting call's one outcome: {}\nnode 2:\n{}\nnode 3:\n{}",
        result.text(),
        cluster.nodes[1].output(),
        cluster.nodes[2].output()
    );
    let node_3 = &cluster.nodes[2];
    assert_eq!(runs(node_3, &session, "k").await, 1, "the handler ran once");
    // The page is served from node 2 now: new calls work, from node 3 and from node 2 itself.
    assert_eq!(
        run_of(&call(node_3, &session, "work", json!({"key": "after"})).await),
        1
    );
    let from_node_2 = call(&cluster.nodes[1], &session, "work", json!({"key": "after"})).await;
    assert_eq!(run_of(&from_node_2), 2);
    eprintln!(
        "node loss: the page was back on node 2 after {back_after:?}; the waiting call ended \
         after {ended_after:?}"
    );
}

/// NATS's "no responders": node 1 dies and its page has nowhere else to go (the balancer knows
/// node 1 only). Before node 3 notices node 1's silence, a call from node 3 goes to node 1's
/// subject, nobody takes it, and it ends at once "not connected" — not after the 5 s reconnect
/// grace ("disconnected before answering").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_no_node_takes_ends_at_once() {
    let mut cluster = Cluster::start_balancing("faults.html", &[0]).await;
    let session = cluster.session.clone();
    assert_eq!(
        run_of(&call(&cluster.nodes[2], &session, "work", json!({"key": "a"})).await),
        1
    );
    cluster.nodes[0].kill().await;
    let result = call(&cluster.nodes[2], &session, "work", json!({"key": "b"})).await;
    assert!(
        result.is_error && result.text().contains("is not connected"),
        "{}\nnode 3:\n{}",
        result.text(),
        cluster.nodes[2].output()
    );
}

/// The page reloads while a call from node 3 runs: it reconnects to the same node, as a new
/// connection, and node 3 sends the call again there; the page says it was interrupted (its
/// ledger survives the reload), once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_reloads_on_its_node_mid_call() {
    let cluster = Cluster::start("faults.html").await;
    let session = cluster.session.clone();
    let arguments = json!({"key": "r", "waitMs": 5_000});
    let waiting = spawn_call(&cluster.nodes[2], &session, "work", arguments);
    let deadline = Instant::now() + Duration::from_secs(20);
    while runs(&cluster.nodes[2], &session, "r").await == 0 {
        assert!(Instant::now() < deadline, "the call never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let reloading = call(&cluster.nodes[2], &session, "reload", json!({"delayMs": 0})).await;
    assert!(!reloading.is_error, "{}", reloading.text());
    let started = Instant::now();
    let result = waiting.await.unwrap();
    assert!(
        result.is_error && result.text().contains("was reloaded while call"),
        "{}",
        result.text()
    );
    // Well before the call's own deadline: it was sent again on the page's new connection.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(cluster.wait_for_page_on(2, Some(0)).await, session);
    assert_eq!(
        runs(&cluster.nodes[2], &session, "r").await,
        1,
        "the handler ran once"
    );
}

/// `newest` names a page on another node; deadlines, progress and refusals are the page's and the
/// caller's node's, whatever node is between them: through node 3's MCP endpoint (the official
/// Python SDK client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_and_progress_across_nodes() {
    let cluster = Cluster::start("faults.html").await;
    // `newest` on node 3 is the page on node 1 (node 3 has no page of its own).
    let newest = call(
        &cluster.nodes[2],
        "newest",
        "work",
        json!({"key": "newest"}),
    )
    .await;
    assert_eq!(run_of(&newest), 1, "{}", newest.text());
    assert_eq!(runs(&cluster.nodes[0], &cluster.session, "newest").await, 1);
    let url = format!(
        "{}/mcp?session={}",
        cluster.nodes[2].base_url, cluster.session
    );
    let steps = json!([
        {"call": "progress", "arguments": {"steps": 3}, "progress": true},
        {"call": "hang"},
        {"call": "work", "arguments": {"key": 5}},
        {"call": "no_such_tool"},
    ]);
    let out = python_steps::run(&url, AGENT_TOKEN, "2025-11-25", None, &steps).await;
    assert_eq!(out.len(), 4, "{out:?}");
    let progress = out[0]["progress"].as_array().expect("progress reported");
    assert!(!out[0]["isError"].as_bool().unwrap(), "{out:?}");
    assert!(progress.len() >= 3, "{out:?}");
    assert!(out[1]["isError"].as_bool().unwrap(), "{out:?}");
    assert!(
        out[1]["text"].as_str().unwrap().contains("300 ms"),
        "{out:?}"
    );
    assert!(out[2]["isError"].as_bool().unwrap(), "{out:?}");
    assert!(out[2]["text"].as_str().unwrap().contains("key"), "{out:?}");
    assert!(out[3]["isError"].as_bool().unwrap(), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_restarted_mid_run() {
    let mut cluster = Cluster::start("faults.html").await;
    let session = cluster.session.clone();
    assert!(
        !call(&cluster.nodes[2], &session, "work", json!({"key": "a"}))
            .await
            .is_error
    );
    cluster.nats.stop().await;
    // Node 3 notices (its link to the page goes down: listed as not connected)…
    let deadline = Instant::now() + Duration::from_secs(30);
    while sessions(&cluster.nodes[2])
        .await
        .iter()
        .any(|s| s["id"] == session.as_str() && s["connected"] == true)
    {
        assert!(
            Instant::now() < deadline,
            "node 3 never noticed NATS was gone"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // …and its calls end with an error result, none hangs.
    let failed = call(
        &cluster.nodes[2],
        &session,
        "work",
        json!({"key": "during"}),
    )
    .await;
    assert!(failed.is_error, "{}", failed.text());
    let text = failed.text();
    assert!(
        text.contains("not connected") || text.contains("disconnected"),
        "{text}"
    );
    // Node 1 holds the page's socket: its own calls go on.
    assert!(
        !call(&cluster.nodes[0], &session, "work", json!({"key": "b"}))
            .await
            .is_error
    );
    cluster.nats.restart().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let result = call(&cluster.nodes[2], &session, "work", json!({"key": "c"})).await;
        if !result.is_error {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "calls from node 3 did not recover 30 s after NATS came back: {}\nnode 3:\n{}",
            result.text(),
            cluster.nodes[2].output()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The call made while NATS was away never reached the page.
    assert_eq!(runs(&cluster.nodes[2], &session, "during").await, 0);
}

/// Session ownership across nodes, with bare WebSocket pages: the resume secret of a page live on
/// node 1, presented on node 2 (a copied tab), gets a new session; once that page stops answering,
/// the same secret on node 2 takes its session over (and node 1 closes the silent connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_owned_across_nodes() {
    let nats = Nats::start(NATS_TOKEN).await;
    let node_1 = Node::start(&nats, &NODE_ARGS).await;
    let node_2 = Node::start(&nats, &NODE_ARGS).await;
    let ws = |node: &Node| format!("ws://{}/ws", node.address);
    let with_token = |resume_secret: Option<String>| ConnectParams {
        token: Some(PAGE_TOKEN.into()),
        resume_secret,
    };
    let tools = json!([{"name": "echo", "inputSchema": {"type": "object"}}]);
    let mut original =
        RawPage::connect_with_tools(&ws(&node_1), &with_token(None), tools.clone()).await;
    let secret = original.session.resume_secret.clone();
    // Node 2 must know the page is on node 1 before the copy arrives there.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sessions(&node_2)
        .await
        .iter()
        .any(|s| s["id"] == original.id() && s["connected"] == true)
    {
        assert!(Instant::now() < deadline, "node 2 never listed the page");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The original answers node 1's probe (a ping) while the copy connects to node 2.
    let copy = {
        let (url, params) = (ws(&node_2), with_token(Some(secret.clone())));
        tokio::spawn(async move { RawPage::connect(&url, &params).await.accepted() })
    };
    let ping = original
        .next_method("ping")
        .await
        .expect("node 1 probes its page");
    original.reply(&ping, json!({})).await;
    let copy = copy.await.unwrap();
    assert_ne!(copy.id(), original.id(), "a live page keeps its session");
    assert!(!copy.session.resumed);
    // Now the original stays silent: the next claim takes its session over.
    let takeover = RawPage::connect(&ws(&node_2), &with_token(Some(secret)))
        .await
        .accepted();
    assert_eq!(takeover.id(), original.id());
    assert!(takeover.session.resumed);
    let closed = original.closed_by_bridge().await;
    assert_eq!(
        closed.map(|(code, _)| code),
        Some(4000),
        "node 1 closed the silent connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_settings_hold_across_nodes() {
    let cluster = Cluster::start("faults.html").await;
    let session = cluster.session.clone();
    // A node with other tokens joins the same NATS: it sees no page and reaches none.
    let other = Node::start(
        &cluster.nats,
        &["--agent-token", "another-token", "--page-token", PAGE_TOKEN],
    )
    .await;
    let response = reqwest::Client::new()
        .post(format!("{}/api/sessions/{session}/call", other.base_url))
        .bearer_auth("another-token")
        .json(&json!({"name": "work", "arguments": {"key": "other"}}))
        .send()
        .await
        .unwrap();
    let result: CallToolResult = response.json().await.unwrap();
    assert!(result.is_error, "{}", result.text());
    assert!(
        result.text().contains("no page session"),
        "{}",
        result.text()
    );
    eventually("the other node logs why it is not served", || {
        other.output().contains("other access settings")
    })
    .await;
    // Node 3 wants its agent token, whoever holds the page.
    let refused = reqwest::Client::new()
        .get(format!("{}/api/sessions", cluster.nodes[2].base_url))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(runs(&cluster.nodes[2], &session, "other").await, 0);
    // NATS credentials are checked when a node starts: a wrong token stops it, saying so.
    let (status, output) = run_node(&cluster.nats.url(), "wrong-token", &NODE_ARGS).await;
    assert_eq!(status.code(), Some(2), "{output}");
    assert!(
        output.contains("cannot connect to NATS at nats://127.0.0.1:"),
        "{output}"
    );
}

/// `POST /api/sessions/{session}/call` on `node` with `body`: the status and the JSON answer.
async fn api_call(node: &Node, session: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/api/sessions/{session}/call", node.base_url))
        .bearer_auth(AGENT_TOKEN)
        .json(&body)
        .send()
        .await
        .expect("the node answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

/// One stateless `tools/call` of revision 2026-07-28 to `node`'s `/mcp` (declaring form
/// elicitation, with a progress token); `extra` goes into its params (`requestState`,
/// `inputResponses`). The JSON-RPC answer, and the progress reported before it.
async fn mcp_2026(
    node: &Node,
    session: &str,
    tool: &str,
    arguments: Value,
    extra: Value,
) -> (Value, Vec<Value>) {
    let mut params = json!({"name": tool, "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "progressToken": "rounds",
    }});
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
    let text = reqwest::Client::new()
        .post(format!("{}/mcp?session={session}", node.base_url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .bearer_auth(AGENT_TOKEN)
        .json(&body)
        .send()
        .await
        .expect("the node answers")
        .text()
        .await
        .unwrap_or_default();
    let messages: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .filter(|v| v.get("jsonrpc").is_some())
        .collect();
    let answer = messages
        .iter()
        .find(|m| m.get("id").is_some())
        .cloned()
        .unwrap_or_else(|| panic!("no answer in {text}"));
    let progress = messages
        .into_iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    (answer, progress)
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// How many times the rounds page ran `tool`.
async fn rounds_runs(node: &Node, session: &str, tool: &str) -> u64 {
    let result = call(node, session, "runs", json!({})).await;
    result.structured_content.unwrap()[tool]
        .as_u64()
        .unwrap_or(0)
}

/// A handler of the page on node 1 asks the agent on node 3 (revision 2025-11-25: a request on
/// the call's stream, answered by the official Python SDK's elicitation callback), and the page's
/// log message reaches it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_of_a_page_on_node_1_reaches_the_agent_on_node_3_2025_11_25() {
    let cluster = Cluster::start("rounds.html").await;
    let url = format!(
        "{}/mcp?session={}",
        cluster.nodes[2].base_url, cluster.session
    );
    let steps = json!([{"call": "ask_name", "arguments": {"greeting": "Hello"}}]);
    let out = python_steps::run(&url, AGENT_TOKEN, "2025-11-25", Some("accept"), &steps).await;
    assert_eq!(
        out.first(),
        Some(&json!({"elicited": "What is your name?"})),
        "{out:?}"
    );
    let result = out.last().unwrap();
    assert_eq!(result["isError"], false, "{out:?}");
    assert_eq!(result["structured"]["action"], "accept", "{out:?}");
    assert_eq!(
        rounds_runs(&cluster.nodes[2], &cluster.session, "ask_name").await,
        1
    );
}

/// Revision 2026-07-28 across nodes: the call is made through node 3 (its page on node 1), each
/// retry goes to another node (2, then 1) and is carried to node 3, which keeps the suspended
/// call; round after round, the handler runs once and its progress reaches the agent. A
/// tampered state is refused (-32602) on the node it reaches, a spent one too, on any node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_resume_on_any_node_2026_07_28() {
    let cluster = Cluster::start("rounds.html").await;
    let (session, nodes) = (&cluster.session, &cluster.nodes);
    let call =
        |node: usize, extra: Value| mcp_2026(&nodes[node], session, "two_rounds", json!({}), extra);
    let (first, _) = call(2, json!({})).await;
    let first = &first["result"];
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert!(first["inputRequests"]["name"].is_object(), "{first}");
    let state = first["requestState"].as_str().unwrap().to_owned();

    // Tampered, on node 2: refused there.
    let mut tampered = state.clone().into_bytes();
    tampered[5] = if tampered[5] == b'0' { b'1' } else { b'0' };
    let tampered = String::from_utf8(tampered).unwrap();
    let name = json!({"name": accept(json!({"name": "Ada"}))});
    let (refused, _) = call(1, json!({"requestState": tampered, "inputResponses": name})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("integrity check failed"), "{refused}");

    // The first round answered on node 2: the second round comes back from node 3's call.
    let (second, _) = call(1, json!({"requestState": state, "inputResponses": name})).await;
    let second = &second["result"];
    assert_eq!(second["resultType"], "input_required", "{second}");
    assert!(second["inputRequests"]["color"].is_object(), "{second}");
    let next = second["requestState"].as_str().unwrap().to_owned();
    // The first state is spent, on whichever node it is sent to.
    let (replayed, _) = call(0, json!({"requestState": state, "inputResponses": name})).await;
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
    assert!(
        replayed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already used"),
        "{replayed}"
    );

    // The second round answered on node 1 (the page's node): the call ends there.
    let color = json!({"color": accept(json!({"color": "teal"}))});
    let (done, progress) = call(0, json!({"requestState": next, "inputResponses": color})).await;
    let done = &done["result"];
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(
        done["structuredContent"],
        json!({"name": "Ada", "color": "teal"}),
        "{done}"
    );
    assert!(
        progress
            .iter()
            .any(|p| p["params"]["message"] == "answered"),
        "the page's progress crossed two nodes: {progress:?}"
    );
    assert_eq!(rounds_runs(&nodes[2], session, "two_rounds").await, 1);
}

/// `/api` rounds across nodes: asked through node 3, answered through node 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_rounds_resume_on_any_node() {
    let cluster = Cluster::start("rounds.html").await;
    let (session, nodes) = (&cluster.session, &cluster.nodes);
    let body = json!({"name": "ask_name", "arguments": {"greeting": "Hi"},
        "capabilities": {"elicitation": {}}});
    let (status, asked) = api_call(&nodes[2], session, body.clone()).await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let key = asked["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let mut retry = body.clone();
    retry["requestState"] = asked["requestState"].clone();
    retry["inputResponses"] = json!({key: accept(json!({"name": "Bo"}))});
    let (status, done) = api_call(&nodes[1], session, retry.clone()).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["structuredContent"]["greeting"], "Hi, Bo!", "{done}");
    let (status, replayed) = api_call(&nodes[0], session, retry).await;
    assert_eq!(status, 400, "{replayed}");
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
}

/// One stateless MCP request (2026-07-28) to `node` of an agent declaring the tasks extension:
/// the JSON-RPC answer.
async fn mcp_tasks(node: &Node, session: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .unwrap_or_default()
        .to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params});
    let text = reqwest::Client::new()
        .post(format!("{}/mcp?session={session}", node.base_url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .bearer_auth(AGENT_TOKEN)
        .json(&body)
        .send()
        .await
        .expect("the node answers")
        .text()
        .await
        .unwrap_or_default();
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer to {method} in {text}"))
}

/// A task made through node 3 (the page on node 1) is kept by node 3 and named after it; it is
/// read through node 1 and node 2 (carried to node 3), to its result; another, waiting on a long
/// job, is cancelled through node 1 and read cancelled through node 2, the page's handler aborted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_read_and_cancelled_from_any_node() {
    let cluster = Cluster::start("tasks.html").await;
    let (session, nodes) = (&cluster.session, &cluster.nodes);
    let call = json!({"name": "slow_job", "arguments": {"ms": 1500}});
    let created = mcp_tasks(&nodes[2], session, "tools/call", call).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert!(id.starts_with(&format!("{}.", nodes[2].id)), "{id}");
    let get = json!({"taskId": id});
    let from_1 = mcp_tasks(&nodes[0], session, "tasks/get", get.clone()).await;
    assert_eq!(from_1["result"]["taskId"], id.as_str(), "{from_1}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let got = mcp_tasks(&nodes[1], session, "tasks/get", get.clone()).await;
        if got["result"]["status"] == "completed" {
            break got["result"].clone();
        }
        assert!(Instant::now() < deadline, "not completed in 30 s: {got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        done["result"]["content"][0]["text"], "done after 1500 ms (run 1)",
        "{done}"
    );

    let call = json!({"name": "slow_job", "arguments": {"ms": 60000}});
    let long = mcp_tasks(&nodes[2], session, "tools/call", call).await["result"].clone();
    let long_id = long["taskId"].as_str().unwrap().to_owned();
    let ack = mcp_tasks(
        &nodes[0],
        session,
        "tasks/cancel",
        json!({"taskId": long_id}),
    )
    .await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let read = mcp_tasks(&nodes[1], session, "tasks/get", json!({"taskId": long_id})).await;
    assert_eq!(read["result"]["status"], "cancelled", "{read}");
    // The page's handler was aborted: its toolcancel counted.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let counts = call_at_counts(&nodes[2], session).await;
        if counts["cancelled"] == 1 {
            assert_eq!(counts["slow_job"], 2, "{counts}");
            break;
        }
        assert!(Instant::now() < deadline, "no toolcancel in 30 s: {counts}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A made-up id naming node 3 is unknown there, as on any node.
    let made_up = format!("{}.{}", nodes[2].id, "0".repeat(32));
    let unknown = mcp_tasks(&nodes[1], session, "tasks/get", json!({"taskId": made_up})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

/// The tasks page's counters, through `node`.
async fn call_at_counts(node: &Node, session: &str) -> Value {
    call(node, session, "counts", json!({}))
        .await
        .structured_content
        .unwrap_or_default()
}
