//! Resources, prompts and completion across a cluster (SPEC §11 "/api and the cluster carry them
//! too"): a real NATS server (`NATS_SERVER`, as the end-to-end cluster tests find one), two bridge
//! nodes in this process, a page on node A's `/ws`, agents on both nodes. A `prompts/get` whose
//! page asks a round is resumed on the node keeping it whichever node the retry reaches (on `/mcp`
//! and on `/api`); an agent on node B hears the page's `prompts/list_changed` and
//! `resources/list_changed`, and the updates of a resource it subscribed to.
//!
//! Without `NATS_SERVER` the tests say so and pass (`cargo xtask test` sets it).

use std::net::SocketAddr;
use std::time::Duration;

use client_tools_bridge::{Bridge, BridgeConfig};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::Message;

mod cluster_nodes;
mod page_socket;

use cluster_nodes::{nats, node, Nats};

/// How long any one awaited event may take before the test fails.
const WAIT: Duration = Duration::from_secs(20);

/// A bridge serving HTTP on loopback: it and its address.
async fn serve() -> (Bridge, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let bridge = Bridge::new(BridgeConfig {
        listen: address,
        ..Default::default()
    });
    let server = bridge.clone();
    tokio::spawn(async move { server.serve(listener).await });
    (bridge, address)
}

/// What the test tells the page to do.
enum Do {
    /// Offer one more prompt, and say so (`notifications/prompts/list_changed`).
    AddPrompt(&'static str),
    /// Offer one more resource, and say so (`notifications/resources/list_changed`).
    AddResource(&'static str),
    /// `notifications/resources/updated` of this URI.
    Update(&'static str),
}

/// The page's side: the URIs agents subscribed it to, as it heard them.
struct Page {
    session: String,
    tell: mpsc::Sender<Do>,
    subscribed: watch::Receiver<Vec<String>>,
}

/// A page on `address` that offers a prompt asking the agent for context (`ask`), a resource,
/// and subscriptions; it adds prompts and resources, and updates resources, when told.
async fn page(address: SocketAddr) -> Page {
    let (mut ws, session) = page_socket::connect_page(address).await;
    let (tell, mut told) = mpsc::channel::<Do>(8);
    let (subscribed_tx, subscribed) = watch::channel(Vec::<String>::new());
    tokio::spawn(async move {
        let mut prompts = vec![json!({"name": "ask"})];
        let mut resources = vec![json!({"uri": "test://board", "name": "board"})];
        // The prompts/get waiting on its round: its request id.
        let mut asking: Option<Value> = None;
        loop {
            let reply = tokio::select! {
                what = told.recv() => match what {
                    None => return,
                    Some(Do::AddPrompt(name)) => {
                        prompts.push(json!({"name": name}));
                        json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
                    }
                    Some(Do::AddResource(uri)) => {
                        resources.push(json!({"uri": uri, "name": uri}));
                        json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
                    }
                    Some(Do::Update(uri)) => json!({"jsonrpc": "2.0",
                        "method": "notifications/resources/updated", "params": {"uri": uri}}),
                },
                message = ws.next() => {
                    let Some(Ok(message)) = message else { return };
                    let Message::Text(text) = message else { continue };
                    let frame: Value = serde_json::from_str(text.as_str()).unwrap();
                    match answer(&frame, &prompts, &resources, &mut asking, &subscribed_tx) {
                        Some(reply) => reply,
                        None => continue,
                    }
                }
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
        tell,
        subscribed,
    }
}

/// The page's answer to `frame`, if it answers one.
fn answer(
    frame: &Value,
    prompts: &[Value],
    resources: &[Value],
    asking: &mut Option<Value>,
    subscribed: &watch::Sender<Vec<String>>,
) -> Option<Value> {
    let (method, id) = (frame["method"].as_str(), frame.get("id"));
    let id = id?;
    let Some(method) = method else {
        // The agent's answers to the round: the prompt goes on with them.
        if id != "round-1" {
            return None;
        }
        let context = &frame["result"]["inputResponses"]["context"]["content"]["context"];
        return Some(json!({"jsonrpc": "2.0", "id": asking.take()?, "result": {
            "messages": [{"role": "user", "content": {"type": "text",
                "text": format!("context: {}", context.as_str().unwrap_or("?"))}}]}}));
    };
    let result = match method {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true},
                "prompts": {"listChanged": true}},
            "serverInfo": {"name": "served-cluster-page", "version": "1"},
        }),
        "tools/list" => json!({"tools": []}),
        "resources/list" => json!({"resources": resources}),
        "resources/templates/list" => json!({"resourceTemplates": []}),
        "prompts/list" => json!({"prompts": prompts}),
        "resources/subscribe" | "resources/unsubscribe" => {
            let uri = frame["params"]["uri"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            subscribed.send_modify(|uris| match method {
                "resources/subscribe" => uris.push(uri),
                _ => uris.retain(|u| *u != uri),
            });
            json!({})
        }
        "prompts/get" => {
            *asking = Some(id.clone());
            let call = id.as_str().unwrap_or_default();
            return Some(
                json!({"jsonrpc": "2.0", "id": "round-1", "method": "clienttools/input",
                "params": {"_meta": {"clienttools/callId": call}, "inputRequests": {
                    "context": {"method": "elicitation/create", "params": {
                        "message": "Context?", "requestedSchema": {"type": "object",
                        "properties": {"context": {"type": "string"}}}}}}}}),
            );
        }
        _ => json!({}),
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .unwrap()
}

/// The `_meta` of a 2026-07-28 request from an agent that answers elicitations.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "served-cluster", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    })
}

/// One 2026-07-28 request on `/mcp?session=…` of `address`: its JSON-RPC response.
async fn mcp(address: SocketAddr, session: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let named = params["name"]
        .as_str()
        .or(params["uri"].as_str())
        .unwrap_or_default();
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
    let text = response.text().await.unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("data:").map(str::trim).or(Some(line)))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|message| message.get("result").is_some() || message.get("error").is_some())
        .unwrap_or_else(|| panic!("no response in {text}"))
}

/// `POST /api/sessions/{session}/{path}` on `address`: its status and JSON body.
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

/// A cluster of two nodes with the page on node A, once node B reaches it and has read what it
/// offers (its directory entry): the NATS server (kept alive), both nodes, the page.
async fn cluster() -> Option<(Nats, (Bridge, SocketAddr), (Bridge, SocketAddr), Page)> {
    let (nats, url) = nats("the cluster tests of served requests are").await?;
    let a = node(&url, serve().await).await;
    let b = node(&url, serve().await).await;
    let page = page(a.1).await;
    let mut changes = b.0.watch_pages();
    let id = page.session.clone();
    tokio::time::timeout(WAIT, async {
        while b.0.session(&id).is_none_or(|s| s.offered().is_none()) {
            changes.changed().await.unwrap();
        }
    })
    .await
    .expect("node B sees the page of node A, and what it offers");
    Some((nats, a, b, page))
}

#[tokio::test]
async fn a_prompts_round_resumes_on_the_node_keeping_it_whichever_node_the_retry_reaches() {
    let Some((_nats, (_, a), (_, b), page)) = cluster().await else {
        return;
    };
    let session = &page.session;

    // /mcp: asked on node A (the page's), retried on node B.
    let name = json!({"name": "ask"});
    let asked = mcp(a, session, "prompts/get", name.clone()).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let mut retry = name.clone();
    retry["requestState"] = asked["result"]["requestState"].clone();
    retry["inputResponses"] = json!({"context": {"action": "accept", "content": {"context": "B"}}});
    let got = mcp(b, session, "prompts/get", retry.clone()).await;
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"], "context: B",
        "{got}"
    );
    // Spent on the node that kept it: the same retry, on either node, is refused.
    for node in [a, b] {
        let again = mcp(node, session, "prompts/get", retry.clone()).await;
        assert_eq!(again["error"]["code"], -32602, "{again}");
    }

    // /api: asked on node B (a linked session keeps it there), retried on node A.
    let asked = json!({"name": "ask", "capabilities": {"elicitation": {}}});
    let (status, round) = api(b, session, "prompts/get", asked).await;
    assert_eq!(status, 200, "{round}");
    assert_eq!(round["resultType"], "input_required", "{round}");
    let retry = json!({"name": "ask", "capabilities": {"elicitation": {}},
        "requestState": round["requestState"],
        "inputResponses": {"context": {"action": "accept", "content": {"context": "A"}}}});
    let (status, got) = api(a, session, "prompts/get", retry).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["resultType"], "complete", "{got}");
    assert_eq!(got["messages"][0]["content"]["text"], "context: A", "{got}");
}

/// A `subscriptions/listen` stream (2026-07-28) on node `address`, bound to `session`, asking for
/// the list changes and the updates of `uris`: the messages it carries, as they come.
async fn listen(address: SocketAddr, session: &str, uris: &[&str]) -> watch::Receiver<Vec<Value>> {
    let body = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"notifications": {"promptsListChanged": true, "resourcesListChanged": true,
            "resourceSubscriptions": uris}, "_meta": meta()}});
    let mut stream = reqwest::Client::builder()
        .no_proxy()
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
    assert_eq!(stream.status().as_u16(), 200);
    let (into, heard) = watch::channel(Vec::new());
    tokio::spawn(async move {
        let mut pending: Vec<u8> = Vec::new();
        while let Ok(Some(chunk)) = stream.chunk().await {
            pending.extend_from_slice(&chunk);
            // An SSE event ends with a blank line; its `data:` lines are the message.
            while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = pending.drain(..end + 2).collect();
                let event = String::from_utf8_lossy(&event);
                for data in event.lines().filter_map(|l| l.strip_prefix("data:")) {
                    if let Ok(message) = serde_json::from_str(data.trim()) {
                        into.send_modify(|heard| heard.push(message));
                    }
                }
            }
        }
    });
    heard
}

/// Waits until `heard` holds a message with `method` (and, when given, `params.uri`); `poke`
/// runs after each second of silence (an update the page sent before the listener's
/// subscription was in place is not heard: the page sends another).
async fn hear(
    heard: &mut watch::Receiver<Vec<Value>>,
    method: &str,
    uri: Option<&str>,
    poke: impl Fn() -> Option<Do>,
    tell: &mpsc::Sender<Do>,
) {
    let found = |heard: &Vec<Value>| {
        heard.iter().any(|message| {
            message["method"] == method && uri.is_none_or(|uri| message["params"]["uri"] == uri)
        })
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let second = tokio::time::timeout(Duration::from_secs(1), heard.wait_for(found))
            .await
            .map(|found| found.is_ok());
        if let Ok(open) = second {
            assert!(open, "the stream is open");
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{method} {uri:?} not heard: {:?}",
            *heard.borrow()
        );
        if let Some(again) = poke() {
            tell.send(again).await.unwrap();
        }
    }
}

#[tokio::test]
async fn an_agent_on_another_node_hears_the_pages_list_changes_and_its_resource_updates() {
    let Some((_nats, _, (_, b), page)) = cluster().await else {
        return;
    };
    let session = &page.session;
    let mut heard = listen(b, session, &["test://board"]).await;
    let acknowledged = |heard: &Vec<Value>| {
        (heard.iter()).any(|m| m["method"] == "notifications/subscriptions/acknowledged")
    };
    tokio::time::timeout(WAIT, heard.wait_for(acknowledged))
        .await
        .expect("the stream is acknowledged")
        .unwrap();
    // The subscription made on node B reached the page, through node A.
    let mut subscribed = page.subscribed.clone();
    tokio::time::timeout(
        WAIT,
        subscribed.wait_for(|uris| uris.iter().any(|u| u == "test://board")),
    )
    .await
    .expect("the page heard resources/subscribe")
    .unwrap();

    let tell = &page.tell;
    let board = || Some(Do::Update("test://board"));
    tell.send(Do::Update("test://board")).await.unwrap();
    let updated = "notifications/resources/updated";
    hear(&mut heard, updated, Some("test://board"), board, tell).await;

    tell.send(Do::AddPrompt("summarize")).await.unwrap();
    let prompts = "notifications/prompts/list_changed";
    hear(&mut heard, prompts, None, || None, tell).await;
    let listed = mcp(b, session, "prompts/list", json!({})).await;
    let names: Vec<&str> = (listed["result"]["prompts"].as_array().unwrap().iter())
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["ask", "summarize"], "{listed}");

    tell.send(Do::AddResource("test://notes")).await.unwrap();
    let resources = "notifications/resources/list_changed";
    hear(&mut heard, resources, None, || None, tell).await;
    let listed = mcp(b, session, "resources/list", json!({})).await;
    assert_eq!(
        listed["result"]["resources"][1]["uri"], "test://notes",
        "{listed}"
    );
}
